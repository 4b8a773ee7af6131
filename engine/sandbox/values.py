"""Plain JSON across the sandbox boundary: checks on what a script hands over (depth and size
caps), and fresh copies of what it is handed."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable
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
                        raise InvalidValue(f"{what}: dict keys must be str")
                todo.extend((item, depth + 1) for item in v.values())
            else:
                todo.extend((item, depth + 1) for item in v)
        else:
            raise InvalidValue(f"{what}: {kind.__name__} is not JSON")


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""Made once: ``json.dumps`` with options builds an encoder on every call."""


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: the one size measure of every cap."""
    return len(_COMPACT.encode(value).encode("utf-8", "surrogatepass"))


def check_result(value: Any, limits: dict[str, int]) -> None:
    """A call's return: None or a plain JSON object within the depth and size caps."""
    if value is not None and type(value) is not dict:
        what = "a list" if type(value) is list else f"a {type(value).__name__}"
        raise InvalidValue(f"result: must be None or a dict, not {what}")
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
    answer = {
        "ok": True,
        "value": value,
        "logs": logs,
        "emits": out["emits"],
        "state_writes": out["state_writes"],
        "state_ttls": out["state_ttls"],
        "duration_ms": duration_ms,
    }
    if out.get("entries_added") or out.get("entries_read"):  # only when host.entries was used
        answer["entries_added"] = out["entries_added"]
        answer["entries_read"] = out["entries_read"]
    return answer


def copier(value: Any) -> Callable[[], Any]:
    """A function that returns a new copy of the JSON ``value`` on every call.

    Every list and dict of the copy is new, so a script that changes it changes its own copy;
    strings, numbers, booleans and None are immutable and shared. A container holding no
    container is copied by one C call, so a long flat list costs about a memory copy.
    """
    kind = type(value)
    if kind is not list and kind is not dict:
        return lambda: value
    pairs = value.items() if kind is dict else enumerate(value)
    inner = [(k, copier(v)) for k, v in pairs if type(v) is list or type(v) is dict]
    flat: Callable[[], Any] = value.copy
    if not inner:
        return flat

    def copy() -> Any:
        out = flat()
        for k, fresh in inner:
            out[k] = fresh()
        return out

    return copy


class ConfigCache:
    """Hook configs parsed once per worker, by the host's config key; a fresh copy per call.

    The key only finds the entry: the text must also be equal, so no mix-up of keys can hand
    one hook another's config. Bounded by entries and by the characters of text held.
    """

    def __init__(self, *, max_entries: int = 64, max_chars: int = 16_000_000) -> None:
        self._entries: OrderedDict[str, tuple[str, Callable[[], Any]]] = OrderedDict()
        self._max_entries, self._max_chars, self._chars = max_entries, max_chars, 0

    def fresh(self, key: str, text: str) -> Any:
        """A new copy of the config ``text`` (JSON) cached under ``key``."""
        entry = self._entries.get(key)
        if entry is None or entry[0] != text:
            entry = (text, copier(json.loads(text)))
            self._put(key, entry)
        else:
            self._entries.move_to_end(key)
        return entry[1]()

    def _put(self, key: str, entry: tuple[str, Callable[[], Any]]) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._chars -= len(old[0])
        self._entries[key] = entry
        self._chars += len(entry[0])
        while len(self._entries) > 1 and (
            len(self._entries) > self._max_entries or self._chars > self._max_chars
        ):
            _, (text, _) = self._entries.popitem(last=False)
            self._chars -= len(text)
