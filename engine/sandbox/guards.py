"""Run-time guards and the host object a Python script sees (the other half of policy.py)."""

from __future__ import annotations

import json
import math
import operator
import re
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from types import MappingProxyType
from typing import Any

from engine.sandbox.determinism import (
    DICT_VIEWS,
    GROWING_SET_METHODS,
    check_set,
    checked_set,
    checked_set_method,
    scrub,
    scrub_any,
)
from engine.sandbox.sizes import (
    SIZED_STR_METHODS,
    SizeLimit,
    check_binop,
    text_size,
)
from engine.sandbox.textcodecs import encode
from engine.sandbox.values import InvalidValue, check_json, json_size

EMIT_TYPES = ("status", "message", "citation")
TOOL_ENTRY = "run"
"""A tool script's one function, ``run(input, host)``: its answer is any JSON value, and only
it may call ``host.add_artifact`` (whose artifacts travel as emits of type ``artifact``)."""
MAX_ARTIFACT_NAME_CHARS = 200
MAX_MIME_CHARS = 100
_DIGITS = re.compile(r"\d+")
_PLAIN_TYPES = (int, float, bool, list, dict, tuple, set, frozenset, type(None))
_PLAIN_TEXT = (str, int, float, bool, type(None))
_SIZED = frozenset({"*", "**", "<<", "%"})
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "*": operator.mul,
    "**": operator.pow,
    "<<": operator.lshift,
    "%": operator.mod,
    "|": operator.or_,
    "^": operator.xor,
    "&": operator.and_,
    "-": operator.sub,
}
_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
}


class Deadline(BaseException):
    """The call's time is up. BaseException, and every handler re-ticks, so it cannot be kept."""


class MemoryExhausted(BaseException):
    """The call hit its memory cap (a real MemoryError, not a refused size): final, like Deadline.

    Otherwise a script could catch MemoryError and count how much it could allocate, which
    depends on what earlier calls left mapped in the worker.
    """


class Budget:
    """One call's clock and size limits; the guards below consult it.

    The time limit is CPU time, as for JavaScript: a tick reads only the (cheap) wall clock,
    and reads the thread's CPU time once the wall clock passes the deadline. On a loaded
    machine that is before the CPU time ran out: the deadline then moves to when the rest
    could be used up, so a call that other work kept waiting does not fail as a timeout.
    """

    __slots__ = ("cpu_start", "deadline", "exhausted", "expired", "limits", "timeout_s")

    def __init__(self, limits: dict[str, int], *, timeout_ms: int) -> None:
        self.limits = limits
        self.timeout_s = timeout_ms / 1000
        self.cpu_start = time.thread_time()
        self.deadline = time.perf_counter() + self.timeout_s
        self.expired = False
        self.exhausted = False

    def tick(self) -> None:
        if self.exhausted:
            raise MemoryExhausted
        if self.expired or time.perf_counter() > self.deadline:
            left = self.remaining()
            if self.expired or left <= 0:
                self.expire()
                raise Deadline
            self.deadline = time.perf_counter() + left

    def expire(self) -> None:
        """The call is out of time for good; every later tick raises."""
        self.expired = True
        self.deadline = -math.inf

    def handler(self) -> None:
        """First thing in every except and finally block of a script, and of every except
        clause's expression (see ``policy.ScriptPolicy.visit_ExceptHandler``).

        The exception is marked before any further call: near the recursion limit, a nested
        call could fail first, and the RecursionError would hide the MemoryError."""
        exc = sys.exc_info()[1]
        if isinstance(exc, MemoryExhausted) or (
            isinstance(exc, MemoryError) and not isinstance(exc, SizeLimit)
        ):
            self.exhausted = True
            self.deadline = -math.inf  # so the hot-path tick takes the slow path and raises
        self.tick()

    def remaining(self) -> float:
        """CPU seconds left."""
        return self.timeout_s - (time.thread_time() - self.cpu_start)

    def sequence(self, size: int) -> None:
        if size > self.limits["max_sequence"]:
            raise SizeLimit(
                f"would build a sequence of {size} items (limit {self.limits['max_sequence']})"
            )

    def bits(self, bits: int) -> None:
        if bits > self.limits["max_int_bits"]:
            raise SizeLimit(
                f"would build an integer of {bits} bits (limit {self.limits['max_int_bits']})"
            )


def make_guards(budget: Budget) -> dict[str, Any]:
    """The names RestrictedPython's output and our policy call, bound to one call's budget."""

    def binop(op: str, a: Any, b: Any) -> Any:
        if op in _SIZED:
            check_binop(budget, op, a, b)
        return _checked_result(op, a, b, _BINARY[op](a, b))

    def inplacevar(op: str, a: Any, b: Any) -> Any:
        if op[:-1] in _SIZED:
            check_binop(budget, op[:-1], a, b)
        return _checked_result(op[:-1], a, b, _INPLACE[op](a, b))

    def getiter(obj: Any) -> Iterator[Any]:
        return _ticking(iter(obj), budget)

    def unpack(it: Any, spec: dict[str, Any], _getiter: Any = None) -> list[Any]:
        want = spec["min_len"]
        if spec.get("star"):
            # A starred target needs everything; the items are bounded, and RestrictedPython's
            # child indexes are wrong after a star, so nested targets use Python's own unpack.
            items = list(islice(getiter(it), budget.limits["max_sequence"] + 1))
            budget.sequence(len(items))
            return items
        # One more than wanted, so Python still says "too many values" without eating the rest;
        # that many items need no ticks (a script generator ticks in its own body).
        items = list(islice(it, want + 1))
        if len(items) >= want:
            for idx, child in spec["childs"]:
                items[idx] = unpack(items[idx], child)
        return items

    def iter_unpack(it: Any, spec: dict[str, Any], _getiter: Any = None) -> Iterator[Any]:
        for ob in getiter(it):
            yield unpack(ob, spec)

    def getattr_(obj: Any, name: str, *default: Any) -> Any:
        # Most reads are a plain value's method or the host API: one table look-up decides.
        kind = type(obj)
        names = _PLAIN_ATTRIBUTES.get(kind)
        if names is not None and name in names:
            return getattr(obj, name)
        if kind is str and name in _STR_METHODS:
            return _STR_METHODS[name](budget, obj, getattr(obj, name))
        return guarded_getattr(budget, obj, name, *default)

    return {
        "_getattr_": getattr_,
        "_getitem_": operator.getitem,
        "_write_": guarded_write,
        "_getiter_": getiter,
        "_iter_unpack_sequence_": iter_unpack,
        "_unpack_sequence_": unpack,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
        "_inplacevar_": inplacevar,
        "_binop_": binop,
        "_format_": lambda v, spec, conv: guarded_format(budget, v, spec, conv),
        "_set_": checked_set,
        "_tick_": _ticker(budget),
        "_handler_": budget.handler,
    }


def _ticker(budget: Budget) -> Callable[[], None]:
    """``budget.tick`` for the hot path: one clock read and one test when nothing is due (an
    expired or exhausted budget has its deadline at minus infinity)."""
    clock = time.perf_counter

    def tick() -> None:
        if clock() > budget.deadline:
            budget.tick()

    return tick


def _ticking(it: Iterator[Any], budget: Budget) -> Iterator[Any]:
    tick = budget.tick
    for item in it:
        tick()
        yield item


def _checked_result(op: str, a: Any, b: Any, result: Any) -> Any:
    """``%`` text without addresses; a set made from a dict view without identity-hashed items."""
    if op == "%":
        return scrub_any(result)
    if type(result) is set and (type(a) in DICT_VIEWS or type(b) in DICT_VIEWS):
        check_set(result)
    return result


def guarded_format(budget: Budget, value: Any, spec: str, conversion: int) -> str:
    """f-string field: padding, precision and the value's text size-checked; no addresses."""
    for n in _DIGITS.findall(spec):
        budget.sequence(int(n) if len(n) < 12 else budget.limits["max_sequence"] + 1)
    plain = type(value) in _PLAIN_TEXT
    if not plain:
        text_size(value, budget.limits["max_sequence"])
    if conversion == ord("r"):
        value = repr(value)
    elif conversion == ord("a"):
        value = ascii(value)
    elif conversion == ord("s"):
        value = str(value)
    text = format(value, spec)
    return text if plain else scrub(text)


def guarded_write(obj: Any) -> Any:
    """Scripts may change their own lists and dicts, nothing else (no attribute writes)."""
    if type(obj) in (dict, list):
        return obj
    raise TypeError(f"{type(obj).__name__} objects cannot be modified")


def guarded_getattr(budget: Budget, obj: Any, name: str, *default: Any) -> Any:
    """Attributes of plain values and the host API only; no str.format, padding size-checked."""
    kind = type(obj)
    allowed = (
        not name.startswith("_")
        and (
            kind in _PLAIN_TYPES
            or kind in (Host, HostState, HostEntries)
            or kind is str
            or (isinstance(obj, BaseException) and name == "args")
        )
        and not (kind is str and name in ("format", "format_map"))
    )
    if not allowed:
        raise AttributeError(f"access to {kind.__name__}.{name} is not allowed")
    value = getattr(obj, name, *default)
    if kind is str:
        wrap = _STR_METHODS.get(name)
        return value if wrap is None else wrap(budget, obj, value)
    if kind is set or kind is frozenset:
        return checked_set_method(name, value)
    if name == "args" and isinstance(obj, BaseException):
        # C code puts reprs into messages: "<function f at 0x…> is not in list".
        return tuple(scrub_any(arg) for arg in value)
    return value


def _whole_text(where: str, name: str, text: str) -> None:
    """A name the store keeps (a state key, an entry's kind) must be whole Unicode text: a lone
    surrogate (half of a character cut in two) cannot be stored, and replacing it would merge
    names. host.js checks the same."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TypeError(
            f"{where}: {name} holds half of a character (a lone surrogate "
            f"\\u{ord(text[exc.start]):04x} at index {exc.start}); was a text cut in the middle "
            "of a character?"
        ) from None


MAX_STATE_TTL_S = 315_360_000
"""The longest TTL of a host.state key: ten years (host.js has the same number)."""


class HostState:
    """host.state: read-your-writes view of the scope's state snapshot; writes come back.

    The snapshot holds only keys alive at the event's time (the store leaves out expired
    ones), so an expired key reads as None and does not count against ``max_state_keys``.
    """

    __slots__ = ("_limits", "_snapshot", "_ttls", "_writes")

    def __init__(
        self,
        snapshot: dict[str, Any],
        writes: dict[str, Any],
        limits: dict[str, int],
        ttls: dict[str, float],
    ) -> None:
        self._snapshot, self._writes, self._limits = snapshot, writes, limits
        self._ttls = ttls

    def __repr__(self) -> str:
        return "<host.state>"

    def _key(self, key: Any) -> None:
        _check_text("host.state", "key", key, self._limits["max_state_key_chars"])
        if not key:
            raise TypeError("host.state: key must not be empty")
        _whole_text("host.state", "key", key)

    def _live(self, key: str) -> bool:
        if key in self._writes:
            return self._writes[key] is not None
        return self._snapshot.get(key) is not None

    def get(self, key: str) -> Any:
        self._key(key)
        if not self._live(key):
            return None
        return json.loads(json.dumps(self._writes.get(key, self._snapshot.get(key))))

    def set(self, key: str, value: Any, ttl_s: float | None = None) -> None:
        self._key(key)
        if ttl_s is not None:
            _check_ttl(ttl_s)
        limits = self._limits
        copy = _plain_copy(
            "host.state.set: value", value, limits["max_depth"], limits["max_state_value_bytes"]
        )
        if copy is None and key not in self._snapshot:
            # Deleting a key the store does not hold is no write at all: only deletes of
            # stored keys come back, so a call's writes stay bounded by max_state_keys twice.
            self._writes.pop(key, None)
            self._ttls.pop(key, None)
            return
        if copy is not None and not self._live(key):
            live = sum(1 for k in {*self._snapshot, *self._writes} if self._live(k))
            if live >= limits["max_state_keys"]:
                raise TypeError(f"host.state.set: more than {limits['max_state_keys']} keys")
        self._writes[key] = copy
        if ttl_s is None or copy is None:
            self._ttls.pop(key, None)  # a write without a TTL keeps the key for good
        else:
            self._ttls[key] = float(ttl_s)


def _check_ttl(ttl_s: Any) -> None:
    number = type(ttl_s) in (int, float) and math.isfinite(ttl_s)
    if not (number and 0 < ttl_s <= MAX_STATE_TTL_S):
        raise TypeError(
            f"host.state.set: ttl_s must be a number of seconds > 0 and <= {MAX_STATE_TTL_S}"
        )


class HostEntries:
    """host.entries: the conversation's entries as loaded before the call, plus this call's
    adds (read-your-writes); the adds come back in the answer and the host stores them.

    ``snapshot`` is None when the call has no conversation (no session_id) or the host did
    not load entries (a script that never mentions them): adding and listing then fail
    rather than lose an entry or answer an empty conversation.
    """

    __slots__ = ("_added", "_limits", "_out", "_snapshot")

    def __init__(
        self, snapshot: list[dict[str, Any]] | None, out: dict[str, Any], limits: dict[str, int]
    ) -> None:
        self._snapshot, self._out, self._limits = snapshot, out, limits
        self._added: list[dict[str, Any]] = out["entries_added"]

    def __repr__(self) -> str:
        return "<host.entries>"

    def _kind(self, where: str, kind: Any) -> None:
        _check_text(where, "kind", kind, self._limits["max_entry_kind_chars"])
        if not kind:
            raise TypeError(f"{where}: kind must not be empty")
        _whole_text(where, "kind", kind)

    def _conversation(self, where: str) -> None:
        if self._snapshot is None:
            raise TypeError(f"{where}: this call has no conversation (the event has no session_id)")

    def add(self, kind: str, data: Any) -> None:
        limits = self._limits
        self._kind("host.entries.add", kind)
        self._conversation("host.entries.add")
        copy = _plain_copy(
            "host.entries.add: data", data, limits["max_depth"], limits["max_entry_bytes"]
        )
        if len(self._added) >= limits["max_entry_adds"]:
            raise TypeError(f"host.entries.add: more than {limits['max_entry_adds']} entries")
        self._added.append({"kind": kind, "data": copy})

    def list(self, kind: str, last: Any = None) -> list[Any]:
        self._kind("host.entries.list", kind)
        if last is not None and not (type(last) is int and last >= 0):
            raise TypeError("host.entries.list: last must be a whole number >= 0 or None")
        self._conversation("host.entries.list")
        self._out["entries_read"] = True
        found = [e for e in (*(self._snapshot or ()), *self._added) if e["kind"] == kind]
        if last is not None:
            found = found[len(found) - last :] if last else []
        return json.loads(json.dumps([{"data": e["data"], "turn": e.get("turn")} for e in found]))


class KeyTables:
    """The read-only dicts that folded dict tables stand for (``policy.fold_constant_tables``).

    A module-level dict of literals read only by ``in`` is compiled to a frozenset of its keys;
    a call turns it into a ``MappingProxyType`` over a dict of those keys, so ``in`` hashes and
    refuses exactly as the script's dict would (``{'rm'} in DENY`` raises ``TypeError`` where a
    frozenset would answer False). Made once per worker and shared: the proxy cannot be
    written, and ``in`` is all a script does with it.
    """

    __slots__ = ("_made",)
    _KEPT = 256

    def __init__(self) -> None:
        # By the constant's identity; the entry keeps the constant alive, so no id is reused.
        self._made: dict[int, tuple[frozenset[Any], MappingProxyType[Any, None]]] = {}

    def table(self, keys: frozenset[Any]) -> MappingProxyType[Any, None]:
        made = self._made.get(id(keys))
        if made is None or made[0] is not keys:
            if len(self._made) >= self._KEPT:
                self._made.clear()
            made = self._made[id(keys)] = (keys, MappingProxyType(dict.fromkeys(keys)))
        return made[1]


class CallInputs:
    """What one call is handed, each part already its own (fresh) copy."""

    __slots__ = ("config", "entries", "event", "function", "limits", "state")

    def __init__(
        self,
        function: str,
        event: Any,
        config: Any,
        state: dict[str, Any],
        limits: dict[str, int],
        entries: list[dict[str, Any]] | None = None,
    ) -> None:
        self.function, self.event, self.config = function, event, config
        self.state, self.limits, self.entries = state, limits, entries


class Host:
    """The ``host`` argument of a Python script: the same API as the JavaScript one."""

    __slots__ = ("_event", "_function", "_limits", "_out", "_regex", "config", "entries", "state")
    config: Any
    state: HostState | None
    entries: HostEntries | None

    def __init__(
        self,
        call: CallInputs,
        out: dict[str, Any],
        regex: Callable[[dict[str, Any]], Any],
    ) -> None:
        self._event, self._limits, self._out, self._regex = call.event, call.limits, out, regex
        self._function = call.function
        self.config = call.config
        self.state = HostState(call.state, out["state_writes"], call.limits, out["state_ttls"])
        self.entries = HostEntries(call.entries, out, call.limits)

    def __repr__(self) -> str:
        return "<host>"

    def _close(self) -> None:
        """Let go of the call's data when the call ends (the script may have stored its own
        objects in the event or the config), so they go while the call's limits still hold.

        Private (a script reads no ``_`` attribute): a script that could call it would find
        ``host.now``, ``config`` and ``state`` gone for the rest of its call."""
        self._event = self.config = self.state = self.entries = None

    def log(self, msg: str) -> None:
        limits, out = self._limits, self._out
        _check_text("host.log", "msg", msg, limits["max_text_chars"])
        if len(out["logs"]) >= limits["max_log_lines"]:
            out["dropped_logs"] += 1
            return
        cap = limits["max_log_chars"]
        out["logs"].append(msg if len(msg) <= cap else msg[:cap] + "…")

    def now(self) -> Any:
        return self._event.get("time")

    def emit(self, event: dict[str, Any]) -> None:
        limits, out = self._limits, self._out
        if type(event) is not dict:
            raise TypeError("host.emit: event must be an object {type, data}")
        copy = _plain_copy("host.emit: event", event, limits["max_depth"], limits["max_emit_bytes"])
        if set(copy) != {"type", "data"}:
            raise TypeError("host.emit: event must have exactly the keys type and data")
        if copy["type"] not in EMIT_TYPES:
            raise TypeError("host.emit: type must be one of status, message, citation")
        if type(copy["data"]) is not dict:
            raise TypeError("host.emit: data must be an object")
        if len(out["emits"]) >= limits["max_emits"]:
            raise TypeError(f"host.emit: more than {limits['max_emits']} events")
        out["emits"].append(copy)

    def add_artifact(self, name: str, text: str, mime: str = "text/plain") -> None:
        """Keep ``text`` as a file of the tool call's session (a tool's ``run`` only)."""
        limits, out = self._limits, self._out
        if self._function != TOOL_ENTRY:
            raise TypeError("host.add_artifact: only a tool's run(input, host) may add artifacts")
        _check_text("host.add_artifact", "name", name, MAX_ARTIFACT_NAME_CHARS)
        _check_text("host.add_artifact", "text", text, limits["max_text_chars"])
        _check_text("host.add_artifact", "mime", mime, MAX_MIME_CHARS)
        if len(text.encode("utf-8", "surrogatepass")) > limits["max_artifact_bytes"]:
            raise TypeError(
                f"host.add_artifact: text is larger than {limits['max_artifact_bytes']} bytes"
            )
        made = [e for e in out["emits"] if e["type"] == "artifact"]
        if len(made) >= limits["max_artifacts"]:
            raise TypeError(f"host.add_artifact: more than {limits['max_artifacts']} artifacts")
        out["emits"].append(
            {"type": "artifact", "data": {"name": name, "text": text, "mime": mime}}
        )

    def match(self, pattern: str, text: str) -> bool:
        _check_text("host.match", "pattern", pattern, self._limits["max_pattern_chars"])
        _check_text("host.match", "text", text, self._limits["max_text_chars"])
        return bool(self._regex({"op": "match", "pattern": pattern, "text": text}))

    def redact(self, text: str, patterns: list[str], replacement: str = "[REDACTED]") -> str:
        limits = self._limits
        _check_text("host.redact", "text", text, limits["max_text_chars"])
        if type(patterns) not in (list, tuple):
            raise TypeError("host.redact: patterns must be a list of strings")
        if len(patterns) > limits["max_patterns"]:
            raise TypeError(f"host.redact: more than {limits['max_patterns']} patterns")
        for p in patterns:
            _check_text("host.redact", "pattern", p, limits["max_pattern_chars"])
        _check_text("host.redact", "replacement", replacement, limits["max_pattern_chars"])
        return str(
            self._regex(
                {
                    "op": "redact",
                    "text": text,
                    "patterns": list(patterns),
                    "replacement": replacement,
                }
            )
        )


class Printer:
    """``print`` in a Python script: each call writes one line to the hook's log, as
    ``host.log`` does (same line and size caps).

    RestrictedPython turns ``print(...)`` into ``_print._call_print(...)`` on a collector made
    by ``_print_`` at the top of each function; this is that collector. Every value is turned
    into text by the script's own ``str`` (size-checked, addresses scrubbed), inside the call's
    limits; ``sep`` and ``end`` must be text, and ``file=`` is refused (there are no files).
    The line is cut at the log's text cap before it is logged, so print never fails for length.
    """

    __slots__ = ("_cap", "_log", "_str")

    def __init__(self, log: Callable[[str], None], text: Callable[[Any], str], cap: int) -> None:
        self._log, self._str, self._cap = log, text, cap

    def _call_print(
        self, *objects: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: Any = False
    ) -> None:
        if file is not None:
            raise TypeError("print: file= is not supported (print writes to the hook's log)")
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if type(sep) is not str or type(end) is not str:
            raise TypeError("print: sep and end must be str")
        parts: list[str] = []
        size = 0
        for i, obj in enumerate(objects):
            if size > self._cap:
                break
            text = (sep if i else "") + self._str(obj)
            parts.append(text[: self._cap - size + 1])
            size += len(text)
        line = "".join(parts)
        self._log(line if len(line) <= self._cap else line[: self._cap - 1] + "…")


def printer_factory(
    log: Callable[[str], None], text: Callable[[Any], str], cap: int
) -> Callable[..., Printer]:
    """The ``_print_`` global: RestrictedPython calls it with ``_getattr_`` in each function
    that prints."""

    def make(_getattr_: Any = None) -> Printer:
        return Printer(log, text, cap)

    return make


def _check_text(where: str, name: str, value: Any, cap: int) -> None:
    if type(value) is not str:
        raise TypeError(f"{where}: {name} must be a string")
    if len(value) > cap:
        raise TypeError(f"{where}: {name} is longer than {cap} characters")


def _plain_copy(where: str, value: Any, max_depth: int, max_bytes: int) -> Any:
    try:
        check_json(value, max_depth=max_depth, what=where)
        if json_size(value) > max_bytes:
            raise InvalidValue(f"{where}: larger than {max_bytes} bytes")
    except InvalidValue as exc:
        raise TypeError(str(exc)) from None
    return json.loads(json.dumps(value))


_STR_METHODS: dict[str, Callable[[Budget, str, Any], Any]] = {
    **SIZED_STR_METHODS,
    "encode": lambda budget, text, method: encode(text, budget.limits["max_sequence"]),
}
"""str methods a script gets wrapped: size-checked, and ``encode`` with codec names resolved
by ``textcodecs`` (no codec is looked up or loaded by a call)."""


def _public(kind: type, *, but: frozenset[str] | set[str] = frozenset()) -> frozenset[str]:
    return frozenset(n for n in dir(kind) if not n.startswith("_") and n not in but)


_PLAIN_ATTRIBUTES: dict[type, frozenset[str]] = {
    **{kind: _public(kind) for kind in (int, float, bool, list, dict, tuple, type(None))},
    str: _public(str, but={"format", "format_map", *_STR_METHODS}),
    set: _public(set, but=GROWING_SET_METHODS),
    frozenset: _public(frozenset, but=GROWING_SET_METHODS),
    Host: _public(Host),
    HostState: _public(HostState),
    HostEntries: _public(HostEntries),
}
"""Attributes ``guarded_getattr`` would hand out unchanged, by exact type: its fast path."""
