"""The RestrictedPython runtime in a sandbox worker: checked code, fresh globals per call."""

from __future__ import annotations

import ast
import builtins
import gc
import os
import resource
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType, TracebackType
from typing import Any

from engine.sandbox.determinism import script_types, scrub
from engine.sandbox.guards import Budget, Deadline, Host, MemoryExhausted, make_guards
from engine.sandbox.policy import ScriptPolicy
from engine.sandbox.sizes import SizeLimit, check_binop, text_size
from engine.sandbox.values import InvalidValue, RegexTimeout, check_result, finish

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

    def __init__(self, regex: RegexFn, memory: Callable[[int], int]) -> None:
        self._regex, self._memory = regex, memory
        self._codes: OrderedDict[str, tuple[CodeType, str]] = OrderedDict()
        self._max_sequence = 0
        self._base = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
        # The running call's max_sequence, for str(); set by every call before its code runs.
        self._base.update(script_types(lambda: self._max_sequence))
        self._start_size = self._size = address_space()

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        source, filename, limits = req["source"], req["filename"], req["limits"]
        code, problems = translate(source, filename)
        if code is None:
            return {"ok": False, "kind": "compile", "problems": problems}
        budget = Budget(limits, timeout_ms=limits["compile_timeout_ms"])
        env = self._globals(budget, limits)
        failure = self._run(lambda: exec(code, env), budget, limits, filename)
        if failure is not None:
            where = failure.get("line")
            message = f"the script failed while loading: {failure['message']}"
            return {
                "ok": False,
                "kind": "compile",
                "problems": [{"line": where, "column": None, "message": message}],
            }
        self._cache(req["key"], code, filename)
        names = [k for k, v in env.items() if k.startswith("on_") and isinstance(v, FunctionType)]
        return {"ok": True, "functions": names}

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run one call; ask for a recycle when the worker has grown too far (see above)."""
        answer = self._call(req)
        if self._size > self._start_size + GROWTH_RECYCLE_MB * 1024 * 1024:
            answer["recycle"] = True
        return answer

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        script, limits = req["script"], req["limits"]
        cached = self._codes.get(script["key"])
        if cached is None:
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
            cached = self._cache(script["key"], code, script["filename"])
        code, filename = cached
        budget = Budget(limits, timeout_ms=limits["timeout_ms"])
        out: dict[str, Any] = {
            "logs": [],
            "dropped_logs": 0,
            "emits": [],
            "state_writes": {},
            "state_ttls": {},
        }
        host = Host(req, out, lambda op: self._host_regex(op, budget=budget, limits=limits))
        env = self._globals(budget, limits)
        result: list[Any] = []

        def run() -> None:
            exec(code, env)
            fn = env.get(req["function"])
            if not isinstance(fn, FunctionType):
                raise TypeError(f"call: the script defines no function {req['function']}")
            result.append(fn(req["event"], host))

        started = time.perf_counter()
        failure = self._run(run, budget, limits, filename)
        duration = (time.perf_counter() - started) * 1000
        if failure is not None:
            return failure
        try:
            check_result(result[0], limits)
        except InvalidValue as exc:
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "invalid_result",
                "message": str(exc),
                "line": None,
            }
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
        return env

    def _run(
        self, fn: Callable[[], None], budget: Budget, limits: dict[str, int], filename: str
    ) -> dict[str, Any] | None:
        """Run script code with the recursion and memory caps on; None on success."""
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(_depth() + limits["max_recursion"] + 30)
        self._size = self._memory(limits["memory_mb"])
        try:
            fn()
            if budget.expired:
                # The script caught the deadline somewhere (e.g. in a generator's finally): an
                # interrupt is final, whatever the script went on to return.
                raise Deadline
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
        except BaseException as exc:  # noqa: BLE001 - a script's SystemExit is its own failure
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "error",
                "message": describe(exc, limits["max_sequence"]),
                "line": _script_line(exc.__traceback__, filename),
            }
        finally:
            self._memory(0)
            sys.setrecursionlimit(old_limit)
            # Cycles the call made go now, not during (and on the clock of) some later call.
            gc.collect()
        return None

    def _host_regex(self, op: dict[str, Any], *, budget: Budget, limits: dict[str, int]) -> Any:
        budget.tick()
        try:
            # The budget is this call's own object: a new one empties the pattern engine's cache.
            return self._regex(
                op, call=budget, remaining_s=budget.remaining(), memory_mb=limits["memory_mb"]
            )
        except RegexTimeout:
            budget.expired = True
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
        return compile(tree, filename, "exec"), []
    except SyntaxError as exc:
        return None, [
            {"line": exc.lineno, "column": exc.offset, "message": f"syntax error: {exc.msg}"}
        ]
    except (RecursionError, MemoryError):
        return None, [
            {"line": 1, "column": None, "message": "the script is nested too deeply to compile"}
        ]


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


_STATM: list[int] = []
"""The descriptor of /proc/self/statm, opened once: a pread costs a fraction of an open."""


def address_space() -> int:
    """This process's mapped address space in bytes (what RLIMIT_AS counts)."""
    if not _STATM:
        _STATM.append(os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
    return int(os.pread(_STATM[0], 128, 0).split()[0]) * resource.getpagesize()


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
