"""What keeps a Python script's results independent of its worker: no addresses, no sets whose
order would follow memory addresses.

CPython prints many objects as ``<function f at 0x7f...>``; the address differs between worker
starts and depends on what earlier calls allocated, so it would make decisions unrepeatable and
tell one call about another. Every path that turns a value into text for a script (``str``,
f-strings, ``%``, exception messages and ``args``) passes through ``scrub``. Objects hashed by
identity (functions, iterators, the host) would iterate out of a set in address order, so sets
refuse them (see ``check_set``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from engine.sandbox.sizes import text_size
from engine.sandbox.textcodecs import decode

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=>)")
_ADDRESS_BYTES = re.compile(rb" at 0x[0-9a-fA-F]+(?=>)")
_PLAIN_TEXT = (str, int, float, bool, type(None))
_VALUE_HASHED = (str, int, float, bool, bytes, complex, type(None), type(...))
"""Types whose hash is made from the value, so their order in a set is the same in every worker
(strings too: the workers run with a fixed PYTHONHASHSEED)."""
GROWING_SET_METHODS = frozenset(
    {"add", "update", "symmetric_difference_update", "union", "symmetric_difference"}
)
DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))
"""Dict views whose ``| ^ & -`` build a set out of a dict's keys or items."""


def scrub(text: str) -> str:
    """``text`` without the `` at 0x…`` of any repr in it."""
    return _ADDRESS.sub("", text) if " at 0x" in text else text


def scrub_bytes(data: bytes) -> bytes:
    """``scrub`` for the ``%r``/``%a`` of a bytes format."""
    return _ADDRESS_BYTES.sub(b"", data) if b" at 0x" in data else data


def scrub_any(value: Any) -> Any:
    """Scrub a str or bytes; any other value unchanged."""
    if type(value) is str:
        return scrub(value)
    if type(value) is bytes:
        return scrub_bytes(value)
    return value


def check_set(items: Iterable[Any]) -> None:
    """Refuse set elements hashed by identity (their order would follow memory addresses).

    Raises:
        TypeError: naming the element's type.
    """
    if _all_text(items):
        return
    for item in items:
        kind = type(item)
        if kind in _VALUE_HASHED:
            continue
        if kind is tuple or kind is frozenset:
            check_set(item)
            continue
        raise TypeError(
            f"a set cannot hold a {kind.__name__}: its place in the set would depend on a "
            "memory address (keep such values in a list or as dict values)"
        )


def _all_text(items: Iterable[Any]) -> bool:
    """Whether every element is a string, at C speed: a set of thousands of names is the
    common large set. (``join`` also takes subclasses of str, which no script can make.) The
    joined copy is dropped at once; if there is no memory for it, the element loop answers,
    which allocates nothing, so the outcome never depends on the memory left."""
    try:
        "".join(items)
    except (TypeError, MemoryError):
        return False
    return True


def checked_set(items: Iterable[Any] = ()) -> set[Any]:
    """``set(items)`` after ``check_set``; set displays and comprehensions become this."""
    result = set(items)
    check_set(result)
    return result


def checked_set_method(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """A set's method that adds elements from outside, with those elements checked first."""
    if name not in GROWING_SET_METHODS:
        return method
    if name == "add":

        def add(item: Any) -> Any:
            check_set((item,))
            return method(item)

        return add

    def grow(*others: Any) -> Any:
        return method(*[checked_set(other) for other in others])

    return grow


def _decoded(
    limit: int, data: Any = b"", encoding: Any = "utf-8", errors: Any = "strict", **extra: Any
) -> str:
    """``str(data, encoding, errors)`` (``object=`` too) with the codec resolved by
    ``textcodecs``: no codec is looked up or loaded by a call."""
    data = extra.pop("object", data)
    if extra:
        return str(data, encoding, errors, **extra)  # str() says which argument is wrong
    return decode(data, encoding, errors, limit)


class _Alias(type):
    """Metaclass of a stand-in for a built-in type: ``isinstance`` and ``repr`` see the built-in."""

    real: type

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.real)

    def __repr__(cls) -> str:
        return repr(cls.real)


def script_types(limit: Callable[[], int]) -> dict[str, Any]:
    """The ``str``, ``set`` and ``frozenset`` a script gets, in place of the built-ins.

    Calling them returns a plain built-in value: ``str(x)`` is size-checked (``limit()`` is the
    running call's max_sequence) and scrubbed of addresses; ``set(x)`` and ``frozenset(x)`` refuse
    identity-hashed elements. ``isinstance(v, str)`` and friends work as usual.
    """

    class ScriptStr(metaclass=_Alias):
        real = str

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if not args and not kwargs:
                return ""
            if len(args) + len(kwargs) == 1 and set(kwargs) <= {"object"}:
                value = args[0] if args else kwargs["object"]
            else:
                return _decoded(limit(), *args, **kwargs)
            if type(value) in _PLAIN_TEXT:
                return str(value)
            text_size(value, limit())
            return scrub(str(value))

    class ScriptSet(metaclass=_Alias):
        real = set

        def __new__(cls, items: Iterable[Any] = ()) -> Any:
            return checked_set(items)

    class ScriptFrozenset(metaclass=_Alias):
        real = frozenset

        def __new__(cls, items: Iterable[Any] = ()) -> Any:
            result = frozenset(items)
            check_set(result)
            return result

    types: dict[str, Any] = {"str": ScriptStr, "set": ScriptSet, "frozenset": ScriptFrozenset}
    for name, alias in types.items():
        alias.__name__ = alias.__qualname__ = name
        alias.__module__ = "builtins"
    return types
