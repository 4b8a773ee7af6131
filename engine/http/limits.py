"""An ASGI middleware refusing request bodies over a size limit with 413."""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuses a declared or streamed body larger than ``max_bytes`` (413, JSON detail)."""

    def __init__(self, app: Any, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise _TooLarge
            return message

        async def tracked_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": f"request body larger than {self.max_bytes} bytes"})
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body.encode()})


class HeadLimit:
    """Refuses a request whose line and headers exceed ``max_bytes`` (431, then close).

    The server's parser bounds a head that arrives in pieces; one that arrives whole in a
    single read is parsed whatever its size, so the bound is checked again here.
    """

    def __init__(self, app: Any, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and head_size(scope) > self.max_bytes:
            body = json.dumps({"detail": f"request head larger than {self.max_bytes} bytes"})
            await send(
                {
                    "type": "http.response.start",
                    "status": 431,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await self.app(scope, receive, send)


def head_size(scope: Scope) -> int:
    """About the bytes of the request line and headers as they came on the wire."""
    line = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 20
    return line + sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or [])
