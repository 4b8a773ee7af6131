"""WorkerPool: the Sandbox the engine holds; compiles and calls scripts in supervised workers."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import (
    Problem,
    ScriptCompileError,
    ScriptError,
    ScriptLimitError,
    ScriptRuntimeError,
)
from engine.points import Point, suggest
from engine.sandbox.batch import Batch, ConfigTexts, Exchange, answer_cap, failure_of
from engine.sandbox.guards import TOOL_ENTRY
from engine.sandbox.jsscope import context_capacity
from engine.sandbox.limits import (
    BatchCall,
    CallResult,
    CompiledScript,
    Language,
    Limits,
    config_key,
)
from engine.sandbox.pool import GRACE_S, Prestarted, Worker, WorkerDied, Workers
from engine.sandbox.supervise import PoolPolicy

if TYPE_CHECKING:
    import asyncio  # imported where used: only the async paths need it

_POINTS = [p.value for p in Point]
MIN_CONTEXTS = 16
"""Prepared JavaScript contexts a worker keeps however few scripts are loaded."""
log = logging.getLogger("engine.sandbox")


class WorkerPool:
    """A small pool of pre-started worker processes; thread-safe, many threads may call at once.

    Args:
        size: worker processes kept running.
        limits: defaults for every call (a call may pass its own).
    """

    def __init__(
        self,
        *,
        size: int = 2,
        limits: Limits = Limits(),  # noqa: B008 - frozen
        policy: PoolPolicy = PoolPolicy(),  # noqa: B008 - frozen
        max_contexts: int = 64,
        prestarted: Prestarted | None = None,
    ) -> None:
        self.limits = limits
        self.max_contexts = max_contexts
        self._workers = Workers(size, policy, prestarted=prestarted)
        self._configs = ConfigTexts()
        self._contexts = 0
        self._held: Counter[str] = Counter()
        self._held_lock = threading.Lock()
        self._warned = False
        self._draining: set[asyncio.Task[None]] = set()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker and reap it; calls after this fail with cause 'crashed'."""
        self._workers.close()

    def health(self) -> dict[str, Any]:
        """``{workers, busy, size, per_hook, spawned_total, spawn_failures, last_spawn_error,
        respawns_last_minute, respawns_pending, quarantined: [{hook, kills, window_s, since}]}``"""
        return self._workers.health()

    def forget(self, owner: str) -> None:
        """The hook ``owner`` names was rebuilt or closed: clear its kills and quarantine."""
        self._workers.forget(owner)

    def compile(
        self,
        source: str,
        *,
        filename: str,
        language: Language | str,
        key_owner: str | None = None,
        tool: bool = False,
    ) -> CompiledScript:
        """Check a script and load it once in a worker (its top-level code runs, bounded).

        With ``tool`` the script is a tool's: it must define ``run(input, host)`` (its
        ``functions`` are just that one). With ``key_owner`` the script comes back keyed for it
        (see CompiledScript.owned_by), and the context its load prepared serves that owner's
        first calls.

        Raises:
            ScriptCompileError: every syntax and policy problem, with line and column; a function
                named like a point that is not one, with a suggestion.
        """
        lang = Language(language)
        limits = self.limits
        if len(source.encode("utf-8", "surrogatepass")) > limits.max_source_bytes:
            raise ScriptCompileError(
                [
                    Problem(
                        filename, 1, None, f"script is larger than {limits.max_source_bytes} bytes"
                    )
                ],
                language=lang.value,
            )
        script = CompiledScript(lang, filename, source, frozenset())
        if key_owner is not None:
            script = script.owned_by(key_owner)
        message = {
            "op": "compile",
            "language": lang.value,
            "source": source,
            "filename": filename,
            "key": script.key,
            "top_level": script.top_level,
        }
        try:
            answer = self._exchange(message, lang, limits, budget_ms=limits.compile_timeout_ms)
        except ScriptRuntimeError as exc:
            raise ScriptCompileError(
                [Problem(filename, exc.line, None, exc.message)], language=lang.value
            ) from exc
        except ScriptLimitError as exc:
            raise ScriptCompileError(
                [Problem(filename, None, None, f"while loading: {exc.message}")],
                language=lang.value,
            ) from exc
        if not answer["ok"]:
            raise ScriptCompileError(
                [_problem(filename, p) for p in answer.get("problems", [])], language=lang.value
            )
        functions = [f for f in answer["functions"] if isinstance(f, str)]
        if tool:
            problems = check_tool_entry(functions, filename=filename)
            functions = [f for f in functions if f == TOOL_ENTRY]
        else:
            functions = [f for f in functions if f != TOOL_ENTRY]
            problems = check_functions(functions, source, filename=filename, language=lang)
        if problems:
            raise ScriptCompileError(problems, language=lang.value)
        return CompiledScript(lang, filename, source, frozenset(functions), key=script.key)

    def expect_scripts(self, n: int) -> None:
        """Tell the workers how many scripts are loaded: each keeps a prepared context for
        ``n`` of them (sent with the next request each worker gets)."""
        self._contexts = max(0, n)

    def hold(self, script: CompiledScript) -> None:
        """A loaded hook will call ``script`` (keyed for its agent): workers size their prepared
        JavaScript contexts to the scripts held, at least ``MIN_CONTEXTS`` and at most
        ``max_contexts`` (engine.yaml ``scripts.max_contexts``; a warning is logged beyond it)."""
        self._count(script, 1)

    def release(self, script: CompiledScript) -> None:
        """The hook that held ``script`` was closed (a reload replaced it)."""
        self._count(script, -1)

    def _count(self, script: CompiledScript, step: int) -> None:
        if script.language is not Language.JAVASCRIPT:
            return
        with self._held_lock:
            self._held[script.key] += step
            if self._held[script.key] <= 0:
                del self._held[script.key]
            capacity, warning = context_capacity(len(self._held), cap=self.max_contexts)
            warn, self._warned = warning is not None and not self._warned, warning is not None
        if warn:
            log.warning("%s", warning)
        self.expect_scripts(min(max(capacity, MIN_CONTEXTS), self.max_contexts))

    def call(
        self,
        script: CompiledScript,
        function: str,
        event: dict[str, Any],
        *,
        config: dict[str, Any],
        state: dict[str, Any],
        limits: Limits | None = None,
        owner: str | None = None,
    ) -> CallResult:
        """Run ``function(event, host)`` of a compiled script in fresh interpreter state.

        ``owner`` names the hook for the pool's fairness rules (its share of the workers, its
        kill count and quarantine); default: the script's key.

        Raises:
            ScriptRuntimeError: cause 'error' (the script raised or misused host) or
                'invalid_result' (its return is not None/a plain JSON object within the caps).
            ScriptLimitError: cause 'timeout', 'memory', 'crashed' (its worker died), 'busy'
                (no worker came free within the call's time) or 'quarantined' (the hook kept
                killing workers; it stays so until rebuilt).
        """
        (result,) = self.call_batch(
            function.removeprefix("on_"),
            event,
            [_single(script, function, config, state, limits or self.limits, owner)],
        )
        if isinstance(result, ScriptError):
            raise result
        return result

    def call_batch(
        self, point: str, event: dict[str, Any], calls: Sequence[BatchCall]
    ) -> list[CallResult | ScriptError]:
        """Run script calls one after another on one worker, each on the event as changed by
        the answers before it (``effects.apply_raw``; not by calls with ``apply=False``).

        ``results[i]`` belongs to ``calls[i]``. The list is shorter than ``calls`` when the
        batch ended early: after an error, or an answer that ends the chain or cannot be
        applied without the host's checks; the caller decides about the rest. Each call keeps
        its own limits and deadline (from the answer before it), and each error is the one
        ``call`` raises for that call: a timeout kills the worker and counts against that
        call's owner; a quarantined or busy owner's error takes the place of its call.
        """
        batch = Batch(point, event, calls)
        while not batch.finished:
            exchange = self._open(batch, self._take(batch))
            if exchange is None:
                continue
            try:
                if exchange.data:
                    exchange.worker.send(exchange.data)
                    exchange.sent()
                while exchange.expecting:
                    exchange.answered(exchange.worker.read_answer(exchange.deadline, exchange.cap))
            except WorkerDied as exc:
                exchange.died(exc)
            finally:
                exchange.finish()
        return batch.results

    async def acall_batch(
        self, point: str, event: dict[str, Any], calls: Sequence[BatchCall]
    ) -> list[CallResult | ScriptError]:
        """``call_batch`` on the running event loop: waiting for a worker and for each answer
        never blocks the loop (no thread). A task cancelled while its worker runs leaves the
        worker to a background task that reads the remaining answers and gives it back (killed
        if they do not come in time), so no worker is lost and no answer is left in a pipe."""
        import asyncio

        batch = Batch(point, event, calls)
        while not batch.finished:
            call = batch.next
            try:
                worker = await self._workers.atake(call.owner, timeout_s=_wait_s(call))
            except ScriptLimitError as exc:
                batch.fail(exc)
                continue
            exchange = self._open(batch, worker)
            if exchange is None:
                continue
            draining = handed = False
            try:
                if exchange.data:
                    exchange.worker.send(exchange.data)
                    exchange.sent()
                await _areceive(exchange)
            except WorkerDied as exc:
                exchange.died(exc)
            except asyncio.CancelledError:
                draining = self._drain(exchange)
                raise
            finally:
                if not draining:
                    handed = exchange.finish()
            if handed:  # the task handed our worker sends its request while we go on
                await asyncio.sleep(0)
        return batch.results

    def _take(self, batch: Batch) -> Worker | None:
        call = batch.next
        try:
            return self._workers.take(call.owner, timeout_s=_wait_s(call))
        except ScriptLimitError as exc:
            batch.fail(exc)
            return None

    def _open(self, batch: Batch, worker: Worker | None) -> Exchange | None:
        if worker is None:
            return None
        try:
            return Exchange(
                batch, worker, self._workers, configs=self._configs, contexts=self._contexts
            )
        except BaseException:
            self._workers.give_back(worker, healthy=True, owner=batch.next.owner)
            raise

    def _drain(self, exchange: Exchange) -> bool:
        """Read a cancelled exchange's remaining answers in a task of their own."""
        if not exchange.expecting:
            return False
        import asyncio

        async def drain() -> None:
            try:
                await _areceive(exchange)
            except WorkerDied as exc:
                exchange.died(exc)
            except asyncio.CancelledError:
                exchange.abandon()
                raise
            finally:
                exchange.finish()

        task = asyncio.get_running_loop().create_task(drain())
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)
        return True

    def _exchange(
        self,
        message: dict[str, Any],
        language: Language,
        limits: Limits,
        *,
        budget_ms: int,
    ) -> dict[str, Any]:
        """One compile request on one worker; worker failures become ScriptLimitError, bad
        answers too. It waits at most one budget plus the grace for a worker, and runs for at
        most twice the budget plus the grace."""
        message["limits_key"] = limits.key
        message["limits"] = {limits.key: limits.as_wire()}
        try:
            data = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError) as exc:
            raise ScriptRuntimeError(f"not JSON: {exc}", language=language.value) from exc
        worker = self._workers.take(None, timeout_s=budget_ms / 1000 + GRACE_S)
        healthy = False
        try:
            answer = worker.request(
                data + b"\n",
                deadline_s=2 * budget_ms / 1000 + GRACE_S,
                max_bytes=answer_cap(limits),
            )
            healthy = not answer.get("recycle") and answer.get("kind") != "crashed"
            if healthy:
                worker.known.add(limits.key)
        except WorkerDied as exc:
            if exc.timed_out:
                raise ScriptLimitError(
                    f"did not finish within {budget_ms} ms; its worker was stopped",
                    language=language.value,
                    cause="timeout",
                ) from exc
            raise ScriptLimitError(
                f"the script's worker died: {exc}", language=language.value, cause="crashed"
            ) from exc
        finally:
            self._workers.give_back(worker, healthy=healthy)
        if answer.get("kind") != "compile":
            failure = failure_of(answer, language)
            if failure is not None:
                raise failure
        return answer


async def _areceive(exchange: Exchange) -> None:
    while exchange.expecting:
        exchange.answered(await exchange.worker.aread_answer(exchange.deadline, exchange.cap))


def _wait_s(call: BatchCall) -> float:
    """How long a call waits for a worker: its budget plus the grace (then it is 'busy')."""
    return call.limits.timeout_ms / 1000 + GRACE_S


def _single(
    script: CompiledScript,
    function: str,
    config: dict[str, Any],
    state: dict[str, Any],
    limits: Limits,
    owner: str | None,
) -> BatchCall:
    """A ``call`` as a batch of one; its config keyed by content (it comes without a key)."""
    return BatchCall(
        script=script,
        function=function,
        config=config,
        config_key=config_key(config),
        state=state,
        limits=limits,
        owner=owner or script.key,
    )


def check_functions(
    functions: list[str], source: str, *, filename: str, language: Language
) -> list[Problem]:
    """Problems with the script's on_<name> functions: misspelt points, or none at all."""
    problems = []
    for name in sorted(functions):
        if name[3:] in _POINTS:
            continue
        close = suggest(name[3:], _POINTS)
        line, column = _definition(source, name, language)
        problems.append(
            Problem(
                filename,
                line,
                None,
                f"{name} is not a point function",
                hint=f"did you mean 'on_{close}'?" if close else None,
                column=column,
            )
        )
    if not problems and not functions:
        problems.append(
            Problem(
                filename,
                1,
                None,
                "the script defines no on_<point> function",
                hint="e.g. on_tool_call(event, host)",
                column=1,
            )
        )
    return problems


def check_tool_entry(functions: list[str], *, filename: str) -> list[Problem]:
    """A tool script defines ``run(input, host)``."""
    if TOOL_ENTRY in functions:
        return []
    hint = "def run(input, host): ... / function run(input, host) { ... }"
    return [Problem(filename, 1, None, "the script defines no run(input, host) function", hint)]


def _definition(source: str, name: str, language: Language) -> tuple[int | None, int | None]:
    keyword = "def" if language is Language.PYTHON else "function"
    m = re.search(rf"^(.*?\b){keyword}\s+{re.escape(name)}\b", source, re.MULTILINE)
    if m is None:
        return None, None
    return source.count("\n", 0, m.start()) + 1, len(m.group(1)) + 1


def _problem(filename: str, raw: Any) -> Problem:
    raw = raw if isinstance(raw, dict) else {}
    return Problem(
        filename,
        _int(raw.get("line")),
        None,
        str(raw.get("message", "invalid script")),
        column=_int(raw.get("column")),
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None
