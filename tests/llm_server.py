"""A scripted OpenAI-compatible chat-completions server on loopback, for provider tests.

Tests queue replies (a JSON-able answer, raw text, an HTTP status, or a delay) or set a
function computing the answer from the request; every request is kept for inspection.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """One scripted reply: ``content`` (str, or data sent as JSON text), or ``status``."""

    content: Any = None
    status: int = 200
    delay_s: float = 0.0
    body: Any = None
    """A whole response body (overrides content), e.g. something not a chat completion."""
    finish_reason: str = "stop"


@dataclass
class ScriptedLLM:
    """The server's script and what it was asked."""

    url: str = ""
    replies: list[Reply] = field(default_factory=list)
    answer: Callable[[dict[str, Any]], Any] | None = None
    """Computes the content from the request when no reply is queued."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def reply(self, content: Any = None, **kw: Any) -> None:
        self.replies.append(Reply(content, **kw))

    def next_reply(self, request: dict[str, Any]) -> Reply:
        if self.replies:
            return self.replies.pop(0)
        if self.answer is not None:
            return Reply(self.answer(request))
        return Reply(status=500)


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(size) or b"{}")
            llm.requests.append(request)
            llm.headers.append(dict(self.headers))
            reply = llm.next_reply(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            if reply.status != 200:
                body = {"error": {"message": "scripted failure"}}
            elif reply.body is not None:
                body = reply.body
            else:
                content = (
                    reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
                )
                body = {
                    "id": "c1",
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": reply.finish_reason,
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
                }
            data = json.dumps(body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            return None

    return Handler


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """A running scripted server; ``llm.url`` is its base URL (``.../v1``)."""
    script = ScriptedLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield script
    server.shutdown()
    server.server_close()
    thread.join(5)
