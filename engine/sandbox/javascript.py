"""The QuickJS runtime inside a sandbox worker: one prepared, frozen context per script, reused.

A context is prepared once per script key (prelude, deep freeze, sealed globalThis, the script's
strict wrapper parsed and frozen) and then serves many calls: each call runs the script's
top-level code again in a new strict function scope, so nothing a call creates is reachable by
the next. A script the host found eligible (``top_level`` plan, see jsscope.py) runs its top
level once per context instead, and its calls share only frozen plain copies of its constants.
Contexts are kept for the ``capacity`` most recent scripts (``set_capacity``). A context is
thrown away after any failure, after a call that left promise jobs queued, after
``RECYCLE_CALLS`` calls, or when calls left memory behind (checked every ``CHECK_CALLS`` calls
or ``CHECK_CPU_S`` of calls' CPU time); its replacement is prepared between calls, off the
call's path, when preparing it is quick (``PREPARE_AHEAD_S``), and otherwise by the script's
own next call, within that call's time limit: the next request a worker gets may be another
hook's, whose deadline must not pay for this one's top level. An interrupt is final: a call
whose CPU time reached its limit fails as a timeout whatever it returned (a script can catch
the interrupt, e.g. in a Promise executor or ``AsyncDisposableStack.disposeAsync``, but not
this check).
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The binding's package module starts a thread pool at import; the worker wants no threads
# (the time limit counts CPU time of the whole process), so it uses the C module directly.
import _quickjs

from engine.sandbox.jssource import (
    LINE_OFFSET,
    STRICT,
    compile_failure,
    error_answer,
    limit_failure,
    limit_reason,
    once_wrappers,
    user_position,
)
from engine.sandbox.values import RegexTimeout

RECYCLE_CALLS = 20_000
"""Calls one context serves before it is replaced, whatever its memory says. Memory left behind
is what retires a context (``LEFTOVER_SHARE``); this is a backstop. Preparing a context costs
about 3 ms of CPU (``python bench/bench_js_runtime.py`` prints it), so at 20,000 calls the
rebuild costs about 0.15 us per call; at the former 500 it was 6-16 us per call."""
LEFTOVER_SHARE = 4
"""A context is replaced when calls left more than memory_mb / LEFTOVER_SHARE in use."""
CHECK_CALLS = 32
"""Calls between two looks at a context's memory in use. A look walks the whole heap
(``ctx.memory()``: 14 us idle, 24 us under load, measured with bench/bench_js_runtime.py), so
every 32nd call makes it under 1 us per call."""
CHECK_CPU_S = 0.002
"""...or sooner, once the calls since the last look used this much CPU. Memory a call leaves
behind must be allocated, and allocating takes time: the fastest leftover measured (garbage in
reference cycles, which the collector frees later) grew by at most ~120 bytes per us of a
call's CPU, so 2 ms of calls leave at most ~0.25 MB before a look, a small share of the
smallest budget's quarter (memory_mb 1 -> 0.25 MB is checked every 2 ms). A call that ends
with memory in use above its limit fails anyway, and a failed call's context is thrown away."""
PREPARE_AHEAD_S = 0.02
"""A lost context is prepared again between requests only if preparing it last took at most
this much CPU (a context of the example guards takes a few ms); a slower one, a top level that
runs once and computes a lot say, is prepared by the script's own next call, on its own time."""
PREPARE_AHEAD_BUDGET_S = 0.04
"""CPU all preparing between two requests may take; the next request waits for it."""
DEFAULT_CAPACITY = 16
"""Prepared contexts a worker keeps until the host says how many scripts it has loaded."""
_NAMES = re.compile(r"\bon_[A-Za-z0-9_]+|\brun\b")
"""The names a script may define for the engine: ``on_<point>`` hooks, a tool's ``run``."""
_USES_REGEX = re.compile(r"\b(match|redact)\b")
_JS_DIR = Path(__file__).with_name("js")
_CHECK = (
    "(function (s) { try { (0, eval)(s); } catch (e) {"
    " if (e instanceof SyntaxError) { return JSON.stringify({ message: String(e.message),"
    " stack: String(e.stack) }); } } return null; })(__heSource)"
)
"""Parses a source as a Script without running any of it (it is led by ``throw 0;``)."""


class _Overtime(Exception):
    """Script code ran past its time limit and caught the interrupt: the interrupt still wins."""

    def __init__(self) -> None:
        super().__init__("interrupted (the script caught the interrupt)")


_FAILURES = (_quickjs.JSException, _quickjs.StackOverflow, _Overtime)


class _Context:
    __slots__ = (
        "baseline",
        "call",
        "call_keyed",
        "calls",
        "configs",
        "ctx",
        "fresh",
        "limited",
        "prepare",
        "regex",
        "set_config",
        "unchecked",
        "unchecked_cpu",
        "used",
    )

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.call, self.call_keyed, self.set_config, self.prepare, self.regex, self.fresh = (
            ctx.eval(f"__he.{n}")
            for n in ("call", "callKeyed", "config", "prepare", "regex", "fresh")
        )
        self.calls = 0
        self.limited: dict[str, int] | None = None
        """The limits last set on the context by a call (None: those it was made with)."""
        self.baseline = 0
        self.configs: set[str] = set()  # config keys parsed here (prelude.js keeps 4 at most)
        self.unchecked = 0
        self.unchecked_cpu = 0.0
        self.used = 0.0


class _Script:
    """What a worker remembers of a recent script: enough to prepare its context again."""

    __slots__ = ("limits", "plan", "prepare_s", "source")

    def __init__(self, source: str, limits: dict[str, int], plan: dict[str, Any] | None) -> None:
        self.source = source
        self.limits = limits
        self.plan = plan
        """The ``top_level`` plan from the host (see jsscope.py); None: the top level runs on
        every call (no plan, or a call wrote to a kept constant)."""
        self.prepare_s = 0.0
        """CPU the last preparation of its context took (``PREPARE_AHEAD_S``)."""


class JavaScriptRuntime:
    """Compiles and calls JavaScript; keeps one prepared context per recent script."""

    def __init__(self) -> None:
        self._regex_src = (_JS_DIR / "regex.js").read_text(encoding="utf-8")
        self._host_src = (_JS_DIR / "host.js").read_text(encoding="utf-8")
        self._prelude = (_JS_DIR / "prelude.js").read_text(encoding="utf-8")
        self._capacity = DEFAULT_CAPACITY
        self._ready: OrderedDict[str, _Context] = OrderedDict()
        self._recent: OrderedDict[str, _Script] = OrderedDict()
        self._regex_ctx: _Context | None = None
        self._regex_call: object = None
        self._used: list[_Context] = []
        # Texts that parsed on their own as strict Scripts: a context prepared again for the
        # same source (and plan body) skips that check.
        self._parsed: set[str] = set()
        # Scripts called since the last prepare() (a batch calls several), with the context
        # kept for each (None: it was thrown away).
        self._touched: dict[str, _Context | None] = {}
        self._limits_text: dict[str, str] = {}
        self.prepared_s = 0.0
        """CPU the last ``_prepare`` took (infinite while one runs, or after one was cut short)."""

    def set_capacity(self, n: int) -> None:
        """Keep prepared contexts (and sources) for the ``n`` most recent scripts (at least 1).

        The host sizes it to the scripts it loaded, up to ``scripts.max_contexts``; with more
        scripts in rotation than contexts, a call may find its context gone and prepare one on
        its own time (see ``context_capacity`` in jsscope.py).
        """
        self._capacity = max(1, n)
        self._trim()

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
        self,
        source: str,
        limits: dict[str, int],
        *,
        timeout_ms: int,
        trial: bool = False,
        plan: dict[str, Any] | None = None,
    ) -> tuple[_Context | None, dict[str, Any]]:
        """A sealed context with the script's wrapper parsed (and, on trial, run once).

        The source is first parsed on its own as a Script in a bare context (nothing runs): a
        source that is not a Script, e.g. one that closes the wrapper's brace, never reaches it.
        With a usable ``plan`` the top level runs here, once, and its constants are kept.
        """
        if source not in self._parsed:
            failure = _syntax_error(source, limits)
            if failure is not None:
                return None, {"ok": False, "error": failure}
            self._note_parsed(source)
        names = sorted(set(_NAMES.findall(source)))
        table = ", ".join(f'{n}: typeof {n} === "function" ? {n} : undefined' for n in names)
        body = STRICT + "\n" * LINE_OFFSET + source
        wrapped = "(function () {" + body + "\n;return {" + table + "};})"
        once = once_wrappers(source, plan, table, self._parses(limits)) if plan else None
        began = time.process_time()
        self.prepared_s = float("inf")  # until it ends: an interrupted one is not quick
        c = self._new(limits)
        c.ctx.set_time_limit(timeout_ms / 1000)
        started = time.process_time()
        try:
            raw = c.prepare(
                wrapped,
                "host" in source,
                bool(_USES_REGEX.search(source)),
                trial,
                *(once or (None, None, False)),
            )
            jobs = _settle(c, timeout_ms, started) if trial or once else False
        finally:
            c.ctx.set_time_limit(-1)
        c.baseline = c.ctx.memory()["memory_used_size"]
        self.prepared_s = time.process_time() - began
        # Top-level code that queued promise jobs at load: its context is not kept.
        return (None if jobs else c), json.loads(raw)

    def _note_parsed(self, text: str) -> None:
        if len(self._parsed) >= 4 * self._capacity:
            self._parsed.clear()
        self._parsed.add(text)

    def _parses(self, limits: dict[str, int]) -> Callable[[str], bool]:
        def parses(text: str) -> bool:
            if text in self._parsed:
                return True
            if _syntax_error(text, limits) is not None:
                return False
            self._note_parsed(text)
            return True

        return parses

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        limits, plan = req["limits"], req.get("top_level")
        try:
            c, loaded = self._prepare(
                req["source"],
                limits,
                timeout_ms=limits["compile_timeout_ms"],
                trial=True,
                plan=plan,
            )
        except _FAILURES as exc:
            return compile_failure(limit_reason(str(exc), "loading the script"), None, None)
        prepared_s = self.prepared_s
        if not loaded["ok"]:
            err = loaded["error"]
            line, col = user_position(err["stack"])
            kind = f"{err['type']}: " if err.get("type") else "SyntaxError: "
            return compile_failure(f"{kind}{err['message']}", line, col)
        known = _Script(req["source"], limits, _still(plan, loaded))
        known.prepare_s = prepared_s
        self._remember(req["key"], known)
        if c is not None:
            self._keep(req["key"], c)
        return {"ok": True, "functions": loaded["functions"], "once": loaded["once"]}

    def call(self, req: dict[str, Any], line: str) -> dict[str, Any] | str:
        """Run one call; a success comes back as the finished answer line (see prelude.js)."""
        limits_text = self._limits_json(req["limits_key"], req["limits"])
        return self._run(req, lambda c: c.call(line, limits_text))

    def call_v2(self, call: dict[str, Any], event_text: str) -> dict[str, Any] | str:
        """Run one call of a batch: ``call`` as in worker.py, the event as its own JSON text.

        The event text is parsed once, by the script's context; the config is parsed and
        deep-frozen once per context and ``config_key``, and every call of that context then
        hands the same frozen object to ``host.config``. A success comes back as the finished
        answer line.
        """
        limits_text = self._limits_json(call["limits_key"], call["limits"])
        state = call["state"]
        state_text = json.dumps(state, separators=(",", ":")) if state else "{}"
        config_key = call["config_key"]
        entries = call.get("entries")
        entries_text = "null" if entries is None else json.dumps(entries, separators=(",", ":"))

        def invoke(c: _Context) -> str:
            if config_key not in c.configs:
                self._load_config(c, config_key, call["config_text"])
            raw: str = c.call_keyed(
                event_text, call["function"], config_key, state_text, limits_text, entries_text
            )
            return raw

        return self._run(call, invoke)

    def _load_config(self, c: _Context, key: str, text: str) -> None:
        """Parse a config into ``c``; the memory it takes counts as the context's own."""
        if len(c.configs) >= 4:
            c.configs.clear()  # as prelude.js does
        before = c.ctx.memory()["memory_used_size"]
        c.set_config(key, text)
        c.configs.add(key)
        c.baseline += c.ctx.memory()["memory_used_size"] - before

    def _run(self, req: dict[str, Any], invoke: Callable[[_Context], str]) -> dict[str, Any] | str:
        script, limits = req["script"], req["limits"]
        key = script["key"]
        known = self._recent.get(key)
        if script.get("source") is not None:
            if known is None or known.source != script["source"]:
                known = _Script(script["source"], limits, script.get("top_level"))
        elif known is None:
            return {"ok": False, "kind": "need_source"}
        known.limits = limits
        c = self._ready.pop(key, None)
        started = time.perf_counter()
        healthy = keep = False
        try:
            if c is None:
                try:
                    c, loaded = self._prepare(
                        known.source, limits, timeout_ms=limits["timeout_ms"], plan=known.plan
                    )
                    if c is None and loaded["ok"]:  # its top level, run once, queued jobs
                        known.plan = None
                        c, loaded = self._prepare(
                            known.source, limits, timeout_ms=limits["timeout_ms"]
                        )
                finally:
                    known.prepare_s = self.prepared_s
                if not loaded["ok"]:
                    return error_answer(loaded["error"], "error")
                known.plan = _still(known.plan, loaded)
            assert c is not None
            if c.limited is not limits:  # the worker keeps one limits object per key
                c.ctx.set_memory_limit(limits["memory_mb"] * 1024 * 1024)
                c.ctx.set_max_stack_size(limits["stack_kb"] * 1024)
                c.limited = limits
            c.ctx.set_time_limit(limits["timeout_ms"] / 1000)
            cpu = time.process_time()
            raw = invoke(c)
            jobs = _settle(c, limits["timeout_ms"], cpu)
            c.ctx.set_time_limit(-1)
            if raw.startswith("!"):  # a call wrote to a kept constant: fresh top levels from now
                raw = raw[1:]
                known.plan = None
            healthy = raw.startswith('{"ok":true,')
            keep = healthy and not jobs
        except _FAILURES as exc:
            return limit_failure(str(exc), isinstance(exc, _quickjs.StackOverflow))
        finally:
            self._after(key, known, c, healthy=keep)
        if healthy:
            duration = (time.perf_counter() - started) * 1000
            return f'{raw[:-1]},"duration_ms":{duration:.4f}}}'
        err = json.loads(raw)["error"]
        if err.get("thrown_null") and "throw" not in known.source:
            # QuickJS throws null when it runs out of memory while making the error itself,
            # and a script that never writes ``throw`` cannot have thrown it on purpose
            return limit_failure("out of memory", False)
        return error_answer(err, "invalid_result" if err["invalid"] else "error")

    def _limits_json(self, key: str, limits: dict[str, int]) -> str:
        text = self._limits_text.get(key)
        if text is None:
            text = json.dumps(limits, separators=(",", ":"))
            self._limits_text = {key: text}  # one set of limits is the common case
        return text

    def _after(self, key: str, known: _Script, c: _Context | None, *, healthy: bool) -> None:
        """Keep a context that served a call well; anything else is freed after the answer."""
        self._remember(key, known)
        if c is None:
            return
        c.calls += 1
        c.unchecked += 1
        c.unchecked_cpu += c.used  # the call's CPU time, from _settle
        kept = healthy and c.calls < RECYCLE_CALLS
        self._touched[key] = c if kept else None
        if kept:
            self._ready[key] = c
        else:
            # Freeing a context costs about as much as making one: do it after the answer.
            self._used.append(c)

    def _keep(self, key: str, c: _Context) -> None:
        old = self._ready.pop(key, None)
        if old is not None:
            self._used.append(old)
        self._ready[key] = c

    def _remember(self, key: str, known: _Script) -> None:
        self._recent[key] = known
        self._recent.move_to_end(key)
        self._trim()

    def _trim(self) -> None:
        while len(self._recent) > self._capacity:
            old, _ = self._recent.popitem(last=False)
            gone = self._ready.pop(old, None)
            if gone is not None:
                self._used.append(gone)

    def prepare(self) -> None:
        """Between requests: retire contexts calls left memory in, free used ones, and prepare
        anew the contexts the request's scripts lost (a batch may have called several)."""
        touched, self._touched = self._touched, {}
        for key, c in touched.items():
            if c is not None and self._ready.get(key) is c and self._left_memory(key, c):
                self._used.append(self._ready.pop(key))
        self._used.clear()
        spent = 0.0
        for key in list(touched) or list(self._recent)[-1:]:
            known = self._recent.get(key)
            if known is None or key in self._ready or known.prepare_s > PREPARE_AHEAD_S:
                continue  # a slow one is prepared by its own next call (PREPARE_AHEAD_S)
            if spent >= PREPARE_AHEAD_BUDGET_S:
                break
            self._prepare_ready(key, known)
            spent += min(known.prepare_s, PREPARE_AHEAD_BUDGET_S)

    def _prepare_ready(self, key: str, known: _Script) -> None:
        try:
            # Cut short at twice the quick limit: the next request is waiting.
            fresh, loaded = self._prepare(
                known.source,
                known.limits,
                timeout_ms=max(1, int(2000 * PREPARE_AHEAD_S)),
                plan=known.plan,
            )
        except _FAILURES:
            return
        finally:
            known.prepare_s = self.prepared_s
        if fresh is not None and loaded["ok"]:
            known.plan = _still(known.plan, loaded)
            self._ready[key] = fresh

    def _left_memory(self, key: str, c: _Context) -> bool:
        """Whether calls left more than a quarter of the memory limit in use; looked at only
        every CHECK_CALLS calls or CHECK_CPU_S of calls' CPU (a look walks the heap)."""
        if c.unchecked < CHECK_CALLS and c.unchecked_cpu < CHECK_CPU_S:
            return False
        c.unchecked, c.unchecked_cpu = 0, 0.0
        leftover = c.ctx.memory()["memory_used_size"] - c.baseline
        known = self._recent.get(key)
        limit = known.limits["memory_mb"] * 1024 * 1024 if known is not None else 0
        return leftover > limit // LEFTOVER_SHARE

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
            err = raw["error"]
            if err["thrown_null"] or (
                err["type"] == "InternalError" and "out of memory" in err["message"]
            ):
                # The engine caught its own out of memory: the script must not (a ValueError
                # it could catch would let it measure the memory this shared context has left).
                raise MemoryError("out of memory in host.match/redact")
            raise ValueError(err["message"])
        return raw["value"]


def _syntax_error(source: str, limits: dict[str, int]) -> dict[str, Any] | None:
    """The SyntaxError of ``source`` parsed as a strict Script on its own, or None; nothing runs.

    A source that only sloppy mode accepts (``with``, octal literals...) is told so.
    """
    raw = _parse(STRICT + "throw 0;" + "\n" * LINE_OFFSET + source, limits)
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


def _still(plan: dict[str, Any] | None, loaded: dict[str, Any]) -> dict[str, Any] | None:
    """The plan to prepare with next time: none once the worker refused to keep the constants
    (they are not plain data), so the top level is not run twice on every prepare."""
    return None if loaded.get("once") == "refused" else plan


def _settle(c: _Context, timeout_ms: int, started: float) -> bool:
    """After script code ran: raise _Overtime if its CPU time reached the limit (the binding's
    clock; an interrupt the script caught is still final), and say whether it left promise jobs.
    The CPU time used is left in ``c.used``.

    No job may run in a later call, and only running one tells whether any is queued: the first
    runs now, after the answer is fixed and within what is left of the time limit, and a context
    that had one is not kept.
    """
    used = time.process_time() - started
    left = timeout_ms / 1000 - used
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
    if queued:  # a job ran: its time counts (none queued: the look took no time to speak of)
        used = time.process_time() - started
    if used >= timeout_ms / 1000:
        raise _Overtime
    c.used = used
    return queued
