"""Conversation entries end to end: written by Python and JavaScript scripts and by the host,
listed in order, stamped with the turn, capped, recorded, replayed, and deleted with the
session's or the user's data, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from engine.errors import EventError
from engine.replay import load_records, replay
from tests.backends import pg_schema, require_pg
from tests.kinds.test_script_hook import agent_files, inline_hook

LANGS = ("py", "js")
KEEPER = {
    "py": "def on_after_turn(event, host):\n"
    "    host.entries.add('topic', {'q': event['question']})\n"
    "    return None\n\n"
    "def on_before_call(event, host):\n"
    "    seen = host.entries.list('topic', last=2)\n"
    "    modes = host.entries.list('mode')\n"
    "    mode = modes[-1]['data'] if modes else 'none'\n"
    "    topics = ', '.join(e['data']['q'] + '@' + str(e['turn']) for e in seen)\n"
    "    return {'sections': ['mode ' + mode + '; topics ' + topics]}\n",
    "js": "function on_after_turn(event, host) {\n"
    "  host.entries.add('topic', {q: event.question});\n"
    "  return null;\n}\n"
    "function on_before_call(event, host) {\n"
    "  var seen = host.entries.list('topic', {last: 2});\n"
    "  var modes = host.entries.list('mode');\n"
    "  var mode = modes.length ? modes[modes.length - 1].data : 'none';\n"
    "  var topics = seen.map(function (e) { return e.data.q + '@' + e.turn; }).join(', ');\n"
    "  return {sections: ['mode ' + mode + '; topics ' + topics]};\n}\n",
}
T = "2026-05-01T10:00:0{}+00:00"


def files() -> dict[str, str]:
    out: dict[str, str] = {"engine.yaml": "process: test\n"}
    for lang in LANGS:
        out |= agent_files(f"keep_{lang}", {"keeper": inline_hook("keeper", lang, KEEPER[lang])})
    return out


@pytest.fixture
def engine(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Engine:
    return load(project(files()))


def talk(engine: Engine, lang: str, session: str, user: str | None = "u1") -> list[str]:
    """Three turns; returns what before_call showed after each."""
    agent = engine.agent(f"keep_{lang}")
    shown = []
    for i, question in enumerate(("alpha", "beta", "gamma")):
        scope = {"session_id": session, "user_id": user, "turn_id": f"t{i}", "time": T.format(i)}
        agent.after_turn(question, "ok", **scope)
        shown.append(agent.before_call(instruction="i", **scope).sections[0])
    return shown


@pytest.mark.parametrize("lang", LANGS)
def test_entries_a_script_adds_are_listed_in_order_with_their_turn(
    engine: Engine, lang: str
) -> None:
    assert talk(engine, lang, "s1") == [
        "mode none; topics alpha@t0",
        "mode none; topics alpha@t0, beta@t1",
        "mode none; topics beta@t1, gamma@t2",
    ]
    listed = engine.agent(f"keep_{lang}").entries("s1", "topic")
    assert [(e["data"], e["turn"]) for e in listed] == [
        ({"q": "alpha"}, "t0"),
        ({"q": "beta"}, "t1"),
        ({"q": "gamma"}, "t2"),
    ]
    assert engine.agent(f"keep_{lang}").entries("s2") == []  # another conversation's are apart


@pytest.mark.parametrize("lang", LANGS)
def test_an_entry_the_host_remembers_is_what_the_script_lists(engine: Engine, lang: str) -> None:
    agent = engine.agent(f"keep_{lang}")
    agent.remember("s1", "mode", "careful", turn_id="t9")
    agent.remember("s1", "mode", "terse")
    out = agent.before_call(instruction="i", session_id="s1")
    assert out.sections == ["mode terse; topics "]
    assert [e["data"] for e in agent.entries("s1", "mode")] == ["careful", "terse"]
    assert agent.entries("s1", "mode", last=1)[0]["turn"] is None
    assert agent.entries("s1", last=0) == []


def test_entries_are_in_the_turns_record(engine: Engine) -> None:
    talk(engine, "py", "s1")
    added = [
        run.extras["entries_added"]
        for r in engine.records(agent="keep_py", point="after_turn")
        for run in r.hooks
        if run.extras.get("entries_added")
    ]
    assert {"kind": "topic", "data": {"q": "gamma"}} in [a[0] for a in added] and len(added) == 3
    seen = [
        run.extras["entries_seen"]
        for r in engine.records(agent="keep_py", point="before_call")
        for run in r.hooks
    ]
    assert sorted(len(s) for s in seen) == [1, 2, 3]


@pytest.mark.parametrize("lang", LANGS)
def test_replay_shows_what_the_script_saw_including_the_hosts_entries(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"keep_{lang}")
    agent.remember("s1", "mode", "careful")
    talk(engine, lang, "s1")
    report = replay(engine, load_records(engine, agent=f"keep_{lang}"))
    assert report.total == 6 and report.same == 6 and not report.differences


@pytest.mark.parametrize("lang", LANGS)
def test_forgetting_a_user_or_a_session_deletes_its_entries(engine: Engine, lang: str) -> None:
    agent = engine.agent(f"keep_{lang}")
    talk(engine, lang, "s1", user="u1")
    talk(engine, lang, "s2", user=None)
    agent.remember("s3", "mode", "x", user_id="u2")
    assert engine.store.memory_forget("user:u1") >= 3
    assert agent.entries("s1") == [] and len(agent.entries("s2")) == 3
    assert engine.store.memory_forget("session:s2") >= 3 and agent.entries("s2") == []
    assert [e["data"] for e in agent.entries("s3")] == ["x"]


@pytest.mark.parametrize(
    ("session", "kind", "data", "loc"),
    [
        ("", "mode", 1, "session_id"),
        ("s", "", 1, "kind"),
        ("s", "k" * 65, 1, "kind"),
        ("s", "mode", "x" * 5000, "data"),
        ("s", "mode", {1, 2}, "data"),
        ("s", "mode", float("nan"), "data"),
        ("s", "mode", {1: "not a text key"}, "data"),
    ],
)
def test_the_host_is_refused_an_entry_the_store_would_not_keep_whole(
    engine: Engine, session: str, kind: str, data: object, loc: str
) -> None:
    with pytest.raises(EventError) as caught:
        engine.agent("keep_py").remember(session, kind, data)
    assert [e["loc"] for e in caught.value.errors] == [[loc]]
    assert engine.agent("keep_py").entries("s") == []


def test_a_conversation_keeps_its_newest_entries(engine: Engine) -> None:
    agent = engine.agent("keep_py")
    for i in range(260):
        agent.remember("s1", "n", i)
    numbers = [e["data"] for e in agent.entries("s1")]
    assert numbers == list(range(4, 260))


def test_entries_on_postgresql(project: Callable[[dict[str, str]], Path]) -> None:
    require_pg()
    with pg_schema() as url:
        engine = Engine.load(project(files()), db=url)
        try:
            assert talk(engine, "js", "s1")[-1] == "mode none; topics beta@t1, gamma@t2"
            engine.agent("keep_py").remember("s1", "mode", "careful", user_id="u1")
            assert len(engine.agent("keep_js").entries("s1")) == 3
            assert engine.store.memory_forget("user:u1") >= 4
            assert engine.agent("keep_js").entries("s1") == []
        finally:
            engine.close()


def test_the_async_forms_remember_and_list(engine: Engine) -> None:
    import asyncio

    agent = engine.agent("keep_js")

    async def main() -> list[dict[str, object]]:
        await agent.aremember("s1", "mode", "careful", turn_id="t1")
        await agent.aremember("s1", "mode", "terse")
        out = await agent.abefore_call(instruction="i", session_id="s1")
        assert out.sections == ["mode terse; topics "]
        return await agent.aentries("s1", "mode", last=1)

    (entry,) = asyncio.run(main())
    assert entry["data"] == "terse" and entry["turn"] is None
