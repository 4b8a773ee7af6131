"""Sessions: a conversation's own layer of hooks between the agent's and the host layer's."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from engine.cli.hookengine import main as hookengine
from engine.errors import ConfigError, EventError
from engine.runtime import Engine
from tests import guard_kind as guards
from tests.conftest import REPO
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture


def inject(name: str) -> str:
    messages = f"[{{role: system, content: {name}}}]"
    return f"kind: inject\nname: {name}\nnotice: {name}\nmessages: {messages}\n"


GUARD = "kind: script_hook\nname: no_shell\nscript: no_shell.py\n"
NO_SHELL = (
    "def on_tool_call(event, host):\n"
    "    if event['name'] == 'shell':\n        return {'block': 'no shell in this session'}\n"
)
FILES = {
    "engine.yaml": "process: t\nhooks: [rules]\n",
    "hooks/rules.yaml": inject("rules"),
    "agents/a/agent.yaml": "hooks: [base, shared]\n",
    "agents/a/hooks/base.yaml": inject("base"),
    "agents/a/hooks/shared.yaml": inject("shared"),
    "agents/a/hooks/extra.yaml": inject("extra"),
    "agents/a/hooks/other.yaml": inject("other"),
    "agents/a/hooks/rules.yaml": inject("rules"),
    "agents/a/hooks/no_shell.yaml": GUARD,
    "agents/a/hooks/no_shell.py": NO_SHELL,
    "agents/a/hooks/extra.test.yaml": "[]\n",
}


@pytest.fixture
def root(project: Callable[[dict[str, str]], Path]) -> Path:
    return project(FILES)


@pytest.fixture
def engine(root: Path, load: Callable[..., Engine]) -> Engine:
    return load(root)


def order(engine: Engine, session_hooks: list[str], **options: bool) -> list[str]:
    with engine.agent("a").session("s1", session_hooks, **options) as session:
        return session.before_user_message("hi").notices


def test_a_session_runs_agent_then_session_then_host_hooks(engine: Engine) -> None:
    assert engine.agent("a").before_user_message("hi").notices == ["base", "shared", "rules"]
    assert order(engine, ["extra", "other"]) == ["base", "shared", "extra", "other", "rules"]
    assert order(engine, ["other", "extra"]) == ["base", "shared", "other", "extra", "rules"]


def test_a_hook_in_several_layers_runs_once_in_its_outermost(engine: Engine) -> None:
    # shared is the agent's and the session's: it runs once, in the session's place
    assert order(engine, ["extra", "shared"]) == ["base", "extra", "shared", "rules"]
    # rules is the host layer's too: it runs once, last
    assert order(engine, ["rules", "extra"]) == ["base", "shared", "extra", "rules"]


def test_drop_agent_hooks_leaves_the_session_and_host_layers(engine: Engine) -> None:
    assert order(engine, ["extra"], drop_agent_hooks=True) == ["extra", "rules"]
    assert order(engine, [], drop_agent_hooks=True) == ["rules"]
    assert order(engine, ["shared"], drop_agent_hooks=True) == ["shared", "rules"]


def test_records_name_each_hooks_layer(engine: Engine) -> None:
    with engine.agent("a").session("s9", ["extra", "shared"], drop_agent_hooks=False) as s:
        out = s.before_user_message("hi", user_id="u1")
    assert [(h.name, h.layer) for h in out.hooks] == [
        ("base", "agent"),
        ("extra", "session"),
        ("shared", "session"),
        ("rules", "host"),
    ]
    engine.flush()
    (record,) = engine.records(agent="a")
    assert [(h.name, h.layer) for h in record.hooks] == [(h.name, h.layer) for h in out.hooks]
    assert record.scope["session_id"] == "s9" and record.scope["user_id"] == "u1"
    schema = json.loads((REPO / "docs/schemas/records.json").read_text())
    jsonschema.validate([record.model_dump(mode="json")], schema)  # `records --json`'s shape


def test_a_session_handle_has_every_point_and_the_async_forms(engine: Engine) -> None:
    with engine.agent("a").session("s2", ["no_shell"]) as session:
        assert session.tool_call("shell", {}).reason == "no shell in this session"
        assert not session.tool_call("ls", {}).blocked
        assert asyncio.run(session.atool_call("shell", {})).blocked
        out = asyncio.run(session.abefore_user_message("hi"))
        assert out.notices == ["base", "shared", "rules"]
        assert session.evaluate("tool_call", {"name": "shell", "input": {}}).blocked
        assert session.after_turn("q", "a").point == "after_turn"
    # the agent itself, and other sessions, are not changed by it
    assert not engine.agent("a").tool_call("shell", {}).blocked
    assert engine.agent("a").last_prompt("s2") == "hi"


def test_the_handles_session_id_is_used_and_another_is_refused(engine: Engine) -> None:
    with engine.agent("a").session("mine", ["extra"]) as session:
        assert session.before_user_message("q").hooks[0].name == "base"
        assert engine.agent("a").last_prompt("mine") == "q"
        with pytest.raises(EventError) as err:
            session.before_user_message("q", session_id="theirs")
    assert err.value.errors[0]["loc"] == ["session_id"]


def test_unknown_hook_names_name_the_folder_and_the_hooks_there(engine: Engine) -> None:
    with pytest.raises(ConfigError) as err:
        engine.agent("a").session("s", ["extar", "../../hooks/rules", "extra.test"])
    problems = err.value.problems
    assert len(problems) == 3
    assert all(p.path.endswith("agents/a/hooks") for p in problems)
    there = "base, extra, no_shell, other, rules, shared"
    assert all(f"(hooks there: {there})" in p.message for p in problems)
    assert problems[0].hint == "did you mean 'extra'?" and problems[0].field == "hooks[0]"
    with pytest.raises(ConfigError, match="'extra' is listed twice"):
        engine.agent("a").session("s", ["extra", "extra"])
    with pytest.raises(EventError):
        engine.agent("a").session("s", "extra")  # type: ignore[arg-type]


def test_a_broken_session_hook_is_refused_with_its_file_and_line(
    root: Path, engine: Engine
) -> None:
    (root / "agents/a/hooks/other.yaml").write_text("kind: inject\nname: other\nfirst_n: 0\n")
    with pytest.raises(ConfigError) as err:
        engine.agent("a").session("s", ["other"])
    (problem,) = err.value.problems
    assert problem.path.endswith("agents/a/hooks/other.yaml") and problem.line == 3
    assert problem.field == "first_n"


def test_sessions_with_the_same_hooks_share_one_built_layer_until_the_last_closes(
    engine: Engine,
) -> None:
    agent = engine.agent("a")
    first, second = agent.session("s1", ["extra"]), agent.session("s2", ["extra"])
    built = first.pipeline
    assert second.pipeline is built
    extra = next(s.hook for s in built.slots if s.hook.name == "extra")
    # a layer builds its own hooks, even one the agent has too
    shared = agent.session("s3", ["shared"])
    agent_shared = next(s.hook for s in agent.pipeline.slots if s.hook.name == "shared")
    (own,) = [s.hook for s in shared.pipeline.slots if s.hook.name == "shared"]
    assert own is not agent_shared and own.version == agent_shared.version
    first.close()
    first.close()
    assert first.closed and second.pipeline is built
    second.close()
    with pytest.raises(EventError, match="closed"):
        second.before_user_message("hi")
    third = agent.session("s4", ["extra"])
    assert third.pipeline is not built
    assert next(s.hook for s in third.pipeline.slots if s.hook.name == "extra") is not extra
    del third
    gc.collect()
    assert ((("extra",), False)) not in agent.sessions._layers
    shared.close()


def test_a_session_follows_its_agents_reloads(root: Path, engine: Engine) -> None:
    agent = engine.agent("a")
    with agent.session("s", ["extra"]) as session:
        assert session.before_user_message("hi").notices == ["base", "shared", "extra", "rules"]
        (root / "agents/a/agent.yaml").write_text("hooks: [base]\n")
        assert engine.reload_agent("a")
        out = session.before_user_message("hi")
        assert out.notices == ["base", "extra", "rules"]
        assert out.generation == agent.pipeline.generation >= 1
        # a session hook's own file changed: the agent's reload makes the session read it
        (root / "agents/a/hooks/extra.yaml").write_text(
            inject("extra").replace("notice: extra", "notice: extra v2")
        )
        assert engine.reload_agent("a")
        assert session.before_user_message("hi").notices == ["base", "extra v2", "rules"]
        # a session hook that no longer loads: the last good one stays
        (root / "agents/a/hooks/extra.yaml").write_text("kind: inject\nname: extra\nfirst_n: 0\n")
        assert engine.reload_agent("a")
        assert session.before_user_message("hi").notices == ["base", "extra v2", "rules"]


def test_a_watched_session_hook_file_goes_live_on_save(
    root: Path, load: Callable[..., Engine]
) -> None:
    engine = load(root, watch=True)
    with engine.agent("a").session("s", ["other"]) as session:
        assert "other" in session.before_user_message("hi").notices
        path = root / "agents/a/hooks/other.yaml"
        path.write_text(inject("other").replace("notice: other", "notice: other v2"))
        deadline = threading.Event()
        for _ in range(300):
            if "other v2" in session.before_user_message("hi").notices:
                break
            deadline.wait(0.01)
        assert "other v2" in session.before_user_message("hi").notices


def test_two_sessions_with_different_layers_run_at_once(engine: Engine) -> None:
    agent = engine.agent("a")
    wanted = {
        "x": (["extra"], ["base", "shared", "extra", "rules"]),
        "y": (["other"], ["base", "shared", "other", "rules"]),
        "z": (["extra"], ["extra", "rules"]),
        "w": (["extra"], ["base", "shared", "extra", "rules"]),  # x's layer, shared
    }
    seen: dict[str, set[tuple[str, ...]]] = {k: set() for k in wanted}
    start = threading.Barrier(len(wanted))

    def talk(sid: str) -> None:
        hooks, _ = wanted[sid]
        with agent.session(sid, hooks, drop_agent_hooks=sid == "z") as session:
            start.wait()
            for _ in range(40):
                seen[sid].add(tuple(session.before_user_message("hi").notices))

    threads = [threading.Thread(target=talk, args=(sid,)) for sid in wanted]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {sid: {tuple(expected)} for sid, (_, expected) in wanted.items()}
    assert agent.sessions._layers == {}


def test_explain_shows_a_sessions_effective_order(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["explain", "--config", str(root), "--agent", "a", "--point", "before_user_message"]
    assert hookengine([*args, "--session-hooks", "extra,shared", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    schema = json.loads((REPO / "docs/schemas/explain-agent.json").read_text())
    jsonschema.validate(data, schema)
    entries = data["points"]["before_user_message"]
    assert [(e["name"], e["layer"]) for e in entries] == [
        ("base", "agent"),
        ("extra", "session"),
        ("shared", "session"),
        ("rules", "host"),
    ]
    assert hookengine([*args, "--session-hooks", "extra", "--drop-agent-hooks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1:2] + line.split()[5:6] for line in lines[2:4]] == [
        ["extra", "session"],
        ["rules", "host"],
    ]
    assert hookengine([*args, "--session-hooks", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no hook 'nope'" in err and "hooks there: base, extra" in err
    assert hookengine([*args, "--drop-agent-hooks"]) == 2
    assert "--drop-agent-hooks goes with --session-hooks" in capsys.readouterr().err


@pytest.mark.usefixtures("guard_kind")
def test_a_layers_hooks_close_when_its_last_handle_closes_and_nothing_runs_on_them(
    root: Path, engine: Engine
) -> None:
    (root / "agents/a/hooks/gate.yaml").write_text(
        "kind: test_guard\nname: gate\nforbidden: [shell]\ngated: true\n"
    )
    session = engine.agent("a").session("s", ["gate"])
    answers: list[bool] = []
    running = threading.Thread(target=lambda: answers.append(session.tool_call("shell").blocked))
    running.start()
    assert guards.ENTERED.wait(5)
    session.close()
    assert guards.CLOSED == []  # an evaluation still runs on it
    guards.GATE.set()
    running.join()
    assert answers == [True]
    (version,) = guards.CLOSED
    assert len(version) == 12


def test_replay_runs_a_sessions_records_through_its_layers_again(
    root: Path, engine: Engine
) -> None:
    from engine.replay import replay

    agent = engine.agent("a")
    with agent.session("s", ["no_shell"], drop_agent_hooks=True) as session:
        assert session.tool_call("shell", {}).blocked
        out = session.before_user_message("hi")
    assert out.session == {"hooks": ["no_shell"], "drop_agent_hooks": True}
    assert agent.before_user_message("hi").session is None
    engine.flush()
    records = sorted(engine.records(agent="a"), key=lambda r: r.time)
    assert records[0].outcome["session"] == out.session
    report = replay(engine, records)
    assert (report.total, report.same, report.differences) == (3, 3, [])
    # the session's hook changed since: replay shows the difference
    (root / "agents/a/hooks/no_shell.py").write_text(
        "def on_tool_call(event, host):\n    return None\n"
    )
    report = replay(engine, records)
    assert [d.record.point for d in report.differences] == ["tool_call"]
    # a session hook that is gone: its records are skipped, saying why
    (root / "agents/a/hooks/no_shell.yaml").unlink()
    report = replay(engine, records)
    assert report.skipped == 2 and "no hook 'no_shell'" in report.skips[0][1]


@pytest.mark.usefixtures("guard_kind")
def test_hooks_an_evaluation_runs_stay_open_across_a_reload_and_the_last_close(
    root: Path, engine: Engine
) -> None:
    (root / "agents/a/hooks/gate.yaml").write_text(
        "kind: test_guard\nname: gate\nforbidden: [shell]\ngated: true\n"
    )
    session = engine.agent("a").session("s", ["gate"])
    running = threading.Thread(target=lambda: session.tool_call("shell"))
    running.start()
    assert guards.ENTERED.wait(5)
    (root / "agents/a/agent.yaml").write_text("hooks: [base]\n")
    assert engine.reload_agent("a")
    rebuilt = session.pipeline  # the new generation, the same (unchanged) session hook
    assert rebuilt.generation >= 1 and [s.hook.name for s in rebuilt.slots][-2:] == [
        "gate",
        "rules",
    ]
    session.close()
    assert guards.CLOSED == []  # the evaluation that started before the reload still runs it
    guards.GATE.set()
    running.join()
    assert len(guards.CLOSED) == 1


def test_sessions_with_different_layers_interleave_under_one_event_loop(engine: Engine) -> None:
    agent = engine.agent("a")

    async def talk(sid: str, hooks: list[str]) -> list[tuple[str, ...]]:
        with agent.session(sid, hooks) as session:
            seen = []
            for _ in range(10):
                out = await session.abefore_user_message("hi")
                seen.append(tuple(out.notices))
                await asyncio.sleep(0)
            return seen

    async def both() -> list[list[tuple[str, ...]]]:
        return await asyncio.gather(talk("x", ["extra"]), talk("y", ["other", "no_shell"]))

    x, y = asyncio.run(both())
    assert set(x) == {("base", "shared", "extra", "rules")}
    assert set(y) == {("base", "shared", "other", "rules")}
