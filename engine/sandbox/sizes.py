"""Size pre-checks: refuse, before the C code runs, an operation whose result would be huge.

Every refusal is a ``SizeLimit`` (a MemoryError, so the call fails with cause ``memory``), raised
before anything is allocated. Sizes are counted in items: characters, bytes or list entries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.sandbox.guards import Budget

_PERCENT_AFTER_KEY = re.compile(r"[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.?)", re.DOTALL)
"""What follows ``%`` or ``%(key)`` in a conversion: flags, width, precision, length, type."""
_HUGE_FLOAT_CHARS = 330
"""``'%f' % 1e308`` writes 309 digits and a point and six decimals: a big float's text."""
_SEQUENCES = (str, bytes, list, tuple)
_INTS = (int, bool)
_CONTAINERS = (list, tuple, dict, set, frozenset)
_OTHER_SIZE = 100
"""What the text of any other value (a function, an iterator) counts: its repr is short."""


class SizeLimit(MemoryError):
    """An operation was refused before it ran: its result would pass a size limit."""


def check_binop(budget: Budget, op: str, a: Any, b: Any) -> None:
    """Refuse ``a op b`` (one of ``* ** << %``) when its result would be huge."""
    ints = type(a) in _INTS and type(b) in _INTS
    if op == "*":
        if ints:
            budget.bits(abs(a).bit_length() + abs(b).bit_length())
        elif isinstance(a, _SEQUENCES) and type(b) in _INTS:
            budget.sequence(len(a) * b)
        elif isinstance(b, _SEQUENCES) and type(a) in _INTS:
            budget.sequence(len(b) * a)
    elif op == "**" and ints and b > 0 and abs(a) > 1:
        budget.bits(abs(a).bit_length() * b)
    elif op == "<<" and ints and b > 0:
        budget.bits(abs(a).bit_length() + b)
    elif op == "%" and type(a) in (str, bytes):
        check_percent(budget, a, b)


def check_percent(budget: Budget, fmt: str | bytes, args: Any) -> None:
    """``fmt % args``: the format's length, its widths and precisions, and each argument's text."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    limit = budget.limits["max_sequence"]
    total = len(text)
    names: list[str] = []
    unnamed = False
    for name, width, precision in percent_specs(text):
        for n in (width, precision):
            if n == "*":
                raise ValueError("'*' widths are not allowed in % formatting")
            if n:
                total += int(n) if len(n) < 12 else limit + 1
        if name is None:
            unnamed = True
        else:
            names.append(name)
    budget.sequence(total)
    measure = _Measure(limit)
    for value in _percent_values(fmt, args, names, unnamed=unnamed):
        if type(value) is float and abs(value) >= 1e16:
            total += _HUGE_FLOAT_CHARS
            measure.check(total)
        else:
            total += measure.size(value, total)


def percent_specs(text: str) -> list[tuple[str | None, str, str]]:
    """The ``(key, width, precision)`` of every conversion in a ``%`` format, read as CPython
    reads them: a key runs to its balancing ``)``, so ``%(a(b))s`` names the key ``a(b)``.

    A format CPython would refuse (a key never closed, a conversion cut short) yields what
    was read so far: the formatting itself then raises.
    """
    specs: list[tuple[str | None, str, str]] = []
    at = text.find("%")
    while at >= 0:
        at += 1
        name = None
        if text.startswith("(", at):
            depth, start = 1, at + 1
            at = start
            while depth and at < len(text):
                depth += {"(": 1, ")": -1}.get(text[at], 0)
                at += 1
            if depth:
                break
            name = text[start : at - 1]
        spec = _PERCENT_AFTER_KEY.match(text, at)
        if spec is None:  # cannot happen: every part of the pattern is optional
            break
        if spec[3] != "%" or name is not None:  # ``%%`` writes a % and takes no argument
            specs.append((name, spec[1] or "", spec[2] or ""))
        at = text.find("%", spec.end())
    return specs


def _percent_values(fmt: str | bytes, args: Any, names: list[str], *, unnamed: bool) -> list[Any]:
    """The values ``fmt % args`` turns into text: a mapping's values by key (bytes keys for a
    bytes format), and the mapping itself where a conversion names no key."""
    if type(args) is dict:
        keys: list[Any] = names
        if isinstance(fmt, bytes):
            keys = [n.encode("latin-1") for n in names]
        return [args[k] for k in keys if k in args] + ([args] if unnamed else [])
    if type(args) is tuple:
        return list(args)
    return [args]


def text_size(value: Any, limit: int) -> int:
    """About ``len(str(value))``; SizeLimit as soon as the count passes ``limit``.

    A container that appears many times is measured once, so ``[[x] * 1000] * 1000`` takes
    about 2,000 steps, not a million. Escapes in a string's repr are not counted.
    """
    return _Measure(limit).size(value, 0)


class _Measure:
    """One ``text_size`` walk: the sizes of the containers seen so far, by identity."""

    __slots__ = ("limit", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: dict[int, int] = {}

    def size(self, value: Any, used: int) -> int:
        """The text size of ``value``, which comes after ``used`` characters of the whole."""
        kind = type(value)
        if kind is str or kind is bytes:
            size = len(value) + 3
        elif kind is int:
            size = value.bit_length() * 31 // 100 + 2
        elif kind is bool or kind is float or value is None:
            size = 25
        elif kind in _CONTAINERS or isinstance(value, BaseException):
            known = self.seen.get(id(value))
            if known is not None:
                size = known
            else:
                self.seen[id(value)] = 5  # a container inside itself prints as [...]
                size = self.seen[id(value)] = self.items(value, used)
        else:
            size = _OTHER_SIZE
        self.check(used + size)
        return size

    def items(self, value: Any, used: int) -> int:
        if isinstance(value, BaseException):
            items: Any = value.args
            size = len(type(value).__name__) + 4
        elif type(value) is dict:
            items = (x for pair in value.items() for x in pair)
            size = 2
        else:
            items, size = value, 12
        for item in items:
            size += self.size(item, used + size) + 2
            self.check(used + size)
        return size

    def check(self, size: int) -> None:
        if size > self.limit:
            raise SizeLimit(f"would build a text of more than {self.limit} characters")


def _padded(budget: Budget, text: str, method: Callable[..., str]) -> Callable[..., str]:
    def padded(width: int, *args: Any) -> str:
        budget.sequence(width)
        return method(width, *args)

    return padded


def _expandtabs(budget: Budget, text: str, method: Callable[..., str]) -> Callable[..., str]:
    def expandtabs(tabsize: int = 8) -> str:
        budget.sequence(len(text) + text.count("\t") * tabsize)
        return method(tabsize)

    return expandtabs


def _replace(budget: Budget, text: str, method: Callable[..., str]) -> Callable[..., str]:
    def replace(old: str, new: str, count: int = -1) -> str:
        if type(old) is str and type(new) is str and len(new) > len(old):
            # An empty ``old`` matches between every two characters and at both ends.
            n = text.count(old) if old else len(text) + 1
            if type(count) is int and count >= 0:
                n = min(n, count)
            budget.sequence(len(text) + n * (len(new) - len(old)))
        return method(old, new, count)

    return replace


def _translate(budget: Budget, text: str, method: Callable[..., str]) -> Callable[..., str]:
    def translate(table: Any) -> str:
        growth = _growing_entries(table)
        limit = budget.limits["max_sequence"]
        if growth and len(text) * (max(growth.values()) + 1) > limit:
            if len(growth) <= 64:
                extra = sum(text.count(chr(k)) * n for k, n in growth.items())
            else:
                counts = Counter(text)
                extra = sum(counts[chr(k)] * n for k, n in growth.items())
            budget.sequence(len(text) + extra)
        return method(table)

    return translate


def _growing_entries(table: Any) -> dict[int, int]:
    """Code point -> characters added, for table entries that map one character to several."""
    if type(table) is dict:
        pairs: Any = table.items()
    elif type(table) in (list, tuple):
        pairs = enumerate(table)
    else:
        return {}
    return {
        k: len(v) - 1
        for k, v in pairs
        if type(v) is str and len(v) > 1 and type(k) is int and 0 <= k <= 0x10FFFF
    }


def _join(budget: Budget, text: str, method: Callable[..., str]) -> Callable[..., str]:
    def join(iterable: Any) -> str:
        limit = budget.limits["max_sequence"]
        items = list(islice(iterable, limit + 1))
        budget.sequence(len(items))
        try:
            size = len(text) * max(len(items) - 1, 0) + sum(map(len, items))
        except TypeError:
            return method(items)  # an item that is not a string: join says which
        budget.sequence(size)
        return method(items)

    return join


SIZED_STR_METHODS: dict[str, Callable[[Budget, str, Any], Any]] = {
    "ljust": _padded,
    "rjust": _padded,
    "center": _padded,
    "zfill": _padded,
    "expandtabs": _expandtabs,
    "replace": _replace,
    "translate": _translate,
    "join": _join,
}
