"""Turn any value into JSON data every store accepts, marking what had to change.

The rule (docs/operations.md, "Record encoding"), applied to every string, key and number:

- a lone surrogate (U+D800..U+DFFF; a valid pair is joined first) or a NUL character
  becomes the six characters of its escape, ``\\ud800`` or ``\\u0000`` (PostgreSQL refuses
  both, and UTF-8 cannot encode a surrogate); the code point stays readable;
- NaN and the infinities become ``null``, as in events (engine/boundary.py);
- a string longer than ``max_string`` characters keeps its start and ends with
  ``[truncated: N characters]`` (N: the original length);
- a list or mapping nested deeper than ``max_depth`` becomes
  ``"[truncated: nested deeper than 64]"``;
- once ``budget`` characters (strings, keys, one per scalar) are spent, later strings keep
  ``[truncated: N characters]`` only and later items of a list or mapping become one
  ``"[truncated: N more items]"``;
- any other type becomes its ``str()`` under the same rules (``[unencodable: TYPE]`` if that
  fails); an integer too long to print becomes ``[truncated: integer of N bits]``.

``redact`` values are replaced by ``***`` inside every string and key, and a number whose
text equals one becomes ``"***"`` (records.mask by value; see engine/masking.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic_core

MAX_DEPTH = 64
MAX_STRING = 65_536
BUDGET = 1_000_000
REDACTED = "***"

_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_NUL = b"\\u0000"
"""A NUL as JSON writes it (or only text that looks like one)."""
_LONG = 3000
_DIGITS = b"0123456789"
_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % _LONG)
"""A number that may be too long to print (see ``_INT_BITS``), or just many digits."""
_INT_BITS = 10_000
"""Beyond this an int cannot be printed (Python's 4300-digit limit is about 14,000 bits)."""


def escape_text(text: str) -> str:
    """``text`` with each lone surrogate and NUL written as its ``\\uXXXX`` escape (a valid
    high-low pair of surrogates is joined into the character it encodes first)."""
    if not _UNSAFE.search(text):
        return text
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def truncated(length: int) -> str:
    return f"[truncated: {length} characters]"


class Encoder:
    """One encoding pass; holds the character budget left (make one per value encoded)."""

    def __init__(
        self,
        *,
        max_depth: int = MAX_DEPTH,
        max_string: int = MAX_STRING,
        budget: int = BUDGET,
        redact: Iterable[str] = (),
    ) -> None:
        self.max_depth = max_depth
        self.max_string = max_string
        self.left = budget
        # longest first, so that a secret containing another is replaced whole
        self.redact = sorted(set(redact), key=len, reverse=True)
        self.marked = 0
        """How many values this pass changed (escaped, cut, replaced), redactions excepted."""

    def value(self, value: Any, depth: int = 0) -> Any:
        """``value`` as safe JSON data (see the module docstring)."""
        if value is None or isinstance(value, bool):
            self.left -= 1
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int | float):
            return self.number(value)
        if isinstance(value, Mapping | list | tuple | set | frozenset):
            if depth >= self.max_depth:
                self.marked += 1
                return f"[truncated: nested deeper than {self.max_depth}]"
            if isinstance(value, Mapping):
                return self.mapping(value, depth + 1)
            return self.sequence(value, depth + 1)
        return self.text(_str_of(value))

    def text(self, text: str) -> str:
        for secret in self.redact:
            if secret in text:
                text = text.replace(secret, REDACTED)
        keep = min(self.max_string, max(self.left, 0))
        self.left -= min(len(text), keep) + 1
        if len(text) > keep:
            self.marked += 1
            text = text[:keep] + truncated(len(text))
        if _UNSAFE.search(text):
            self.marked += 1
            text = escape_text(text)
        return text

    def number(self, number: int | float) -> int | float | str | None:
        self.left -= 1
        if isinstance(number, float) and not math.isfinite(number):
            self.marked += 1
            return None
        if isinstance(number, int) and number.bit_length() > _INT_BITS:
            self.marked += 1
            return f"[truncated: integer of {number.bit_length()} bits]"
        if self.redact and str(number) in self.redact:
            return REDACTED
        return number

    def mapping(self, mapping: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, (key, item) in enumerate(mapping.items()):
            if self.left <= 0:
                self.marked += 1
                out["[truncated]"] = f"[truncated: {len(mapping) - i} more items]"
                break
            name = self.text(key if isinstance(key, str) else _str_of(key))
            out[name] = self.value(item, depth)
        return out

    def sequence(self, items: Iterable[Any], depth: int) -> list[Any]:
        out: list[Any] = []
        items = list(items)
        for i, item in enumerate(items):
            if self.left <= 0:
                self.marked += 1
                out.append(f"[truncated: {len(items) - i} more items]")
                break
            out.append(self.value(item, depth))
        return out


def encode(
    value: Any,
    *,
    max_depth: int = MAX_DEPTH,
    max_string: int = MAX_STRING,
    budget: int = BUDGET,
    redact: Iterable[str] = (),
) -> Any:
    """``value`` as JSON data every store accepts (the options are ``Encoder``'s).

    Most values need no change: those are returned as they are after one pass of the C JSON
    encoder, and only the rest are walked in Python.
    """
    redact = tuple(redact)
    if is_clean(value, max_depth=max_depth, max_length=min(max_string, budget), redact=redact):
        return value
    encoder = Encoder(max_depth=max_depth, max_string=max_string, budget=budget, redact=redact)
    return encoder.value(value)


def encode_fields(fields: Mapping[str, Any], *, redact: Iterable[str] = ()) -> dict[str, Any]:
    """Like ``encode`` for a mapping whose keys are a schema (a record's parts): every key
    stays as it is (escaped, never cut or redacted), the budget cuts the values in key order,
    and each value may nest ``max_depth`` levels below the part (as events may below the
    event: engine/boundary.py)."""
    redact = tuple(redact)
    if is_clean(fields, redact=redact):
        return dict(fields)
    encoder = Encoder(redact=redact)
    return {escape_text(str(key)): encoder.value(value) for key, value in fields.items()}


def is_clean(
    value: Any,
    *,
    max_depth: int = MAX_DEPTH,
    max_length: int = MAX_STRING,
    redact: tuple[str, ...] = (),
) -> bool:
    """Whether ``value`` is already what ``Encoder`` would make of it, and so is every part
    of it (False: not sure). Its JSON is at most ``max_length`` bytes. One pass of the
    serializer in Rust, then byte searches: most records never reach the Python walk."""
    try:  # a lone surrogate, an unknown type or very deep nesting fails here
        raw = pydantic_core.to_json(value, inf_nan_mode="null")  # as the store writes them
    except (pydantic_core.PydanticSerializationError, ValueError, RecursionError):
        return False
    if len(raw) > max_length or _NUL in raw:
        return False
    if len(raw) - len(raw.translate(None, _DIGITS)) >= _LONG and _LONG_NUMBER.search(raw):
        return False
    if any(_json_of(secret) in raw for secret in redact):
        return False
    return _depth_fits(raw, max_depth)


def _json_of(text: str) -> bytes:
    """``text`` as it appears inside a JSON string."""
    return pydantic_core.to_json(text)[1:-1]


def _depth_fits(raw: bytes, max_depth: int) -> bool:
    """Whether no array or object in the JSON ``raw`` is nested deeper than ``max_depth``.

    Byte operations only: escapes and string contents go, then each round removes the
    innermost pairs of brackets.
    """
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return True
    if b"\\" in raw:  # left to right, escaped backslashes first: then each \" is a quote
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    quoted = raw.translate(_ONE_KIND, _NOT_MARKS).split(b'"')
    marks = b"".join(quoted[::2])  # quotes now pair up: every other piece was inside one
    for _ in range(max_depth):  # valid JSON nests properly, so [ and { may count alike
        if not marks:
            return True
        marks = marks.replace(b"[]", b"")  # one level: replace() does not rescan its output
    return not marks


def _str_of(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__: say what it was, not what it said
        return f"[unencodable: {type(value).__name__}]"
