"""Kind compaction: folds exactly when more than keep + every turns are not summarised, shows
the model the summary and the recent turns only, with each summarizer (offline, a sandboxed
script in Python and JavaScript, a provider on a scripted loopback server), and replays."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.errors import ConfigError
from engine.replay import load_records, replay
from tests import llm_server
from tests.llm_server import ScriptedLLM

llm = llm_server.llm

SUMMARIZE = {
    "python": "def summarize(earlier_summary, turns):\n"
    "    ns = [str(t['n']) for t in turns]\n"
    "    return (earlier_summary + ' | ' if earlier_summary else '') + 'turns ' + ','.join(ns)\n",
    "javascript": "function summarize(earlier_summary, turns) {\n"
    "  var ns = turns.map(function (t) { return String(t.n); });\n"
    "  return (earlier_summary ? earlier_summary + ' | ' : '') + 'turns ' + ns.join(',');\n}\n",
}


def hook_yaml(summarizer: str = "offline", extra: str = "") -> str:
    return (
        f"kind: compaction\nname: compact\nkeep: 20\nevery: 10\nsummarizer: {summarizer}\n" + extra
    )


def script_yaml(language: str) -> str:
    source = textwrap.indent(SUMMARIZE[language], "  ")
    return hook_yaml("script", f"language: {language}\nsource: |\n{source}")


@pytest.fixture
def make(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> Callable[..., Engine]:
    def engine(hook: str, provider: dict[str, Any] | None = None) -> Engine:
        settings = "process: test\n"
        if provider:
            settings += "provider: " + json.dumps(provider) + "\n"
        files = {
            "engine.yaml": settings,
            "agents/chat/agent.yaml": "hooks: [compact]\n",
            "agents/chat/hooks/compact.yaml": hook,
        }
        return load(project(files))

    return engine


def at(n: int) -> str:
    return f"2026-05-01T10:{n // 60:02d}:{n % 60:02d}+00:00"


def converse(engine: Engine, turns: int, session: str = "s1") -> list[int]:
    """``turns`` turns; returns the turns after which a fold happened."""
    agent = engine.agent("chat")
    for n in range(1, turns + 1):
        agent.after_turn(
            f"question {n}. More words here.",
            f"answer {n}. Details follow.",
            session_id=session,
            turn_id=f"t{n}",
            time=at(n),
        )
    return [e["data"]["at"] for e in agent.entries(session, "compact.summary")]


def history(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "be brief"}]
    for n in range(1, turns + 1):
        messages += [
            {"role": "user", "content": f"question {n}. More words here."},
            {"role": "assistant", "content": f"answer {n}. Details follow."},
        ]
    return [*messages, {"role": "user", "content": f"question {turns + 1}"}]


def test_over_sixty_turns_folds_happen_exactly_at_31_42_and_53(
    make: Callable[..., Engine],
) -> None:
    engine = make(hook_yaml())
    assert converse(engine, 60) == [31, 42, 53]
    summaries = engine.agent("chat").entries("s1", "compact.summary")
    assert [s["data"]["through"] for s in summaries] == [11, 22, 33]
    assert [s["turn"] for s in summaries] == ["t31", "t42", "t53"]
    folds = [
        run.extras["folded"]
        for r in engine.records(agent="chat", point="after_turn", limit=100)
        for run in r.hooks
        if "folded" in run.extras
    ]
    assert sorted(folds) == [[1, 11], [12, 22], [23, 33]]


def test_before_call_shows_the_summary_and_the_recent_turns_only(
    make: Callable[..., Engine],
) -> None:
    engine = make(hook_yaml())
    converse(engine, 60)
    out = engine.agent("chat").before_call(
        instruction="Help.", messages=history(60), session_id="s1", time=at(61)
    )
    assert out.sections[0].startswith("Summary of the conversation so far:\n")
    assert "Turn 1: the user asked: question 1. The answer: answer 1." in out.sections[0]
    assert "Turn 33:" in out.sections[0] and "Turn 34:" not in out.sections[0]
    users = [m["content"] for m in out.messages if m["role"] == "user"]
    assert users[0] == "question 34. More words here." and users[-1] == "question 61"
    assert len(users) == 28 and out.messages[0] == {"role": "system", "content": "be brief"}
    (record,) = engine.records(agent="chat", point="before_call")
    extras = record.hooks[0].extras
    assert extras["through"] == 33 and extras["messages_dropped"] == 66


def test_before_call_changes_nothing_before_the_first_fold(make: Callable[..., Engine]) -> None:
    engine = make(hook_yaml())
    converse(engine, 30)
    out = engine.agent("chat").before_call(
        instruction="Help.", messages=history(30), session_id="s1", time=at(31)
    )
    assert out.sections == [] and not out.changed


def test_the_offline_summary_is_the_same_every_time(make: Callable[..., Engine]) -> None:
    engine = make(hook_yaml())
    converse(engine, 42, "a")
    converse(engine, 42, "b")
    a, b = (engine.agent("chat").entries(s, "compact.summary") for s in ("a", "b"))
    assert [e["data"]["text"] for e in a] == [e["data"]["text"] for e in b]
    assert a[-1]["data"]["text"].splitlines()[0].startswith("Turn 1: ")
    assert len(a[-1]["data"]["text"].splitlines()) == 22


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_a_script_summarizer_folds_with_the_earlier_summary(
    make: Callable[..., Engine], language: str
) -> None:
    engine = make(script_yaml(language))
    assert converse(engine, 42) == [31, 42]
    texts = [e["data"]["text"] for e in engine.agent("chat").entries("s1", "compact.summary")]
    first = "turns " + ",".join(str(n) for n in range(1, 12))
    assert texts == [first, first + " | turns " + ",".join(str(n) for n in range(12, 23))]


def test_a_failing_script_summarizer_leaves_the_fold_for_the_next_turn(
    make: Callable[..., Engine],
) -> None:
    source = "def summarize(earlier_summary, turns):\n    return 42\n"
    engine = make(
        hook_yaml("script", "language: python\nsource: |\n" + textwrap.indent(source, "  "))
    )
    assert converse(engine, 32) == []
    failed = [r for r in engine.records(agent="chat", point="after_turn") if r.hooks[0].error]
    assert len(failed) == 2 and "summarize must return text" in str(failed[0].hooks[0].error)


def test_a_summarize_script_must_define_summarize(make: Callable[..., Engine]) -> None:
    with pytest.raises(ConfigError) as caught:
        make(
            hook_yaml("script", "language: python\nsource: |\n  def other(a, b):\n    return ''\n")
        )
    assert caught.value.problems[0].field == "source"


def test_a_script_field_needs_summarizer_script(make: Callable[..., Engine]) -> None:
    with pytest.raises(ConfigError) as caught:
        make(hook_yaml("offline", "script: s.py\n"))
    assert "summarizer: script" in str(caught.value)


def test_the_provider_summarizer_asks_the_scripted_server(
    make: Callable[..., Engine], llm: ScriptedLLM
) -> None:
    def answer(request: dict[str, Any]) -> str:
        asked = json.loads(request["messages"][1]["content"])
        ns = [t["n"] for t in asked["turns"]]
        return f"SUMMARY of {ns[0]}-{ns[-1]} after [{asked['earlier_summary']}]"

    llm.answer = answer
    provider = {"kind": "openai", "base_url": llm.url, "timeout_s": 2}
    engine = make(hook_yaml("provider", "model: small-model\nmax_tokens: 99\n"), provider)
    assert converse(engine, 42) == [31, 42]
    texts = [e["data"]["text"] for e in engine.agent("chat").entries("s1", "compact.summary")]
    assert texts == [
        "SUMMARY of 1-11 after []",
        "SUMMARY of 12-22 after [SUMMARY of 1-11 after []]",
    ]
    assert [r["model"] for r in llm.requests] == ["small-model", "small-model"]
    assert {r["max_tokens"] for r in llm.requests} == {99}
    asked = len(llm.requests)
    report = replay(engine, load_records(engine, agent="chat"))
    assert report.total == 42 and report.same == 42 and len(llm.requests) == asked


def test_a_failing_provider_falls_back_to_the_offline_summary(
    make: Callable[..., Engine], llm: ScriptedLLM
) -> None:
    provider = {"kind": "openai", "base_url": llm.url, "timeout_s": 2}
    engine = make(hook_yaml("provider"), provider)  # the server answers 500 to everything
    assert converse(engine, 31) == [31]
    (summary,) = engine.agent("chat").entries("s1", "compact.summary")
    assert summary["data"]["text"].startswith("Turn 1: the user asked: question 1.")
    folds = [
        run.extras
        for r in engine.records(agent="chat", point="after_turn")
        for run in r.hooks
        if "folded" in run.extras
    ]
    assert "HTTP 500" in folds[0]["fallback"]


@pytest.mark.parametrize("summarizer", ["offline", "script"])
def test_replay_shows_exactly_what_the_model_was_shown(
    make: Callable[..., Engine], summarizer: str
) -> None:
    engine = make(hook_yaml() if summarizer == "offline" else script_yaml("javascript"))
    converse(engine, 45)
    engine.agent("chat").before_call(
        instruction="Help.", messages=history(45), session_id="s1", time=at(46)
    )
    records = load_records(engine, agent="chat")
    report = replay(engine, records)
    assert report.total == 46 and report.same == 46 and not report.differences


def test_entries_of_a_conversation_go_with_its_session(make: Callable[..., Engine]) -> None:
    engine = make(hook_yaml())
    converse(engine, 31)
    assert engine.store.memory_forget("session:s1") >= 32
    out = engine.agent("chat").before_call(
        instruction="Help.", messages=history(31), session_id="s1", time=at(32)
    )
    assert out.sections == [] and engine.agent("chat").entries("s1") == []


def test_compaction_on_postgresql(project: Callable[[dict[str, str]], Path]) -> None:
    from tests.backends import pg_schema, require_pg

    require_pg()
    files = {
        "engine.yaml": "process: test\n",
        "agents/chat/agent.yaml": "hooks: [compact]\n",
        "agents/chat/hooks/compact.yaml": hook_yaml(),
    }
    with pg_schema() as url:
        engine = Engine.load(project(files), db=url)
        try:
            assert converse(engine, 42) == [31, 42]
            out = engine.agent("chat").before_call(
                instruction="Help.", messages=history(42), session_id="s1", time=at(43)
            )
            assert next(m["content"] for m in out.messages if m["role"] == "user") == (
                "question 23. More words here."
            )
        finally:
            engine.close()
