"""Plain JSON across the sandbox boundary: checks on what a script hands over (depth and size
caps), and fresh copies of what it is handed."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn

SAFE_INT = 2**53 - 1


class RegexTimeout(Exception):
    """host.match/redact for a Python script ran out of the call's time."""


class InvalidValue(Exception):
    """A value is not plain JSON or is over a cap; the message says what and where."""


def check_json(value: Any, *, max_depth: int, what: str) -> None:
    """Raise InvalidValue unless ``value`` is made of exact JSON types, nested <= max_depth.

    Iterative, so a deep structure ends at the depth cap, not in a RecursionError. The first
    walk keeps no paths (it runs on every result); a value it refuses is walked again to name
    where the problem is (``result.input.tags: a tuple is not JSON``) and to tell a cycle
    (``result.input.d: contains a cycle``) from a value nested too deeply.
    """
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        kind = type(v)
        if v is None or kind is bool or kind is str:
            continue
        if kind is int:
            if abs(v) > SAFE_INT:
                _refuse(value, max_depth, what)
        elif kind is float:
            if not math.isfinite(v):
                _refuse(value, max_depth, what)
        elif kind is dict or kind is list:
            if depth >= max_depth:
                _refuse(value, max_depth, what)
            if kind is dict:
                for key in v:
                    if type(key) is not str:
                        _refuse(value, max_depth, what)
                todo.extend((item, depth + 1) for item in v.values())
            else:
                todo.extend((item, depth + 1) for item in v)
        else:
            _refuse(value, max_depth, what)


_Path = tuple[Any, ...]
_STEP_CHARS = 40
_PATH_CHARS = 300


def _refuse(value: Any, max_depth: int, what: str) -> NoReturn:
    """Find the first problem in ``value`` again, with its path, and raise it."""
    found = _problem(value, (), [], max_depth)
    path, problem = found if found is not None else ((), "not JSON")
    raise InvalidValue(f"{shown_path(what, path)}: {problem}")


def _problem(v: Any, path: _Path, above: list[Any], max_depth: int) -> tuple[_Path, str] | None:
    """The path and the problem of the first value in ``v`` that is not plain JSON.

    ``above`` holds the containers on the way down, so a container inside itself is a cycle;
    recursion is bounded by ``max_depth`` (a cycle longer than that is nested too deeply).
    """
    kind = type(v)
    if v is None or kind is bool or kind is str:
        return None
    if kind is int:
        return None if abs(v) <= SAFE_INT else (path, "integers must be within +-(2**53 - 1)")
    if kind is float:
        return None if math.isfinite(v) else (path, "numbers must be finite")
    if kind is not dict and kind is not list:
        return path, f"{_a(kind.__name__)} is not JSON"
    if any(v is seen for seen in above):
        return path, "contains a cycle"
    if len(above) >= max_depth:
        return path, f"nested deeper than {max_depth} levels"
    if kind is dict:
        for key in v:
            if type(key) is not str:
                return path, f"a key of type {type(key).__name__} is not JSON (keys are text)"
    above.append(v)
    for step, item in v.items() if kind is dict else enumerate(v):
        found = _problem(item, (*path, step), above, max_depth)
        if found is not None:
            return found
    above.pop()
    return None


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def shown_path(root: str, path: _Path) -> str:
    """``result.input.items[3]["a b"]``: where a value is, as an error names it (long keys and
    long paths are cut, so the message stays short)."""
    parts = [root]
    for step in path:
        if type(step) is int:
            parts.append(f"[{step}]")
        else:
            text = step if len(step) <= _STEP_CHARS else step[:_STEP_CHARS] + "…"
            parts.append(f".{text}" if step.isidentifier() else f"[{json.dumps(text)}]")
    shown = "".join(parts)
    if len(shown) <= _PATH_CHARS:
        return shown
    return shown[: _PATH_CHARS // 2] + "…" + shown[-_PATH_CHARS // 2 :]


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
