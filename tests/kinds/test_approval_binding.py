"""Kind approval under attack, on every backend: an approval lets run only the call the
person was shown (the same tool, input and user, whatever call id the host reuses), once
when the call has no id, and the question shows the input's hidden characters."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from tests import backends

db_url = backends.db_url
hook_agent = backends.hook_agent

ASK = """kind: approval
name: h
tools: ["delete_*", "pay"]
message: "Delete {{input.path}}?"
"""


def approved(agent: Any, tool: str, args: dict[str, Any], **scope: Any) -> None:
    asked = agent.tool_call(tool, args, **scope).approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="alice")
    assert not agent.tool_call(tool, args, **scope).blocked


def test_an_approved_call_id_does_not_let_another_input_run(hook_agent: Any) -> None:
    agent = hook_agent(ASK)
    approved(agent, "delete_file", {"path": "notes.txt"}, call_id="c1", session_id="s1")
    for other in ({"path": "/"}, {"path": "notes.txt", "recursive": True}, {"path": "notes.txt "}):
        out = agent.tool_call("delete_file", other, call_id="c1", session_id="s1")
        assert out.blocked and out.approval is not None, other
        assert out.approval["input"] == other
    # the call the person approved still runs as approved
    assert not agent.tool_call(
        "delete_file", {"path": "notes.txt"}, call_id="c1", session_id="s1"
    ).blocked


def test_an_approved_call_id_does_not_let_another_tool_run(hook_agent: Any) -> None:
    agent = hook_agent(ASK)
    approved(agent, "delete_file", {"path": "a"}, call_id="c1", session_id="s1")
    out = agent.tool_call("delete_everything", {"path": "a"}, call_id="c1", session_id="s1")
    assert out.blocked and out.approval is not None and out.approval["tool"] == "delete_everything"


def test_an_approval_of_one_user_does_not_let_another_user_of_the_session_run(
    hook_agent: Any,
) -> None:
    agent = hook_agent(ASK)
    who = {"session_id": "s1", "user_id": "alice"}
    approved(agent, "delete_file", {"path": "a"}, call_id="c1", **who)
    for user in ("mallory", None):
        out = agent.tool_call(
            "delete_file", {"path": "a"}, call_id="c1", session_id="s1", user_id=user
        )
        assert out.blocked and out.approval is not None, user
    asked = agent.tool_call("pay", {"amount": 5}, session_id="s1", user_id="alice").approval
    assert asked is not None
    agent.resolve(asked["id"], True, by="alice")
    stranger = agent.tool_call("pay", {"amount": 5}, session_id="s1", user_id="mallory")
    assert stranger.blocked and stranger.approval is not None


def race(agents: list[Any], args: dict[str, Any], count: int = 8) -> list[Any]:
    """The outcomes of ``count`` evaluations of one call without an id, started at once."""
    start, outs = threading.Barrier(count), []

    def evaluate(agent: Any) -> None:
        start.wait()
        outs.append(agent.tool_call("pay", args, session_id="s1"))

    threads = [threading.Thread(target=evaluate, args=(agents[i % 2],)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outs


def test_an_approval_without_a_call_id_runs_the_call_once_under_racing_evaluations(
    hook_agent: Any,
) -> None:
    # two engines on one store: two processes of a host evaluating the same call at once
    agents = [hook_agent(ASK), hook_agent(ASK)]
    for round_ in range(4):
        args = {"amount": round_}
        asked = agents[0].tool_call("pay", args, session_id="s1").approval
        assert asked is not None
        agents[1].resolve(asked["id"], True, by="alice")
        outs = race(agents, args)
        ran = [out for out in outs if not out.blocked]
        asked_anew = [out.approval for out in outs if out.approval is not None]
        assert len(ran) == 1 and len(asked_anew) == 7, round_
        assert all(new["id"] != asked["id"] for new in asked_anew)


def test_the_question_shows_hidden_characters_of_the_input_escaped(hook_agent: Any) -> None:
    agent = hook_agent(ASK.replace("Delete {{input.path}}?", "Run {{input.cmd}} ({{input}})?"))
    cmd = "ls notes\u202e\n\n\n; rm -rf / \u200b\x1b[2K\u2028"
    asked = agent.tool_call("pay", {"cmd": cmd}, call_id="c1", session_id="s1").approval
    assert asked is not None and asked["input"] == {"cmd": cmd}  # the data stays as it runs
    shown = "ls notes\\u202e\\n\\n\\n; rm -rf / \\u200b\\u001b[2K\\u2028"
    assert asked["message"] == f'Run {shown} ({{"cmd": "{shown}"}})?'
    assert asked["message"].isprintable()
    plain = agent.tool_call("pay", {"cmd": "café ls  -l"}, call_id="c2", session_id="s1")
    assert plain.approval is not None
    assert plain.approval["message"] == 'Run café ls  -l ({"cmd": "café ls  -l"})?'


def test_the_cli_line_a_person_decides_from_shows_the_whole_input(hook_agent: Any) -> None:
    from engine.cli.render import approval_line

    agent = hook_agent(ASK)
    args = {"path": "x" * 300 + "\u202e; rm -rf /"}
    agent.tool_call("pay", args, call_id="c1", session_id="s1")
    (waiting,) = agent.approvals(session_id="s1")
    line = approval_line(waiting)
    assert "x" * 300 + "\\u202e; rm -rf /" in line and line.isprintable()


def test_who_decided_cannot_forge_a_log_line(
    hook_agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    agent = hook_agent(ASK)
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    by = "alice\nINFO engine.approvals approval x of agent a: approved by admin"
    with caplog.at_level(logging.INFO, logger="engine.approvals"):
        done = agent.resolve(asked["id"], False, by=by, note="<script>x</script>")
    assert done.resolved_by == by  # kept as given; only its log line is quoted
    (line,) = [r.getMessage() for r in caplog.records if r.name == "engine.approvals"]
    assert "\n" not in line and "'alice\\nINFO" in line


def test_the_cli_line_says_when_approving_is_remembered(hook_agent: Any) -> None:
    from engine.cli.render import approval_line

    agent = hook_agent(ASK + "remember: session\n")
    agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1")
    (waiting,) = agent.approvals(session_id="s1")
    assert "approving also allows it later in session:s1" in approval_line(waiting)


def test_an_event_time_ahead_of_the_clock_does_not_stretch_the_timeout(hook_agent: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from engine.errors import ApprovalError

    agent = hook_agent(ASK + "timeout_s: 60\n")
    ahead = [(datetime.now(UTC) + timedelta(days=3)).isoformat(), "2999-01-01T00:00:00+00:00"]
    for time in ahead:
        out = agent.tool_call("pay", {"amount": 5}, call_id=time, session_id="s1", time=time)
        # asked at the clock's time: at the event's, it is already past timeout_s
        assert out.blocked and out.approval is None
        assert "none came in time" in (out.reason or "")
        asked = out.hooks[-1].extras["approval"]
        with pytest.raises(ApprovalError) as refused:
            agent.resolve(asked["id"], True, by="alice")
        assert refused.value.cause == "expired"


def test_an_event_time_in_another_zone_is_the_same_moment(hook_agent: Any) -> None:
    from datetime import UTC, datetime, timedelta, timezone

    agent = hook_agent(ASK + "timeout_s: 60\n")
    asked = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    east = timezone(timedelta(hours=5))
    at_59 = (datetime.now(UTC) + timedelta(seconds=30)).astimezone(east).isoformat()
    at_61 = (datetime.now(UTC) + timedelta(seconds=62)).astimezone(east).isoformat()
    assert agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1", time=at_59).approval
    late = agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1", time=at_61)
    assert late.blocked and late.approval is None and "none came in time" in (late.reason or "")


def test_racing_approvers_on_two_engines_let_exactly_one_decision_stand(hook_agent: Any) -> None:
    from engine.errors import ApprovalError

    agents = [hook_agent(ASK), hook_agent(ASK)]
    asked = agents[0].tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1").approval
    assert asked is not None
    start, results = threading.Barrier(6), []

    def decide(i: int) -> None:
        start.wait()
        try:
            done = agents[i % 2].resolve(asked["id"], i % 3 == 0, by=f"p{i}")
            results.append(done.status)
        except ApprovalError as exc:
            results.append(exc.cause)

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if r in ("approved", "denied")]
    assert len(won) == 1 and results.count("resolved") == 5
    stored = agents[1].engine.store.approval_get(asked["id"])
    assert stored.status == won[0]
    out = agents[1].tool_call("pay", {"amount": 5}, call_id="c1", session_id="s1")
    assert out.blocked is (won[0] == "denied")
