"""Script hooks of a point in batches: consecutive script hooks go to a worker in one round
trip, and the host settles each answer as if the hook had run alone (engine/pipeline.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.changes import Change
from engine.kinds.base import HookContext

if TYPE_CHECKING:
    from engine.pipeline import Failure, Run, Slot, Step


@dataclass(slots=True)
class Batch:
    """A step of an evaluation: run these script calls in one worker round trip.

    ``runner`` (the first hook of the batch) sends them: ``send_batch`` for the sync driver,
    ``asend_batch`` for the async one. The answer is the list of results (possibly shorter
    than ``calls``: see engine/sandbox/workerpool.py ``call_batch``), or the exception the
    send raised."""

    runner: Any
    point: str
    event: dict[str, Any]
    calls: list[Any]


@dataclass(slots=True)
class Blocking:
    """A step of an evaluation that may wait on I/O: a built-in hook that waits on a store
    or an LLM, or a script hook's state and entries loaded from or saved to the store
    (``script_hooks``). ``run()`` never raises; the sync driver calls it in place, the async
    driver in a thread, off the event loop. The generator is sent what it returns."""

    run: Callable[[], Any]


@dataclass(slots=True)
class _Prepared:
    """A script hook's call, ready to go in a batch."""

    slot: Slot
    ctx: HookContext
    call: Any
    ms: float
    """Host time spent on it so far (state load, the call's making)."""


def script_hooks(run: Run, slots: tuple[Slot, ...]) -> Generator[Step, Any, None]:
    """Run consecutive script hooks in as few batches as the answers allow.

    The worker applies each raw answer for the next call (engine/sandbox/effects.py); the
    host checks each answer. Where the host's event differs from the worker's (an answer
    refused or normalised by the check, a failure the error policy lets pass), or where the
    worker stopped (a block, an error) and the chain goes on, the rest goes again as a new
    batch with the host's event.

    What may wait on the store goes as a ``Blocking`` step, which the async driver runs in a
    thread, not on the host's event loop: loading state or entries from a server
    (PostgreSQL: a read on SQLite's local file in WAL mode does not wait), and saving what a
    call wrote (any store: SQLite's write lock may be held by another process for its busy
    timeout). The sync driver runs it in place, as before."""
    left = list(slots)
    while left and not run.stopped:
        if _reads_wait(run, left):
            prepared, failed = yield Blocking(partial(_prepare, run, left))
        else:
            prepared, failed = _prepare(run, left)
        if prepared:
            started = time.perf_counter()
            answer = yield Batch(
                prepared[0].slot.hook, run.name, run.seen, [p.call for p in prepared]
            )
            trip_ms = (time.perf_counter() - started) * 1000
            if _writes(answer):
                done = yield Blocking(partial(_take_results, run, prepared, answer, trip_ms))
            else:
                done = _take_results(run, prepared, answer, trip_ms)
            left = left[done:]
            if done < len(prepared):
                continue
        if failed is not None and not run.stopped:  # its state could not be loaded
            run.settle(left[0], failed[0], failed[1], failed[2])
            left = left[1:]
    for slot in left:
        run.skip(slot)


def _reads_wait(run: Run, slots: list[Slot]) -> bool:
    """Whether preparing ``slots`` may wait on a store server: one of them loads state or
    entries, and the store is not SQLite (whose reads in WAL mode wait on no writer)."""
    loads = any(
        getattr(slot.hook, "uses_state", False) or getattr(slot.hook, "uses_entries", False)
        for slot in slots
    )
    return loads and not getattr(run.services.store, "is_sqlite", False)


def _writes(answer: Any) -> bool:
    """Whether settling a batch's ``answer`` writes to the store (state, entries)."""
    if isinstance(answer, BaseException) or not answer:
        return False
    return any(
        getattr(result, "state_writes", None) or getattr(result, "entries_added", None)
        for result in answer
    )


def _prepare(
    run: Run, slots: list[Slot]
) -> tuple[list[_Prepared], tuple[HookContext, Failure, float] | None]:
    """The calls of ``slots`` up to the first that cannot be made (and that one's failure)."""
    prepared: list[_Prepared] = []
    for slot in slots:
        ctx = run.context(slot.hook)
        started = time.perf_counter()
        try:
            call = slot.hook.prepare_call(run.point, run.seen, ctx)  # type: ignore[attr-defined]
        except BaseException as exc:  # the error policy decides, as for any hook
            if isinstance(exc, KeyboardInterrupt):
                raise
            return prepared, (ctx, run.failure(exc), (time.perf_counter() - started) * 1000)
        prepared.append(_Prepared(slot, ctx, call, (time.perf_counter() - started) * 1000))
    return prepared, None


def _take_results(run: Run, prepared: list[_Prepared], answer: Any, trip_ms: float) -> int:
    """Settle the hooks a batch answered, in order; return how many it settled.

    Stops early where the worker's event (the raw answers applied) is no longer the host's:
    the caller sends the rest again. A hook's time is the host's own work for it plus the
    worker's ``duration_ms``, plus an equal share of the rest of the round trip (encoding,
    the pipe, wake-ups); a batch that ended in an error gives that rest to the failed call.
    """
    if isinstance(answer, BaseException) or not answer:
        failure = run.failure(answer if isinstance(answer, BaseException) else _NoAnswer())
        first = prepared[0]
        run.settle(first.slot, first.ctx, failure, first.ms + trip_ms)
        return 1
    failed = isinstance(answer[-1], BaseException)
    worked = [getattr(r, "duration_ms", 0.0) for r in (answer[:-1] if failed else answer)]
    rest = max(trip_ms - sum(worked), 0.0)
    share = 0.0 if failed else rest / len(answer)
    view: dict[str, Any] | None = run.seen
    for n, result in enumerate(answer):
        if run.stopped or (view is not run.seen and view != run.seen):
            return n
        item = prepared[n]
        started = time.perf_counter()
        change = _finished(run, item, result)
        own = (time.perf_counter() - started) * 1000 + item.ms
        run.settle(
            item.slot, item.ctx, change, own + (worked[n] + share if n < len(worked) else rest)
        )
        if isinstance(result, BaseException):  # only the last may be: nothing ran after it
            return n + 1
        if n + 1 < len(answer) and item.call.apply and view is not None:  # the next one's
            view = _apply_raw()(run.name, view, result.value)
    return len(answer)


_APPLY_RAW: list[Callable[[str, dict[str, Any], Any], dict[str, Any] | None]] = []


def _apply_raw() -> Callable[[str, dict[str, Any], Any], dict[str, Any] | None]:
    """engine/sandbox/effects.py ``apply_raw``, imported on first use: an engine without
    script hooks never loads the sandbox."""
    if not _APPLY_RAW:
        from engine.sandbox.effects import apply_raw

        _APPLY_RAW.append(apply_raw)
    return _APPLY_RAW[0]


class _NoAnswer(Exception):
    def __init__(self) -> None:
        super().__init__("the worker answered no result for the batch")


def _finished(run: Run, item: _Prepared, result: Any) -> Change | Failure:
    try:
        return item.slot.hook.finish_call(run.point, run.seen, item.ctx, result)  # type: ignore[attr-defined]
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return run.failure(exc)
