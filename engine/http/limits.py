"""``Gate``, the one ASGI middleware that refuses before any route runs: a request head over
its bound (431), a decision without a decide token (401, 403; before its body is read), a
decision beyond the in-flight cap (429), a body over its route's size limit (413). It also
hands the decision routes' common requests to their fast path (engine/http/fast.py).
Each refusal is the service's common error body (engine/http/errors.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.http.auth import Auth, token_of
from engine.http.errors import ApiError
from engine.http.fast import FastRoute, Matched, fast_match, send_json

Scope = dict[str, Any]


async def refuse(
    send: Any, status: int, message: str, *, code: str | None = None, close: bool = False
) -> None:
    """Answer ``status`` with the common error body (and ``connection: close`` if asked)."""
    headers = {"retry-after": "1"} if status == 429 else {}
    await send_error(send, ApiError(status, code, message, headers=headers), close=close)


async def send_error(send: Any, error: ApiError, *, close: bool = False) -> None:
    """Answer ``error`` as the common error body, from an ASGI middleware."""
    await send_json(send, error.status, error.body(), error.headers, close=close)


def matches(path: str, prefixes: Sequence[str]) -> bool:
    return any(path.startswith(prefix) for prefix in prefixes)


def head_size(scope: Scope) -> int:
    """About the bytes of the request line and headers as they came on the wire."""
    line = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 20
    return line + sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or [])


def declared_too_large(scope: Scope, limit: int) -> bool:
    """Whether the request declares a body over ``limit`` (or a Content-Length that is not a
    number; each one counts, should there be several)."""
    declared = (value for name, value in scope["headers"] if name == b"content-length")
    return any(not value.isdigit() or int(value) > limit for value in declared)


class _TooLarge(Exception):
    pass


async def limited(app: Any, scope: Scope, receive: Any, send: Any, limit: int) -> None:
    """Run ``app`` on a body of at most ``limit`` bytes, declared or streamed (else 413)."""
    message = f"request body larger than {limit} bytes"
    if declared_too_large(scope, limit):
        await refuse(send, 413, message)
        return
    seen = 0
    started = False

    async def counted() -> Any:
        nonlocal seen
        received = await receive()
        seen += len(received.get("body", b""))
        if seen > limit:
            raise _TooLarge
        return received

    async def tracked_send(sent: Any) -> None:
        nonlocal started
        started = started or sent["type"] == "http.response.start"
        await send(sent)

    try:
        await app(scope, counted, tracked_send)
    except _TooLarge:
        if not started:
            await refuse(send, 413, message)


async def read_body(receive: Any, limit: int) -> bytes | None:
    """The whole body, or None if it grows over ``limit`` bytes.

    Raises:
        ConnectionResetError: the client went away before sending it all.
    """
    chunks, seen = [], 0
    while True:
        received = await receive()
        if received["type"] == "http.disconnect":
            raise ConnectionResetError("the client went away")
        chunk = received.get("body", b"")
        seen += len(chunk)
        if seen > limit:
            return None
        chunks.append(chunk)
        if not received.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives ``body`` once (it was read already), then waits as ``receive``
    does (for the client's disconnect)."""
    given = False

    async def again() -> Any:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


class Gate:
    """Every check that comes before a route, in one pure-ASGI middleware (no task, no
    ``BaseHTTPMiddleware``), in this order:

    1. the request head's size (431, then close): the server's parser bounds a head that
       arrives in pieces; one that arrives whole in a single read is parsed whatever its
       size, so the bound is checked again here;
    2. on ``prefixes`` (the decision routes), a ``POST``'s token (401, 403, 503) as soon as
       its head has arrived: a caller without a token neither has its body read nor takes a
       place in flight. Another method is answered by the routes (405 naming the allowed
       ones, or 204 to ``OPTIONS``); so is a POST to ``exempt`` (no POST route serves it);
    3. on ``prefixes``, the place among the decisions in flight (429 past
       ``max_in_flight``), held from the end of the head to the answer's last byte, so a
       client sending its body slowly counts too; counted on the event loop, no lock;
    4. the body's size, declared or streamed (413): ``decision_max_body_bytes`` on
       ``prefixes``, ``max_body_bytes`` elsewhere.

    Then a decision request the fast path takes (engine/http/fast.py) is answered there;
    every other request goes on to ``app``. The routes check the token again (``require``).

    Args:
        app: the ASGI app.
        auth: the tokens; ``decide`` is checked on ``prefixes``.
        max_header_bytes: the request head's bound.
        max_body_bytes: the body limit of every route but ``prefixes``.
        decision_max_body_bytes: the body limit of ``prefixes``.
        max_in_flight: decision requests handled at once.
        prefixes: the decision routes' path prefixes.
        exempt: path patterns under ``prefixes`` that no POST route serves (a GET listing);
            the app fills the list once its routes are in.
        fast: the fast path's routes.
    """

    def __init__(
        self,
        app: Any,
        *,
        auth: Auth,
        max_header_bytes: int,
        max_body_bytes: int,
        decision_max_body_bytes: int,
        max_in_flight: int,
        prefixes: Sequence[str],
        exempt: Sequence[Any] = (),
        fast: Sequence[FastRoute] = (),
    ) -> None:
        self.app = app
        self.auth = auth
        self.max_header_bytes = max_header_bytes
        self.max_body_bytes = max_body_bytes
        self.decision_max_body_bytes = decision_max_body_bytes
        self.max_in_flight = max_in_flight
        self.prefixes = tuple(prefixes)
        self.exempt = exempt
        self.fast = tuple(fast)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif head_size(scope) > self.max_header_bytes:
            message = f"request head larger than {self.max_header_bytes} bytes"
            await refuse(send, 431, message, close=True)
        elif not matches(scope["path"], self.prefixes):
            await limited(self.app, scope, receive, send, self.max_body_bytes)
        else:
            await self.decision(scope, receive, send)

    async def decision(self, scope: Scope, receive: Any, send: Any) -> None:
        """A request on a decision route: token, place in flight, body limit, then the fast
        path or the app."""
        refusal = self.refusal(scope)
        if refusal is not None:
            await send_error(send, refusal)
            return
        self.in_flight += 1
        try:
            found = fast_match(self.fast, scope)
            if found is None:
                await limited(self.app, scope, receive, send, self.decision_max_body_bytes)
            else:
                await self.answer(found, scope, receive, send)
        finally:
            self.in_flight -= 1

    def refusal(self, scope: Scope) -> ApiError | None:
        """Why a decision request is refused before its body is read, or None."""
        if scope["method"] == "POST" and not any(p.match(scope["path"]) for p in self.exempt):
            headers: dict[str, str] = {}
            for name, value in scope["headers"]:
                headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
            try:
                self.auth.check("decide", token_of(headers))
            except ApiError as error:
                return error
        if self.in_flight >= self.max_in_flight:
            message = f"{self.max_in_flight} decisions in flight (http.max_concurrency); retry"
            return ApiError(429, None, message, headers={"retry-after": "1"})
        return None

    async def answer(self, found: Matched, scope: Scope, receive: Any, send: Any) -> None:
        """The fast path: read the body whole, answer it there, or hand it to the app."""
        limit = self.decision_max_body_bytes
        if declared_too_large(scope, limit):
            await refuse(send, 413, f"request body larger than {limit} bytes")
            return
        try:
            body = await read_body(receive, limit)
        except ConnectionResetError:
            return  # nobody to answer
        if body is None:
            await refuse(send, 413, f"request body larger than {limit} bytes")
        elif not await found.answer(body, send):
            await self.app(scope, replay(body, receive), send)
