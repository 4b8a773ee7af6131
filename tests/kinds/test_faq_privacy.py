"""The FAQ cache never hands one user's personal answer to another: an answer given with
recalled memory is not shared (``scope: global``) or kept for its user (``scope: user``);
the demo's maria does not get alex's city."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.demo import SCRIPT, play
from engine.outcome import Outcome
from engine.runtime import Agent, Engine
from tests import backends
from tests.conftest import copy_demo

db_url = backends.db_url

SAID = ("Меня зовут Алекс, я живу в Берлине", "Приятно познакомиться, Алекс!")
WHERE = "Где я живу?"
ANSWER = "Вы живёте в Берлине, вы говорили об этом."
SHIPPING = ("How long does shipping to Berlin take?", "Shipping takes 3 to 5 working days.")


@pytest.fixture
def two_hooks(tmp_path: Path, db_url: str) -> Iterator[Callable[[str], Agent]]:
    """``two_hooks(scope)``: an agent with a faq_cache (that scope) and a memory hook."""
    engines: list[Engine] = []

    def make(scope: str) -> Agent:
        root = tmp_path / f"config{len(engines)}"
        (root / "agents/a/hooks").mkdir(parents=True)
        (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
        (root / "agents/a/agent.yaml").write_text("hooks: [faq, mem]\n", encoding="utf-8")
        faq = {"kind": "faq_cache", "name": "faq", "scope": scope, "fallback_score": 0.8}
        hooks = {"faq": faq, "mem": {"kind": "memory", "name": "mem"}}
        for name, spec in hooks.items():
            (root / f"agents/a/hooks/{name}.yaml").write_text(json.dumps(spec), encoding="utf-8")
        engine = Engine.load(root, db=db_url)
        engines.append(engine)
        return engine.agent("a")

    yield make
    for engine in engines:
        engine.close()


def turn(agent: Agent, user: str, question: str, answer: str) -> tuple[Outcome, Outcome]:
    """One whole turn; the answer is the cache's when it answered."""
    first = agent.before_user_message(question, user_id=user)
    said = first.answer if first.answer is not None else answer
    done = agent.after_turn(question, said, user_id=user, turn_id=first.turn_id)
    return first, done


def logs(out: Outcome, hook: str) -> list[str]:
    return [line for h in out.hooks if h.name == hook for line in h.logs]


def test_an_answer_given_with_recalled_memory_is_not_shared(two_hooks: Any) -> None:
    agent = two_hooks("global")
    turn(agent, "alex", *SAID)
    first, done = turn(agent, "alex", WHERE, ANSWER)
    assert "Берлин" in first.messages[0]["content"]  # memory recalled the city
    assert any("per-user context" in line for line in logs(done, "faq"))
    maria, _ = turn(agent, "maria", WHERE, "Я пока не знаю.")
    assert maria.answer is None
    assert "Берлин" not in json.dumps(maria.to_dict(), ensure_ascii=False)


def test_with_scope_user_a_personal_answer_is_cached_for_its_user_only(two_hooks: Any) -> None:
    agent = two_hooks("user")
    turn(agent, "alex", *SAID)
    _, done = turn(agent, "alex", WHERE, ANSWER)
    assert [h.extras.get("stored_for") for h in done.hooks if h.name == "faq"] == ["user:alex"]
    again, _ = turn(agent, "alex", WHERE, "unused")
    assert again.answer == ANSWER
    maria, _ = turn(agent, "maria", WHERE, "Я пока не знаю.")
    assert maria.answer is None


def test_an_answer_without_per_user_context_is_shared(two_hooks: Any) -> None:
    for scope in ("global", "user"):
        agent = two_hooks(scope)
        turn(agent, "bob", *SHIPPING)
        hit, _ = turn(agent, "maria", SHIPPING[0], "unused")
        assert hit.answer == SHIPPING[1], scope


def test_the_demo_does_not_tell_maria_where_alex_lives(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    lines: list[str] = []
    with Engine.load(root, db=str(tmp_path / "demo.db")) as engine:
        play(engine.agent("demo"), say=lines.append)
    assert (SCRIPT[4].user, SCRIPT[5].user) == ("alex", "maria")
    assert SCRIPT[4].question == SCRIPT[5].question == WHERE
    text = "\n".join(lines)
    alex = text.split("===== turn 5:")[1].split("===== turn 6:")[0]
    maria = text.split("===== turn 6:")[1].split("===== turn 7:")[0]
    assert "=> answer: Вы живёте в Берлине." in alex  # alex's memory answered him
    assert "not stored: the answer may use per-user context" in alex
    assert "Берлин" not in maria and "Вы живёте" not in maria
    assert "Отвечено из кэша" not in maria
    assert "=> answer: Я пока не знаю, где вы живёте." in maria


def test_an_answer_given_after_a_script_read_the_users_state_is_not_shared(
    tmp_path: Path,
) -> None:
    """User-scoped state is per-user context too: a script hook that read a user's state at
    before_user_message keeps that turn's answer out of a shared cache; the same turn for a
    user with no state is shared."""
    root = tmp_path / "config"
    (root / "agents/a/hooks").mkdir(parents=True)
    (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text("hooks: [faq, vip]\n", encoding="utf-8")
    faq = {"kind": "faq_cache", "name": "faq", "scope": "global", "fallback_score": 0.8}
    (root / "agents/a/hooks/faq.yaml").write_text(json.dumps(faq), encoding="utf-8")
    vip = (
        "kind: script_hook\nname: vip\nlanguage: javascript\nsource: |\n"
        "  function on_before_user_message(event, host) {\n"
        "    if (host.state.get('tier')) return {sections: ['a VIP customer']};\n"
        "    return null;\n"
        "  }\n"
        "  function on_after_turn(event, host) { host.state.set('tier', 'vip'); return null; }\n"
    )
    (root / "agents/a/hooks/vip.yaml").write_text(vip, encoding="utf-8")
    with Engine.load(root, db=str(tmp_path / "store.db")) as engine:
        agent = engine.agent("a")
        turn(agent, "alex", "warm-up question for the state", "ok")  # alex now has state
        _, done = turn(agent, "alex", *SHIPPING)
        assert any("read the user's state" in line for line in logs(done, "faq")), done.hooks
        first, done = turn(agent, "maria", *SHIPPING)  # maria has no state before her turn
        assert first.answer is None  # alex's answer was not shared...
        assert not any("per-user context" in line for line in logs(done, "faq"))
        first, _ = turn(agent, "carol", *SHIPPING)
        assert first.answer == SHIPPING[1]  # ...maria's, given without her state, is


def test_an_anonymous_session_s_state_keeps_its_answer_out_of_a_shared_cache(
    tmp_path: Path,
) -> None:
    """A visitor with only a session id has state of their own too (the session's): a script
    that read it at before_user_message keeps that turn's answer out of a shared cache."""
    root = tmp_path / "config"
    (root / "agents/a/hooks").mkdir(parents=True)
    (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text("hooks: [faq, cart]\n", encoding="utf-8")
    faq = {"kind": "faq_cache", "name": "faq", "scope": "global", "fallback_score": 0.8}
    (root / "agents/a/hooks/faq.yaml").write_text(json.dumps(faq), encoding="utf-8")
    cart = (
        "kind: script_hook\nname: cart\nlanguage: javascript\nsource: |\n"
        "  function on_before_user_message(event, host) {\n"
        "    var items = host.state.get('items');\n"
        "    return items ? {sections: ['cart: ' + items]} : null;\n"
        "  }\n"
        "  function on_after_turn(event, host) {\n"
        "    host.state.set('items', 'a ring'); return null;\n"
        "  }\n"
    )
    (root / "agents/a/hooks/cart.yaml").write_text(cart, encoding="utf-8")
    with Engine.load(root, db=str(tmp_path / "store.db")) as engine:
        agent = engine.agent("a")

        def visit(session: str, question: str, answer: str) -> tuple[Outcome, Outcome]:
            first = agent.before_user_message(question, session_id=session)
            said = first.answer if first.answer is not None else answer
            done = agent.after_turn(question, said, session_id=session, turn_id=first.turn_id)
            return first, done

        visit("s1", "warm-up question for the state", "ok")  # session s1 now has state
        _, done = visit("s1", "What is in my cart?", "Your cart holds a ring.")
        assert any("read the user's state" in line for line in logs(done, "faq")), done.hooks
        first, _ = visit("s2", "What is in my cart?", "Your cart is empty.")
        assert first.answer is None, "s1's answer was not shared with another visitor"


def script_agent(tmp_path: Path, script: str) -> Engine:
    """An agent with a shared FAQ cache and the JavaScript script hook ``ctx``."""
    root = tmp_path / "config"
    (root / "agents/a/hooks").mkdir(parents=True)
    (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text("hooks: [faq, ctx]\n", encoding="utf-8")
    faq = {"kind": "faq_cache", "name": "faq", "scope": "global", "fallback_score": 0.8}
    (root / "agents/a/hooks/faq.yaml").write_text(json.dumps(faq), encoding="utf-8")
    hook = "kind: script_hook\nname: ctx\nlanguage: javascript\nsource: |\n" + "".join(
        f"  {line}\n" for line in script.splitlines()
    )
    (root / "agents/a/hooks/ctx.yaml").write_text(hook, encoding="utf-8")
    return Engine.load(root, db=str(tmp_path / "store.db"))


def full_turn(
    agent: Agent, who: dict[str, str], question: str, answer: str, *, pass_turn: bool
) -> tuple[Outcome, Outcome]:
    """A turn with an LLM call: before_user_message, before_call (with the turn id or without,
    as a host that does not pass it back), a tool call, after_turn."""
    first = agent.before_user_message(question, **who)
    turn_id = {"turn_id": first.turn_id} if pass_turn else {}
    agent.before_call("be helpful", [{"role": "user", "content": question}], **who, **turn_id)
    agent.tool_call("lookup", {"q": question}, **who, **turn_id)
    said = first.answer if first.answer is not None else answer
    done = agent.after_turn(question, said, **who, turn_id=first.turn_id)
    return first, done


STATE_AT_BEFORE_CALL = """\
function on_before_call(event, host) {
  var tier = host.state.get('tier');
  return tier ? {sections: ['the customer is ' + tier]} : null;
}
function on_after_turn(event, host) { host.state.set('tier', 'vip'); return null; }
"""
STATE_AT_TOOL_CALL = """\
function on_tool_call(event, host) {
  var city = host.state.get('city');
  return city ? {input: {q: event.input.q, city: city}} : null;
}
function on_after_turn(event, host) { host.state.set('city', 'Berlin'); return null; }
"""
ENTRIES_AT_BEFORE_CALL = """\
function on_before_call(event, host) {
  var notes = host.entries.list('note');
  return notes.length ? {sections: ['earlier: ' + notes[0].data]} : null;
}
function on_after_turn(event, host) { host.entries.add('note', 'lives in Berlin'); return null; }
"""


@pytest.mark.parametrize("pass_turn", [True, False])
@pytest.mark.parametrize(
    "script", [STATE_AT_BEFORE_CALL, STATE_AT_TOOL_CALL, ENTRIES_AT_BEFORE_CALL]
)
def test_per_user_data_read_later_in_the_turn_keeps_its_answer_out_of_a_shared_cache(
    tmp_path: Path, script: str, pass_turn: bool
) -> None:
    """A script that reads the user's state or lists the conversation's entries at
    before_call or tool_call shapes the answer as much as one at before_user_message: that
    turn's answer is not learned for everyone; the same turn with nothing read is."""
    alex, maria, carol = (
        {"user_id": u, "session_id": f"s-{u}"} for u in ("alex", "maria", "carol")
    )
    with script_agent(tmp_path, script) as engine:
        agent = engine.agent("a")
        full_turn(agent, alex, "warm-up question for the state", "ok", pass_turn=pass_turn)
        _, done = full_turn(agent, alex, *SHIPPING, pass_turn=pass_turn)
        assert any("per-user context" in line for line in logs(done, "faq")), done.hooks
        first, done = full_turn(agent, maria, *SHIPPING, pass_turn=pass_turn)
        assert first.answer is None, "alex's answer was shared"
        assert not any("per-user context" in line for line in logs(done, "faq"))
        first, _ = full_turn(agent, carol, *SHIPPING, pass_turn=pass_turn)
        assert first.answer == SHIPPING[1]  # maria's, given with nothing of hers read, is


def test_an_answer_given_with_the_conversations_summary_is_not_shared(tmp_path: Path) -> None:
    """compaction shows the model its summary of the session's earlier turns at before_call:
    the answer may use what the user said before, so a shared cache does not learn it."""
    root = tmp_path / "config"
    (root / "agents/a/hooks").mkdir(parents=True)
    (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text("hooks: [faq, compact]\n", encoding="utf-8")
    faq = {"kind": "faq_cache", "name": "faq", "scope": "global", "fallback_score": 0.8}
    compact = {"kind": "compaction", "name": "compact", "keep": 1, "every": 1}
    for name, spec in (("faq", faq), ("compact", compact)):
        (root / f"agents/a/hooks/{name}.yaml").write_text(json.dumps(spec), encoding="utf-8")
    alex, maria, carol = (
        {"user_id": u, "session_id": f"s-{u}"} for u in ("alex", "maria", "carol")
    )
    with Engine.load(root, db=str(tmp_path / "store.db")) as engine:
        agent = engine.agent("a")
        for n in range(3):  # enough turns for a summary
            full_turn(agent, alex, f"warm-up question number {n}", "ok", pass_turn=False)
        _, done = full_turn(agent, alex, *SHIPPING, pass_turn=False)
        assert any("compaction hook compact" in line for line in logs(done, "faq")), done.hooks
        first, _ = full_turn(agent, maria, *SHIPPING, pass_turn=False)
        assert first.answer is None, "alex's answer was shared"
        first, _ = full_turn(agent, carol, *SHIPPING, pass_turn=False)
        assert first.answer == SHIPPING[1]  # maria's, given with no summary of hers, is
