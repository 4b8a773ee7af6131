"""The decision routes' stricter reading of a JSON body: what Python's parser takes but a
policy must not (a key twice in one object, NaN, a float that overflows, deep nesting), as
engine/jsontext.py reads it."""

from __future__ import annotations

import json

from fastapi import Request

from engine.http.errors import ApiError
from engine.jsontext import MAX_DEPTH, depth, parse_strict


async def strict_json(request: Request) -> None:
    """A route dependency: 422 for a body the lenient parser would take but a policy must
    not: a key twice in one object (which one wins differs between parsers), NaN or Infinity,
    a number too large for a float, an integer too long to convert, nesting deeper than
    ``MAX_DEPTH`` (engine/jsontext.py). A body that is not JSON at all is left to the
    route's own validation."""
    try:
        parse_strict(await request.body())
    except json.JSONDecodeError:
        return
    except ValueError as exc:
        raise ApiError(
            422, "invalid_input", str(exc), [{"loc": ["body"], "msg": str(exc)}]
        ) from exc


__all__ = ["MAX_DEPTH", "depth", "parse_strict", "strict_json"]
