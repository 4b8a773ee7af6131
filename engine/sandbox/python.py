"""The RestrictedPython runtime in a sandbox worker: checked code, fresh globals per call."""

from __future__ import annotations

import ast
import builtins
import gc
import json
import math
import os
import resource
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType, TracebackType
from typing import Any

from engine.sandbox import textcodecs
from engine.sandbox.determinism import script_types, scrub
from engine.sandbox.guards import (
    TOOL_ENTRY,
    Budget,
    CallInputs,
    Deadline,
    Host,
    KeyTables,
    MemoryExhausted,
    make_guards,
    printer_factory,
)
from engine.sandbox.policy import KEY_TABLE, ScriptPolicy, fold_constant_tables
from engine.sandbox.sizes import SizeLimit, check_binop, text_size
from engine.sandbox.values import (
    ConfigCache,
    InvalidValue,
    RegexTimeout,
    check_result,
    finish,
)

_SAFE_BUILTINS = (
    "abs",
    "all",
    "any",
    "bool",
    "chr",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "ord",
    "reversed",
    "round",
    "sorted",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "RuntimeError",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
)
_CODE_CACHE = 64
GROWTH_RECYCLE_MB = 256
"""A worker that has grown this far past its size after start-up is replaced after the call, so
memory an earlier call left behind never eats into a later call's budget."""
RegexFn = Callable[..., Any]


class PythonRuntime:
    """Compiles scripts once (cached by key) and runs each call in brand-new globals."""

    def __init__(
        self,
        regex: RegexFn,
        memory: Callable[[int], int],
        *,
        warmed: Callable[[], None] | None = None,
    ) -> None:
        """``warmed`` runs once the runtime has loaded what scripts may reach (see ``_warm_up``);
        a worker passes ``gc.freeze``, so what was loaded stays out of the collector's work."""
        self._regex, self._memory = regex, memory
        self._codes: OrderedDict[str, tuple[CodeType, str]] = OrderedDict()
        self._configs = ConfigCache()
        self._tables = KeyTables()
        self._warm, self._warmed = False, warmed
        self._max_sequence = 0
        self._base = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
        # The running call's max_sequence, for str(); set by every call before its code runs.
        self._base.update(script_types(lambda: self._max_sequence))
        self._start_size = self._size = address_space()
        if _count_collection not in gc.callbacks:
            gc.callbacks.append(_count_collection)
        if sys.unraisablehook is not _unraisable:
            _UNRAISABLE.append(sys.unraisablehook)
            sys.unraisablehook = _unraisable

    def _warm_up(self) -> None:
        """Load every codec before the first script is compiled or called: no call may be the
        first to load one (see textcodecs). Done on first use, not at start-up, so a worker
        that only ever serves JavaScript (a one-shot ``hook_tool`` on a JavaScript guard)
        does not pay for it (about 28 ms of CPU and 3.5 MB)."""
        textcodecs.preload()
        self._warm = True
        if self._warmed is not None:
            self._warmed()
        self._start_size = self._size = address_space()  # growth counts from here

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        if not self._warm:
            self._warm_up()
        source, filename, limits = req["source"], req["filename"], req["limits"]
        code, problems = translate(source, filename)
        if code is None:
            return {"ok": False, "kind": "compile", "problems": problems}
        budget = Budget(limits, timeout_ms=limits["compile_timeout_ms"])
        env = self._globals(budget, limits)
        names: list[str] = []

        def load() -> None:
            exec(code, env)
            names.extend(
                k
                for k, v in env.items()
                if (k[:3] == "on_" or k == TOOL_ENTRY) and type(v) is FunctionType
            )

        failure = self._run(load, budget, limits, filename, env.clear)
        if failure is not None:
            where = failure.get("line")
            message = f"the script failed while loading: {failure['message']}"
            return {
                "ok": False,
                "kind": "compile",
                "problems": [{"line": where, "column": None, "message": message}],
            }
        self._cache(req["key"], code, filename)
        return {"ok": True, "functions": names}

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run one call of the one-line protocol (the request holds the parsed event and config)."""
        if not self._warm:
            self._warm_up()
        code = self._code(req["script"])
        if isinstance(code, dict):
            return code
        # Popped: the request must not keep what the script may have changed past the call.
        parts = (req["function"], req.pop("event"), req.pop("config"), req["state"])
        return self._answer(code, CallInputs(*parts, req["limits"]))

    def call_v2(self, call: dict[str, Any], event_text: str) -> dict[str, Any]:
        """Run one call of a batch: ``event_text`` is parsed here, the config once per key.

        The script gets its own copy of both: the event parsed anew, the config copied from
        the parse cached under ``config_key`` (see ``ConfigCache``), so nothing it changes
        reaches the next call. The answer asks for a recycle when the worker has grown too far.
        """
        if not self._warm:
            self._warm_up()
        code = self._code(call["script"])
        if isinstance(code, dict):
            return code
        inputs = CallInputs(
            call["function"],
            json.loads(event_text),
            self._configs.fresh(call["config_key"], call["config_text"]),
            call["state"],
            call["limits"],
            call.get("entries"),
        )
        return self._answer(code, inputs)

    def _answer(self, code: tuple[CodeType, str], inputs: CallInputs) -> dict[str, Any]:
        answer = self._execute(code, inputs)
        if self._size > self._start_size + GROWTH_RECYCLE_MB * 1024 * 1024:
            answer["recycle"] = True
        return answer

    def _code(self, script: dict[str, Any]) -> tuple[CodeType, str] | dict[str, Any]:
        """The script's cached code, compiled now if the request carries the source."""
        cached = self._codes.get(script["key"])
        if cached is not None:
            return cached
        if not script.get("source"):
            return {"ok": False, "kind": "need_source"}
        code, problems = translate(script["source"], script["filename"])
        if code is None:
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "error",
                "line": problems[0]["line"],
                "message": problems[0]["message"],
            }
        return self._cache(script["key"], code, script["filename"])

    def _execute(self, cached: tuple[CodeType, str], inputs: CallInputs) -> dict[str, Any]:
        code, filename = cached
        limits, function = inputs.limits, inputs.function
        budget = Budget(limits, timeout_ms=limits["timeout_ms"])
        out: dict[str, Any] = {
            "logs": [],
            "dropped_logs": 0,
            "emits": [],
            "state_writes": {},
            "state_ttls": {},
            "entries_added": [],
            "entries_read": False,
        }
        host = Host(inputs, out, lambda op: self._host_regex(op, budget=budget, limits=limits))
        env = self._globals(budget, limits)
        env["_print_"] = printer_factory(host.log, self._base["str"], limits["max_text_chars"])
        result: list[Any] = []

        def run() -> None:
            exec(code, env)
            fn = env.get(function)
            if type(fn) is not FunctionType:
                raise TypeError(f"call: the script defines no function {function}")
            value = fn(inputs.event, host)
            if function == TOOL_ENTRY:  # a tool's answer is any JSON, carried in an object
                value = {TOOL_ENTRY: value}
            check_result(value, limits)  # before the value leaves the call's limits
            result.append(value)

        def release() -> None:
            # What the script may have stored in its inputs goes first, while its globals still
            # resolve (a generator's finally block runs as usual); then the globals.
            host._close()
            inputs.event = inputs.config = None
            env.clear()

        started = time.perf_counter()
        failure = self._run(run, budget, limits, filename, release)
        duration = (time.perf_counter() - started) * 1000
        if failure is not None:
            return failure
        return finish(result[0], out, limits, duration)

    def _cache(self, key: str, code: CodeType, filename: str) -> tuple[CodeType, str]:
        self._codes[key] = (code, filename)
        self._codes.move_to_end(key)
        while len(self._codes) > _CODE_CACHE:
            self._codes.popitem(last=False)
        return code, filename

    def _globals(self, budget: Budget, limits: dict[str, int]) -> dict[str, Any]:
        self._max_sequence = limits["max_sequence"]
        b = dict(self._base)
        b["range"] = lambda *args: _range(budget, *args)
        b["pow"] = lambda *args: _pow(budget, *args)
        env: dict[str, Any] = {"__builtins__": b, "__name__": "script"}
        env.update(make_guards(budget))
        env[KEY_TABLE] = self._tables.table
        # print at load time (the top level, once) has no call to log to: it is dropped
        env["_print_"] = printer_factory(_dropped, self._base["str"], limits["max_text_chars"])
        return env

    def _run(
        self,
        fn: Callable[[], None],
        budget: Budget,
        limits: dict[str, int],
        filename: str,
        release: Callable[[], None],
    ) -> dict[str, Any] | None:
        """Run script code with the recursion and memory caps on; None on success.

        ``release`` lets go of the script's globals and of everything it was handed; then its
        garbage is collected before the caps come off, so whatever the call made (a
        generator's ``finally`` block included) ends inside the call, on its own clock and
        memory, and nothing of it is left for a later call to run.
        """
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(_depth() + limits["max_recursion"] + 30)
        self._size = self._memory(limits["memory_mb"])
        collections = [_COLLECTIONS[0]]
        _RUNNING[0] = budget
        try:
            try:
                fn()
            finally:
                release()
            _collect(collections)
            # The script caught the deadline somewhere (e.g. in a generator's finally), code
            # that ran as its objects went (which cannot raise to us) hit a limit, or its last
            # stretch had no tick: an interrupt is final, whatever the script returned.
            budget.tick()
        except Deadline:
            return {
                "ok": False,
                "kind": "limit",
                "cause": "timeout",
                "message": "time limit exceeded",
            }
        except MemoryExhausted:
            return {
                "ok": False,
                "kind": "limit",
                "cause": "memory",
                "recycle": True,
                "message": "memory limit exceeded",
            }
        except RecursionError:
            return {
                "ok": False,
                "kind": "limit",
                "cause": "memory",
                "message": "stack limit exceeded (recursion too deep)",
            }
        except MemoryError as exc:
            return {
                "ok": False,
                "kind": "limit",
                "cause": "memory",
                # A refused size allocated nothing; a real MemoryError may have left a mess.
                "recycle": not isinstance(exc, SizeLimit),
                "message": f"memory limit exceeded{': ' + str(exc) if str(exc) else ''}",
            }
        except InvalidValue as exc:
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "invalid_result",
                "message": str(exc),
                "line": None,
            }
        except BaseException as exc:  # noqa: BLE001 - a script's SystemExit is its own failure
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "error",
                "message": describe(exc, limits["max_sequence"]),
                "line": _script_line(exc.__traceback__, filename),
            }
        finally:
            # After a failure, the frames of the exception went as its handler ended: collect
            # their cycles, still under the caps.
            _collect(collections)
            _RUNNING[0] = None
            self._memory(0)
            sys.setrecursionlimit(old_limit)
        return None

    def _host_regex(self, op: dict[str, Any], *, budget: Budget, limits: dict[str, int]) -> Any:
        budget.tick()
        try:
            # The budget is this call's own object: a new one empties the pattern engine's cache.
            return self._regex(
                op, call=budget, remaining_s=budget.remaining(), memory_mb=limits["memory_mb"]
            )
        except RegexTimeout:
            budget.expire()
            raise Deadline from None


def describe(exc: BaseException, max_chars: int) -> str:
    """``Type: message`` of a script's exception, without addresses, at most 1,000 characters."""
    name = type(exc).__name__
    try:
        text_size(exc, max_chars)  # KeyError(huge_tuple) would print a huge repr
        text = f"{name}: {exc}"
    except Exception:  # noqa: BLE001 - a message that cannot be printed is still a failure
        text = f"{name}: (the message is too long to print)"
    return scrub(text)[:1000]  # scrub first: a cut could split an address


def translate(source: str, filename: str) -> tuple[CodeType | None, list[dict[str, Any]]]:
    """Parse, apply the policy and compile; every problem found, each with line and column."""
    try:
        tree = ast.parse(source, filename, "exec")
        policy = ScriptPolicy()
        tree = policy.visit(tree)
        if policy.problems:
            return None, [
                {"line": ln, "column": col, "message": msg} for ln, col, msg in policy.problems
            ]
        fold_constant_tables(tree)
        return compile(tree, filename, "exec"), []
    except SyntaxError as exc:
        return None, [
            {"line": exc.lineno, "column": exc.offset, "message": f"syntax error: {exc.msg}"}
        ]
    except (RecursionError, MemoryError):
        return None, [
            {"line": 1, "column": None, "message": "the script is nested too deeply to compile"}
        ]


def _dropped(line: str) -> None:
    """Where a print outside any call goes: nowhere (see PythonRuntime._globals)."""


def _range(budget: Budget, *args: Any) -> range:
    r = range(*args)
    budget.sequence(len(r))
    return r


def _pow(budget: Budget, base: Any, exp: Any, mod: Any = None) -> Any:
    if mod is None:
        check_binop(budget, "**", base, exp)
        return pow(base, exp)
    if type(mod) is int:
        budget.bits(abs(mod).bit_length() + abs(exp).bit_length() if type(exp) is int else 0)
    return pow(base, exp, mod)


_RUNNING: list[Budget | None] = [None]
"""The budget of the script code running now (None between calls), for ``_unraisable``."""
_UNRAISABLE: list[Callable[[Any], object]] = []
"""The hook ``_unraisable`` replaced, for exceptions raised outside any call."""


def _unraisable(args: Any) -> None:
    """``sys.unraisablehook``: an exception CPython could not raise to anyone, such as one
    from a generator's finally block run as the generator went (``it = None``). Such a block
    is script code: a MemoryError it raised would reach no handler of the script (which makes
    it final, see ``Budget.handler``), and the script could count how much it allocated before
    it, which depends on what earlier calls left mapped. Its budget marks it, so the call
    fails as out of memory however the script went on. (A Deadline needs nothing: every
    tick after it raises.)"""
    budget = _RUNNING[0]
    if budget is None:
        if _UNRAISABLE:
            _UNRAISABLE[0](args)
        return
    # No call but the attribute reads: near the recursion limit a call could fail first.
    # Python code raises a plain MemoryError (a refused size is SizeLimit, not marked).
    kind = args.exc_value.__class__
    if kind is MemoryError or kind is MemoryExhausted:
        budget.exhausted = True
        budget.deadline = -math.inf


_COLLECTIONS = [0]
"""Collections the garbage collector has started in this process (see ``_collect``)."""


def _count_collection(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _COLLECTIONS[0] += 1


def _collect(since: list[int]) -> None:
    """Collect the cycles a call left, at the cost of what it left.

    Every call ends with this, so all it made is in the youngest generation, unless the
    collector ran during the call (``since`` holds the count of collections when it started)
    and moved survivors into older ones: then a full collection. ``since`` is brought up to
    date, so a second collection for the same call is as cheap as it can be.
    """
    if _COLLECTIONS[0] != since[0]:
        gc.collect()
    elif gc.get_count()[0]:
        gc.collect(0)
    since[0] = _COLLECTIONS[0]


def _depth() -> int:
    frame: FrameType | None = sys._getframe()
    n = 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def _script_line(tb: TracebackType | None, filename: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


_PAGE = resource.getpagesize()
_STATM: list[int] = []
"""The descriptor of /proc/self/statm, opened once: a pread costs a fraction of an open."""


def address_space() -> int:
    """This process's mapped address space in bytes (what RLIMIT_AS counts)."""
    if not _STATM:
        _STATM.append(os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
    return int(os.pread(_STATM[0], 128, 0).split(maxsplit=1)[0]) * _PAGE


def address_space_limiter(extra_mb: int = 16) -> Callable[[int], int]:
    """A function that caps the address space at now + memory_mb while a script runs (0 lifts it).

    The baseline is read on every cap (about 10 microseconds), and returned: memory an earlier
    call left mapped never shrinks a later call's budget.
    """
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]

    def cap(memory_mb: int) -> int:
        if memory_mb <= 0:
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
            return 0
        base = address_space()
        soft = base + (memory_mb + extra_mb) * 1024 * 1024
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return base

    return cap
