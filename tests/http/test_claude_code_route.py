"""``POST /v1/claude-code/{agent}`` on ``hookengine serve``'s app, on a real server on loopback:
it answers what ``hookengine claude-code hook`` prints for the same input (both dialects),
fails closed with a 200 deny on input it cannot read or an unknown agent, and is behind the
decide token like every decision route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.integrations.claude_code import handle
from engine.runtime import Engine
from tests.http.test_decisions import ADMIN, BEARER, TOKENS, make_engine
from tests.http.test_http import run_server

URL = "/v1/claude-code/a"


def pre_tool_use(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_1",
        "cwd": "/tmp",
    }


def denied(answer: dict[str, Any]) -> bool:
    return answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        eng = make_engine(tmp_path_factory.mktemp("claude"))
        try:
            yield eng
        finally:
            eng.close()


@pytest.fixture(scope="module")
def client(engine: Engine) -> Iterator[httpx.Client]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        for base in run_server(engine):
            with httpx.Client(base_url=base, timeout=10, headers=BEARER) as c:
                yield c


PAYLOADS = [
    pre_tool_use("rm -rf /srv"),
    pre_tool_use("ls -la"),
    pre_tool_use("sudo ls"),
    {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hello"},
    {"hook_event_name": "Notification", "session_id": "s1", "message": "hi"},
]


@pytest.mark.parametrize("dialect", ["claude", "codex"])
def test_the_route_answers_what_the_hook_command_prints(
    client: httpx.Client, engine: Engine, dialect: str
) -> None:
    for payload in PAYLOADS:
        response = client.post(URL, params={"dialect": dialect}, json=payload)
        assert response.status_code == 200, response.text
        assert response.json() == handle(engine, "a", payload, dialect=dialect), payload
    blocked = client.post(URL, params={"dialect": dialect}, json=PAYLOADS[0]).json()
    assert denied(blocked) and "deleting is not allowed" in json.dumps(blocked)
    rewritten = client.post(URL, json=PAYLOADS[2]).json()
    assert rewritten["hookSpecificOutput"]["updatedInput"] == {"command": "ls"}
    assert "decision" not in blocked  # no top-level decision at PreToolUse, in either dialect


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"{not json", {"Content-Type": "application/json"}),
        (b'{"hook_event_name": "PreToolUse", "hook_event_name": "Stop"}', {}),
        (b'{"hook_event_name": "PreToolUse", "tool_input": {"n": NaN}}', {}),
        (b"[" * 200 + b"]" * 200, {"Content-Type": "text/plain"}),
        (b"", {}),
    ],
    ids=["broken", "duplicated key", "NaN", "deep", "empty"],
)
def test_an_unreadable_hook_input_is_a_deny(
    client: httpx.Client, body: bytes, headers: dict[str, str]
) -> None:
    response = client.post(URL, content=body, headers=headers)
    assert response.status_code == 200
    assert denied(response.json()) and "not JSON" in response.json()["systemMessage"]


def test_an_unknown_agent_is_a_deny_not_an_error(client: httpx.Client) -> None:
    response = client.post("/v1/claude-code/nobody", json=pre_tool_use("ls"))
    assert response.status_code == 200 and denied(response.json())


def test_the_route_needs_a_decide_token_and_a_known_dialect(client: httpx.Client) -> None:
    anonymous = client.post(URL, json=pre_tool_use("ls"), headers={"Authorization": ""})
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthorized"
    admin = client.post(URL, json=pre_tool_use("ls"), headers={"Authorization": f"Bearer {ADMIN}"})
    assert admin.status_code == 403 and admin.json()["code"] == "forbidden"
    odd = client.post(URL, params={"dialect": "gemini"}, json=pre_tool_use("ls"))
    assert odd.status_code == 422 and odd.json()["errors"][0]["loc"] == ["query", "dialect"]
