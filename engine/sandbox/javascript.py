"""The QuickJS runtime inside a sandbox worker: a fresh frozen context per call, made ahead."""

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

from engine.sandbox.values import InvalidValue, RegexTimeout, check_result, finish

LINE_OFFSET = 1000
"""User source is loaded after this many newlines: frames past it are the user's."""
_FRAME = re.compile(r"<input>:(\d+):(\d+)")
_JS_DIR = Path(__file__).with_name("js")
_READY_SCRIPTS = 16


class _Context:
    __slots__ = ("call", "ctx", "load", "regex")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.call, self.load, self.regex = (
            ctx.eval(f"__he.{n}") for n in ("call", "load", "regex")
        )


class JavaScriptRuntime:
    """Compiles and calls JavaScript; keeps one loaded context ready per recent script."""

    def __init__(self) -> None:
        self._regex_src = (_JS_DIR / "regex.js").read_text(encoding="utf-8")
        self._host_src = (_JS_DIR / "host.js").read_text(encoding="utf-8")
        self._prelude = (_JS_DIR / "prelude.js").read_text(encoding="utf-8")
        self._ready: OrderedDict[str, _Context] = OrderedDict()
        self._recent: OrderedDict[str, tuple[str, dict[str, int], bool]] = OrderedDict()
        self._regex_ctx: _Context | None = None
        self._used: list[_Context] = []

    def _new(self, limits: dict[str, int]) -> _Context:
        ctx = _quickjs.Context()
        ctx.set_memory_limit(limits["memory_mb"] * 1024 * 1024)
        ctx.set_max_stack_size(limits["stack_kb"] * 1024)
        # Handed over as strings: the host API and the regex engine are parsed only when used.
        ctx.set("__heHost", self._host_src)
        ctx.set("__heRegex", self._regex_src)
        ctx.eval(self._prelude)
        fns = _Context(ctx)
        ctx.eval("delete globalThis.__he")
        return fns

    def _load(
        self, source: str, limits: dict[str, int], *, timeout_ms: int, with_host: bool = False
    ) -> tuple[_Context, dict[str, Any]]:
        c = self._new(limits)
        c.ctx.set_time_limit(timeout_ms / 1000)
        try:
            raw = c.load("\n" * LINE_OFFSET + source, with_host)
        finally:
            c.ctx.set_time_limit(-1)
        return c, json.loads(raw)

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        limits = req["limits"]
        try:
            _, loaded = self._load(req["source"], limits, timeout_ms=limits["compile_timeout_ms"])
        except (_quickjs.JSException, _quickjs.StackOverflow) as exc:
            return _compile_failure(_limit_reason(str(exc), "loading the script"), None, None)
        if not loaded["ok"]:
            err = loaded["error"]
            line, col = _user_position(err["stack"])
            return _compile_failure(f"{err['type']}: {err['message']}", line, col)
        return {"ok": True, "functions": loaded["functions"]}

    def call(self, req: dict[str, Any], line: str) -> dict[str, Any]:
        script, limits = req["script"], req["limits"]
        key = script["key"]
        known = self._recent.get(key)
        source = script.get("source") or (known[0] if known else None)
        if source is None:
            return {"ok": False, "kind": "need_source"}
        c = self._ready.pop(key, None)
        started = time.perf_counter()
        try:
            if c is None:
                c, loaded = self._load(source, limits, timeout_ms=limits["timeout_ms"])
                if not loaded["ok"]:
                    return _error(loaded["error"], "error")
            c.ctx.set_memory_limit(limits["memory_mb"] * 1024 * 1024)
            c.ctx.set_time_limit(limits["timeout_ms"] / 1000)
            raw = json.loads(c.call(line))
        except (_quickjs.JSException, _quickjs.StackOverflow) as exc:
            return _limit_failure(str(exc), isinstance(exc, _quickjs.StackOverflow))
        finally:
            # Freeing a context costs about as much as making one: do it after the answer.
            self._used.append(c)  # type: ignore[arg-type]
            self._remember(key, source, limits, uses_host=bool(known and known[2]))
        duration = (time.perf_counter() - started) * 1000
        if raw.get("uses_host"):
            self._recent[key] = (source, limits, True)
        if not raw["ok"]:
            return _error(raw["error"], "invalid_result" if raw["error"]["invalid"] else "error")
        try:
            value = json.loads(raw["value"])
            check_result(value, limits)
        except (InvalidValue, RecursionError) as exc:
            return {
                "ok": False,
                "kind": "runtime",
                "cause": "invalid_result",
                "message": str(exc) or "result: nested too deeply",
                "line": None,
            }
        return finish(value, raw, limits, duration)

    def _remember(self, key: str, source: str, limits: dict[str, int], *, uses_host: bool) -> None:
        self._recent[key] = (source, limits, uses_host)
        self._recent.move_to_end(key)
        while len(self._recent) > _READY_SCRIPTS:
            old, _ = self._recent.popitem(last=False)
            self._ready.pop(old, None)

    def prepare(self) -> None:
        """Between calls: free used contexts, load the latest script into a fresh one."""
        self._used.clear()
        if not self._recent:
            return
        key = next(reversed(self._recent))
        if key in self._ready:
            return
        source, limits, uses_host = self._recent[key]
        try:
            c, loaded = self._load(
                source, limits, timeout_ms=limits["timeout_ms"], with_host=uses_host
            )
        except (_quickjs.JSException, _quickjs.StackOverflow):
            return
        if loaded["ok"]:
            self._ready[key] = c

    def regex(self, op: dict[str, Any], *, remaining_s: float, memory_mb: int) -> Any:
        """host.match/redact for Python scripts: the same engine, in a context of its own.

        That context holds no script state (the engine is pure), so it lives as long as the worker.
        """
        if self._regex_ctx is None:
            self._regex_ctx = self._new({"memory_mb": max(memory_mb, 8), "stack_kb": 256})
        c = self._regex_ctx
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
