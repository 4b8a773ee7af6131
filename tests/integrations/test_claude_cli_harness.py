"""The end-to-end harness itself: the fake Messages API's answers, and a missing Claude Code
CLI failing the tests in CI (skipping, loudly, elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.integrations import claude_cli
from tests.integrations.anthropic_fake import FakeAnthropicServer, Text, ToolUse, tool_then_text

TOOL = ToolUse("Bash", {"command": "ls", "description": "list"})


def sse(text: str) -> list[tuple[str, dict]]:
    """``[(event, data)]`` of a server-sent event stream."""
    events = []
    for chunk in text.strip().split("\n\n"):
        name, data = chunk.split("\n")
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def test_the_fake_streams_a_tool_use_then_answers_text_after_its_result() -> None:
    with FakeAnthropicServer() as fake, httpx.Client(base_url=fake.url) as client:
        fake.reset(tool_then_text(TOOL, text="bye"))
        first = {"model": "m", "stream": True, "tools": [{}], "messages": [{"role": "user"}]}
        events = sse(client.post("/v1/messages?beta=true", json=first).text)
        names = [name for name, _ in events]
        assert names == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        block, delta = events[1][1]["content_block"], events[2][1]["delta"]
        assert (block["type"], block["name"], block["input"]) == ("tool_use", "Bash", {})
        assert json.loads(delta["partial_json"]) == TOOL.input
        assert events[4][1]["delta"]["stop_reason"] == "tool_use"
        result = {"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}
        second = {**first, "stream": False, "messages": [{"role": "user", "content": [result]}]}
        answer = client.post("/v1/messages", json=second).json()
        assert answer["content"] == [{"type": "text", "text": "bye"}]
        assert answer["stop_reason"] == "end_turn"
        assert fake.tool_results() == [result]
        assert len(fake.messages) == 2


def test_the_fake_answers_404_off_the_messages_route_and_keeps_the_request() -> None:
    with FakeAnthropicServer() as fake, httpx.Client(base_url=fake.url) as client:
        fake.reset(lambda _request: Text("unused"))
        assert client.get("/v1/models").status_code == 404
        assert client.post("/v1/messages/count_tokens", json={}).status_code == 404
        assert [(s.method, s.path) for s in fake.seen] == [
            ("GET", "/v1/models"),
            ("POST", "/v1/messages/count_tokens"),
        ]
        assert fake.messages == []


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_missing_cli_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setattr(claude_cli, "CLAUDE", tmp_path / "no-claude")
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no-claude is missing"):
        claude_cli.require_claude()
