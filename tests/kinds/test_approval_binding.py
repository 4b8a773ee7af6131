"""Kind approval under attack, on every backend: an approval lets run only the call the
person was shown (the same tool, input and user, whatever call id the host reuses), once
when the call has no id, and the question shows the input's hidden characters."""

from __future__ import annotations

from typing import Any

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
