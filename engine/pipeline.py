"""One point's evaluation: order the hooks, call them, apply the error policy, merge, record.

Order: the agent's hooks in declared order, then the host layer (``config/hooks/``), which has
the last word. Each hook sees the event as changed by the hooks before it. A pipeline is an
immutable snapshot: a reload builds a new one, an evaluation in flight keeps the one it took.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from engine.changes import EMPTY, Change, apply, join_answer, merge, parse_change
from engine.config.models import RecordsSettings
from engine.errors import InputError, PluginError, ScriptError, StoreError
from engine.kinds.base import Hook, HookContext, Memo, Mode, OnError
from engine.outcome import Outcome
from engine.points import Point, Scope
from engine.store import Record, Store
from engine.store.records import HookRun

log = logging.getLogger("engine.pipeline")

WITHHELD_ANSWER = "Sorry, this answer was withheld because a required check failed."


@dataclass(frozen=True)
class Slot:
    """A hook in a pipeline, with the layer it belongs to."""

    hook: Hook
    layer: str = "agent"


@dataclass(frozen=True)
class Pipeline:
    """An agent's hooks, ready to evaluate; immutable, swapped whole on reload."""

    agent: str
    slots: tuple[Slot, ...]
    generation: int = 0
    records: RecordsSettings = field(default_factory=RecordsSettings)
    by_point: Mapping[Point, tuple[Slot, ...]] = field(init=False)

    def __post_init__(self) -> None:
        table = {p: tuple(s for s in self.slots if p in s.hook.points) for p in Point}
        object.__setattr__(self, "by_point", table)

    def close(self) -> None:
        for slot in self.slots:
            slot.hook.close()


@dataclass
class Services:
    """What an evaluation needs besides the pipeline (shared by all pipelines of an engine)."""

    store: Store
    memo_for: Callable[[str, str], Memo]
    submit: Callable[[Record, list[str]], None] | None = None
    """Hands a finished record to the writer; None: records are not written."""


class _Failure(Exception):
    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


def evaluate(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    services: Services,
    *,
    replay: Mapping[str, Mapping[str, Any]] | None = None,
) -> Outcome:
    """Run ``point``'s hooks over ``event`` and return the merged outcome (and record it).

    Never raises for a hook's failure: the error policy turns it into an outcome.
    """
    scope = Scope.model_validate(event.get("scope") or {})
    merged, seen = EMPTY, event
    runs: list[HookRun] = []
    out_events: list[dict[str, Any]] = []
    shadow: list[dict[str, Any]] = []
    failed: list[str] = []
    refusal: tuple[str, Change] | None = None
    for slot in pipeline.by_point[point]:
        hook = slot.hook
        if merged.block is not None or refusal is not None:
            runs.append(_run_of(slot, "skipped", 0.0))
            continue
        ctx = HookContext(
            pipeline.agent,
            scope,
            services.store,
            services.memo_for(pipeline.agent, hook.name),
            replay=None if replay is None else replay.get(hook.name, {}),
        )
        started = time.perf_counter()
        try:
            change = _call(hook, point, seen, ctx)
            error = None
        except _Failure as exc:
            change, error = EMPTY, exc
        elapsed = (time.perf_counter() - started) * 1000
        run = _run_of(slot, "decided" if error is None else "failed", elapsed, ctx)
        runs.append(run)
        if error is not None:
            run.error, run.cause = str(error), error.cause
            if hook.mode is Mode.SHADOW:
                shadow.append({"hook": hook.name, "error": str(error)})
                continue
            failed.append(hook.name)
            log.warning("hook %s failed at %s: %s", hook.name, point, error)
            refusal = _refusal(point, hook, error)
            continue
        run.change = change.as_data() or None
        out_events += ctx.events
        if hook.mode is Mode.SHADOW:
            if not change.is_empty():
                shadow.append({"hook": hook.name, "change": change.as_data()})
            continue
        merged = merge(point, merged, change)
        seen = apply(point, seen, change)
    if refusal is not None:
        merged = merge(point, merged, refusal[1])
    outcome = _outcome(pipeline, point, event, seen, merged, runs)
    outcome.events, outcome.shadow, outcome.failed = out_events, shadow, failed
    if services.submit is not None and pipeline.records.enabled:
        services.submit(_record(pipeline, point, event, scope, outcome), _mask(pipeline))
    return outcome


def _call(hook: Hook, point: Point, event: dict[str, Any], ctx: HookContext) -> Change:
    try:
        data = hook.run(point, event, ctx)
        return parse_change(point, data, hook=hook.name, event=event)
    except ScriptError as exc:
        raise _Failure(f"{type(exc).__name__}: {exc}", exc.cause) from exc
    except PluginError as exc:
        raise _Failure(f"PluginError: {exc}", "plugin") from exc
    except StoreError as exc:
        raise _Failure(f"StoreError: {exc}", "store") from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _Failure(f"{type(exc).__name__}: {exc}", "error") from exc


def _refusal(point: Point, hook: Hook, error: _Failure) -> tuple[str, Change] | None:
    """The change a failure makes at ``point`` (None: the hook is neutral)."""
    if point is Point.TOOL_CALL:
        return hook.name, fail_closed(
            point, f"a required check failed: hook {hook.name!r} ({error.cause})"
        )
    if point.hears_only or hook.on_error is OnError.IGNORE:
        return None
    return hook.name, fail_closed(point, f"refused: the check {hook.name!r} failed ({error.cause})")


def fail_closed(point: Point, reason: str) -> Change:
    """What a failure that must not let data through does at ``point``: the tool is not run,
    the result or answer is withheld, a before-point's turn is refused; nothing at the points
    that only hear."""
    if point is Point.TOOL_CALL:
        return Change(block=f"{reason}; the tool was not run")
    if point.hears_only:
        return EMPTY
    if point is Point.TOOL_RESULT:
        return Change(block=reason, result=f"[result withheld: {reason}]")
    if point is Point.BEFORE_ASSISTANT_MESSAGE:
        return Change(block=reason, answer=WITHHELD_ANSWER)
    return Change(block=reason)


REFUSED_PREFIX = "the event is not valid input: "
"""How ``out.input_error`` of a refused event begins; the boundary's problems follow."""


def refuse_event(
    pipeline: Pipeline, point: Point, error: InputError, services: Services
) -> Outcome:
    """The outcome of an event the boundary refused (engine/boundary.py): no hook runs, the
    point fails closed (``fail_closed``) naming the cause, and the refusal is recorded with
    the event as marked by the boundary. Never raises."""
    cause = f"{REFUSED_PREFIX}{error}"
    log.warning("agent %s at %s: %s", pipeline.agent, point, cause)
    event = error.event
    runs = [_run_of(slot, "skipped", 0.0) for slot in pipeline.by_point[point]]
    outcome = _outcome(pipeline, point, event, {}, fail_closed(point, f"refused: {cause}"), runs)
    outcome.input_error = cause
    if services.submit is not None and pipeline.records.enabled:
        try:
            scope = Scope.model_validate(event.get("scope") or {})
        except ValidationError:
            scope = Scope()
        services.submit(_record(pipeline, point, event, scope, outcome), _mask(pipeline))
    return outcome


def _run_of(slot: Slot, status: str, elapsed: float, ctx: HookContext | None = None) -> HookRun:
    hook = slot.hook
    return HookRun(
        hook.name,
        hook.kind,
        hook.version,
        hook.mode.value,
        slot.layer,
        status,
        round(elapsed, 4),
        logs=ctx.logs if ctx else [],
        extras=ctx.extras if ctx else {},
    )


def _outcome(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    seen: dict[str, Any],
    merged: Change,
    runs: list[HookRun],
) -> Outcome:
    out = Outcome(
        point=point.value,
        agent=pipeline.agent,
        id=os.urandom(16).hex(),
        turn_id=event.get("turn_id"),
        hooks=runs,
        generation=pipeline.generation,
    )
    out.blocked = merged.block is not None
    out.reason = merged.block
    out.notices = list(merged.notice)
    out.changed = not merged.is_empty()
    if point is Point.BEFORE_USER_MESSAGE:
        out.question, out.answer = seen.get("question"), merged.answer
        out.messages = list(merged.messages or [])
    elif point is Point.BEFORE_CALL:
        out.instruction, out.sections = seen.get("instruction"), list(merged.sections)
        out.messages, out.tools = seen.get("messages", []), seen.get("tools")
        out.settings = seen.get("settings")
    elif point is Point.TOOL_CALL:
        out.input = seen.get("input")
    elif point is Point.TOOL_RESULT:
        out.result = merged.result if merged.result is not None else seen.get("result")
    elif point is Point.BEFORE_ASSISTANT_MESSAGE:
        base = merged.answer if merged.answer is not None else event["answer"]
        out.answer, out.appended = join_answer(base, merged.append), list(merged.append)
    return out


def _record(
    pipeline: Pipeline, point: Point, event: dict[str, Any], scope: Scope, outcome: Outcome
) -> Record:
    data = outcome.decision()
    data.update(events=outcome.events, shadow=outcome.shadow, failed=outcome.failed)
    if outcome.input_error is not None:
        data["input_error"] = outcome.input_error
    return Record.model_construct(
        id=outcome.id,
        time=event.get("time") or "",
        agent=pipeline.agent,
        point=point.value,
        scope=scope.model_dump(),
        scope_key=scope.key(),
        event=event,
        hooks=outcome.hooks,
        outcome=data,
        generation=pipeline.generation,
    )


def _mask(pipeline: Pipeline) -> list[str]:
    paths: list[str] = []
    for path in pipeline.records.mask:
        paths.append(path)
        if path.startswith("event."):
            rest = path.removeprefix("event.")
            paths += [f"outcome.{rest}", f"hooks.change.{rest}"]
    return paths
