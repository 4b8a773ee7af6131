"""The QuickJS runtime inside a sandbox worker: one prepared, frozen context per script, reused.

A context is prepared once per script key (prelude, deep freeze, sealed globalThis, the script's
strict wrapper parsed and frozen) and then serves many calls: each call runs the script's
top-level code again in a new strict function scope, so nothing a call creates is reachable by
the next. A context is thrown away after any failure, after a call that left promise jobs
queued, after ``RECYCLE_CALLS`` calls, or when a call left memory behind; its replacement is
prepared between calls, off the call's path. An interrupt is final: a call whose CPU time
reached its limit fails as a timeout whatever it returned (a script can catch the interrupt,
e.g. in a Promise executor or ``AsyncDisposableStack.disposeAsync``, but not this check).
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

# The binding's package module starts a thread pool at import; the worker wants no threads
# (the time limit counts CPU time of the whole process), so it uses the C module directly.
import _quickjs

from engine.sandbox.values import RegexTimeout

LINE_OFFSET = 1000
"""User source starts on line LINE_OFFSET + 1 of what QuickJS sees: later frames are the user's."""
RECYCLE_CALLS = 500
"""Calls one context serves before it is replaced (bounds garbage a script leaves in it)."""
LEFTOVER_SHARE = 4
"""A context is replaced when a call left more than memory_mb / LEFTOVER_SHARE in use."""
_FRAME = re.compile(r"<input>:(\d+):(\d+)")
_NAMES = re.compile(r"\bon_[A-Za-z0-9_]+")
_USES_REGEX = re.compile(r"\b(match|redact)\b")
_JS_DIR = Path(__file__).with_name("js")
_READY_SCRIPTS = 16
_CHECK = (
    "(function (s) { try { (0, eval)(s); } catch (e) {"
    " if (e instanceof SyntaxError) { return JSON.stringify({ message: String(e.message),"
    " stack: String(e.stack) }); } } return null; })(__heSource)"
)
"""Parses a source as a Script without running any of it (it is led by ``throw 0;``)."""
_STRICT = '"use strict";'
"""Scripts run in strict mode: a sloppy-only construct (``with``, octal literals, assigning to
an undeclared name at parse time...) is a load error with its line."""


class _Overtime(Exception):
    """Script code ran past its time limit and caught the interrupt: the interrupt still wins."""

    def __init__(self) -> None:
        super().__init__("interrupted (the script caught the interrupt)")


_FAILURES = (_quickjs.JSException, _quickjs.StackOverflow, _Overtime)


class _Context:
    __slots__ = ("baseline", "call", "calls", "ctx", "fresh", "prepare", "regex")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.call, self.prepare, self.regex, self.fresh = (
            ctx.eval(f"__he.{n}") for n in ("call", "prepare", "regex", "fresh")
        )
        self.calls = 0
        self.baseline = 0


class JavaScriptRuntime:
    """Compiles and calls JavaScript; keeps one prepared context per recent script."""

    def __init__(self) -> None:
        self._regex_src = (_JS_DIR / "regex.js").read_text(encoding="utf-8")
        self._host_src = (_JS_DIR / "host.js").read_text(encoding="utf-8")
        self._prelude = (_JS_DIR / "prelude.js").read_text(encoding="utf-8")
        self._ready: OrderedDict[str, _Context] = OrderedDict()
        self._recent: OrderedDict[str, tuple[str, dict[str, int]]] = OrderedDict()
        self._regex_ctx: _Context | None = None
        self._regex_call: object = None
        self._used: list[_Context] = []
        self._last: tuple[str, _Context] | None = None
        self._limits_text: dict[str, str] = {}

    def _new(self, limits: dict[str, int], *, sealed: bool = True) -> _Context:
        ctx = _quickjs.Context()
        ctx.set_memory_limit(limits["memory_mb"] * 1024 * 1024)
        ctx.set_max_stack_size(limits["stack_kb"] * 1024)
        # Handed over as strings: the host API and the regex engine are parsed only when used.
        ctx.set("__heHost", self._host_src)
        ctx.set("__heRegex", self._regex_src)
        ctx.eval(self._prelude)
        fns = _Context(ctx)
        ctx.eval("delete globalThis.__he;" + ("Object.freeze(globalThis);" if sealed else "") + "0")
        return fns

    def _prepare(
        self, source: str, limits: dict[str, int], *, timeout_ms: int, trial: bool = False
    ) -> tuple[_Context | None, dict[str, Any]]:
        """A sealed context with the script's wrapper parsed (and, on trial, run once).

        The source is first parsed on its own as a Script in a bare context (nothing runs): a
        source that is not a Script, e.g. one that closes the wrapper's brace, never reaches it.
        """
        failure = _syntax_error(source, limits)
        if failure is not None:
            return None, {"ok": False, "error": failure}
        names = sorted(set(_NAMES.findall(source)))
        table = ", ".join(f'{n}: typeof {n} === "function" ? {n} : undefined' for n in names)
        body = _STRICT + "\n" * LINE_OFFSET + source
        wrapped = "(function () {" + body + "\n;return {" + table + "};})"
        c = self._new(limits)
        c.ctx.set_time_limit(timeout_ms / 1000)
        started = time.process_time()
        try:
            raw = c.prepare(wrapped, "host" in source, bool(_USES_REGEX.search(source)), trial)
            jobs = _settle(c, timeout_ms, started) if trial else False
        finally:
            c.ctx.set_time_limit(-1)
        c.baseline = c.ctx.memory()["memory_used_size"]
        # Top-level code that queued promise jobs at load: its context is not kept.
        return (None if jobs else c), json.loads(raw)

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        limits = req["limits"]
        try:
            c, loaded = self._prepare(
                req["source"], limits, timeout_ms=limits["compile_timeout_ms"], trial=True
            )
        except _FAILURES as exc:
            return _compile_failure(_limit_reason(str(exc), "loading the script"), None, None)
        if not loaded["ok"]:
            err = loaded["error"]
            line, col = _user_position(err["stack"])
            kind = f"{err['type']}: " if err.get("type") else "SyntaxError: "
            return _compile_failure(f"{kind}{err['message']}", line, col)
        if c is not None:
            self._keep(req["key"], req["source"], limits, c)
        else:
            self._remember(req["key"], req["source"], limits)
        return {"ok": True, "functions": loaded["functions"]}

    def call(self, req: dict[str, Any], line: str) -> dict[str, Any] | str:
        """Run one call; a success comes back as the finished answer line (see prelude.js)."""
        script, limits = req["script"], req["limits"]
        key = script["key"]
        known = self._recent.get(key)
        source = script.get("source") or (known[0] if known else None)
        if source is None:
            return {"ok": False, "kind": "need_source"}
        c = self._ready.pop(key, None)
        started = time.perf_counter()
        healthy = keep = False
        try:
            if c is None:
                c, loaded = self._prepare(source, limits, timeout_ms=limits["timeout_ms"])
                if not loaded["ok"]:
                    return _error(loaded["error"], "error")
            assert c is not None
            c.ctx.set_memory_limit(limits["memory_mb"] * 1024 * 1024)
            c.ctx.set_max_stack_size(limits["stack_kb"] * 1024)
            c.ctx.set_time_limit(limits["timeout_ms"] / 1000)
            cpu = time.process_time()
            raw: str = c.call(line, self._limits_json(req["limits_key"], limits))
            jobs = _settle(c, limits["timeout_ms"], cpu)
            c.ctx.set_time_limit(-1)
            healthy = raw.startswith('{"ok":true,')
            keep = healthy and not jobs
        except _FAILURES as exc:
            return _limit_failure(str(exc), isinstance(exc, _quickjs.StackOverflow))
        finally:
            self._after(key, source, limits, c, healthy=keep)
        if healthy:
            duration = (time.perf_counter() - started) * 1000
            return f'{raw[:-1]},"duration_ms":{duration:.4f}}}'
        err = json.loads(raw)["error"]
        return _error(err, "invalid_result" if err["invalid"] else "error")

    def _limits_json(self, key: str, limits: dict[str, int]) -> str:
        text = self._limits_text.get(key)
        if text is None:
            text = json.dumps(limits, separators=(",", ":"))
            self._limits_text = {key: text}  # one set of limits is the common case
        return text

    def _after(
        self, key: str, source: str, limits: dict[str, int], c: _Context | None, *, healthy: bool
    ) -> None:
        """Keep a context that served a call well; anything else is freed after the answer."""
        self._remember(key, source, limits)
        if c is None:
            return
        c.calls += 1
        if healthy and c.calls < RECYCLE_CALLS:
            self._ready[key] = c
            self._last = (key, c)
        else:
            # Freeing a context costs about as much as making one: do it after the answer.
            self._used.append(c)

    def _keep(self, key: str, source: str, limits: dict[str, int], c: _Context) -> None:
        self._remember(key, source, limits)
        old = self._ready.pop(key, None)
        if old is not None:
            self._used.append(old)
        self._ready[key] = c

    def _remember(self, key: str, source: str, limits: dict[str, int]) -> None:
        self._recent[key] = (source, limits)
        self._recent.move_to_end(key)
        while len(self._recent) > _READY_SCRIPTS:
            old, _ = self._recent.popitem(last=False)
            gone = self._ready.pop(old, None)
            if gone is not None:
                self._used.append(gone)

    def prepare(self) -> None:
        """Between calls: retire a context a call left memory in, free used ones, prepare anew."""
        last, self._last = self._last, None
        if last is not None:
            key, c = last
            leftover = c.ctx.memory()["memory_used_size"] - c.baseline
            limit = self._recent[key][1]["memory_mb"] * 1024 * 1024 if key in self._recent else 0
            if leftover > limit // LEFTOVER_SHARE and self._ready.get(key) is c:
                self._used.append(self._ready.pop(key))
        self._used.clear()
        if not self._recent:
            return
        key = next(reversed(self._recent))
        if key in self._ready:
            return
        source, limits = self._recent[key]
        try:
            fresh, loaded = self._prepare(source, limits, timeout_ms=limits["compile_timeout_ms"])
        except (_quickjs.JSException, _quickjs.StackOverflow):
            return
        if fresh is not None and loaded["ok"]:
            self._ready[key] = fresh

    def regex(self, op: dict[str, Any], *, call: object, remaining_s: float, memory_mb: int) -> Any:
        """host.match/redact for Python scripts: the same engine, in a context of its own.

        That context runs no script code, so it lives as long as the worker; what a call could
        observe of an earlier one is reset when ``call`` (a token per script call) changes: the
        compiled-pattern cache is emptied and the garbage collected, so the memory in use and
        the limit a call meets are the same whatever ran before.
        """
        if self._regex_ctx is None:
            self._regex_ctx = self._new({"memory_mb": max(memory_mb, 8), "stack_kb": 256})
        c = self._regex_ctx
        if call is not self._regex_call:
            self._regex_call = call
            c.fresh()
        c.ctx.set_memory_limit(max(memory_mb, 8) * 1024 * 1024)
        c.ctx.set_time_limit(max(remaining_s, 0.001))
        try:
            raw = json.loads(c.regex(json.dumps(op)))
        except (_quickjs.JSException, _quickjs.StackOverflow) as exc:
            if "interrupted" in str(exc):
                raise RegexTimeout from None
            raise MemoryError("out of memory in host.match/redact") from None
        finally:
            c.ctx.set_time_limit(-1)
        if not raw["ok"]:
            raise ValueError(raw["error"]["message"])
        return raw["value"]


def _settle(c: _Context, timeout_ms: int, started: float) -> bool:
    """After script code ran: raise _Overtime if its CPU time reached the limit (the binding's
    clock; an interrupt the script caught is still final), and say whether it left promise jobs.

    No job may run in a later call, and only running one tells whether any is queued: the first
    runs now, after the answer is fixed and within what is left of the time limit, and a context
    that had one is not kept.
    """
    left = timeout_ms / 1000 - (time.process_time() - started)
    if left <= 0:
        raise _Overtime
    c.ctx.set_time_limit(left)
    try:
        queued = bool(c.ctx.execute_pending_job())
    except _quickjs.JSException as exc:
        if "interrupted" in str(exc):
            raise _Overtime from None
        queued = True
    except _quickjs.StackOverflow:
        queued = True
    if time.process_time() - started >= timeout_ms / 1000:
        raise _Overtime
    return queued


def _syntax_error(source: str, limits: dict[str, int]) -> dict[str, Any] | None:
    """The SyntaxError of ``source`` parsed as a strict Script on its own, or None; nothing runs.

    A source that only sloppy mode accepts (``with``, octal literals...) is told so.
    """
    raw = _parse(_STRICT + "throw 0;" + "\n" * LINE_OFFSET + source, limits)
    if raw is None:
        return None
    err = json.loads(raw)
    message = err["message"]
    if "strict" not in message and _parse("throw 0;" + "\n" * LINE_OFFSET + source, limits) is None:
        message += " (scripts run in strict mode)"
    return {"type": "SyntaxError", "message": message, "stack": err["stack"], "invalid": False}


def _parse(text: str, limits: dict[str, int]) -> str | None:
    ctx = _quickjs.Context()
    ctx.set_memory_limit(max(limits["memory_mb"], 8) * 1024 * 1024)
    ctx.set_max_stack_size(limits["stack_kb"] * 1024)
    ctx.set("__heSource", text)
    ctx.set_time_limit(limits["compile_timeout_ms"] / 1000)
    raw: str | None = ctx.eval(_CHECK)
    return raw


def _user_position(stack: str) -> tuple[int | None, int | None]:
    for m in _FRAME.finditer(stack):
        line = int(m.group(1))
        if line > LINE_OFFSET:
            return line - LINE_OFFSET, int(m.group(2))
    return None, None


def _limit_reason(message: str, doing: str) -> str:
    if "interrupted" in message:
        return f"time limit exceeded while {doing}"
    if "out of memory" in message:
        return f"memory limit exceeded while {doing}"
    if "stack" in message:
        return f"stack limit exceeded while {doing}"
    return f"{doing} failed: {message.splitlines()[0] if message else 'unknown error'}"


def _compile_failure(message: str, line: int | None, column: int | None) -> dict[str, Any]:
    return {
        "ok": False,
        "kind": "compile",
        "problems": [{"line": line, "column": column, "message": message}],
    }


def _limit_failure(message: str, stack: bool) -> dict[str, Any]:
    if stack or "stack" in message:
        return {
            "ok": False,
            "kind": "limit",
            "cause": "memory",
            "message": "stack limit exceeded (recursion too deep)",
        }
    if "interrupted" in message:
        return {"ok": False, "kind": "limit", "cause": "timeout", "message": "time limit exceeded"}
    if "out of memory" in message:
        return {"ok": False, "kind": "limit", "cause": "memory", "message": "memory limit exceeded"}
    return {
        "ok": False,
        "kind": "runtime",
        "cause": "error",
        "message": message.splitlines()[0] if message else "error",
        "line": None,
    }


def _error(err: dict[str, Any], cause: str) -> dict[str, Any]:
    message = f"{err['type']}: {err['message']}"
    if err["type"] == "RangeError" and "call stack" in err["message"]:
        return {
            "ok": False,
            "kind": "limit",
            "cause": "memory",
            "message": "stack limit exceeded (recursion too deep)",
        }
    if err["type"] == "InternalError" and "out of memory" in err["message"]:
        return {"ok": False, "kind": "limit", "cause": "memory", "message": "memory limit exceeded"}
    line, column = _user_position(err.get("stack", ""))
    return {
        "ok": False,
        "kind": "runtime",
        "cause": cause,
        "message": message,
        "line": line,
        "column": column,
    }
