"""The decision routes' stricter reading of a JSON body: what Python's parser takes but a
policy must not (a key twice in one object, NaN, a float that overflows, deep nesting)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from engine.http.errors import ApiError

MAX_DEPTH = 64
"""How deep a request's JSON may nest (objects and arrays): deeper is refused with 422
before the engine sees it, so no part of it recurses that far."""


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _Duplicate(f"key {_first_repeated(pairs)!r} appears twice in one object")
    return data


def _first_repeated(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return ""


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]} is too large")
    return value


def depth(data: Any) -> int:
    """How deep ``data`` nests (a scalar is 0), found without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            stack.extend((item, level + 1) for item in value if isinstance(item, dict | list))
    return deepest


def parse_strict(body: bytes) -> Any:
    """``body`` as JSON, refusing what a policy must not take (see the module).

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), or JSON a policy must not take;
            the message says which.
    """
    try:
        data = json.loads(
            body, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float
        )
    except RecursionError as exc:
        raise ValueError("nested too deep") from exc
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and depth(data) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return data


async def strict_json(request: Request) -> None:
    """A route dependency: 422 for a body the lenient parser would take but a policy must
    not: a key twice in one object (which one wins differs between parsers), NaN or Infinity,
    a number too large for a float, nesting deeper than ``MAX_DEPTH``. A body that is not
    JSON at all is left to the route's own validation."""
    try:
        parse_strict(await request.body())
    except json.JSONDecodeError:
        return
    except ValueError as exc:
        raise ApiError(
            422, "invalid_input", str(exc), [{"loc": ["body"], "msg": str(exc)}]
        ) from exc
