"""Kind inject: messages, {{question}}, roles, first_n per scope, notice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.runtime import Engine


@pytest.fixture
def agent(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]):  # type: ignore[no-untyped-def]
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [city]\n",
            "agents/a/hooks/city.yaml": """
            kind: inject
            name: city
            first_n: 2
            notice: "Напоминание: город — Москва"
            messages:
              - role: system
                content: "Important: the user's city is Moscow."
              - role: user
                content: "Context reminder: {{question}}"
              - role: assistant
                content: "Понял: {{question}} / {{question}}"
        """,
        }
    )
    return load(root).agent("a")


def test_messages_are_injected_in_order_with_the_question(agent) -> None:  # type: ignore[no-untyped-def]
    out = agent.before_user_message("Привет, мир", user_id="u1")
    assert out.messages == [
        {"role": "system", "content": "Important: the user's city is Moscow."},
        {"role": "user", "content": "Context reminder: Привет, мир"},
        {"role": "assistant", "content": "Понял: Привет, мир / Привет, мир"},
    ]
    assert out.notices == ["Напоминание: город — Москва"]
    assert out.answer is None and not out.blocked


def test_first_n_counts_per_scope(agent) -> None:  # type: ignore[no-untyped-def]
    fired = [bool(agent.before_user_message(f"q{i}", user_id="u1").messages) for i in range(4)]
    assert fired == [True, True, False, False]
    assert agent.before_user_message("q", user_id="u2").messages
    assert agent.before_user_message("q", session_id="s9").messages


def test_inject_only_listens_to_user_messages(agent) -> None:  # type: ignore[no-untyped-def]
    out = agent.before_call("instr", user_id="u1")
    assert out.hooks == [] and not out.changed


def test_without_first_n_it_fires_every_time(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [always]\n",
            "agents/a/hooks/always.yaml": "kind: inject\nname: always\nmessages:\n"
            "  - {role: system, content: x}\n",
        }
    )
    agent = load(root).agent("a")
    assert all(agent.before_user_message("q", user_id="u").messages for _ in range(5))
    out = agent.before_user_message("q", user_id="u")
    assert out.notices == []


def test_a_hooks_memo_keeps_the_most_recent_keys_so_memory_stays_bounded() -> None:
    from engine.kinds.base import Memo

    memo = Memo(max_keys=3)
    for user in ("u1", "u2", "u3"):
        memo.update(f"seen:user:{user}", lambda n: n + 1, 0)
    memo.get("seen:user:u1")  # used again: kept over u2
    memo.update("seen:user:u4", lambda n: n + 1, 0)
    assert len(memo) == 3
    assert memo.get("seen:user:u2") is None
    assert memo.get("seen:user:u1") == 1 and memo.get("seen:user:u4") == 1


def test_the_checked_change_equals_the_full_check_of_the_same_answer(agent) -> None:  # type: ignore[no-untyped-def]
    """inject answers with a Change made from texts cleaned once per build; a long answer
    goes through the pipeline's full check instead. Both give the same change."""
    from engine.changes import Change, parse_change
    from engine.kinds.base import HookContext, Memo
    from engine.points import Point, Scope

    (slot,) = agent.pipeline.by_point[Point.BEFORE_USER_MESSAGE]
    hook = slot.hook
    for question in ("Где мой заказ?", "x" * 60_000):
        ctx = HookContext("a", Scope(user_id="u9"), None, Memo())  # type: ignore[arg-type]
        answer = hook.run(Point.BEFORE_USER_MESSAGE, {"question": question}, ctx)
        expected = parse_change(Point.BEFORE_USER_MESSAGE, hook._unchecked(question), hook="city")
        assert isinstance(answer, Change) == (len(question) < 1000)
        assert parse_change(Point.BEFORE_USER_MESSAGE, answer, hook="city") == expected
