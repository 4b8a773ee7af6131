"""One point's evaluation: order the hooks, call them, apply the error policy, merge, record.

Order: the agent's hooks in declared order, then a session's own hooks when it has some
(engine/session.py), then the host layer (``config/hooks/``), which has the last word; at
``tool_call`` the hooks that ask a person (``runs_last``: kind approval) come after all of
them, so a person is asked about the input every policy left, and never about a call a policy
blocks. Each hook sees the event as changed by the hooks before it. A pipeline is an immutable
snapshot: a reload builds a new one, an evaluation in flight keeps the one it took.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from pydantic import ValidationError

from engine.batches import Batch, Blocking, script_hooks
from engine.changes import EMPTY, Change, Merger, apply, join_answer, merge, parse_change
from engine.config.models import RecordsSettings
from engine.errors import InputError, PluginError, ScriptError, StoreError
from engine.hosts import HostProfile, input_block_reason, unsupported_entry
from engine.kinds.base import Hook, HookContext, Memo, Mode, OnError
from engine.masking import MASK, masked_values
from engine.outcome import Outcome
from engine.points import Point, Scope, scope_of
from engine.records import Draft
from engine.store import Store
from engine.store.records import HookRun

log = logging.getLogger("engine.pipeline")

# Enum members as module constants: ``Point.TOOL_CALL`` is a look-up through the enum's
# metaclass, several times per hook on every evaluation's path.
_SHADOW = Mode.SHADOW
_BEFORE_USER_MESSAGE, _BEFORE_CALL = Point.BEFORE_USER_MESSAGE, Point.BEFORE_CALL
_TOOL_CALL, _TOOL_RESULT = Point.TOOL_CALL, Point.TOOL_RESULT
_BEFORE_ASSISTANT_MESSAGE = Point.BEFORE_ASSISTANT_MESSAGE

WITHHELD_ANSWER = "Sorry, this answer was withheld because a required check failed."


@dataclass(frozen=True)
class Slot:
    """A hook in a pipeline, with the layer it belongs to."""

    hook: Hook
    layer: str = "agent"

    @cached_property
    def head(self) -> tuple[str, str, str, str, str]:
        """The first fields of the hook's ``HookRun``: name, kind, version, mode, layer (the
        mode as plain text: records hold plain JSON)."""
        hook = self.hook
        return hook.name, hook.kind, hook.version, str(hook.mode), self.layer


@dataclass(frozen=True)
class Pipeline:
    """An agent's hooks, ready to evaluate; immutable, swapped whole on reload."""

    agent: str
    slots: tuple[Slot, ...]
    generation: int = 0
    records: RecordsSettings = field(default_factory=RecordsSettings)
    session: Mapping[str, Any] | None = None
    """A session's pipeline (engine/session.py): ``{hooks, drop_agent_hooks}``, which its
    outcomes and records carry so that replay runs the same layers; None: the agent's."""
    by_point: Mapping[Point, tuple[Slot, ...]] = field(init=False)
    runs_as: Mapping[Point, tuple[int, ...]] = field(init=False)
    """Per point, per slot: how the hook runs (``INLINE``, ``BLOCKING`` or ``BATCHED``)."""

    def __post_init__(self) -> None:
        table = {p: _ordered(p, [s for s in self.slots if p in s.hook.points]) for p in Point}
        object.__setattr__(self, "by_point", table)
        runs_as = {p: tuple(_runs_as(s.hook) for s in slots) for p, slots in table.items()}
        object.__setattr__(self, "runs_as", runs_as)

    def close(self) -> None:
        for slot in self.slots:
            slot.hook.close()


def _ordered(point: Point, slots: list[Slot]) -> tuple[Slot, ...]:
    """A point's slots in running order: declared order, but at ``tool_call`` the hooks
    that ask a person (``runs_last``) after every other, in their own declared order."""
    if point is not Point.TOOL_CALL:
        return tuple(slots)
    last = [s for s in slots if getattr(s.hook, "runs_last", False)]
    return tuple([s for s in slots if s not in last] + last)


INLINE, BLOCKING, BATCHED = 0, 1, 2
"""How a hook runs: called in place; in a thread under the async driver (``blocks``: it may
wait on I/O); in script batches (``prepare_call``, engine/kinds/script_hook.py)."""


def _runs_as(hook: Hook) -> int:
    if callable(getattr(hook, "prepare_call", None)):
        return BATCHED
    return BLOCKING if getattr(hook, "blocks", False) else INLINE


@dataclass
class Services:
    """What an evaluation needs besides the pipeline (shared by all pipelines of an engine)."""

    store: Store
    memo_for: Callable[[str, str], Memo]
    submit: Callable[[Draft, list[str]], None] | None = None
    """Hands a record's raw parts to the writer, which builds it (engine/records.py);
    None: records are not written."""
    memos: dict[tuple[str, str], Memo] = field(default_factory=dict, repr=False)
    """``memo_for``'s answers, kept: a hook's memo is the same for the engine's life."""

    def memo(self, agent: str, hook: str) -> Memo:
        """The memo of ``hook`` in ``agent`` (``memo_for``, asked once per pair)."""
        memo = self.memos.get((agent, hook))
        if memo is None:
            memo = self.memos.setdefault((agent, hook), self.memo_for(agent, hook))
        return memo


class Failure(Exception):
    """A hook's failure as the pipeline records it: the message and its cause."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


Step = Batch | Blocking


def evaluate(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    services: Services,
    *,
    replay: Mapping[str, Mapping[str, Any]] | None = None,
    host: HostProfile | None = None,
    started: float | None = None,
) -> Outcome:
    """Run ``point``'s hooks over ``event`` and return the merged outcome (and record it).

    ``host``: the host that applies the outcome (engine/hosts.py; None: the native host,
    which applies every change). ``started``: the ``time.perf_counter()`` the evaluation
    began at (default: now), from which ``outcome.duration_ms`` counts.

    Never raises for a hook's failure: the error policy turns it into an outcome.
    """
    core = _evaluation(pipeline, point, event, services, Extra(replay, host, started))
    answer: Any = None
    try:
        while True:
            step = core.send(answer)
            answer = step.run() if isinstance(step, Blocking) else _sent(step)
    except StopIteration as done:
        return done.value


async def aevaluate(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    services: Services,
    *,
    replay: Mapping[str, Mapping[str, Any]] | None = None,
    host: HostProfile | None = None,
    started: float | None = None,
) -> Outcome:
    """``evaluate`` on the running event loop: script batches are awaited there (no thread);
    only what may wait on I/O (``Blocking``: memory, faq_cache, a script hook's state or
    entries on a store server, a state write) runs in a thread."""
    core = _evaluation(pipeline, point, event, services, Extra(replay, host, started))
    answer: Any = None
    try:
        while True:
            step = core.send(answer)
            if isinstance(step, Blocking):
                import asyncio

                answer = await asyncio.to_thread(step.run)
                continue
            try:
                answer = await step.runner.asend_batch(step.point, step.event, step.calls)
            except Exception as exc:  # noqa: BLE001 - the core fails the batch's hook
                answer = exc
    except StopIteration as done:
        return done.value


def _sent(step: Batch) -> Any:
    try:
        return step.runner.send_batch(step.point, step.event, step.calls)
    except Exception as exc:  # noqa: BLE001 - the core fails the batch's hook
        return exc


@dataclass(slots=True)
class Extra:
    """An evaluation's options besides its event: recorded judge answers to replay, the host
    that applies the outcome (None: native), when it began (``time.perf_counter()``).
    Not frozen: it is made on every evaluation, and a frozen dataclass sets each field
    through ``object.__setattr__``; nothing changes it once made."""

    replay: Mapping[str, Mapping[str, Any]] | None = None
    host: HostProfile | None = None
    started: float | None = None


class Run:
    """One evaluation in progress: the changes folded so far, and what each hook did."""

    __slots__ = (
        "approval",
        "event",
        "failed",
        "host",
        "merger",
        "name",
        "out_events",
        "pipeline",
        "point",
        "refusal",
        "replay",
        "runs",
        "scope",
        "seen",
        "services",
        "shadow",
        "started",
        "stopped",
        "unsupported",
    )

    def __init__(
        self,
        pipeline: Pipeline,
        point: Point,
        event: dict[str, Any],
        services: Services,
        extra: Extra,
    ) -> None:
        self.started = time.perf_counter() if extra.started is None else extra.started
        self.pipeline, self.point, self.event = pipeline, point, event
        self.name = str(point)  # the plain text (``.value`` is a descriptor call)
        self.services, self.replay, self.host = services, extra.replay, extra.host
        self.unsupported: list[dict[str, str]] = []
        """Change fields of enforced hooks the host cannot apply (engine/hosts.py)."""
        self.scope = scope_of(event.get("scope"))
        self.merger, self.seen = Merger(point), event
        self.runs: list[HookRun] = []
        self.out_events: list[dict[str, Any]] = []
        self.shadow: list[dict[str, Any]] = []
        self.failed: list[str] = []
        self.refusal: tuple[str, Change] | None = None
        self.approval: dict[str, Any] | None = None
        """The question a hook asked a person, when its block is the one that stands."""
        self.stopped = False
        """A block or a refusal ended the chain: the hooks left are skipped."""

    def context(self, hook: Hook) -> HookContext:
        replay = self.replay
        return HookContext(
            self.pipeline.agent,
            self.scope,
            self.services.store,
            self.services.memo(self.pipeline.agent, hook.name),
            replay=None if replay is None else replay.get(hook.name, {}),
        )

    @staticmethod
    def failure(exc: BaseException) -> Failure:
        return _failure(exc)

    def skip(self, slot: Slot) -> None:
        self.runs.append(_run_of(slot, "skipped", 0.0))

    def settle(
        self, slot: Slot, ctx: HookContext, answer: Change | Failure, elapsed: float
    ) -> None:
        """Take one hook's change (or failure) into the evaluation, by the error policy."""
        hook = slot.hook
        if isinstance(answer, Failure):
            run = _run_of(slot, "failed", elapsed, ctx)
            self.runs.append(run)
            run.error, run.cause = str(answer), answer.cause
            if hook.mode is _SHADOW:
                self.shadow.append({"hook": hook.name, "error": str(answer)})
                return
            self.failed.append(hook.name)
            said = _masked_text(str(answer), self.event, self.pipeline.records.mask)
            log.warning("hook %s failed at %s: %s", hook.name, self.point, said)
            self.refusal = _refusal(self.point, hook, answer)
            self.stopped = self.refusal is not None
            return
        run = _run_of(slot, "decided", elapsed, ctx)
        self.runs.append(run)
        if ctx.events:
            self.out_events += ctx.events
        if answer is EMPTY:  # the common answer of a guard: nothing to record or fold
            return
        given = answer.given()
        data = given if [] not in given.values() else answer.as_data()
        run.change = data or None
        if hook.mode is _SHADOW:
            if data:
                self.shadow.append({"hook": hook.name, "change": dict(data)})
            return
        if self.host is not None and self.host.unsupported(self.point, given):
            answer, given = self.for_host(hook.name, answer, given)
        self.merger.add(answer, given)
        self.seen = apply(self.point, self.seen, answer, given)
        self.stopped = self.merger.block is not None
        if self.stopped and answer.block is not None:
            self.approval = _asked(ctx)

    def for_host(
        self, hook: str, answer: Change, given: dict[str, Any]
    ) -> tuple[Change, dict[str, Any]]:
        """A hook's change as the host can take it: the fields it cannot apply are noted in
        ``unsupported``; at ``tool_call`` one that is not a notice blocks the tool instead
        (the host would run it with the input the policy rewrote)."""
        assert self.host is not None
        host, bad = self.host.name, self.host.unsupported(self.point, given)
        self.unsupported += [unsupported_entry(host, hook, name, self.point) for name in bad]
        refused = [name for name in bad if name != "notice"]
        if self.point is not _TOOL_CALL or not refused:
            return answer, given
        reason = given.get("block") or input_block_reason(host, hook, refused[0])
        block = Change(block=reason)
        return block, block.given()

    def finish(self) -> Outcome:
        """The outcome (the refusal merged last), handed to the record writer too."""
        pipeline, point, merged = self.pipeline, self.point, self.merger.result()
        if self.refusal is not None:
            merged = merge(point, merged, self.refusal[1])
        outcome = _outcome(pipeline, point, self.event, self.seen, merged, self.runs, self)
        outcome.duration_ms = (time.perf_counter() - self.started) * 1000
        if self.services.submit is not None and pipeline.records.enabled:
            draft = Draft.of(outcome, self.event, self.scope, host=self.host_name)
            self.services.submit(draft, _mask(pipeline))
        return outcome

    @property
    def host_name(self) -> str:
        return "native" if self.host is None else self.host.name


def _asked(ctx: HookContext) -> dict[str, Any] | None:
    """The question a hook that blocked left in its extras (``approval`` while pending)."""
    asked = ctx.extras.get("approval")
    if not isinstance(asked, dict) or asked.get("status") != "pending":
        return None
    return {name: asked.get(name) for name in ("id", "message", "tool", "input")}


def _evaluation(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    services: Services,
    extra: Extra,
) -> Generator[Step, Any, Outcome]:
    """The evaluation of one point, written once for both drivers: it yields the steps that
    wait (script batches, hooks that may block) and is sent their answers.

    Consecutive script hooks of one pool go as one batch; a built-in hook between two
    script hooks splits it (it must see the event as the scripts before it changed it)."""
    run = Run(pipeline, point, event, services, extra)
    slots, runs_as = pipeline.by_point[point], pipeline.runs_as[point]
    i = 0
    while i < len(slots):
        how = runs_as[i]
        if run.stopped:
            run.skip(slots[i])
        elif how == INLINE:
            _built_in(run, slots[i])
        elif how == BLOCKING:
            yield from _blocking(run, slots[i])
        else:
            end = i + 1
            while end < len(slots) and runs_as[end] == BATCHED and _same_pool(slots[i], slots[end]):
                end += 1
            yield from script_hooks(run, slots[i:end])
            i = end - 1
        i += 1
    return run.finish()


def _same_pool(a: Slot, b: Slot) -> bool:
    return getattr(a.hook, "pool", None) is getattr(b.hook, "pool", None)


def _built_in(run: Run, slot: Slot) -> None:
    hook = slot.hook
    ctx = run.context(hook)
    started = time.perf_counter()
    answer = _attempt(hook, run.point, run.seen, ctx)
    run.settle(slot, ctx, answer, (time.perf_counter() - started) * 1000)


def _blocking(run: Run, slot: Slot) -> Generator[Step, Any, None]:
    hook = slot.hook
    ctx = run.context(hook)
    started = time.perf_counter()
    answer = yield Blocking(partial(_attempt, hook, run.point, run.seen, ctx))
    run.settle(slot, ctx, answer, (time.perf_counter() - started) * 1000)


def _attempt(hook: Hook, point: Point, event: dict[str, Any], ctx: HookContext) -> Change | Failure:
    """The hook's checked change, or its failure; never raises (but KeyboardInterrupt)."""
    try:
        return parse_change(point, hook.run(point, event, ctx), hook=hook.name, event=event)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return _failure(exc)


def _failure(exc: BaseException) -> Failure:
    """A hook's exception as the pipeline records it (the exception kept as its cause)."""
    if isinstance(exc, ScriptError):
        failure = Failure(f"{type(exc).__name__}: {exc}", exc.cause)
    elif isinstance(exc, PluginError):
        failure = Failure(f"PluginError: {exc}", "plugin")
    elif isinstance(exc, StoreError):
        failure = Failure(f"StoreError: {exc}", "store")
    else:
        failure = Failure(f"{type(exc).__name__}: {exc}", "error")
    failure.__cause__ = exc
    return failure


def _refusal(point: Point, hook: Hook, error: Failure) -> tuple[str, Change] | None:
    """The change a failure makes at ``point`` (None: the hook is neutral)."""
    if point is _TOOL_CALL:
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
    pipeline: Pipeline,
    point: Point,
    error: InputError,
    services: Services,
    *,
    host: HostProfile | None = None,
    started: float | None = None,
) -> Outcome:
    """The outcome of an event the boundary refused (engine/boundary.py): no hook runs, the
    point fails closed (``fail_closed``) naming the cause, and the refusal is recorded with
    the event as marked by the boundary. Never raises."""
    cause = f"{REFUSED_PREFIX}{error}"
    log.warning("agent %s at %s: %s", pipeline.agent, point, cause)
    event = error.event
    runs = [_run_of(slot, "skipped", 0.0) for slot in pipeline.by_point[point]]
    said = f"refused: {REFUSED_PREFIX}{'; '.join(error.brief)}"  # to the model: no data's keys
    outcome = _outcome(pipeline, point, event, {}, fail_closed(point, said), runs)
    outcome.input_error = cause
    if started is not None:
        outcome.duration_ms = (time.perf_counter() - started) * 1000
    if services.submit is not None and pipeline.records.enabled:
        try:
            scope = Scope.model_validate(event.get("scope") or {})
        except ValidationError:
            scope = Scope()
        name = "native" if host is None else host.name
        services.submit(Draft.of(outcome, event, scope, host=name), _mask(pipeline))
    return outcome


def _run_of(slot: Slot, status: str, elapsed: float, ctx: HookContext | None = None) -> HookRun:
    logs, extras = (ctx.logs, ctx.extras) if ctx is not None else ([], {})
    return HookRun(*slot.head, status, round(elapsed, 4), None, None, None, logs, extras)


_IDS: deque[str] = deque()
_IDS_PER_READ = 256
os.register_at_fork(after_in_child=_IDS.clear)  # a child must not repeat its parent's ids


def new_id() -> str:
    """A random id (32 hex digits, 128 bits from ``os.urandom``), as ``os.urandom(16).hex()``
    would make, but read from the system 256 at a time: one ``getrandbits`` syscall per
    evaluation was a measurable part of a decision. ``popleft`` and ``extend`` are atomic,
    so threads never share an id; after a fork the child starts with none."""
    try:
        return _IDS.popleft()
    except IndexError:
        text = os.urandom(16 * _IDS_PER_READ).hex()
        _IDS.extend(text[i : i + 32] for i in range(32, len(text), 32))
        return text[:32]


def _outcome(
    pipeline: Pipeline,
    point: Point,
    event: dict[str, Any],
    seen: dict[str, Any],
    merged: Change,
    runs: list[HookRun],
    run: Run | None = None,
) -> Outcome:
    """The outcome of ``merged`` at ``point``; ``run``'s lists (events, shadow, failed,
    unsupported) and approval are taken as they are (None: an outcome no hook ran for)."""
    out = Outcome(
        str(point),
        pipeline.agent,
        new_id(),
        event.get("turn_id"),
        merged.block is not None,
        merged.block,
        notices=list(merged.notice),
        changed=not merged.is_empty(),
        hooks=runs,
        generation=pipeline.generation,
    )
    if run is not None:
        out.events, out.shadow, out.failed = run.out_events, run.shadow, run.failed
        out.unsupported, out.approval = run.unsupported, run.approval
    if pipeline.session is not None:
        out.session = dict(pipeline.session)
    if point is _BEFORE_USER_MESSAGE:
        out.question, out.answer = seen.get("question"), merged.answer
        out.messages = list(merged.messages or [])
    elif point is _BEFORE_CALL:
        out.instruction, out.sections = seen.get("instruction"), list(merged.sections)
        out.messages, out.tools = seen.get("messages", []), seen.get("tools")
        out.settings = seen.get("settings")
    elif point is _TOOL_CALL:
        out.input = seen.get("input")
    elif point is _TOOL_RESULT:
        out.result = merged.result if merged.result is not None else seen.get("result")
    elif point is _BEFORE_ASSISTANT_MESSAGE:
        base = merged.answer if merged.answer is not None else event["answer"]
        out.answer, out.appended = join_answer(base, merged.append), list(merged.append)
    return out


def _masked_text(text: str, event: dict[str, Any], mask: list[str]) -> str:
    """``text`` masked by value as the agent's records are (engine/masking.py): a hook's
    error message goes to the process log, and it may quote a masked field of the event."""
    if mask:
        for value in sorted(masked_values(event, mask), key=len, reverse=True):
            text = text.replace(value, MASK)
    return text


def _mask(pipeline: Pipeline) -> list[str]:
    paths: list[str] = []
    for path in pipeline.records.mask:
        paths.append(path)
        if path.startswith("event."):
            rest = path.removeprefix("event.")
            paths += [f"outcome.{rest}", f"hooks.change.{rest}"]
    return paths
