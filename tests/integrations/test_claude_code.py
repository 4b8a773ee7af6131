"""Claude Code / Codex hook events mapped onto points (engine/integrations/claude_code.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.integrations.claude_code import failure_output, handle, in_shape
from tests.conftest import write

GUARD_SCRIPT = """
def on_before_user_message(event, host):
    q = event["question"]
    if "password" in q:
        return {"block": "please do not share passwords"}
    if q == "opening hours?":
        return {"answer": "We are open 9 to 5."}
    if q.startswith("rewrite:"):
        return {"question": q[8:]}
    if q == "notice me":
        return {"notice": "the city hint is on"}
    return {"messages": [{"role": "system", "content": "The user's city is Moscow."}]}


def on_tool_call(event, host):
    command = event["input"].get("command", "")
    if "rm -rf" in command:
        return {"block": "deleting files is not allowed here"}
    if command.startswith("ls"):
        return {"input": {"command": command + " --color=never"}}
    return None


def clean(value, host):
    if isinstance(value, str):
        return host.redact(value, ["sk-[A-Za-z0-9]{20,}"], "[REDACTED]")
    if isinstance(value, list):
        return [clean(item, host) for item in value]
    if isinstance(value, dict):
        return {key: clean(item, host) for key, item in value.items()}
    return value


def on_tool_result(event, host):
    if event["name"] == "Leaky":
        return {"result": "[withheld: this tool's output is never shown]"}
    result = clean(event["result"], host)
    return None if result == event["result"] else {"result": result}


def on_after_turn(event, host):
    host.log("turn: " + event["question"] + " -> " + event["answer"])


def on_after_loop(event, host):
    host.log("loop: " + event["status"])
"""

GUARD_FILES = {
    "engine.yaml": "scripts:\n  workers: 1\n  timeout_ms: 1000\n",
    "agents/guard/agent.yaml": "hook_files: [hooks/guard.yaml]\n",
    "agents/guard/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.py\n",
    "agents/guard/hooks/guard.py": GUARD_SCRIPT,
}
"""A project whose agent ``guard`` blocks, answers, injects, rewrites and redacts."""

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"


def guard_project(folder: Path) -> Path:
    """Write the guard project under ``folder``; returns its config folder."""
    return write(folder / "config", GUARD_FILES)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    folder = tmp_path_factory.mktemp("claude_code")
    with Engine.load(guard_project(folder), db=str(folder / "store.db")) as loaded:
        yield loaded


def event(name: str, **fields: Any) -> dict[str, Any]:
    """A hook payload as Claude Code sends it (the common fields included)."""
    return {
        "session_id": "s-1",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/work",
        "hook_event_name": name,
        **fields,
    }


def bash(command: str, **fields: Any) -> dict[str, Any]:
    return event(
        "PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id="t1", **fields
    )


def bash_output(stdout: str, **fields: Any) -> dict[str, Any]:
    response = {
        "stdout": stdout,
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    return event(
        "PostToolUse",
        tool_name=fields.pop("tool_name", "Bash"),
        tool_input={"command": "cat .env"},
        tool_response=fields.pop("tool_response", response),
        tool_use_id="t2",
        **fields,
    )


# -- PreToolUse -------------------------------------------------------------------------------


def test_a_blocked_tool_call_is_a_deny_with_the_reason(engine: Engine) -> None:
    assert handle(engine, "guard", bash("rm -rf /")) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "deleting files is not allowed here",
        }
    }


def test_a_rewritten_tool_input_is_updated_input_without_allow(engine: Engine) -> None:
    answer = handle(engine, "guard", bash("ls /tmp"))
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": "ls /tmp --color=never"},
        }
    }


def test_an_allowed_tool_call_prints_nothing_so_the_users_rules_apply(engine: Engine) -> None:
    assert handle(engine, "guard", bash("echo hi")) == {}


def test_the_tool_call_is_recorded_with_its_session_and_call_id(engine: Engine) -> None:
    handle(engine, "guard", bash("rm -rf /home", session_id="s-record"))
    engine.flush()
    [record] = engine.records(agent="guard", point="tool_call", scope="session:s-record")
    assert record.event["call_id"] == "t1" and record.outcome["blocked"] is True


@pytest.mark.parametrize(
    ("payload", "loc"),
    [
        ({"hook_event_name": "PreToolUse", "tool_input": {}}, "tool_name"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": [1]}, "tool_input"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "tool_input"),
        ({"hook_event_name": "PreToolUse", "tool_name": 5, "tool_input": {}}, "tool_name"),
        (
            {"hook_event_name": "PreToolUse", "tool_name": "B", "tool_input": {}, "tool_use_id": 1},
            "tool_use_id",
        ),
        ({"tool_name": "Bash", "tool_input": {}}, "hook_event_name"),
        ([1, 2], "hook_event_name"),
        (None, "hook_event_name"),
    ],
)
def test_a_bad_tool_call_payload_is_a_deny_naming_the_field(
    engine: Engine, payload: Any, loc: str
) -> None:
    answer = handle(engine, "guard", payload)
    output = answer["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert f"{loc}:" in output["permissionDecisionReason"]
    assert output["permissionDecisionReason"].startswith("hookengine: the hook input is not valid")


def test_an_event_the_engine_refuses_is_a_deny_naming_the_field(engine: Engine) -> None:
    reason = handle(engine, "guard", bash("echo", prompt_id="p" * 300))["hookSpecificOutput"][
        "permissionDecisionReason"
    ]
    assert reason.startswith("hookengine: the hook input is not valid: turn_id: ")


def test_a_value_that_is_not_json_is_a_deny_naming_its_path(engine: Engine) -> None:
    payload = bash("echo")
    payload["tool_input"] = {"command": "echo", "n": float("nan")}  # json.loads reads NaN
    output = handle(engine, "guard", payload)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert output["permissionDecisionReason"].startswith("hookengine: the hook input is not valid")
    assert "input.n" in output["permissionDecisionReason"]


def test_a_value_the_engine_normalises_is_no_rewrite(engine: Engine) -> None:
    payload = bash("echo")
    payload["tool_input"] = {"command": "echo", "n": 2**60}  # becomes text: past 2**53
    assert handle(engine, "guard", payload) == {}


def test_an_unknown_agent_is_a_deny_naming_it(engine: Engine) -> None:
    output = handle(engine, "nobody", bash("echo"))["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "no agent 'nobody'" in output["permissionDecisionReason"]


def test_an_engine_failure_at_pre_tool_use_is_a_deny(engine: Engine) -> None:
    class Broken:
        def agent(self, name: str) -> Any:
            raise RuntimeError("the store is on fire")

    output = handle(Broken(), "guard", bash("echo"))["hookSpecificOutput"]  # type: ignore[arg-type]
    assert output["permissionDecision"] == "deny"
    assert "RuntimeError: the store is on fire" in output["permissionDecisionReason"]


def test_handle_answers_from_many_threads_at_once(engine: Engine) -> None:
    answers: list[dict[str, Any]] = []
    commands = ["rm -rf /", "ls", "echo"] * 4

    def ask(command: str) -> None:
        answers.append(handle(engine, "guard", bash(command)))

    threads = [threading.Thread(target=ask, args=(c,)) for c in commands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    denies = [a for a in answers if a.get("hookSpecificOutput", {}).get("permissionDecision")]
    assert len(answers) == 12 and len(denies) == 4


# -- UserPromptSubmit ---------------------------------------------------------------------------


def test_a_blocked_prompt_is_decision_block_with_the_reason(engine: Engine) -> None:
    payload = event("UserPromptSubmit", prompt="my password is hunter2")
    assert handle(engine, "guard", payload) == {
        "decision": "block",
        "reason": "please do not share passwords",
    }


def test_an_answered_prompt_is_a_block_showing_the_answer(engine: Engine) -> None:
    payload = event("UserPromptSubmit", prompt="opening hours?")
    assert handle(engine, "guard", payload) == {
        "decision": "block",
        "reason": "We are open 9 to 5.",
    }


def test_injected_messages_are_additional_context(engine: Engine) -> None:
    payload = event("UserPromptSubmit", prompt="weather?")
    assert handle(engine, "guard", payload) == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "The user's city is Moscow.",
        }
    }


def test_a_notice_is_a_system_message(engine: Engine) -> None:
    answer = handle(engine, "guard", event("UserPromptSubmit", prompt="notice me"))
    assert answer == {"systemMessage": "the city hint is on"}


def test_a_question_rewrite_is_unsupported_and_said_in_a_system_message(engine: Engine) -> None:
    answer = handle(engine, "guard", event("UserPromptSubmit", prompt="rewrite:shorter"))
    assert "decision" not in answer and "hookSpecificOutput" not in answer
    assert answer["systemMessage"].startswith("hookengine: ")
    assert "'guard'" in answer["systemMessage"] and "'question'" in answer["systemMessage"]
    assert "claude-code" in answer["systemMessage"]


def test_a_prompt_that_is_not_text_is_a_block_naming_the_field(engine: Engine) -> None:
    answer = handle(engine, "guard", event("UserPromptSubmit", prompt=["a"]))
    assert answer["decision"] == "block"
    assert "prompt: must be text, not list" in answer["reason"]


# -- PostToolUse --------------------------------------------------------------------------------


def test_a_redacted_bash_output_keeps_the_bash_shape(engine: Engine) -> None:
    answer = handle(engine, "guard", bash_output(f"API_KEY={SECRET}\n"))
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {
                "stdout": "API_KEY=[REDACTED]\n",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
            },
        }
    }


def test_a_clean_tool_output_prints_nothing(engine: Engine) -> None:
    assert handle(engine, "guard", bash_output("hello\n")) == {}


def test_a_text_tool_output_is_redacted_as_text(engine: Engine) -> None:
    answer = handle(
        engine, "guard", bash_output("", tool_name="mcp__x__read", tool_response=SECRET)
    )
    assert answer["hookSpecificOutput"]["updatedToolOutput"] == "[REDACTED]"


def test_a_withheld_object_output_becomes_the_text_in_the_objects_shape(engine: Engine) -> None:
    answer = handle(engine, "guard", bash_output(f"{SECRET}", tool_name="Leaky"))
    assert answer["hookSpecificOutput"]["updatedToolOutput"] == {
        "stdout": "[withheld: this tool's output is never shown]",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }


def test_a_missing_tool_response_is_a_block_naming_it(engine: Engine) -> None:
    payload = bash_output("x")
    del payload["tool_response"]
    answer = handle(engine, "guard", payload)
    assert answer["decision"] == "block" and "tool_response: is missing" in answer["reason"]
    assert "tool_response: is missing" in answer["hookSpecificOutput"]["updatedToolOutput"]


def test_an_unknown_agent_at_post_tool_use_keeps_the_output_from_the_model(
    engine: Engine,
) -> None:
    answer = handle(engine, "nobody", bash_output(f"API_KEY={SECRET}"))
    output = answer["hookSpecificOutput"]["updatedToolOutput"]
    assert "no agent 'nobody'" in output["stdout"] and SECRET not in str(answer)


# -- Stop and SessionEnd ------------------------------------------------------------------------


def test_stop_is_after_turn_with_the_sessions_last_prompt(engine: Engine) -> None:
    handle(
        engine, "guard", event("UserPromptSubmit", prompt="where is my order?", session_id="s-t")
    )
    stop = event(
        "Stop", session_id="s-t", stop_hook_active=False, last_assistant_message="On its way."
    )
    assert handle(engine, "guard", stop) == {}
    engine.flush()
    [record] = engine.records(agent="guard", point="after_turn", scope="session:s-t")
    assert record.event["question"] == "where is my order?"
    assert record.event["answer"] == "On its way."
    assert record.hooks[0].logs == ["turn: where is my order? -> On its way."]


def test_stop_without_a_prompt_in_the_session_has_an_empty_question(engine: Engine) -> None:
    assert handle(engine, "guard", event("Stop", session_id="s-new", stop_hook_active=False)) == {}
    engine.flush()
    [record] = engine.records(agent="guard", point="after_turn", scope="session:s-new")
    assert record.event["question"] == "" and record.event["answer"] == ""


def test_session_end_is_after_loop_with_the_reason_as_status(engine: Engine) -> None:
    payload = event("SessionEnd", session_id="s-end", reason="prompt_input_exit")
    assert handle(engine, "guard", payload) == {}
    engine.flush()
    [record] = engine.records(agent="guard", point="after_loop", scope="session:s-end")
    assert record.event["status"] == "prompt_input_exit"


def test_an_unhandled_event_only_says_so(engine: Engine) -> None:
    answer = handle(engine, "guard", event("Notification", message="hi"))
    assert answer == {
        "systemMessage": "hookengine: Notification hooks are not handled "
        "(only UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd)"
    }


def test_an_unknown_dialect_is_a_deny_naming_it(engine: Engine) -> None:
    output = handle(engine, "guard", bash("echo"), dialect="gemini")["hookSpecificOutput"]
    assert "dialect: must be claude or codex" in output["permissionDecisionReason"]


# -- pieces -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"hook_event_name": "PreToolUse"}, "hookSpecificOutput"),
        (None, "hookSpecificOutput"),
        ({"hook_event_name": "UserPromptSubmit"}, "decision"),
        ({"hook_event_name": "Stop"}, "systemMessage"),
        ({"hook_event_name": "SessionEnd"}, "systemMessage"),
    ],
)
def test_failure_output_fails_closed_where_the_event_guards(payload: Any, expected: str) -> None:
    answer = failure_output(payload, "down")
    assert expected in answer and answer["systemMessage"] == "hookengine: down"
    if expected == "hookSpecificOutput":
        assert answer[expected]["permissionDecision"] == "deny"


def test_a_failure_at_post_tool_use_withholds_the_output_in_its_shape() -> None:
    payload = bash_output(f"API_KEY={SECRET}")
    answer = failure_output(payload, "down")
    assert answer["decision"] == "block" and SECRET not in str(answer)
    assert answer["hookSpecificOutput"]["updatedToolOutput"] == {
        "stdout": "hookengine: down",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }


def test_a_failure_at_post_tool_use_in_codex_is_what_codex_can_do() -> None:
    mcp = failure_output(
        bash_output("", tool_name="mcp__a__b", tool_response="x"), "down", dialect="codex"
    )
    assert mcp["hookSpecificOutput"] == {
        "hookEventName": "PostToolUse",
        "updatedMCPToolOutput": "hookengine: down",
    }
    builtin = failure_output(bash_output("x"), "down", dialect="codex")
    assert "hookSpecificOutput" not in builtin and builtin["decision"] == "block"
    assert "do not use or repeat the output" in builtin["reason"]


def test_in_shape_keeps_objects_and_empties_the_texts_a_text_replaced() -> None:
    original = {"type": "text", "file": {"filePath": "/a", "content": SECRET, "numLines": 1}}
    assert in_shape(original, "gone") == {
        "type": "gone",
        "file": {"filePath": "", "content": "", "numLines": 1},
    }
    assert in_shape("text", {"a": 1}) == {"a": 1}
    assert in_shape({"n": 1}, ["x"]) == {"n": 1, "output": '["x"]'}
