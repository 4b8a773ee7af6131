"""Reading JSON text that comes from outside (a request, a tool call's arguments, a command
line, a hook's stdin) strictly: what Python's parser takes but a policy must not.

Refused, each as a ``ValueError`` saying which: a key twice in one object (parsers disagree on
which one wins, so a policy could check one value while the tool runs with the other), NaN
or Infinity, a float that overflows, an integer of more digits than Python converts, nesting
deeper than ``MAX_DEPTH`` (however deep: the parser's own recursion limit is never what
answers). Text that is not JSON at all is a ``json.JSONDecodeError`` (a ``ValueError`` too).
"""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_DEPTH = 64
"""How deep JSON text may nest (objects and arrays): deeper is refused before the engine
sees it, so no part of it recurses that far."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError(f"key {_first_repeated(pairs)!r} appears twice in one object")
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


def _int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("-")) > limit:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is too large")
    return int(text)


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


def parse_strict(text: bytes | str) -> Any:
    """``text`` as JSON, refusing what a policy must not take (see the module).

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), or JSON a policy must not take;
            the message says which.
    """
    try:
        data = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except RecursionError as exc:  # far deeper than MAX_DEPTH: the same answer
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from exc
    if isinstance(text, str):
        opened = text.count("[") + text.count("{")
    else:
        opened = text.count(b"[") + text.count(b"{")
    if opened > MAX_DEPTH and depth(data) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return data


__all__ = ["MAX_DEPTH", "depth", "parse_strict", "shown_data"]


def shown_data(value: Any) -> Any:
    """``value`` as the JSON data ``tool_result`` hooks see as the event's ``data`` (a tool's
    structured data, a LangChain artifact); None for no value, or one that is not JSON data
    (hooks could not see it whole, so it must go nowhere)."""
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None
