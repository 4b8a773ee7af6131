"""Text codecs for scripts: all loaded before the first call, each name resolved to one spelling.

CPython loads a codec the first time a process asks for it (importing its module, caching it
under the spelling asked for), and some error handlers load ``unicodedata`` on first use. A
script that catches ``RecursionError`` can tell a loaded codec from one that is not (near the
recursion limit an import fails, a cached codec still works), and so learn which encodings
earlier calls on the same worker used. So a worker loads every codec and warms every lazy path
at start-up (``preload``), and a script's ``str.encode`` and ``str(bytes, encoding)`` go
through ``encode``/``decode`` below, which hand CPython only the canonical spelling of each
codec, one that is already cached: no call can change what the next one finds. An unknown
name is a ``LookupError`` without any lookup.

Both are also size-checked: ``unicode_escape`` writes up to 10 bytes per character,
``namereplace`` up to 92, so a long text is measured in slices before it is encoded.
"""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import pkgutil
from collections.abc import Callable
from typing import Any

from engine.sandbox.sizes import SizeLimit

_CANONICAL: dict[str, str] = {}
"""Codec module name -> the spelling CPython's codec cache holds for it (``CodecInfo.name``)."""
_NOT_LOADED = frozenset({"aliases", "mbcs", "oem"})
"""Modules of the encodings package that are no codec here (mbcs and oem are Windows-only)."""
_SMALL_GROWTH = {"utf-8": 4, "utf-16": 4, "utf-16-le": 4, "utf-16-be": 4, "utf-32": 4}
_SMALL_GROWTH |= {"utf-32-le": 4, "utf-32-be": 4, "ascii": 1, "iso8859-1": 1}
"""Bytes per character at most, for the codecs most texts use (a BOM is the constant below);
any other codec is measured whenever the text is long (``_MEASURE_OVER``)."""
_HANDLER_GROWTH = {"strict": 1, "ignore": 1, "replace": 1, "surrogateescape": 1}
_HANDLER_GROWTH |= {"surrogatepass": 1, "xmlcharrefreplace": 10, "backslashreplace": 10}
"""Characters an error handler writes per character it replaces (``&#1114111;``,
``\\U0010ffff``); any other handler (``namereplace``: up to 92) counts as ``_MAX_GROWTH``."""
_MAX_GROWTH = 100
_BOM = 8
_SLICE = 8192
"""Characters (or bytes) measured at once: at most ``_SLICE * _MAX_GROWTH * 4`` bytes at a time."""
_MEASURE_OVER = 10_000
"""A text longer than this, of a codec not in ``_SMALL_GROWTH``, is measured before encoding."""


def preload() -> None:
    """Load every codec and warm every lazy path a script can reach; a worker calls this once,
    before its start-up objects are frozen out of the collector."""
    if _CANONICAL:
        return
    names = [m.name for m in pkgutil.iter_modules(encodings.__path__)]
    for module in sorted(set(names) - _NOT_LOADED):
        try:
            info = codecs.lookup(module)
        except LookupError:
            continue
        _CANONICAL[module] = info.name
        codecs.lookup(info.name)  # cached under the spelling scripts will use
    # Lazy paths inside codecs: namereplace and \N{...} load unicodedata's name table, idna
    # its tables and stringprep.
    "\x80".encode("ascii", "namereplace")
    b"\\N{DIGIT ONE}".decode("unicode_escape")
    b"\\N{DIGIT ONE}".decode("raw_unicode_escape")
    "b\xfccher.example".encode("idna").decode("idna")
    "b\xfccher".encode("punycode").decode("punycode")


def canonical(encoding: Any) -> str:
    """The cached spelling of the codec ``encoding`` names, resolved as CPython resolves it.

    Raises:
        TypeError: ``encoding`` is not a str.
        LookupError: no codec has that name (no lookup is made).
    """
    if type(encoding) is not str:
        raise TypeError(f"encoding must be str, not {type(encoding).__name__}")
    # CPython lower-cases (ASCII only) and turns spaces into hyphens, then the encodings
    # package collapses punctuation and looks the name up among its aliases.
    spelled = "".join(c.lower() if c.isascii() else c for c in encoding).replace(" ", "-")
    norm = encodings.normalize_encoding(spelled)
    aliases = encodings.aliases.aliases
    for module in (aliases.get(norm) or aliases.get(norm.replace(".", "_")), norm):
        found = _CANONICAL.get(module) if module else None
        if found is not None:
            return found
    raise LookupError(f"unknown encoding: {encoding}")


def encode(text: str, limit: int) -> Callable[..., bytes]:
    """``text.encode`` for a script: canonical codec names, the result's size checked first."""

    def encode(encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
        name = canonical(encoding)
        growth = _SMALL_GROWTH.get(name, _MAX_GROWTH) * _HANDLER_GROWTH.get(errors, _MAX_GROWTH)
        if len(text) * growth + _BOM > limit and (
            name not in _SMALL_GROWTH or len(text) > _MEASURE_OVER
        ):
            _measure(text, limit, lambda part: len(part.encode(name, errors)))
        return text.encode(name, errors)

    return encode


def decode(data: Any, encoding: Any, errors: Any, limit: int) -> str:
    """``str(data, encoding, errors)`` for a script; only ``backslashreplace`` makes a text
    longer than its bytes (``\\xff`` for a byte), and then the size is checked first."""
    name = canonical(encoding)
    if errors == "backslashreplace" and type(data) is bytes and len(data) * 4 > limit:
        _measure(data, limit, lambda part: len(str(part, name, errors)))
    return str(data, name, errors)


def _measure(whole: Any, limit: int, size: Callable[[Any], int]) -> None:
    """SizeLimit if the slices of ``whole`` come to more than ``limit`` items.

    Slicing counts a BOM, or a multi-byte sequence cut in two, once more than the whole
    would: an over-estimate of a few items per slice. A slice that fails (a character the
    codec cannot write) stops the measuring: the real call then fails the same way.
    """
    total = 0
    for at in range(0, len(whole), _SLICE):
        try:
            total += size(whole[at : at + _SLICE])
        except (UnicodeError, ValueError, TypeError, LookupError):
            return
        if total > limit:
            raise SizeLimit(f"would build a sequence of more than {limit} items (limit {limit})")
