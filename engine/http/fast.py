"""The decision routes' fast path: their common request, answered by plain ASGI code instead
of FastAPI's routing, dependency solving and request validation, which cost several times
the HTTP parsing itself per decision.

A request is taken only when the route's own declaration would take it as it is: the path
with each parameter matching its pattern, a query naming only known parameters (once each,
valid), a body sent as ``application/json`` (when the route reads JSON) that parses strictly
(engine/http/strict.py) and validates against the route's own model. Anything else, every
malformed request included, goes on to the FastAPI route with its body replayed, which
answers it as it always did: the 415s and 422s stay FastAPI's own. Both paths run the same
functions (``decisions.answer_one``, ``opa.answer_data``, ...), so an answer does not depend
on the path that gave it. ``Gate`` (engine/http/limits.py) has checked the token, the place
in flight and the body's size before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from pydantic import BaseModel

from engine.errors import StoreError
from engine.http.errors import ApiError, store_unavailable
from engine.http.strict import parse_strict

Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]]
"""A status, its JSON data, and maybe headers."""
Params = Mapping[str, str]
"""The path's parameters, or the query's."""
Handler = Callable[[Params, Params, bytes], Awaitable[Answer | None]]
"""``handler(path_params, query, body)``: the answer, or None to leave it to the route."""
Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class FastRoute:
    """A decision route's fast path (POST only).

    Args:
        path: the route's path, each parameter a named group with the route's own pattern.
        query: the query parameters the route takes, each with its pattern.
        handle: the handler.
        json_body: the route reads its body as JSON only when it is sent as JSON.
    """

    path: re.Pattern[str]
    query: Mapping[str, re.Pattern[str]]
    handle: Handler
    json_body: bool = True


@dataclass(frozen=True)
class Matched:
    """A request a fast route matched: answer it with ``answer(body, send)``."""

    route: FastRoute
    params: Mapping[str, str]
    query: Mapping[str, str]
    path: str

    async def answer(self, body: bytes, send: Any) -> bool:
        """Answer the request, or return False (nothing sent) to leave it to the route."""
        try:
            answer = await self.route.handle(self.params, self.query, body)
        except StoreError as exc:
            answer = refused(store_unavailable(self.path, exc))
        except ApiError as exc:  # as the route's exception handlers answer them
            answer = refused(exc)
        if answer is None:
            return False
        await send_json(send, *answer)
        return True


def refused(error: ApiError) -> Answer:
    return error.status, error.body(), error.headers


def fast_match(routes: Sequence[FastRoute], scope: Mapping[str, Any]) -> Matched | None:
    """The fast route that takes this request as it is, if one does."""
    if scope["method"] != "POST" or scope.get("root_path"):
        return None
    path = scope["path"]
    for route in routes:
        found = route.path.fullmatch(path)
        if found is None:
            continue
        query = read_query(scope["query_string"], route.query)
        if query is None or (route.json_body and not sent_as_json(scope["headers"])):
            return None
        return Matched(route, found.groupdict(), query, path)
    return None


def read_query(raw: bytes, known: Mapping[str, re.Pattern[str]]) -> dict[str, str] | None:
    """The query's parameters if each is known, given once and valid; else None."""
    if not raw:
        return {}
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    found = dict(pairs)
    if len(found) != len(pairs):
        return None
    for name, value in found.items():
        pattern = known.get(name)
        if pattern is None or pattern.fullmatch(value) is None:
            return None
    return found


def sent_as_json(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether the body comes as ``application/json``, which every JSON reader takes as JSON."""
    kinds = [value for name, value in headers if name == b"content-type"]
    if len(kinds) != 1:
        return False
    return kinds[0].partition(b";")[0].strip().lower() == b"application/json"


def take(model: type[Model], body: bytes) -> Model | None:
    """``body`` as ``model`` when it parses strictly and validates; else None (the route
    answers why)."""
    try:
        return model.model_validate(parse_strict(body))
    except ValueError:  # not JSON, JSON a policy refuses, or invalid (ValidationError)
        return None


def encode(data: Any) -> bytes:
    """JSON as ``JSONResponse`` renders it."""
    return json.dumps(
        data, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode()


async def send_json(
    send: Any,
    status: int,
    data: Any,
    headers: Mapping[str, str] | None = None,
    *,
    close: bool = False,
) -> None:
    """Answer ``status`` with ``data`` as JSON (and ``connection: close`` if asked)."""
    body = encode(data)
    head = [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", b"application/json"),
        *((name.encode(), value.encode()) for name, value in (headers or {}).items()),
    ]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
