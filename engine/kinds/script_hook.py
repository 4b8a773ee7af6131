"""Kind ``script_hook``: a user script (Python or JavaScript) run in the sandbox worker pool."""

from __future__ import annotations

import contextlib
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from engine.boundary import normalize_value
from engine.changes import Change, parse_change
from engine.config.loader import HookSpec, show
from engine.config.models import ScriptHookConfig, ScriptSettings
from engine.errors import ConfigError, PluginError, Problem, ScriptError, ScriptLimitError
from engine.kinds import BuildEnv
from engine.kinds.base import HookContext, Mode
from engine.kinds.common import SpecHook
from engine.kinds.personal import PersonalTurns, shared
from engine.points import Point
from engine.sandbox import CallResult, CompiledScript, Language, Limits, WorkerPool
from engine.sandbox.limits import BatchCall, config_key

_LANGUAGES = {".py": Language.PYTHON, ".js": Language.JAVASCRIPT}
_USES_STATE = re.compile(r"\bstate\b")
_USES_ENTRIES = re.compile(r"\bentries\b")
_instances = itertools.count(1)


@dataclass(kw_only=True)
class ScriptHook(SpecHook):
    """Calls ``on_<point>(event, host)`` of a compiled script for each subscribed point.

    State is loaded for (agent:hook, scope) before the call only if the script's source
    mentions ``state`` at all, and saved only when the call succeeded and its change is valid.
    Each agent runs the script under a key of its own (agent, hook, script hash): workers keep
    prepared contexts per key, so no context serves two agents or two hooks.
    """

    config: ScriptHookConfig
    pool: WorkerPool
    script: CompiledScript
    limits: Limits
    points: frozenset[Point]  # type: ignore[misc]  # per instance, unlike the other kinds
    uses_state: bool
    uses_entries: bool = False
    """The source mentions ``entries``: the conversation's entries are loaded for each call."""
    line_offset: int = 0
    """For inline ``source:``: the YAML line before the script's first line."""
    column_offset: int = 0
    """For inline ``source:``: the columns before the script's text on its YAML lines."""
    owner: str = ""
    """This hook instance in the pool's fairness rules (its worker share, kills, quarantine);
    a rebuilt hook is a new owner, which is what lifts a quarantine."""
    owned: dict[str, CompiledScript] = field(default_factory=dict)
    """The script keyed per agent that called it (host-layer hooks serve every agent)."""
    calls: dict[tuple[Point, str], BatchCall] = field(default_factory=dict)
    """The calls of a stateless script, per point and agent (they never change)."""
    config_key: str = ""
    """A digest of ``config:`` as canonical JSON, computed once per build: workers keep the
    parsed config per key, so it is not sent nor parsed again on every call."""
    personal: PersonalTurns | None = None
    """The engine's ledger of turns that used per-user context (a shared FAQ cache does not
    learn from them): a script reading a user's state before the answer marks its turn."""

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Change:
        """One call on its own: a batch of one (the pipeline batches consecutive hooks)."""
        call = self.prepare_call(point, event, ctx)
        results = self.send_batch(point.value, event, [call])
        return self.finish_call(point, event, ctx, results[0] if results else _no_result())

    def prepare_call(self, point: Point, event: dict[str, Any], ctx: HookContext) -> BatchCall:
        """This hook's call at ``point``, its state loaded (StoreError if it cannot be).
        A script that keeps no state makes the same call every time: it is made once."""
        if not self.uses_state and not self.uses_entries:
            call = self.calls.get((point, ctx.agent))
            if call is None:
                call = self.calls.setdefault((point, ctx.agent), self._call(point, ctx, {}))
            return call
        state: dict[str, Any] = {}
        if self.uses_state:
            state = ctx.store.state_load(self._state_key(ctx), ctx.scope_key, now=event.get("time"))
        if state:  # the answer may now depend on what this user's state holds
            self._mark_personal(point, event, ctx, "read the user's state")
        entries = self._entries(ctx)
        if entries is not None:  # recorded if the script lists them (or fails): see finish
            ctx.extras["entries_seen"] = entries
        return self._call(point, ctx, state, entries)

    def _mark_personal(
        self, point: Point, event: dict[str, Any], ctx: HookContext, what: str
    ) -> None:
        """Mark this turn as answered with per-user context (a shared FAQ cache does not
        learn it) when this point comes before the answer: any but after_turn, after_loop
        and feedback, which only hear of a turn already answered."""
        if self.personal is None or point.hears_only:
            return
        self.personal.mark(
            ctx.scope_key,
            event.get("turn_id"),
            event.get("question"),
            f"script hook {self.name} {what}",
            session=ctx.scope.session_id,
        )

    def _entries(self, ctx: HookContext) -> list[dict[str, Any]] | None:
        """The conversation's entries the script is handed: those its record shows during a
        replay, else the store's; None without a conversation (or a script that never
        mentions entries)."""
        if not self.uses_entries or not ctx.scope.session_id:
            return None
        if ctx.replay is not None and "entries_seen" in ctx.replay:
            return list(ctx.replay["entries_seen"])
        stored = ctx.store.entries_list(ctx.agent, ctx.scope.session_id)
        return [{"kind": e["kind"], "data": e["data"], "turn": e["turn"]} for e in stored]

    def _call(
        self,
        point: Point,
        ctx: HookContext,
        state: dict[str, Any],
        entries: list[dict[str, Any]] | None = None,
    ) -> BatchCall:
        return BatchCall(
            script=self._script_of(ctx.agent),
            function=f"on_{point.value}",
            config=self.config.config,
            config_key=self.config_key,
            state=state,
            limits=self.limits,
            owner=self.owner,
            apply=self.mode is not Mode.SHADOW,
            entries=entries,
        )

    def finish_call(
        self,
        point: Point,
        event: dict[str, Any],
        ctx: HookContext,
        result: CallResult | ScriptError,
    ) -> Change:
        """The checked change of this hook's ``result`` (the event it saw: ``event``); state
        is saved only for a valid change.

        Raises:
            ScriptError: the call failed (its message led by file:line).
            PluginError: the answer is not a valid change at ``point``.
            StoreError: the state could not be saved.
        """
        if isinstance(result, ScriptError):
            offsets = (self.line_offset, self.column_offset)
            if result.cause == "timeout":
                result = self._timed_out(result)
            raise _located(result, self.name, self.script.filename, offsets) from result
        # What the call hands over is made whole before anything is kept: a lone surrogate in
        # a value becomes U+FFFD, as in a change, so no store or printer meets one, and a call
        # whose entries could not be stored has not saved its state first.
        emits = self._stored(result.emits, "host.emit") if result.emits else result.emits
        writes = result.state_writes
        if writes:
            writes = self._stored(writes, "host.state.set")
        added = result.entries_added
        if added:
            added = self._stored(added, "host.entries.add")
        if result.logs:
            ctx.logs.extend(result.logs)
        if emits:
            ctx.events.extend(emits)
        terms = str(self.script.language)  # errors name values as the script does
        change = parse_change(point, result.value, hook=self.name, event=event, terms=terms)
        # a call's state and entries are kept together or not at all
        together = bool(writes and added and ctx.scope.session_id)
        with ctx.store.one_transaction() if together else contextlib.nullcontext():
            if writes:
                ctx.store.state_save(
                    self._state_key(ctx),
                    ctx.scope_key,
                    writes,
                    ttls=result.state_ttls,
                    time=event.get("time"),
                )
            self._keep_entries(point, event, ctx, result.entries_read, added)
        if writes:
            ctx.extras["state_writes"] = writes
            if result.state_ttls:
                ctx.extras["state_ttls"] = result.state_ttls
        return change

    def _stored(self, value: Any, where: str) -> Any:
        """``value`` (JSON data a worker checked) with its texts made whole.

        Raises:
            PluginError: the worker handed over something that is not JSON data.
        """
        whole, problems = normalize_value(value, where)
        if problems:
            raise PluginError(
                f"{self.script.filename}: {'; '.join(problems)}", hook=self.name, field=where
            )
        return whole

    def _keep_entries(
        self,
        point: Point,
        event: dict[str, Any],
        ctx: HookContext,
        read: bool,
        added: list[dict[str, Any]],
    ) -> None:
        """Store the entries the script added, stamped with the event's turn; the record
        keeps them, and what the script saw when it listed them (replay hands it that)."""
        session = ctx.scope.session_id
        if not read:
            ctx.extras.pop("entries_seen", None)
        elif ctx.extras.get("entries_seen"):  # the answer may depend on the conversation's
            self._mark_personal(point, event, ctx, "listed the conversation's entries")
        if not added or not session:
            return
        ctx.store.entries_add(
            ctx.agent,
            session,
            added,
            user_id=ctx.scope.user_id,
            turn=event.get("turn_id"),
            time=event["time"],
            keep=self.limits.max_entries,
        )
        ctx.extras["entries_added"] = added

    def _timed_out(self, exc: ScriptError) -> ScriptError:
        """A timeout in the author's terms: the hook, the limit, and the key that sets it."""
        limit = self.limits.timeout_ms
        set_here = self.spec.line("timeout_ms") is not None
        where = f"{self.spec.shown}" if set_here else "engine.yaml scripts.timeout_ms"
        message = (
            f"hook {self.name!r} ran past its time limit of {limit} ms ({exc.message}); "
            f"timeout_ms is set in {where}: make the script do less per call, or raise "
            "timeout_ms in the hook's YAML"
        )
        return type(exc)(
            message,
            hook=exc.hook,
            language=exc.language,
            line=exc.line,
            column=exc.column,
            cause=exc.cause,
        )

    def send_batch(
        self, point: str, event: dict[str, Any], calls: list[BatchCall]
    ) -> list[CallResult | ScriptError]:
        """Run ``calls`` in one worker round trip (see WorkerPool.call_batch). The pool sends
        the event as JSON: scripts get a copy, never a host object."""
        return self.pool.call_batch(point, event, calls)

    async def asend_batch(
        self, point: str, event: dict[str, Any], calls: list[BatchCall]
    ) -> list[CallResult | ScriptError]:
        """``send_batch`` awaited on the running event loop."""
        return await self.pool.acall_batch(point, event, calls)

    def _state_key(self, ctx: HookContext) -> str:
        return f"{ctx.agent}:{self.name}"

    def _script_of(self, agent: str) -> CompiledScript:
        script = self.owned.get(agent)
        if script is None:
            owned = self.script.owned_by(_key_owner(agent, self.name))
            script = self.owned.setdefault(agent, owned)
            if script is owned:
                self.pool.hold(script)
        return script

    def close(self) -> None:
        self.pool.forget(self.owner)
        for script in self.owned.values():
            self.pool.release(script)


def _no_result() -> ScriptError:
    return ScriptLimitError("the worker answered no result", cause="crashed")


def _located(exc: ScriptError, hook: str, filename: str, offsets: tuple[int, int]) -> ScriptError:
    """The same error, its message led by ``file:line:column`` when the sandbox knows them."""
    where = filename
    lines, columns = offsets
    if exc.line is not None:
        column = f":{exc.column + columns}" if exc.column is not None else ""
        where += f":{exc.line + lines}{column}"
    return type(exc)(
        f"{where}: {exc.message}",
        hook=hook,
        language=exc.language,
        line=exc.line,
        column=exc.column,
        cause=exc.cause,
    )


def build(spec: HookSpec, env: BuildEnv) -> ScriptHook:
    """Compile the hook's script in the sandbox and subscribe it to its points.

    Raises:
        ScriptCompileError: the script does not compile (every problem, with line and column).
        ConfigError: a ``points:`` entry names a point the script defines no function for;
            ``timeout_ms`` or ``memory_mb`` above the operator's ceiling in engine.yaml.
    """
    config: ScriptHookConfig = spec.config
    limits = _limits(spec, env.settings.scripts)
    if spec.script_path is not None:
        language = _LANGUAGES[spec.script_path.suffix]
        source, filename = spec.script_text or "", _shown(spec)
    else:
        if config.language is None:
            line = spec.line("language")
            raise ConfigError(
                [Problem(spec.shown, line, "language", "an inline source: needs language:")]
            )
        language, source, filename = Language(config.language), config.source or "", spec.shown
    pool: WorkerPool = env.sandbox()
    # An agent's own hooks live in agents/<agent>/hooks/: load straight into that agent's key.
    agent = spec.path.parent.parent.name if spec.layer == "agent" else None
    keyed_for = None if agent is None else _key_owner(agent, config.name)
    script = pool.compile(source, filename=filename, language=language, key_owner=keyed_for)
    defined = frozenset(Point(name[3:]) for name in script.functions)
    points = _subscribed(spec, config, defined)
    if agent is not None:
        pool.hold(script)  # released by close(); host-layer hooks hold per agent on first use
    return ScriptHook(
        spec=spec,
        config=config,
        pool=pool,
        script=script,
        limits=limits,
        points=points,
        uses_state=bool(_USES_STATE.search(source)),
        uses_entries=bool(_USES_ENTRIES.search(source)),
        # an inline source's first line is the one after ``source: |``
        line_offset=0 if spec.script_path is not None else _inline_at(spec)[0],
        column_offset=0 if spec.script_path is not None else _inline_at(spec)[1],
        owner=f"{spec.shown}:{config.name}#{next(_instances)}",
        owned={} if agent is None else {agent: script},
        config_key=config_key(config.config),
        personal=shared(env.extra),
    )


def _inline_at(spec: HookSpec) -> tuple[int, int]:
    """Lines and columns before an inline script's text in its YAML (see HookSpec.source_at)."""
    return spec.source_at or (spec.line("source") or 0, 0)


def _key_owner(agent: str, hook: str) -> str:
    return f"{agent}\0{hook}"


def _limits(spec: HookSpec, settings: ScriptSettings) -> Limits:
    """The hook's limits; ConfigError naming file and line if one is above its ceiling."""
    config: ScriptHookConfig = spec.config
    problems = [
        Problem(
            spec.shown,
            spec.line(field),
            field,
            f"{value} {unit} is above the operator's ceiling of {ceiling} {unit}",
            hint=f"engine.yaml scripts.max_{field} = {ceiling}",
        )
        for field, value, ceiling, unit in (
            ("timeout_ms", config.timeout_ms, settings.max_timeout_ms, "ms"),
            ("memory_mb", config.memory_mb, settings.max_memory_mb, "MB"),
        )
        if value is not None and value > ceiling
    ]
    if problems:
        raise ConfigError(problems)
    return Limits(
        timeout_ms=config.timeout_ms or settings.timeout_ms,
        memory_mb=config.memory_mb or settings.memory_mb,
    )


def _shown(spec: HookSpec) -> str:
    return show(spec.script_path) if spec.script_path is not None else spec.shown


def _subscribed(
    spec: HookSpec, config: ScriptHookConfig, defined: frozenset[Point]
) -> frozenset[Point]:
    if config.points is None:
        return defined
    problems = [
        Problem(
            spec.shown,
            spec.line("points", i),
            "points",
            f"the script defines no on_{point.value} function",
            hint=f"defined: {', '.join(sorted('on_' + p.value for p in defined))}",
        )
        for i, point in enumerate(config.points)
        if point not in defined
    ]
    if problems:
        raise ConfigError(problems)
    return frozenset(config.points)
