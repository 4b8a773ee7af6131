"""A scripted Anthropic Messages API on loopback, for driving the real Claude Code CLI offline.

``POST /v1/messages`` answers in the streaming (SSE) or the plain JSON form, whichever the
request asks for. A test sets ``script``: a function from the request body to the model's
turn (text, or one tool use). Every request to every path is kept, so a test can assert on
what the model was sent (the ``tool_result`` blocks) and on how many model calls were made.
Any other path (count_tokens, model lists, telemetry) answers a harmless 404.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-fake-1"


@dataclass(frozen=True)
class ToolUse:
    """The model asks for one tool: ``name`` (e.g. "Bash") with ``input``."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn."""

    text: str


Turn = ToolUse | Text
Script = Callable[[dict[str, Any]], Turn]


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    body: Any


@dataclass
class FakeAnthropic:
    """The server's script and everything it was asked."""

    url: str = ""
    script: Script = field(default=lambda _request: Text("done"))
    seen: list[Seen] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.seen.append(Seen(method, path, body))

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def reset(self, script: Script) -> None:
        """Start a new test: a new script and an empty request log."""
        with self._lock:
            self.script = script
            self.seen.clear()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The bodies of every ``POST /v1/messages`` (model calls), oldest first."""
        with self._lock:
            return [s.body for s in self.seen if s.method == "POST" and _is_messages(s.path)]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the model was sent, in order, without repeats."""
        found: dict[str, dict[str, Any]] = {}
        for body in self.messages:
            for message in body.get("messages", []):
                for block in _blocks(message):
                    if block.get("type") == "tool_result":
                        found.setdefault(block["tool_use_id"], block)
        return list(found.values())


def tool_result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (its content is a string or a list of blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def has_tool_result(request: dict[str, Any]) -> bool:
    """True once any message of the conversation carries a tool result.

    Not only the newest one: after a hook's blocking message the CLI may send a system
    message last, and a script that looked only there would ask for the tool forever.
    """
    return any(
        block.get("type") == "tool_result"
        for message in request.get("messages") or []
        for block in _blocks(message)
    )


def tool_then_text(tool: ToolUse, text: str = "done") -> Script:
    """The usual script: ask for ``tool`` until a tool result came back, then answer ``text``.

    Requests without tools (a title or topic request the CLI may make on its side) get text.
    """

    def script(request: dict[str, Any]) -> Turn:
        if not request.get("tools") or has_tool_result(request):
            return Text(text)
        return tool

    return script


def _is_messages(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/") == "/v1/messages"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _content(turn: Turn, tool_id: str) -> tuple[dict[str, Any], str]:
    if isinstance(turn, ToolUse):
        block = {"type": "tool_use", "id": tool_id, "name": turn.name, "input": turn.input}
        return block, "tool_use"
    return {"type": "text", "text": turn.text}, "end_turn"


def _message(turn: Turn, number: int) -> dict[str, Any]:
    block, stop = _content(turn, f"toolu_fake{number:04d}")
    return {
        "id": f"msg_fake{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def sse_events(turn: Turn, number: int) -> list[tuple[str, dict[str, Any]]]:
    """The Messages API's stream for one turn: start, one content block, delta, stop."""
    whole = _message(turn, number)
    block = whole["content"][0]
    start = {**whole, "content": [], "stop_reason": None}
    if block["type"] == "tool_use":
        opening = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opening = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": opening},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            fake.record("GET", self.path, None)
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

        def do_HEAD(self) -> None:
            fake.record("HEAD", self.path, None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            fake.record("POST", self.path, body)
            if not _is_messages(self.path) or not isinstance(body, dict):
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                return
            turn, number = fake.script(body), fake.next_id()
            if body.get("stream"):
                self._stream(sse_events(turn, number))
            else:
                self._json(200, _message(turn, number))

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[tuple[str, dict[str, Any]]]) -> None:
            data = "".join(f"event: {name}\ndata: {json.dumps(body)}\n\n" for name, body in events)
            encoded = data.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(encoded)))
            self.end_headers()
            self.wfile.write(encoded)

        def log_message(self, *args: Any) -> None:
            """Quiet: the test asserts on ``fake.seen`` instead."""

    return Handler


class FakeAnthropicServer:
    """Runs a ``FakeAnthropic`` on 127.0.0.1 in a daemon thread (a context manager)."""

    def __init__(self) -> None:
        self.fake = FakeAnthropic()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.fake))
        self._server.daemon_threads = True
        self.fake.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self.fake

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
