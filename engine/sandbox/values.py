"""Checks that a value a script hands over is plain JSON, within depth and size caps."""

from __future__ import annotations

import json
import math
from typing import Any

SAFE_INT = 2**53 - 1


class RegexTimeout(Exception):
    """host.match/redact for a Python script ran out of the call's time."""


class InvalidValue(Exception):
    """A value is not plain JSON or is over a cap; the message says what and where."""


def check_json(value: Any, *, max_depth: int, what: str) -> None:
    """Raise InvalidValue unless ``value`` is made of exact JSON types, nested <= max_depth.

    Iterative, so a cycle or a deep structure ends at the depth cap, not in a RecursionError.
    """
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        kind = type(v)
        if v is None or kind is bool or kind is str:
            continue
        if kind is int:
            if abs(v) > SAFE_INT:
                raise InvalidValue(f"{what}: integers must be within +-(2**53 - 1)")
        elif kind is float:
            if not math.isfinite(v):
                raise InvalidValue(f"{what}: numbers must be finite")
        elif kind is dict or kind is list:
            if depth >= max_depth:
                raise InvalidValue(f"{what}: nested deeper than {max_depth} levels")
            if kind is dict:
                for key in v:
                    if type(key) is not str:
                        raise InvalidValue(f"{what}: object keys must be strings")
                todo.extend((item, depth + 1) for item in v.values())
            else:
                todo.extend((item, depth + 1) for item in v)
        else:
            raise InvalidValue(f"{what}: {kind.__name__} is not JSON")


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: the one size measure of every cap."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8", "surrogatepass"))


def check_result(value: Any, limits: dict[str, int]) -> None:
    """A call's return: None or a plain JSON object within the depth and size caps."""
    if value is not None and type(value) is not dict:
        what = "an array" if type(value) is list else type(value).__name__
        raise InvalidValue(f"result: must be null or a plain object, not {what}")
    check_json(value, max_depth=limits["max_depth"], what="result")
    if json_size(value) > limits["max_result_bytes"]:
        raise InvalidValue(f"result: larger than {limits['max_result_bytes']} bytes")


def finish(
    value: Any, out: dict[str, Any], limits: dict[str, int], duration_ms: float
) -> dict[str, Any]:
    """The success response of a call, after the result passed check_result."""
    logs = list(out["logs"])
    if out.get("dropped_logs"):
        logs.append(f"[{out['dropped_logs']} more log lines dropped]")
    return {
        "ok": True,
        "value": value,
        "logs": logs,
        "emits": out["emits"],
        "state_writes": out["state_writes"],
        "state_ttls": out["state_ttls"],
        "duration_ms": duration_ms,
    }
