"""Kind approval: ask, approve, deny, timeout, remember (session and user), unknown, expired
and twice-resolved ids, through Python and async; sessions apart; runs last; replay."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ApprovalError, ConfigError
from engine.replay import replay
from engine.runtime import Agent, Engine

ASK = """kind: approval
name: ask
tools: ["delete_*", "pay"]
message: "Delete {{input.path}}?"
"""
GUARD = """kind: script_hook
name: guard
language: javascript
source: |
  function on_tool_call(event, host) {
    var path = event.input.path;
    if (path === "/") { return {block: "not the root"}; }
    if (typeof path !== "string") { return null; }
    return {input: Object.assign({}, event.input, {path: path.trim()})};
  }
"""


def make(
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Engine],
    extra: str = "",
    *,
    host_hook: str | None = None,
) -> Agent:
    files = {
        "agents/a/agent.yaml": "hooks: [ask, guard]\n",
        "agents/a/hooks/ask.yaml": ASK + extra,
        "agents/a/hooks/guard.yaml": GUARD,
    }
    if host_hook is not None:
        files["engine.yaml"] = "hooks: [host]\n"
        files["hooks/host.yaml"] = host_hook
    return load(project(files)).agent("a")


def later(seconds: float) -> str:
    """An event time ``seconds`` from now (UTC, ISO-8601)."""
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def test_a_matching_call_asks_and_the_tool_does_not_run(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    out = agent.tool_call("delete_file", {"path": " a.txt "}, call_id="c1", session_id="s1")
    assert out.blocked and out.reason == "approval required: Delete a.txt?"
    assert out.approval is not None
    assert out.approval["tool"] == "delete_file" and out.approval["message"] == "Delete a.txt?"
    assert out.approval["input"] == {"path": "a.txt"}  # the input the guard left


def test_a_tool_outside_the_globs_is_not_asked_about(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    out = agent.tool_call("read_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert not out.blocked and out.approval is None


def test_approval_runs_after_every_other_hook_the_host_layers_included(project, load) -> None:  # type: ignore[no-untyped-def]
    host = (
        "kind: script_hook\nname: host_tag\nlanguage: python\nsource: |\n"
        "  def on_tool_call(event, host):\n"
        "      return {'input': dict(event['input'], tagged=True)}\n"
    )
    agent = make(project, load, host_hook=host)
    out = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert [h.name for h in out.hooks] == ["guard", "host_tag", "ask"]
    assert out.approval is not None and out.approval["input"] == {"path": "a", "tagged": True}


def test_a_call_a_policy_blocks_is_never_put_to_a_person(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    out = agent.tool_call("delete_file", {"path": "/"}, call_id="c1", session_id="s1")
    assert out.blocked and out.reason == "not the root" and out.approval is None
    assert agent.approvals(session_id="s1") == []


def test_until_resolved_the_same_call_asks_again_with_the_same_id(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    first = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    again = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert first.approval and again.approval and again.approval["id"] == first.approval["id"]
    assert [a.id for a in agent.approvals(session_id="s1")] == [first.approval["id"]]


def test_an_approved_call_runs_and_the_resolution_names_who_and_when(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    done = agent.resolve(asked["id"], True, by="alice", note="fine")
    assert done.status == "approved" and done.resolved_by == "alice" and done.note == "fine"
    assert done.resolved_at is not None and done.resolved_at >= done.created_at
    out = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert not out.blocked and out.approval is None and out.input == {"path": "a"}
    run = out.hooks[-1]
    assert run.extras["approval"]["status"] == "approved"
    assert run.extras["approval"]["resolved_by"] == "alice"
    assert agent.approvals(session_id="s1") == []


def test_a_denied_call_is_blocked_with_who_denied_it_and_why(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    agent.resolve(asked["id"], False, by="bob", note="keep it")
    out = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert out.blocked and out.reason == "denied by bob: keep it" and out.approval is None


def test_past_timeout_the_call_is_denied_and_the_id_refuses_a_resolution(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "timeout_s: 60\n")
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    out = agent.tool_call(
        "delete_file", {"path": "a"}, call_id="c1", session_id="s1", time=later(61)
    )
    assert out.blocked and out.approval is None and "none came in time" in (out.reason or "")
    with pytest.raises(ApprovalError) as caught:
        agent.resolve(asked["id"], True, by="alice")
    assert caught.value.cause == "expired" and asked["id"] in str(caught.value)


def test_a_pending_approval_past_its_time_cannot_be_approved(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "timeout_s: 0.2\n")
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    time.sleep(0.3)
    assert agent.approvals(session_id="s1") == []
    with pytest.raises(ApprovalError) as caught:
        agent.resolve(asked["id"], True, by="alice")
    assert caught.value.cause == "expired"


def test_an_unknown_id_and_another_agents_id_are_unknown(project, load) -> None:  # type: ignore[no-untyped-def]
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [ask]\n",
            "agents/a/hooks/ask.yaml": ASK,
            "agents/b/agent.yaml": "hooks: [ask]\n",
            "agents/b/hooks/ask.yaml": ASK,
        }
    )
    engine = load(root)
    asked = engine.agent("a").tool_call("pay", {}, call_id="c1", session_id="s1").approval
    assert asked is not None
    with pytest.raises(ApprovalError) as caught:
        engine.agent("a").resolve("nope", True, by="alice")
    assert caught.value.cause == "unknown" and "'nope'" in str(caught.value)
    with pytest.raises(ApprovalError) as other:
        engine.agent("b").resolve(asked["id"], True, by="alice")
    assert other.value.cause == "unknown"


def test_a_second_resolution_is_refused_and_the_first_stands(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="alice")
    with pytest.raises(ApprovalError) as caught:
        agent.resolve(asked["id"], False, by="mallory")
    assert caught.value.cause == "resolved" and "approved by alice" in str(caught.value)
    out = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert not out.blocked


def test_racing_resolutions_let_exactly_one_win(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    results: list[str] = []

    def decide(who: str) -> None:
        try:
            agent.resolve(asked["id"], who == "a", by=who)
            results.append("won")
        except ApprovalError as exc:
            results.append(exc.cause)

    threads = [threading.Thread(target=decide, args=(w,)) for w in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["resolved", "resolved", "resolved", "won"]


def test_without_a_call_id_an_approval_is_for_one_call(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("pay", {"amount": 5}, session_id="s1").approval
    assert asked is not None
    again = agent.tool_call("pay", {"amount": 5}, session_id="s1").approval
    assert again is not None and again["id"] == asked["id"]
    agent.resolve(asked["id"], True, by="alice")
    assert not agent.tool_call("pay", {"amount": 5}, session_id="s1").blocked
    next_one = agent.tool_call("pay", {"amount": 5}, session_id="s1").approval
    assert next_one is not None and next_one["id"] != asked["id"]


def test_remember_session_allows_the_same_call_in_that_session_only(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "remember: session\n")
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="alice")
    same = agent.tool_call("pay", {"amount": 5}, call_id="c2", session_id="s1")
    assert not same.blocked and same.hooks[-1].extras["approval"]["status"] == "remembered"
    other_input = agent.tool_call("pay", {"amount": 6}, call_id="c3", session_id="s1")
    assert other_input.approval is not None
    other_session = agent.tool_call("pay", {"amount": 5}, call_id="c4", session_id="s2")
    assert other_session.approval is not None


def test_remember_user_allows_the_same_call_in_the_users_other_sessions(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "remember: user\n")
    who = {"user_id": "u1"}
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1", **who).approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="u1")
    assert not agent.tool_call("pay", {"amount": 5}, call_id="c2", session_id="s9", **who).blocked
    stranger = agent.tool_call("pay", {"amount": 5}, call_id="c3", session_id="s9", user_id="u2")
    assert stranger.approval is not None


def test_a_denial_is_never_remembered(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "remember: session\n")
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    agent.resolve(asked["id"], False, by="alice")
    assert agent.tool_call("pay", {"amount": 5}, call_id="c2", session_id="s1").approval


def test_two_concurrent_sessions_never_see_each_others_approvals(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked: dict[str, str] = {}

    def session(sid: str) -> None:
        out = agent.tool_call("pay", {"amount": 1}, call_id="same-id", session_id=sid, user_id="u")
        assert out.approval is not None
        asked[sid] = out.approval["id"]

    threads = [threading.Thread(target=session, args=(s,)) for s in ("s1", "s2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert asked["s1"] != asked["s2"]
    assert [a.id for a in agent.approvals(session_id="s1")] == [asked["s1"]]
    assert [a.id for a in agent.approvals(session_id="s2")] == [asked["s2"]]
    agent.resolve(asked["s1"], True, by="alice")
    one = agent.tool_call("pay", {"amount": 1}, call_id="same-id", session_id="s1", user_id="u")
    two = agent.tool_call("pay", {"amount": 1}, call_id="same-id", session_id="s2", user_id="u")
    assert not one.blocked and two.approval is not None and two.approval["id"] == asked["s2"]


def test_when_decides_whether_to_ask_in_python_and_javascript(project, load) -> None:  # type: ignore[no-untyped-def]
    python = (
        "when:\n  language: python\n  source: |\n"
        "    def when(event, host):\n        return event['input'].get('amount', 0) > 100\n"
    )
    agent = make(project, load, python)
    assert agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval is None
    assert agent.tool_call("pay", {"amount": 500}, call_id="c2", session_id="s1").approval


def test_a_javascript_condition_sees_the_input_the_guard_left(project, load) -> None:  # type: ignore[no-untyped-def]
    js = (
        "when:\n  language: javascript\n  source: |\n"
        "    function when(event, host) { return event.input.path === 'a'; }\n"
    )
    agent = make(project, load, js)
    assert agent.tool_call("delete_x", {"path": " a "}, call_id="c1", session_id="s").approval
    assert agent.tool_call("delete_x", {"path": "b"}, call_id="c2", session_id="s").approval is None


def test_a_condition_that_fails_blocks_the_tool(project, load) -> None:  # type: ignore[no-untyped-def]
    js = (
        "when:\n  language: javascript\n  source: |\n"
        "    function when(event, host) { return event.input.nope.deeper; }\n"
    )
    agent = make(project, load, js)
    out = agent.tool_call("pay", {}, call_id="c1", session_id="s1")
    assert out.blocked and out.failed == ["ask"] and out.approval is None


def test_a_condition_without_a_when_function_is_a_config_error(project, load) -> None:  # type: ignore[no-untyped-def]
    bad = (
        "when:\n  language: python\n  source: |\n"
        "    def on_tool_call(event, host):\n        return 1\n"
    )
    with pytest.raises(ConfigError) as caught:
        make(project, load, bad)
    problem = caught.value.problems[0]
    assert problem.path.endswith("ask.yaml") and problem.field == "when" and problem.line == 5


def test_a_bad_remember_value_names_file_line_and_field(project, load) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as caught:
        make(project, load, "remember: forever\n")
    problem = caught.value.problems[0]
    assert problem.path.endswith("ask.yaml") and problem.line == 5 and problem.field == "remember"


def test_async_ask_approve_and_deny(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)

    async def flow() -> tuple[Any, ...]:
        one = await agent.atool_call("pay", {"amount": 1}, call_id="c1", session_id="s1")
        two = await agent.atool_call("pay", {"amount": 2}, call_id="c2", session_id="s1")
        assert one.approval is not None and two.approval is not None
        await agent.aresolve(one.approval["id"], True, by="alice")
        await agent.aresolve(two.approval["id"], False, by="alice", note="too much")
        with pytest.raises(ApprovalError):
            await agent.aresolve(two.approval["id"], True, by="alice")
        return (
            await agent.atool_call("pay", {"amount": 1}, call_id="c1", session_id="s1"),
            await agent.atool_call("pay", {"amount": 2}, call_id="c2", session_id="s1"),
        )

    approved, denied = asyncio.run(flow())
    assert not approved.blocked
    assert denied.blocked and denied.reason == "denied by alice: too much"


def test_replay_of_an_approved_call_reproduces_it_from_the_record(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    asked = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1").approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="alice")
    ran = agent.tool_call("delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    assert not ran.blocked
    engine = agent.engine
    assert engine.flush()
    records = [r for r in engine.records(agent="a") if r.point == "tool_call"]
    assert len(records) == 2
    report = replay(engine, records)
    assert report.total == 2 and report.same == 2 and not report.differences
    recorded = {r.id: r for r in records}[ran.id]
    (run,) = [h for h in recorded.hooks if h.name == "ask"]
    assert run.extras["approval"]["status"] == "approved"
    assert run.extras["approval"]["resolved_by"] == "alice"


def test_a_shadow_approval_records_what_it_would_ask_and_keeps_nothing(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, "mode: shadow\n")
    out = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1")
    assert not out.blocked and out.approval is None
    shown = "approval required: Delete {{input.path}}?"  # no such input: left as written
    assert out.shadow == [{"hook": "ask", "change": {"block": shown}}]
    assert agent.approvals(session_id="s1") == []


def test_a_very_long_call_id_still_finds_its_approval(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load)
    long_id = "x" * 250  # the boundary takes up to 256
    first = agent.tool_call("pay", {"amount": 5}, call_id=long_id, session_id="s1").approval
    again = agent.tool_call("pay", {"amount": 5}, call_id=long_id, session_id="s1").approval
    other = agent.tool_call("pay", {"amount": 5}, call_id=long_id + "y", session_id="s1").approval
    assert first and again and other and first["id"] == again["id"] != other["id"]
