"""Host profiles (engine/hosts.py): what each host can apply, and what evaluate(host=) does
with a change it cannot: block at tool_call, list it in ``unsupported`` elsewhere."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import EventError
from engine.hosts import HOSTS, profile
from engine.kinds.base import Mode
from engine.outcome import Outcome
from engine.pipeline import Services, evaluate
from engine.points import ACCEPTED, Point, make_event
from engine.runtime import Engine
from tests.conftest import REPO, pipeline, returning


def event(point: Point, **fields: Any) -> dict[str, Any]:
    return make_event(point, agent="test", time="2026-01-01T00:00:00+00:00", **fields)


TOOL = event(Point.TOOL_CALL, name="shell", input={"cmd": "ls"})
QUESTION = event(Point.BEFORE_USER_MESSAGE, question="hi")
RESULT = event(Point.TOOL_RESULT, name="shell", input={}, result="key sk-1")


# -- the table ----------------------------------------------------------------------------------


def test_every_host_is_known_by_name_and_an_unknown_one_is_an_event_error() -> None:
    assert set(HOSTS) == {
        "native",
        "opa",
        "litellm",
        "claude-code",
        "codex",
        "mcp",
        "langchain",
        "openai-agents",
    }
    assert all(profile(name).name == name for name in HOSTS)
    with pytest.raises(EventError) as info:
        profile("claude")
    assert info.value.errors[0]["loc"] == ["host"]
    assert "did you mean 'claude-code'" in info.value.errors[0]["msg"]
    with pytest.raises(EventError):
        profile(5)  # type: ignore[arg-type]


def test_native_and_opa_apply_every_field_every_point_accepts() -> None:
    for name in ("native", "opa"):
        host = profile(name)
        assert host.applies_all
        assert all(host.supports(p, f) for p in Point for f in ACCEPTED[p])


@pytest.mark.parametrize(
    ("host", "point", "field", "applies"),
    [
        ("claude-code", "before_user_message", "messages", True),
        ("claude-code", "before_user_message", "question", False),
        ("claude-code", "tool_call", "input", True),
        ("claude-code", "tool_result", "result", True),
        ("claude-code", "before_call", "instruction", False),
        ("claude-code", "before_assistant_message", "answer", False),
        ("codex", "tool_call", "input", True),
        ("codex", "tool_result", "result", False),
        ("litellm", "before_user_message", "question", True),
        ("litellm", "before_user_message", "messages", False),
        ("litellm", "tool_call", "input", False),
        ("litellm", "before_assistant_message", "answer", True),
        ("litellm", "tool_result", "result", False),
    ],
)
def test_what_a_host_can_apply(host: str, point: str, field: str, applies: bool) -> None:
    assert profile(host).supports(point, field) is applies
    assert profile(host).supports(Point(point), field) is applies


def test_a_profile_names_only_fields_its_point_accepts() -> None:
    for host in HOSTS.values():
        for point, fields in host.applies.items():
            assert fields <= ACCEPTED[point], (host.name, point)


def test_the_docs_table_matches_the_profiles() -> None:
    text = (REPO / "docs" / "hosts.md").read_text(encoding="utf-8")
    for host in HOSTS.values():
        for point in Point:
            if point is Point.FEEDBACK:
                continue
            row = re.search(rf"^\| `{point.value}` \|(.*)$", text, re.M)
            assert row, point
            cells = [c.strip() for c in row.group(1).split("|")]
            column = list(HOSTS).index(host.name)
            shown = set(re.findall(r"`(\w+)`", cells[column]))
            assert shown == set(host.applies.get(point, frozenset())), (host.name, point)


def test_the_docs_examples_run_and_print_what_they_say() -> None:
    import os
    import subprocess
    import sys

    text = (REPO / "docs" / "hosts.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(examples) == 2
    outputs = []
    for source in examples:
        done = subprocess.run(
            [sys.executable, "-c", source],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outputs.append(done.stdout.splitlines())
    assert outputs[0][0].startswith("True ") and outputs[0][1] == "[]"
    assert outputs[1] == ["how do I reset my password?", "None"]


# -- evaluate(host=) through the pipeline ---------------------------------------------------------


def test_a_tool_input_rewrite_the_host_cannot_apply_blocks_naming_hook_field_and_host(
    services: Services,
) -> None:
    later = returning("later", {"notice": "ran"})
    pipe = pipeline(returning("rewriter", {"input": {"cmd": "ls -l"}}), later)
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services, host=profile("litellm"))
    assert out.blocked
    assert out.reason is not None
    assert "'rewriter'" in out.reason and "'input'" in out.reason and "litellm" in out.reason
    assert "the tool was not run" in out.reason
    assert later.calls == [] and [r.status for r in out.hooks] == ["decided", "skipped"]
    assert [(u["hook"], u["field"], u["host"]) for u in out.unsupported] == [
        ("rewriter", "input", "litellm")
    ]
    native = evaluate(pipe, Point.TOOL_CALL, TOOL, services)
    assert not native.blocked and native.input == {"cmd": "ls -l"} and native.unsupported == []


def test_a_host_that_can_rewrite_tool_input_gets_the_rewrite(services: Services) -> None:
    pipe = pipeline(returning("rewriter", {"input": {"cmd": "ls -l"}}))
    for host in ("claude-code", "codex", "opa"):
        out = evaluate(pipe, Point.TOOL_CALL, TOOL, services, host=profile(host))
        assert not out.blocked and out.input == {"cmd": "ls -l"} and out.unsupported == []


def test_a_hooks_own_block_keeps_its_reason_when_it_also_rewrites(services: Services) -> None:
    pipe = pipeline(returning("guard", {"block": "no shell", "input": {"cmd": "true"}}))
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services, host=profile("litellm"))
    assert out.blocked and out.reason == "no shell"


def test_a_notice_the_host_cannot_show_at_tool_call_does_not_block(services: Services) -> None:
    pipe = pipeline(returning("noter", {"notice": "seen"}))
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services, host=profile("litellm"))
    assert not out.blocked and out.notices == ["seen"]
    assert [u["field"] for u in out.unsupported] == ["notice"]


def test_elsewhere_an_unsupported_change_is_listed_and_the_decision_stands(
    services: Services,
) -> None:
    pipe = pipeline(
        returning("rewrite", {"question": "hi there"}),
        returning("context", {"messages": [{"role": "system", "content": "be brief"}]}),
    )
    out = evaluate(pipe, Point.BEFORE_USER_MESSAGE, QUESTION, services, host=profile("claude-code"))
    assert not out.blocked and out.question == "hi there" and len(out.messages) == 1
    assert out.unsupported == [
        {
            "hook": "rewrite",
            "field": "question",
            "host": "claude-code",
            "message": "hook 'rewrite' changed 'question', which claude-code cannot apply at "
            "before_user_message",
        }
    ]
    (record,) = services.recorded  # type: ignore[attr-defined]
    assert record.host == "claude-code"
    assert record.outcome["unsupported"] == out.unsupported


def test_codex_cannot_replace_a_shell_commands_output(services: Services) -> None:
    pipe = pipeline(returning("redact", {"result": "key [redacted]"}))
    out = evaluate(pipe, Point.TOOL_RESULT, RESULT, services, host=profile("codex"))
    assert out.result == "key [redacted]"
    assert [(u["hook"], u["field"]) for u in out.unsupported] == [("redact", "result")]
    claude = evaluate(pipe, Point.TOOL_RESULT, RESULT, services, host=profile("claude-code"))
    assert claude.unsupported == []


def test_shadow_hooks_are_never_unsupported(services: Services) -> None:
    shadow = returning("shadow", {"input": {"cmd": "rm"}}, mode=Mode.SHADOW)
    out = evaluate(pipeline(shadow), Point.TOOL_CALL, TOOL, services, host=profile("litellm"))
    assert not out.blocked and out.unsupported == [] and out.shadow[0]["hook"] == "shadow"


def test_duration_is_the_evaluations_wall_time_and_in_the_outcome_data(
    services: Services,
) -> None:
    import time

    def slow(p: Point, e: dict[str, Any], c: Any) -> None:
        time.sleep(0.02)

    from tests.conftest import FakeHook

    out = evaluate(pipeline(FakeHook("slow", slow)), Point.TOOL_CALL, TOOL, services)
    assert 20 <= out.duration_ms < 2000
    data = out.to_dict()
    assert data["duration_ms"] == out.duration_ms and data["unsupported"] == []
    assert "duration_ms" not in out.decision()  # replay compares decisions, not timings


# -- through Agent.evaluate ---------------------------------------------------------------------

FILES = {
    "agents/a/agent.yaml": "hooks: [context, guard]\n",
    "agents/a/hooks/context.yaml": (
        "kind: inject\nname: context\n"
        "messages:\n  - role: system\n    content: be brief\nnotice: noted\n"
    ),
    "agents/a/hooks/guard.yaml": (
        "kind: script_hook\nname: guard\nlanguage: python\nsource: |\n"
        "  def on_tool_call(event, host):\n"
        "      return {'input': dict(event['input'], safe=True)}\n"
    ),
}


@pytest.fixture
def agent(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Any:
    return load(project(FILES)).agent("a")


def test_every_form_of_the_call_takes_the_host(agent: Any) -> None:
    calls: list[Callable[[], Outcome]] = [
        lambda: agent.tool_call("shell", {"cmd": "ls"}, host="litellm", user_id="u1"),
        lambda: agent.evaluate("tool_call", {"name": "shell"}, host="litellm"),
        lambda: asyncio.run(agent.atool_call("shell", {}, host="litellm")),
        lambda: asyncio.run(agent.aevaluate("tool_call", {"name": "shell"}, host="litellm")),
    ]
    for call in calls:
        out = call()
        assert out.blocked and "'guard'" in (out.reason or "") and "litellm" in (out.reason or "")
        assert out.duration_ms > 0
    ok = agent.tool_call("shell", {"cmd": "ls"}, host="codex")
    assert not ok.blocked and ok.input == {"cmd": "ls", "safe": True}


def test_an_unknown_host_is_raised_before_any_hook_runs(agent: Any) -> None:
    with pytest.raises(EventError) as info:
        agent.tool_call("shell", {}, host="claud-code")
    assert info.value.errors[0]["loc"] == ["host"]
    with pytest.raises(EventError):
        asyncio.run(agent.abefore_user_message("hi", host="nope"))


def test_records_name_their_host_and_can_be_filtered_by_it(agent: Any) -> None:
    agent.before_user_message("hi", host="litellm", user_id="u1")
    agent.before_user_message("hi", user_id="u1")
    agent.tool_call("shell", {}, host="claude-code", user_id="u1")
    engine = agent.engine
    engine.flush()
    assert [r.host for r in engine.records(oldest_first=True)] == [
        "litellm",
        "native",
        "claude-code",
    ]
    (litellm,) = engine.records(host="litellm")
    assert [u["field"] for u in litellm.outcome["unsupported"]] == ["messages", "notice"]
    assert litellm.outcome["duration_ms"] > 0
    assert "unsupported" not in engine.records(host="native")[0].outcome


def test_replay_decides_as_the_recorded_host_would(agent: Any) -> None:
    from engine.replay import load_records, replay

    blocked = agent.tool_call("shell", {"cmd": "ls"}, host="litellm", user_id="r")
    allowed = agent.tool_call("shell", {"cmd": "ls"}, host="claude-code", user_id="r")
    assert blocked.blocked and not allowed.blocked
    report = replay(agent.engine, load_records(agent.engine, point="tool_call"))
    assert report.total == 2 and report.same == 2 and report.differences == []
