"""An approval at Claude Code's PreToolUse: ``permissionDecision: "ask"`` with the question
as its reason (and the input the policies left); Codex, which has no ask, gets a deny whose
reason says approval is required; the host profiles name how each host asks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.hosts import HOSTS
from engine.integrations.claude_code import handle
from engine.runtime import Engine

ASK = 'kind: approval\nname: confirm\ntools: [Bash]\nmessage: "Run {{input.command}}?"\n'
QUIET = """kind: script_hook
name: quiet
language: python
source: |
  def on_tool_call(event, host):
      if event["input"]["command"].startswith("ls"):
          return {"input": {"command": event["input"]["command"] + " -q"}}
"""


@pytest.fixture
def engine(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Engine:
    return load(
        project(
            {
                "agents/cc/agent.yaml": "hooks: [confirm, quiet]\n",
                "agents/cc/hooks/confirm.yaml": ASK,
                "agents/cc/hooks/quiet.yaml": QUIET,
            }
        )
    )


def bash(command: str, call_id: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": call_id,
    }


def test_claude_code_is_asked_with_the_question(engine: Engine) -> None:
    answer = handle(engine, "cc", bash("rm x", "t1"))
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "Run rm x?",
        }
    }


def test_the_ask_carries_the_input_the_policies_left(engine: Engine) -> None:
    answer = handle(engine, "cc", bash("ls", "t2"))
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask" and out["updatedInput"] == {"command": "ls -q"}
    assert out["permissionDecisionReason"] == "Run ls -q?"


def test_once_approved_claude_code_is_told_nothing_and_runs_it(engine: Engine) -> None:
    handle(engine, "cc", bash("rm x", "t3"))
    (waiting,) = engine.agent("cc").approvals(session_id="s1")
    engine.agent("cc").resolve(waiting.id, True, by="alice")
    assert handle(engine, "cc", bash("rm x", "t3")) == {}


def test_codex_has_no_ask_and_gets_a_deny_saying_approval_is_required(engine: Engine) -> None:
    answer = handle(engine, "cc", bash("rm x", "t4"), dialect="codex")
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"] == "approval required: Run rm x?"


def test_each_host_profile_names_how_it_asks() -> None:
    asks = {name for name, host in HOSTS.items() if host.approval}
    assert asks == {"native", "opa", "claude-code", "langchain", "openai-agents"}
    assert HOSTS["codex"].approval is None and HOSTS["litellm"].approval is None
