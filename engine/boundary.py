"""Event normalisation: the one rule that turns what a host hands the engine into safe JSON data.

Every event is normalised once, before any hook sees it (``make_event``, and replay for
recorded events), and every value a hook hands back (``parse_change``) follows the same rule:

- text: a lone surrogate (``"\\ud800"``) becomes U+FFFD; a valid pair becomes its character;
- numbers: NaN, Infinity and -Infinity become ``null``; an integer beyond ±(2**53 - 1), which
  JavaScript cannot hold exactly, becomes its decimal string (so every hook compares the same
  value); booleans stay booleans;
- containers: tuples become lists; subclasses of dict, list, str, int and float become the
  plain type;
- anything else (bytes, sets, objects, non-string keys) is refused: ``InputError`` names each
  value by its path, e.g. ``event.input.data: bytes is not JSON``. A host's event is
  stricter (``normalize_host_value``): NaN and the infinities are refused too, and the
  refusals are raised to the host as an ``EventError`` (engine/points.py ``make_event``);
- size: the whole event is at most ``MAX_EVENT_BYTES`` as the workers receive it (compact JSON,
  non-ASCII escaped). What does not fit is cut with a visible marker: a text keeps its head and
  ends with ``…[cut: N more characters]``, a list ends with ``"[cut: N more items]"``, a mapping
  gets the key ``"[cut]"`` with ``"N more keys"`` (the event's own fields are all kept, their
  values cut; the fields come in the event's order, so a huge ``input`` leaves no room for the
  ``result`` after it);
- depth: a value nested deeper than ``MAX_DEPTH`` below the event becomes
  ``"[cut: nested deeper than 64]"``.

The walk is linear in the size of the value and never goes deeper than ``MAX_DEPTH`` frames, so
cyclic or hostile values end at the size or depth cap.
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring_ascii
from typing import Any

from engine.errors import InputError

MAX_EVENT_BYTES = 2_000_000
"""Largest event handed to hooks, as compact ASCII JSON: half a worker's ``max_input_bytes``
(4 MB), which leaves room for the hook's state (at most about 1 MB) and its config."""
MAX_DEPTH = 64
"""Deepest nesting kept below the event itself."""
MAX_SAFE_INT = 2**53 - 1
"""Largest integer JavaScript holds exactly; larger ones become strings."""
DEEP_MARKER = f"[cut: nested deeper than {MAX_DEPTH}]"
CUT_KEY = "[cut]"

_SIZE_CUT = f"cut at the event's size cap of {MAX_EVENT_BYTES:,} bytes (JSON, non-ASCII escaped)"
_DEEP_CUT = f"cut at the depth cap: nested deeper than {MAX_DEPTH}"
_SCALAR_COST = 24  # an upper bound of a number, true, false or null in JSON, with its comma
_RESERVE = 4096  # the markers of the containers still open when the budget ends (depth ≤ 64)


def normalize_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event under the rule above (a new dict; the host's values are not changed).

    Raises:
        InputError: a value is not JSON data; ``.problems`` names each by path, ``.event`` is
            the event with those values replaced by ``"[refused: ...]"`` markers.
    """
    value, problems = normalize_value(event, "event")
    if problems:
        raise InputError(problems, event=value)
    if not isinstance(value, dict):  # the walk keeps a mapping a mapping
        raise InputError(["event: an event is a mapping"])
    return value


def normalize_value(
    value: Any, path: str, *, budget: int = MAX_EVENT_BYTES
) -> tuple[Any, list[str]]:
    """``value`` under the rule above, and the problems found (each ``path: what``)."""
    if type(value) is dict:
        copied = plain_copy(value, budget=budget)
        if copied is not None:
            return copied, []
    walk = _Walk(budget)
    out = walk.value(value, path, 0)
    return out, walk.problems


def normalize_host_value(
    value: Any, *, budget: int = MAX_EVENT_BYTES
) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """``value`` (a host's event fields) under the rule above, but for numbers: NaN and the
    infinities are refused as well (JSON has no such numbers, and a host that sends them
    made a mistake, as with bytes). Returns the value, the refused values as
    ``{"loc": [...], "msg": ...}`` errors (``loc`` the path below ``value``), and the paths
    where the size or depth cap cut something (``event.input.a``), in the walk's order."""
    if type(value) is dict:
        copied = plain_copy(value, budget=budget)
        if copied is not None:
            return copied, [], []
    walk = _Walk(budget, finite_only=True)
    out = walk.value(value, "event", 0)
    refused = [{"loc": _loc(path), "msg": what} for path, what in walk.refused]
    return out, refused, [f"{_shown(path)}: {what}" for path, what in walk.cuts]


class _NotPlain(Exception):
    """Raised inside ``plain_copy``: a value the rule would change (or refuse)."""


def plain_copy(value: dict[str, Any], *, budget: int = MAX_EVENT_BYTES) -> dict[str, Any] | None:
    """A copy of ``value`` when the rule above keeps it as it is, else None (the walk decides).

    The common event is small plain data: text keys, text without lone surrogates, safe
    integers, finite floats, booleans, None, dicts and lists, not nested past ``MAX_DEPTH``,
    and far under the budget. Then the walk would only copy it, so this copies it in one
    pass with no paths and no exact byte count: each text is charged the most its JSON
    escape can take (6 bytes per ASCII character, 12 per other character), so a value that
    fits by that bound fits exactly too. Anything else returns None, and the walk (which
    names the problems and cuts what does not fit) runs instead."""
    size = [0]
    try:
        out = _copy_mapping(value, 0, size)
    except _NotPlain:
        return None
    return out if size[0] < budget - _RESERVE else None


def _copy_mapping(value: dict[Any, Any], depth: int, size: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cost = 2
    for key, item in value.items():
        if type(key) is not str:
            raise _NotPlain
        cost += 6 * len(key) + 3 if key.isascii() else _text_cost(key)
        kind = type(item)
        if kind is str:
            cost += 6 * len(item) + 3 if item.isascii() else _text_cost(item)
        elif item is None or kind is bool:
            cost += _SCALAR_COST
        elif kind is dict or kind is list:
            item = _copy_container(item, depth, size)
        else:
            cost += _number_cost(item, kind)
        out[key] = item
    size[0] += cost
    return out


def _copy_list(value: list[Any], depth: int, size: list[int]) -> list[Any]:
    out: list[Any] = []
    cost = 2
    for item in value:
        kind = type(item)
        if kind is str:
            cost += 6 * len(item) + 3 if item.isascii() else _text_cost(item)
        elif item is None or kind is bool:
            cost += _SCALAR_COST
        elif kind is dict or kind is list:
            item = _copy_container(item, depth, size)
        else:
            cost += _number_cost(item, kind)
        out.append(item)
    size[0] += cost
    return out


def _copy_container(item: Any, depth: int, size: list[int]) -> Any:
    if depth >= MAX_DEPTH:  # the walk would put the depth marker here
        raise _NotPlain
    if type(item) is dict:
        return _copy_mapping(item, depth + 1, size)
    return _copy_list(item, depth + 1, size)


def _text_cost(text: str) -> int:
    """A non-ASCII text's bound (its JSON escape is at most 12 bytes a character)."""
    if no_lone_surrogates(text) is not text:
        raise _NotPlain
    return 12 * len(text) + 3


def _number_cost(item: Any, kind: type) -> int:
    if kind is int and -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
        return _SCALAR_COST
    if kind is float and math.isfinite(item):
        return _SCALAR_COST
    raise _NotPlain


# A path is built only when a problem names it: (parent path, key or index) pairs, ending in
# the root's name. Formatting every key's path up front would double the cost of the walk.
_Path = str | tuple[Any, str | int]


class _Walk:
    """One normalisation: the bytes left of the budget and the problems found so far."""

    def __init__(self, budget: int, *, finite_only: bool = False) -> None:
        self.left = budget - _RESERVE
        self.problems: list[str] = []
        self.refused: list[tuple[_Path, str]] = []
        self.finite_only = finite_only
        """Refuse NaN and the infinities rather than make them ``null``."""
        self.cuts: list[tuple[_Path, str]] = []
        """Where a cap cut something (a text, a list, a mapping, a value too deep), and why."""

    def value(self, value: Any, path: _Path, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value, path)
        if value is None or kind is bool:
            self.left -= _SCALAR_COST
            return value
        if kind is int or kind is float:
            if self.finite_only and kind is float and not math.isfinite(value):
                return self.refuse(path, f"{value} is not a JSON number")
            self.left -= _SCALAR_COST
            return _number(value)
        if depth > MAX_DEPTH:
            self.cuts.append((path, _DEEP_CUT))
            return self.text(DEEP_MARKER)
        if isinstance(value, dict):
            return self.mapping(value, path, depth)
        if isinstance(value, (list, tuple)):
            return self.sequence(value, path, depth)
        if isinstance(value, str):
            return self.text(str.__str__(value), path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = int(value) if isinstance(value, int) else float(value)
            if self.finite_only and not math.isfinite(number):
                return self.refuse(path, f"{number} is not a JSON number")
            self.left -= _SCALAR_COST
            return _number(number)
        return self.refuse(path, f"{kind.__name__} is not JSON")

    def refuse(self, path: _Path, what: str) -> str:
        self.problems.append(f"{_shown(path)}: {what}")
        self.refused.append((path, what))
        return self.text(f"[refused: {what}]")

    def text(self, value: str, path: _Path | None = None) -> str:
        if not value.isascii():
            value = no_lone_surrogates(value)
        cost = len(encode_basestring_ascii(value)) + 1
        if cost <= self.left:
            self.left -= cost
            return value
        if path is not None:  # a marker of the walk's own is not the host's data
            self.cuts.append((path, _SIZE_CUT))
        return self.cut_text(value, cost)

    def cut_text(self, value: str, cost: int) -> str:
        room = max(self.left - 48, 0)  # the marker's own bytes
        keep = len(value) * room // cost
        while keep and len(encode_basestring_ascii(value[:keep])) > room:
            keep = keep * 3 // 4
        self.left -= room + 48
        return f"{value[:keep]}…[cut: {len(value) - keep} more characters]"

    def mapping(self, value: dict[Any, Any], path: _Path, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.left -= 2
        for n, (key, item) in enumerate(value.items()):
            if type(key) is not str or not key.isascii():
                if not isinstance(key, str):
                    what = f"a key of type {type(key).__name__} is not JSON (keys are text)"
                    self.refuse(path, what)
                    continue
                key = no_lone_surrogates(str.__str__(key))
            cost = len(encode_basestring_ascii(key)) + 1
            if cost >= self.left and depth:  # a key is never cut: the mapping ends here
                # (the event's own fields are all kept: their values are cut instead)
                out[CUT_KEY] = f"{len(value) - n} more keys"
                self.cuts.append((path, _SIZE_CUT))
                break
            self.left -= cost
            if not self.plain(item):
                out[key] = self.value(item, (path, key), depth + 1)
            else:
                out[key] = item
        return out

    def sequence(self, value: list[Any] | tuple[Any, ...], path: _Path, depth: int) -> list[Any]:
        out: list[Any] = []
        self.left -= 2
        for n, item in enumerate(value):
            if self.left <= 0:
                out.append(f"[cut: {len(value) - n} more items]")
                self.cuts.append((path, _SIZE_CUT))
                break
            out.append(item if self.plain(item) else self.value(item, (path, n), depth + 1))
        return out

    def plain(self, item: Any) -> bool:
        """Whether ``item`` is kept as it is: ASCII text that fits, None, a bool, a safe int
        (counted here; ``value`` handles the rest, by the same rule)."""
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return False
            cost = len(encode_basestring_ascii(item)) + 1
            if cost > self.left:
                return False
            self.left -= cost
            return True
        if item is None or kind is bool or (kind is int and -MAX_SAFE_INT <= item <= MAX_SAFE_INT):
            self.left -= _SCALAR_COST
            return True
        return False


def _shown(path: _Path) -> str:
    """``event.input.items[3]["a b"]``: a path as a problem names it."""
    parts: list[str] = []
    while isinstance(path, tuple):
        path, step = path
        if isinstance(step, int):
            parts.append(f"[{step}]")
        else:
            parts.append(
                f".{step}" if step.isidentifier() else f"[{encode_basestring_ascii(step)}]"
            )
    return path + "".join(reversed(parts))


def _loc(path: _Path) -> list[str | int]:
    """``["input", "items", 3]``: a path as an EventError's ``loc`` (below the root)."""
    parts: list[str | int] = []
    while isinstance(path, tuple):
        path, step = path
        parts.append(step)
    return parts[::-1]


def _number(value: int | float) -> int | float | str | None:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        return value
    try:
        return str(value)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return f"[cut: an integer of {value.bit_length()} bits]"


def no_lone_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # pairs become their character, lone halves U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


__all__ = [
    "MAX_DEPTH",
    "MAX_EVENT_BYTES",
    "MAX_SAFE_INT",
    "normalize_event",
    "normalize_host_value",
    "normalize_value",
    "plain_copy",
]
