"""Golden contract of the Claude Code / Codex hook answers: every event, both dialects.

``tests/golden/claude_code/answers.json`` holds each case's payload answer per dialect
(``pytest --update-golden`` rewrites it; review the diff). Codex's answers are validated by
jsonschema against the output schemas Codex itself ships (tests/fixtures/codex/); Claude
Code's against the rules of its hook output (checked below: it publishes no JSON schema).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine import Engine
from engine.integrations.claude_code import handle
from tests.conftest import REPO
from tests.integrations.test_claude_code import SECRET, guard_project
from tests.test_golden import check

CODEX = REPO / "tests" / "fixtures" / "codex"
CODEX_BINARY = (
    REPO / "tests/fixtures/node/node_modules/@openai/codex-linux-x64/vendor"
    "/x86_64-unknown-linux-musl/bin/codex"
)
SCHEMA_OF = {
    "UserPromptSubmit": "user-prompt-submit",
    "PreToolUse": "pre-tool-use",
    "PostToolUse": "post-tool-use",
    "Stop": "stop",
    "SessionEnd": "session-end",
}
BASH_RESPONSE = {
    "stdout": f"TOKEN={SECRET}\n",
    "stderr": "",
    "interrupted": False,
    "isImage": False,
    "noOutputExpected": False,
}


def payload(event: str, **fields: Any) -> dict[str, Any]:
    """A payload with the common fields of both hosts (Codex requires model, turn_id, ...)."""
    common = {
        "session_id": "golden-session",
        "transcript_path": None,
        "cwd": "/work",
        "hook_event_name": event,
        "model": "test-model",
        "permission_mode": "default",
        "turn_id": "turn-1",
    }
    if event == "SessionEnd":  # Codex's SessionEnd input has no model, mode or turn
        common = {
            k: v for k, v in common.items() if k not in ("model", "permission_mode", "turn_id")
        }
    return {**common, **fields}


def tool(event: str, name: str, data: Any, **fields: Any) -> dict[str, Any]:
    return payload(event, tool_name=name, tool_input=data, tool_use_id="call-1", **fields)


CASES: dict[str, dict[str, Any]] = {
    "prompt_blocked": payload("UserPromptSubmit", prompt="my password is hunter2"),
    "prompt_answered": payload("UserPromptSubmit", prompt="opening hours?"),
    "prompt_with_context": payload("UserPromptSubmit", prompt="weather?"),
    "prompt_rewritten": payload("UserPromptSubmit", prompt="rewrite:shorter"),
    "prompt_not_text": payload("UserPromptSubmit", prompt=5),
    "tool_denied": tool("PreToolUse", "Bash", {"command": "rm -rf /"}),
    "tool_rewritten": tool("PreToolUse", "Bash", {"command": "ls"}),
    "tool_allowed": tool("PreToolUse", "Bash", {"command": "echo hi"}),
    "tool_input_not_an_object": tool("PreToolUse", "Bash", ["rm", "-rf"]),
    "result_redacted": tool("PostToolUse", "Bash", {"command": "env"}, tool_response=BASH_RESPONSE),
    "result_clean": tool("PostToolUse", "Bash", {"command": "pwd"}, tool_response={"stdout": "/"}),
    "result_withheld": tool("PostToolUse", "Leaky", {}, tool_response=BASH_RESPONSE),
    "mcp_result_redacted": tool("PostToolUse", "mcp__files__read", {}, tool_response=SECRET),
    "result_input_not_an_object": tool("PostToolUse", "Bash", "env", tool_response=BASH_RESPONSE),
    "stop": payload("Stop", stop_hook_active=False, last_assistant_message="Done."),
    "session_end": payload("SessionEnd", reason="other"),  # Codex sends only "other"
}
"""The cases, run in this order in one session (``stop`` hears the last prompt above it)."""

INVALID_INPUT = {"prompt_not_text", "tool_input_not_an_object", "result_input_not_an_object"}


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("golden_claude_code")
    with Engine.load(guard_project(folder), db=str(folder / "store.db")) as engine:
        yield {
            case: {d: handle(engine, "guard", body, dialect=d) for d in ("claude", "codex")}
            for case, body in CASES.items()
        }


def test_the_answers_match_the_golden_file(
    answers: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    text = json.dumps(answers, ensure_ascii=False, indent=1) + "\n"
    check("claude_code/answers.json", text, request)


def schema(name: str) -> dict[str, Any]:
    return json.loads((CODEX / f"{name}.json").read_text("utf-8"))


@pytest.mark.parametrize("case", list(CASES))
def test_codex_answers_are_valid_under_codexs_output_schema(
    answers: dict[str, Any], case: str
) -> None:
    event, answer = CASES[case]["hook_event_name"], answers[case]["codex"]
    if event == "SessionEnd":
        assert answer == {}  # Codex reads no output from SessionEnd: nothing is lost
        return
    jsonschema.validate(answer, schema(f"{SCHEMA_OF[event]}.command.output"))
    if event == "PreToolUse":
        assert "decision" not in answer  # Codex: no top-level decision at PreToolUse
        decision = answer.get("hookSpecificOutput", {}).get("permissionDecision")
        assert decision in (None, "deny")
        assert "updatedInput" not in answer.get("hookSpecificOutput", {})  # needs "allow"


@pytest.mark.parametrize("case", sorted(set(CASES) - INVALID_INPUT))
def test_the_cases_payloads_are_valid_codex_input(case: str) -> None:
    body = CASES[case]
    jsonschema.validate(body, schema(f"{SCHEMA_OF[body['hook_event_name']]}.command.input"))


CLAUDE_TOP = {"continue", "suppressOutput", "stopReason", "decision", "reason", "systemMessage"}


@pytest.mark.parametrize("case", list(CASES))
def test_claude_answers_follow_claude_codes_hook_output(answers: dict[str, Any], case: str) -> None:
    """The rules of Claude Code 2.1.332's hook output (its zod schema, in the CLI binary):
    known top-level keys, ``decision`` approve|block, a ``hookSpecificOutput`` for the very
    event with that event's fields, and (ours) never ``allow``."""
    event, answer = CASES[case]["hook_event_name"], answers[case]["claude"]
    assert set(answer) <= CLAUDE_TOP | {"hookSpecificOutput"}
    assert answer.get("decision") in (None, "block")
    if answer.get("decision") == "block":
        assert isinstance(answer["reason"], str) and answer["reason"]
    specific = answer.get("hookSpecificOutput")
    if specific is None:
        return
    allowed = {
        "PreToolUse": {"permissionDecision", "permissionDecisionReason", "updatedInput"},
        "UserPromptSubmit": {"additionalContext"},
        "PostToolUse": {"updatedToolOutput"},
    }[event]
    assert specific["hookEventName"] == event and set(specific) - {"hookEventName"} <= allowed
    assert specific.get("permissionDecision") in (None, "deny")


def test_a_changed_bash_output_keeps_its_shape_in_both_dialects(answers: dict[str, Any]) -> None:
    updated = answers["result_redacted"]["claude"]["hookSpecificOutput"]["updatedToolOutput"]
    assert set(updated) == set(BASH_RESPONSE) and updated["stdout"] == "TOKEN=[REDACTED]\n"
    codex = answers["result_redacted"]["codex"]
    assert codex["decision"] == "block" and SECRET not in json.dumps(codex)
    mcp = answers["mcp_result_redacted"]["codex"]["hookSpecificOutput"]
    assert mcp["updatedMCPToolOutput"] == "[REDACTED]"


def node_packages_or_skip(path: Path) -> None:
    """Fail in CI without the Node packages (npm ci runs there); skip loudly elsewhere."""
    if path.exists():
        return
    message = f"{path} is missing: run `cd tests/fixtures/node && npm ci`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def test_the_copied_schemas_are_the_ones_in_the_pinned_codex_binary() -> None:
    node_packages_or_skip(CODEX_BINARY)
    data = CODEX_BINARY.read_bytes()
    found = {}
    start = re.compile(rb'\{\s*"\$schema": "http://json-schema.org/draft-07/schema#"')
    for match in start.finditer(data):
        text = data[match.start() : match.start() + 200_000].decode("utf-8", "replace")
        embedded, _ = json.JSONDecoder().raw_decode(text)
        found[embedded["title"]] = embedded
    copied = sorted(p.stem for p in CODEX.glob("*.json"))
    assert copied and all(found.get(name) == schema(name) for name in copied)
