"""An event past the size cap is refused on every decision route, not decided on a cut copy:
a big key before ``command`` pushed the command out of the guard's sight, and the tool call
was allowed (OPA ``allow: true``, LiteLLM ``GUARDRAIL_INTERVENED``, Claude Code ``{}``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.runtime import Engine
from tests.conftest import write
from tests.http.test_http import run_server
from tests.kinds.test_script_hook import body, inline_hook

TOKEN = "cut-decide-token"
ENV = "TEST_DECIDE_TOKEN"
BIG = "\U0001f600" * 240_000  # 960 KB of UTF-8, 2.9 MB escaped: past the 2 MB event cap
INPUT = {"a": BIG, "command": "rm -rf /srv/data"}
GUARD = body("py", "tool_call", 'return {"block": "no"} if "rm" in str(event["input"]) else None')


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv(ENV, TOKEN)
    root = write(
        tmp_path / "config",
        {
            "engine.yaml": f"http: {{tokens: [{{name: d, env: {ENV}, scopes: [decide]}}]}}\n",
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": inline_hook("guard", "py", GUARD),
        },
    )
    with Engine.load(root, db=str(tmp_path / "engine.db")) as eng:
        for base in run_server(eng):
            headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
            with httpx.Client(base_url=base, timeout=30, headers=headers) as c:
                yield c


def post(client: httpx.Client, path: str, data: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, content=json.dumps(data, ensure_ascii=False).encode())
    assert response.status_code == 200, response.text[:500]
    found: dict[str, Any] = response.json()
    return found


REASON = "event.input: cut at the event's size cap"


def test_opa_route_denies_a_cut_tool_call(client: httpx.Client) -> None:
    data = {"input": {"name": "shell", "input": INPUT, "scope": {"session_id": "x1"}}}
    result = post(client, "/v1/data/hookengine/a/tool_call", data)["result"]
    assert result["allow"] is False and REASON in result["reason"]


def test_native_route_for_litellm_blocks_a_cut_tool_call(client: httpx.Client) -> None:
    data = {"event": {"name": "shell", "input": INPUT}, "scope": {"session_id": "x1"}}
    out = post(client, "/v1/agents/a/points/tool_call?host=litellm", data)
    assert out["blocked"] is True and REASON in out["reason"]


def test_claude_code_route_denies_a_cut_tool_call(client: httpx.Client) -> None:
    data = {"hook_event_name": "PreToolUse", "session_id": "x1", "tool_name": "Bash"}
    out = post(client, "/v1/claude-code/a", {**data, "tool_input": INPUT})
    decision = out["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert REASON in decision["permissionDecisionReason"]


def test_litellm_route_blocks_a_cut_tool_call(client: httpx.Client) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "shell"}}
    call["function"]["arguments"] = json.dumps(INPUT, ensure_ascii=False)
    data = {
        "input_type": "response",
        "texts": [],
        "tool_calls": [call],
        "request_data": {},
        "additional_provider_specific_params": {"agent": "a"},
    }
    out = post(client, "/beta/litellm_basic_guardrail_api", data)
    assert out["action"] == "BLOCKED" and REASON in out["blocked_reason"]


def test_litellm_route_blocks_a_cut_answer(client: httpx.Client) -> None:
    data = {
        "input_type": "response",
        "texts": [BIG[:180_000] + " sk-secret"],
        "request_data": {},
        "additional_provider_specific_params": {"agent": "a"},
    }
    out = post(client, "/beta/litellm_basic_guardrail_api", data)
    assert out["action"] == "BLOCKED" and "event.answer: cut at" in out["blocked_reason"]
