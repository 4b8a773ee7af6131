"""ASGI middlewares that refuse before any route runs: a body over its route's size limit
(413), a request head over its bound (431), a decision beyond the in-flight cap (429), a
decision without a decide token (401, 403; before its body is read).
Each answers with the service's common error body (engine/http/errors.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.http.auth import Auth, token_of
from engine.http.errors import ApiError

Scope = dict[str, Any]


class _TooLarge(Exception):
    pass


async def refuse(
    send: Any, status: int, message: str, *, code: str | None = None, close: bool = False
) -> None:
    """Answer ``status`` with the common error body (and ``connection: close`` if asked)."""
    headers = {"retry-after": "1"} if status == 429 else {}
    await send_error(send, ApiError(status, code, message, headers=headers), close=close)


async def send_error(send: Any, error: ApiError, *, close: bool = False) -> None:
    """Answer ``error`` as the common error body, from an ASGI middleware."""
    body = json.dumps(error.body(), ensure_ascii=False, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in error.headers.items()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def matches(path: str, prefixes: Sequence[str]) -> bool:
    return any(path.startswith(prefix) for prefix in prefixes)


class BodyLimit:
    """Refuses a declared or streamed body larger than its route's limit (413).

    Args:
        app: the ASGI app.
        max_bytes: the limit of every route but ``prefixes``.
        prefixes: path prefixes (the decision routes) whose limit is ``prefix_max_bytes``.
        prefix_max_bytes: their limit (default ``max_bytes``).
    """

    def __init__(
        self,
        app: Any,
        *,
        max_bytes: int,
        prefixes: Sequence[str] = (),
        prefix_max_bytes: int | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.prefixes = tuple(prefixes)
        self.prefix_max_bytes = prefix_max_bytes or max_bytes

    def limit(self, path: str) -> int:
        return self.prefix_max_bytes if matches(path, self.prefixes) else self.max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope["path"])
        message = f"request body larger than {limit} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await refuse(send, 413, message)
            return
        seen = 0
        started = False

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
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
                await refuse(send, 413, message)


class InFlightLimit:
    """Answers 429 to a request on ``prefixes`` while ``max_in_flight`` of them are running.

    Counted on the event loop (no lock needed): a request holds its place from the end of
    its head (once ``TokenGate`` let it through) to its response's last byte, so a client
    sending its body slowly counts too.
    """

    def __init__(self, app: Any, *, max_in_flight: int, prefixes: Sequence[str]) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.prefixes = tuple(prefixes)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not matches(scope["path"], self.prefixes):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            message = f"{self.max_in_flight} decisions in flight (http.max_concurrency); retry"
            await refuse(send, 429, message)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


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
            message = f"request head larger than {self.max_bytes} bytes"
            await refuse(send, 431, message, close=True)
            return
        await self.app(scope, receive, send)


def head_size(scope: Scope) -> int:
    """About the bytes of the request line and headers as they came on the wire."""
    line = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 20
    return line + sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or [])


class TokenGate:
    """Refuses a request on ``prefixes`` whose token may not ``scope`` (401, 403, 503) as soon
    as its head has arrived: a caller without a token neither has its body read and parsed
    nor takes a place among the decisions in flight. The routes check again (``require``).
    Only ``POST`` is gated (every decision route is a POST): another method is answered by
    the routes (405 naming the allowed ones, or 204 to ``OPTIONS``).
    """

    def __init__(
        self,
        app: Any,
        *,
        auth: Auth,
        scope: str,
        prefixes: Sequence[str],
        exempt: Sequence[Any] = (),
    ) -> None:
        self.app = app
        self.auth = auth
        self.scope = scope
        self.prefixes = tuple(prefixes)
        self.exempt = exempt
        """Path patterns under ``prefixes`` that no POST route serves (a GET listing): a POST
        there is answered by the routes (405), not refused for its token. The app fills the
        list once its routes are in."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        guarded = scope["type"] == "http" and scope["method"] == "POST"
        if (
            guarded
            and matches(scope["path"], self.prefixes)
            and not any(p.match(scope["path"]) for p in self.exempt)
        ):
            headers: dict[str, str] = {}
            for name, value in scope.get("headers") or []:
                headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
            try:
                self.auth.check(self.scope, token_of(headers))
            except ApiError as error:
                await send_error(send, error)
                return
        await self.app(scope, receive, send)
