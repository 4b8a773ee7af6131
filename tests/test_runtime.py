"""The Python API: agents, typed outcomes, scope, async forms, many threads and tasks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine, EngineError
from engine.errors import EventError
from tests.conftest import REPO

FILES = {
    "agents/a/agent.yaml": "hooks: [ctx, esc]\n",
    "agents/a/hooks/ctx.yaml": "kind: inject\nname: ctx\nfirst_n: 1\n"
    "messages: [{role: system, content: 'hi {{question}}'}]\n",
    "agents/a/hooks/esc.yaml": "kind: escalate\nname: esc\nmessage: call us\n"
    "off_topic_keywords: [iphone]\nsuppress_on_off_topic: true\n",
}


def test_unknown_agent_names_the_loaded_ones(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(FILES))
    with pytest.raises(EngineError, match=r"no agent 'b' \(loaded: a\)"):
        engine.agent("b")


def test_outcomes_are_typed_per_point(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    agent = load(project(FILES)).agent("a")
    out = agent.before_user_message("iphone?", user_id="u1", session_id="s1")
    assert out.answer == "call us" and out.short_circuit and out.turn_id
    assert out.messages == [{"role": "system", "content": "hi iphone?"}]
    d = agent.tool_call("delete_file", {"path": "a.txt"}, user_id="u1")
    assert not d.blocked and d.reason is None and d.input == {"path": "a.txt"}
    r = agent.tool_result("read", {}, {"rows": [1, 2]})
    assert r.result == {"rows": [1, 2]}
    c = agent.before_call(
        "be brief", [{"role": "user", "content": "x"}], tools=["a"], settings={"temperature": 0}
    )
    assert c.instruction == "be brief" and c.tools == ["a"] and c.settings == {"temperature": 0}
    f = agent.feedback(out.turn_id, "like", user_id="u1")
    assert f.turn_id == out.turn_id


def test_bad_event_fields_are_raised_as_event_errors(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    agent = load(project(FILES)).agent("a")
    with pytest.raises(EventError) as info:
        agent.feedback("t1", "meh")  # a mistake of the host's call: raised, no hook runs
    assert info.value.errors[0]["loc"] == ["rating"]
    with pytest.raises(EventError, match="name: Input should be a valid string"):
        agent.evaluate("tool_call", {"name": 5})
    with pytest.raises(EventError) as info:  # not JSON data: the host's mistake, raised too
        agent.tool_call("shell", {"data": b"x"})
    assert info.value.errors == [{"loc": ["input", "data"], "msg": "bytes is not JSON"}]


def test_async_forms(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    agent = load(project(FILES)).agent("a")

    async def main() -> list[bool]:
        outs = await asyncio.gather(
            *(agent.abefore_user_message("iphone", user_id=f"u{i}") for i in range(20))
        )
        d = await agent.atool_call("t", {"a": 1})
        await agent.aafter_turn("q", "a")
        await agent.aafter_loop("job_done")
        return [o.answer == "call us" for o in outs] + [d.input == {"a": 1}]

    assert all(asyncio.run(main()))


def test_many_threads_share_one_engine(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(FILES))
    agent = engine.agent("a")
    errors: list[BaseException] = []
    injected: list[int] = []

    def work(n: int) -> None:
        try:
            count = 0
            for _ in range(50):
                count += bool(agent.before_user_message("q", user_id=f"user{n}").messages)
            injected.append(count)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert injected == [1] * 8  # first_n: 1 held per scope under concurrency
    assert len(engine.records(limit=1000)) == 400


def test_close_is_idempotent_and_a_context_manager(tmp_path: Path) -> None:
    with Engine.load(REPO / "config", db=str(tmp_path / "x.db")) as engine:
        engine.agent("demo").after_loop("job_done")
    engine.close()


COUNTER = {
    "agents/a/agent.yaml": "hooks: [counter]\n",
    "agents/a/hooks/counter.yaml": (
        "kind: script_hook\nname: counter\nlanguage: python\nsource: |\n"
        "  def on_tool_call(event, host):\n"
        "      n = (host.state.get('n') or 0) + 1\n"
        "      host.state.set('n', n)\n"
        "      return {'notice': str(n)}\n"
    ),
}


def test_an_in_memory_store_keeps_records_and_state_across_threads(
    project: Callable[[dict[str, str]], Path],
) -> None:
    errors: list[BaseException] = []
    with Engine.load(project(COUNTER), db=":memory:") as engine:
        agent = engine.agent("a")

        def calls(user: str) -> None:
            try:
                for n in range(1, 11):
                    out = agent.tool_call("t", {}, user_id=user, host="codex")
                    assert out.notices == [str(n)], out.hooks[0].error
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=calls, args=(f"u{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        engine.flush()
        records = engine.records(limit=100)
        assert len(records) == 40 and {r.host for r in records} == {"codex"}
        assert engine.status()["records"]["dropped"] == {}
        assert engine.store.state_load("a:counter", "user:u3") == {"n": 10}
