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


async def strict_json(request: Request) -> None:
    """Refuse (422) a body the lenient parser would take but a policy must not: a key twice
    in one object (which one wins differs between parsers), NaN or Infinity, a number too
    large for a float, nesting deeper than ``MAX_DEPTH``."""
    body = await request.body()
    try:
        data = json.loads(
            body, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float
        )
    except json.JSONDecodeError:
        return  # not JSON at all: the body's own validation says so
    except (ValueError, RecursionError) as exc:
        message = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise ApiError(422, "invalid_input", message, [{"loc": ["body"], "msg": message}]) from exc
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and depth(data) > MAX_DEPTH:
        message = f"nested deeper than {MAX_DEPTH} levels"
        raise ApiError(422, "invalid_input", message, [{"loc": ["body"], "msg": message}])
