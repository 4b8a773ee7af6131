"""Turn any value into JSON data every store accepts, marking what had to change.

The rule (docs/operations.md, "Record encoding"), applied to every string, key and number:

- a lone surrogate (U+D800..U+DFFF; a valid pair is joined first) or a NUL character
  becomes the six characters of its escape, ``\\ud800`` or ``\\u0000`` (PostgreSQL refuses
  both, and UTF-8 cannot encode a surrogate); the code point stays readable;
- NaN and the infinities become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
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
text equals one becomes ``"***"`` (records.mask by value; see engine/records.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_DEPTH = 64
MAX_STRING = 65_536
BUDGET = 1_000_000
REDACTED = "***"

_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_FLOATS = {math.inf: "Infinity", -math.inf: "-Infinity"}
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

    def number(self, number: int | float) -> int | float | str:
        self.left -= 1
        if isinstance(number, float) and not math.isfinite(number):
            self.marked += 1
            return _FLOATS.get(number, "NaN")
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


def encode(value: Any, **options: Any) -> Any:
    """``value`` as JSON data every store accepts (one fresh ``Encoder``; same options)."""
    return Encoder(**options).value(value)


def _str_of(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__: say what it was, not what it said
        return f"[unencodable: {type(value).__name__}]"
