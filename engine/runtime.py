"""Engine and Agent: wire config, kinds, sandbox, store and records; the public facade."""

from __future__ import annotations

import atexit
import importlib
import logging
import threading
import time as clock
import weakref
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import ProjectConfig, load_project
from engine.config.loader import AgentSpec, HookSpec
from engine.config.models import EngineSettings
from engine.config.scriptfile import without_tokens
from engine.errors import (
    ConfigError,
    EngineError,
    EventError,
    InputError,
    Problem,
    ScriptCompileError,
    StoreError,
)
from engine.hosts import HostProfile, profile
from engine.kinds import BuildEnv, build_hook
from engine.kinds.base import Memo
from engine.outcome import Outcome
from engine.pipeline import (
    Pipeline,
    Services,
    Slot,
    aevaluate,
    evaluate,
    new_id,
    refuse_event,
)
from engine.point_calls import PointCalls
from engine.points import Point, make_event, suggest
from engine.records import RecordWriter
from engine.session import Session
from engine.session_layers import SessionLayers, session_key
from engine.store import Record, RecordQuery, Store, open_store

if TYPE_CHECKING:
    import asyncio

    from engine.reload import Reloader
    from engine.store.approvals import Approval
    from engine.store.artifacts import ArtifactRow
    from engine.tools.artifacts import ArtifactStore
    from engine.tools.base import ToolResult
    from engine.tools.toolset import ToolSet


class _OnFirstUse:
    """A module imported when one of its names is first used."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


if not TYPE_CHECKING:
    # asyncio is a sixth of the engine's import time, and only the a-methods use it: they
    # run under an event loop, where it is imported already.
    asyncio = _OnFirstUse("asyncio")

log = logging.getLogger("engine.runtime")

_open_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


def _close_all() -> None:
    for engine in list(_open_engines):
        engine.close()


atexit.register(_close_all)


def now_iso() -> str:
    """The time now in UTC, as ``datetime.isoformat`` writes it with microseconds
    (``2026-01-02T03:04:05.123456+00:00``). The text up to the second is made once per
    second: formatting a datetime is most of this on every evaluation's path."""
    second, fraction = divmod(clock.time_ns() // 1000, 1_000_000)
    last, head = _SECOND[0]  # one tuple, read at once: other threads replace it whole
    if last != second:
        head = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")[:-6]
        _SECOND[0] = (second, head)
    return f"{head}.{fraction:06d}+00:00"


_SECOND: list[tuple[int, str]] = [(-1, "")]
"""The second ``now_iso`` last formatted, and its text without the offset."""


class Engine:
    """Loaded configuration plus the services hooks share. Thread- and task-safe.

    Use ``Engine.load(path)``; close it (or use it as a context manager) to flush records and
    stop sandbox workers. Records still queued at interpreter exit are flushed then too.
    """

    def __init__(
        self,
        project: ProjectConfig,
        *,
        live: bool = False,
        db: str | None = None,
        records: bool = True,
        watch: bool = False,
    ) -> None:
        self.project = project
        self.settings: EngineSettings = project.settings
        self._lock = threading.RLock()
        self._stores: dict[str, Store] = {}
        self._memos: dict[tuple[str, str], Memo] = {}
        self._sandbox: Any = None
        self._providers: Any = None
        self._artifacts: ArtifactStore | None = None
        self._closed = False
        self.live = live
        self.db_override = db
        self.store = self.open_store(db or "")
        # forgetting a session or a user in the store deletes their artifacts' files here
        self.store.on_artifacts_forgotten(self._artifact_files_forgotten)
        self.writer = (
            RecordWriter(
                self.store,
                retention=self.settings.retention,
                buffer_max=self.settings.records.buffer_max,
                retry_s=self.settings.records.retry_s,
            )
            if records
            else None
        )
        self.services = Services(
            self.store, self.memo_for, self.writer.submit if self.writer else None
        )
        self.env = BuildEnv(
            self.settings,
            project.base_dir,
            self.open_store,
            self.sandbox,
            self.providers,
            live=live,
            db_override=db,
        )
        self._agents: dict[str, Agent] = {}
        self.turn_runner: Any = None
        """The host's ``fn(agent, request, *, session_id, user_id) -> str`` (delegate tools)."""
        self.aturn_runner: Any = None
        """Its async form (awaited by ``acall_tool``; run to completion by ``call_tool``)."""
        self.generation = 0
        self.reloader: Reloader | None = None
        try:
            self.host_slots = self.build_slots(project.host_hooks, "host")
            for name, spec in project.agents.items():
                self._agents[name] = Agent(self, name, self.make_pipeline(spec))
                self._agents[name].tools = self.make_tools(spec)
            self.check_delegates()
            # reload sits above runtime; imported here so that Engine.load(watch=True) works
            from engine.reload import Reloader

            self.reloader = Reloader(self)
            if watch:
                self.reloader.start()
        except BaseException:
            self.close()
            raise
        _open_engines.add(self)

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path = "config", **options: Any) -> Engine:
        """Load and validate a config folder; ConfigError lists every problem found.

        Args:
            path: the config folder (holding engine.yaml and agents/).
            live: use the configured LLM provider for judges and memorizers.
            db: put every store (records, state, memory, FAQ) in this file or URL.
            records: write records (default True).
            watch: reload agents when their files change (stop it with ``close()``).
        """
        return cls(load_project(path), **options)

    def build_slots(
        self, specs: tuple[HookSpec, ...] | list[HookSpec], layer: str
    ) -> tuple[Slot, ...]:
        """Build hooks into slots of ``layer``; ConfigError with every problem (none left open)."""
        slots, problems = [], []
        for spec in specs:
            try:
                slots.append(Slot(build_hook(spec, self.env), layer))
            except ConfigError as exc:
                problems += exc.problems
            except ScriptCompileError as exc:
                problems += [_script_problem(spec, p) for p in exc.problems]
        if problems:
            for slot in slots:
                slot.hook.close()
            raise ConfigError(problems)
        return tuple(slots)

    def make_pipeline(self, spec: AgentSpec, *, generation: int = 0) -> Pipeline:
        """Build an agent's pipeline (its hooks, then the host layer's)."""
        slots = self.build_slots(spec.hooks, "agent")
        records = spec.config.records or self.settings.records
        return Pipeline(spec.name, slots + self.host_slots, generation, records)

    def make_tools(self, spec: AgentSpec) -> ToolSet:
        """Load an agent's tools (an empty set when it has none); ConfigError with every
        problem of every tool file."""
        from engine.tools.toolset import Loading, ToolSet, build_tools

        if not spec.tools:
            return ToolSet(version=spec.tools_version)
        files = {t.path: t for t in spec.tools}
        root = self.project.root
        loading = Loading(
            spec.name, self.project.base_dir, root, self.settings, files, self.sandbox, self
        )
        return build_tools(spec.tools, loading, version=spec.tools_version)

    def check_delegates(self, replaced: Mapping[str, ToolSet] | None = None) -> None:
        """Check the delegate tools across agents (with ``replaced`` tool sets instead of the
        loaded ones): ConfigError for a target that is no agent, or a cycle (its chain named).
        """
        from engine.tools.delegate import delegate_problems

        tools = {name: agent.tools for name, agent in self._agents.items()} | dict(replaced or {})
        problems = delegate_problems(tools)
        if problems:
            raise ConfigError(problems)

    def set_turn_runner(self, fn: Any) -> None:
        """How a delegate tool runs one turn of an agent: ``fn(agent, request, *, session_id,
        user_id) -> answer text``, called in the tool's thread (None: the built-in runner,
        ``engine.tools.delegate.run_turn``). ``fn`` runs the agent's points itself and passes
        ``session_id`` to every call it makes for that turn (nested delegations count on it).
        """
        self.turn_runner = fn

    def set_aturn_runner(self, fn: Any) -> None:
        """The async form of ``set_turn_runner``: ``async fn(agent, request, *, session_id,
        user_id) -> answer text``, awaited on the loop of ``acall_tool`` (``call_tool`` runs it
        with ``asyncio.run`` when no sync runner is set)."""
        self.aturn_runner = fn

    @property
    def artifact_store(self) -> ArtifactStore:
        """Where tool calls keep artifacts (made on first use)."""
        with self._lock:
            if self._artifacts is None:
                from engine.tools.artifacts import ArtifactStore

                folder = Path(self.settings.tools.artifacts_dir)
                if not folder.is_absolute():
                    folder = self.project.base_dir / folder
                self._artifacts = ArtifactStore(folder, self.store, self.settings.tools)
            return self._artifacts

    def artifacts(self, session_id: str) -> list[dict[str, Any]]:
        """The artifacts tool calls made in session ``session_id``, oldest first: ``{id, agent,
        session_id, name, file_name, type, mime, bytes, sha256, tool, call_id, description,
        time, user_id}`` each (``user_id``: whose call made it, None when none was given).

        Raises:
            StoreError: the store could not be read.
        """
        return [row.as_data() for row in self.artifact_store.rows(session_id)]

    def forget_artifacts(self, session_id: str) -> int:
        """Delete a session's artifacts (rows and files); how many there were.
        ``store.memory_forget`` of ``session:<id>`` or ``user:<id>`` deletes them too."""
        return self.artifact_store.forget(session_id)

    def _artifact_files_forgotten(self, rows: list[ArtifactRow]) -> None:
        """The store forgot these artifact rows (a session or a user): their files go."""
        self.artifact_store.remove_files(rows)

    # -- shared services -------------------------------------------------------------------

    def open_store(self, url_or_path: str) -> Store:
        """The store at ``url_or_path`` ("" = the engine's own), opened once."""
        key = url_or_path or self._default_store_url()
        with self._lock:
            if key not in self._stores:
                limits = self.settings.store
                self._stores[key] = open_store(
                    key,
                    connect_timeout_s=limits.connect_timeout_s,
                    statement_timeout_s=limits.statement_timeout_s,
                )
            return self._stores[key]

    def _default_store_url(self) -> str:
        return self.db_override or self.settings.store_url(self.project.base_dir)

    def memo_for(self, agent: str, hook: str) -> Memo:
        with self._lock:
            return self._memos.setdefault((agent, hook), Memo())

    def sandbox(self) -> Any:
        """The script worker pool, started on first use."""
        with self._lock:
            if self._sandbox is None:
                from engine.sandbox import pool_for

                self._sandbox = pool_for(self.settings.scripts)
            return self._sandbox

    def providers(self) -> Any:
        """The LLM providers for judges and memorizers."""
        with self._lock:
            if self._providers is None:
                from engine.providers import make_providers

                self._providers = make_providers(self.settings.provider, live=self.live)
            return self._providers

    # -- use -------------------------------------------------------------------------------

    @property
    def agents(self) -> list[str]:
        return sorted(self._agents)

    def agent(self, name: str) -> Agent:
        """The loaded agent called ``name``; EngineError naming the agents there are."""
        try:
            return self._agents[name]
        except KeyError:
            known = ", ".join(self.agents) or "none"
            raise EngineError(f"no agent {name!r} (loaded: {known})") from None

    def records(self, query: RecordQuery | None = None, **filters: Any) -> list[Record]:
        """Stored records, newest first (pending writes are flushed first, unless the store
        is down: then the query fails at once with StoreError rather than wait)."""
        if self.writer and self.writer.health()["store_reachable"]:
            self.writer.flush()
        return self.store.query_records(query or RecordQuery(**filters))

    def status(self) -> dict[str, Any]:
        """Per agent: generation, last (re)load time, last reload error with file and line;
        ``watching`` and ``watcher``: the reload watcher's health (alive, stalled, errors,
        restarts, last file event); ``sandbox``: the worker pool's health (None until a script
        hook started it); and ``records``: the record writer's ``health()`` (None when records
        are off)."""
        assert self.reloader is not None  # set in __init__ or the engine did not construct
        status = self.reloader.status()
        status["sandbox"] = self._sandbox.health() if self._sandbox is not None else None
        status["records"] = self.writer.health() if self.writer else None
        return status

    def reload_agent(self, name: str) -> bool:
        """Re-read, rebuild and test agent ``name`` now; swap it in if all is well (True)."""
        assert self.reloader is not None
        return self.reloader.reload_agent(name).ok

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every record submitted so far is written or counted as dropped.

        Returns:
            True when they are; False after ``timeout`` seconds (while the store is down
            the writer keeps them and retries: see ``status()["records"]``).
        """
        return self.writer.flush(timeout) if self.writer else True

    def close(self) -> None:
        """Flush records, stop sandbox workers, close stores. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.reloader is not None:
            self.reloader.close()  # first: no swap may happen while pipelines close
        for agent in self._agents.values():
            agent.sessions.close()
            agent.pipeline.close()
            agent.tools.close()
        if self.writer:
            self.writer.close()
        if self._sandbox is not None:
            self._sandbox.close()
        for store in self._stores.values():
            store.close()
        _open_engines.discard(self)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_POINTS = {p.value: p for p in Point}
_SET_BY_ENGINE = frozenset({"agent", "point", "scope", "time", "turn_id"})


def check_call(
    point: Any, fields: Any, scope: dict[str, Any], *, time: Any, turn_id: Any
) -> tuple[Point, dict[str, Any]]:
    """The point and the fields of a host's ``evaluate`` call; EventError naming each mistake
    (the event's own fields are checked by ``make_event``)."""
    found = _POINTS.get(point) if isinstance(point, str) else None
    errors = [] if found else [_unknown_point(point)]
    if fields is None:
        fields = {}
    if not isinstance(fields, Mapping):
        errors.append({"loc": ["fields"], "msg": f"must be a mapping, not {type(fields).__name__}"})
        fields = {}
    for key in fields:
        if type(key) is not str:
            errors.append({"loc": ["fields"], "msg": f"key {key!r} is not text"})
        elif key in _SET_BY_ENGINE:
            errors.append({"loc": [key], "msg": "is set by the engine or by an argument"})
    errors += _text_errors({**scope, "time": time, "turn_id": turn_id})
    if time is not None and not errors:
        errors += _time_errors(time)
    if errors:
        raise EventError(errors)
    assert found is not None
    return found, dict(fields)


def _unknown_point(point: Any) -> dict[str, Any]:
    if type(point) is not str:
        return {"loc": ["point"], "msg": f"must be a point name, not {type(point).__name__}"}
    hint = suggest(point, [p.value for p in Point])
    msg = f"unknown point {point[:100]!r}" + (f" (did you mean {hint!r}?)" if hint else "")
    return {"loc": ["point"], "msg": msg}


def _text_errors(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"loc": [name], "msg": f"must be text or None, not {type(value).__name__}"}
        for name, value in values.items()
        if value is not None and type(value) is not str
    ]


def _time_errors(time: str) -> list[dict[str, Any]]:
    try:
        datetime.fromisoformat(time)
    except ValueError:
        return [{"loc": ["time"], "msg": f"{time[:60]!r} is not an ISO-8601 time"}]
    return []


def _script_problem(spec: HookSpec, problem: Problem) -> Problem:
    """A script's compile problem, named by the script file (or the YAML for inline source)."""
    if spec.script_path is None:
        path, line, column = spec.script_position(problem.line, problem.column)
        return Problem(path, line, "source", problem.message, problem.hint, column)
    return replace(problem, message=without_tokens(problem.message))


class Agent(PointCalls):
    """One agent's pipeline; a method per point, sync and async (``a``-prefixed)."""

    def __init__(self, engine: Engine, name: str, pipeline: Pipeline) -> None:
        self.engine = engine
        self.name = name
        self.pipeline = pipeline
        self._lock = threading.Lock()
        self._running: dict[int, int] = {}
        """Evaluations in flight per pipeline (by id): a replaced one is closed at zero."""
        self.tools: ToolSet = _no_tools()
        """The tools the agent offers (replaced whole by a reload: ``swap_tools``)."""
        self.sessions = SessionLayers(self)
        """The layers of this agent's sessions (``session``), built once and shared."""

    def evaluate(
        self,
        point: Point | str,
        fields: Mapping[str, Any] | None = None,
        *,
        host: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        template: str | None = None,
        process: str | None = None,
        time: str | None = None,
        turn_id: str | None = None,
        replay: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Outcome:
        """Evaluate any point with its event fields (the generic form of the methods below).

        The event is normalised first (engine/boundary.py). An event whose data is JSON but
        over a cap (a text over its cap: docs/points.md) is not raised: the point fails by
        its failure policy and ``out.input_error`` names the cause.

        ``host`` names the host that applies the outcome (engine/hosts.py; None: the native
        host, which applies every change). At ``tool_call`` a change it cannot apply blocks
        the tool; elsewhere it is listed in ``out.unsupported``. At ``before_user_message``
        with a ``session_id`` the question is kept as the session's last prompt
        (``last_prompt``).

        Raises:
            EventError: the call is wrong (``check_call``, ``make_event``): an unknown point
                or host, ``fields`` not a mapping of field names, a field missing, unknown or
                of the wrong type, a value anywhere in the event that is not JSON data (bytes,
                a set, an object, NaN, a non-text key), a scope value, ``time`` or ``turn_id``
                that is not text (or ``time`` not ISO-8601). ``errors`` names each by ``loc``.
        """
        started = clock.perf_counter()
        pipeline, found, event, profile_ = self._begin(
            point, fields, (user_id, session_id, template, process), time, turn_id, host
        )
        try:
            return self._decide(pipeline, found, event, profile_, session_id, replay, started)
        finally:
            self._give_back(pipeline)

    async def aevaluate(
        self,
        point: Point | str,
        fields: Mapping[str, Any] | None = None,
        *,
        host: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        template: str | None = None,
        process: str | None = None,
        time: str | None = None,
        turn_id: str | None = None,
        replay: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Outcome:
        """``evaluate`` on the running event loop: script hooks are awaited there, with no
        thread hop; built-in hooks that wait on a store or an LLM (memory, faq_cache), and
        the turn log's write, run in a thread (docs/operations.md)."""
        started = clock.perf_counter()
        pipeline, found, event, profile_ = self._begin(
            point, fields, (user_id, session_id, template, process), time, turn_id, host
        )
        try:
            return await self._adecide(
                pipeline, found, event, profile_, session_id, replay, started
            )
        finally:
            self._give_back(pipeline)

    def _decide(
        self,
        pipeline: Pipeline,
        found: Point,
        event: dict[str, Any] | InputError,
        host: HostProfile | None,
        session_id: str | None,
        replay: Mapping[str, Mapping[str, Any]] | None,
        started: float,
    ) -> Outcome:
        """What ``evaluate`` does once the call is checked, on ``pipeline`` (the agent's, or
        a session's layers: engine/session.py)."""
        services = self.engine.services
        if isinstance(event, InputError):  # refused at the boundary: the point fails closed
            return refuse_event(pipeline, found, event, services, host=host, started=started)
        if session_id and found is Point.BEFORE_USER_MESSAGE:
            self._log_prompt(session_id, event)
        out = evaluate(pipeline, found, event, services, replay=replay, host=host, started=started)
        answered = _answer_event(pipeline, out, event)
        if isinstance(answered, InputError):
            _pass_answer(out, refuse_event(pipeline, _SAID, answered, services, host=host))
        elif answered is not None:
            _pass_answer(out, evaluate(pipeline, _SAID, answered, services, host=host))
        return out

    async def _adecide(
        self,
        pipeline: Pipeline,
        found: Point,
        event: dict[str, Any] | InputError,
        host: HostProfile | None,
        session_id: str | None,
        replay: Mapping[str, Mapping[str, Any]] | None,
        started: float,
    ) -> Outcome:
        """``_decide`` on the running event loop (the turn log's write in a thread)."""
        services = self.engine.services
        if isinstance(event, InputError):
            return refuse_event(pipeline, found, event, services, host=host, started=started)
        if session_id and found is Point.BEFORE_USER_MESSAGE:
            await asyncio.to_thread(self._log_prompt, session_id, event)
        out = await aevaluate(
            pipeline, found, event, services, replay=replay, host=host, started=started
        )
        answered = _answer_event(pipeline, out, event)
        if isinstance(answered, InputError):
            _pass_answer(out, refuse_event(pipeline, _SAID, answered, services, host=host))
        elif answered is not None:
            _pass_answer(out, await aevaluate(pipeline, _SAID, answered, services, host=host))
        return out

    def last_prompt(self, session_id: str) -> str | None:
        """The last question evaluated at ``before_user_message`` in this agent's session
        ``session_id`` (as the user sent it, before any rewrite), from the engine's store:
        another process on the same store sees it. None if there is none.

        Raises:
            StoreError: the store could not be read.
        """
        return self.engine.store.turn_log_get(self.name, session_id)

    def remember(
        self,
        session_id: str,
        kind: str,
        data: Any,
        *,
        user_id: str | None = None,
        turn_id: str | None = None,
        time: str | None = None,
    ) -> None:
        """Keep ``data`` (JSON) as an entry of ``kind`` in this agent's conversation
        ``session_id``, stamped with ``turn_id``; hooks list it with ``host.entries.list``.
        ``user_id``: forgetting that user deletes it too. The conversation keeps its newest
        256 entries.

        Raises:
            EventError: an empty session_id or kind, a kind over 64 characters, or data that
                is not JSON or is over 4096 bytes as compact JSON.
            StoreError: the store could not write it.
        """
        from engine.entries import remember

        when = time or now_iso()
        store = self.engine.store
        remember(
            store, self.name, session_id, kind, data, user_id=user_id, turn_id=turn_id, time=when
        )

    def entries(
        self, session_id: str, kind: str | None = None, *, last: int | None = None
    ) -> list[dict[str, Any]]:
        """This agent's conversation ``session_id``'s entries, oldest first, each
        ``{kind, data, turn, time}``: of ``kind`` if given, the newest ``last`` if given.

        Raises:
            EventError: ``last`` is not a whole number >= 0.
            StoreError: the store could not be read.
        """
        from engine.entries import listed

        return listed(self.engine.store, self.name, session_id, kind, last=last)

    async def aremember(
        self,
        session_id: str,
        kind: str,
        data: Any,
        *,
        user_id: str | None = None,
        turn_id: str | None = None,
        time: str | None = None,
    ) -> None:
        """``remember`` awaited: the store's write runs in a thread."""
        await asyncio.to_thread(
            self.remember, session_id, kind, data, user_id=user_id, turn_id=turn_id, time=time
        )

    async def aentries(
        self, session_id: str, kind: str | None = None, *, last: int | None = None
    ) -> list[dict[str, Any]]:
        """``entries`` awaited: the store's read runs in a thread."""
        return await asyncio.to_thread(self.entries, session_id, kind, last=last)

    def resolve(
        self, approval_id: str, approve: bool, *, by: str, note: str | None = None
    ) -> Approval:
        """Answer the question ``out.approval`` asked: approve or deny the call, as ``by``
        (recorded with the time and ``note``). The host then evaluates the same call again.

        Raises:
            ApprovalError: the id is unknown (or another agent's), it expired (the call was
                denied), or it was resolved already (the first decision stands).
            StoreError: the store could not be read or written.
        """
        from engine import approvals  # the store's approval tables: only when used

        return approvals.resolve(
            self.engine.store, self.name, approval_id, approve, by=by, note=note
        )

    async def aresolve(
        self, approval_id: str, approve: bool, *, by: str, note: str | None = None
    ) -> Approval:
        """``resolve`` off the event loop (the store is written in a thread)."""
        return await asyncio.to_thread(self.resolve, approval_id, approve, by=by, note=note)

    def approvals(
        self, *, session_id: str | None = None, user_id: str | None = None
    ) -> list[Approval]:
        """The approvals waiting on a person, oldest first: one session's (or user's) when
        given, else all of this agent's.

        Raises:
            EventError: ``session_id`` or ``user_id`` given but empty.
        """
        from engine.approvals import pending

        return pending(self.engine.store, self.name, session_id=session_id, user_id=user_id)

    def _log_prompt(self, session_id: str, event: dict[str, Any]) -> None:
        """Keep the event's question as the session's last prompt; a store failure is logged,
        not raised (the decision does not depend on it)."""
        try:
            self.engine.store.turn_log_put(
                self.name,
                session_id,
                event["question"],
                event["time"],
                user_id=event["scope"].get("user_id"),
            )
        except StoreError as exc:
            log.warning("agent %s: the session's last prompt was not kept: %s", self.name, exc)

    def _begin(
        self,
        point: Point | str,
        fields: Mapping[str, Any] | None,
        who: tuple[str | None, str | None, str | None, str | None],
        time: str | None,
        turn_id: str | None,
        host: str | None,
    ) -> tuple[Pipeline, Point, dict[str, Any] | InputError, HostProfile | None]:
        """Check the call, take the pipeline snapshot (give it back when done) and make the
        event, or the boundary's refusal of it; and the host's profile (None: native)."""
        profile_ = None if host is None or host == "native" else profile(host)
        user_id, session_id, template, process = who
        scope = {
            "user_id": user_id,
            "session_id": session_id,
            "template": template,
            "process": process,
        }
        found, checked = check_call(point, fields, scope, time=time, turn_id=turn_id)
        scope["process"] = process or self.engine.settings.process
        if turn_id is None and found is Point.BEFORE_USER_MESSAGE:
            turn_id = new_id()  # hosts pass it back to feedback and later points
        pipeline = self._take()  # one snapshot for the whole evaluation
        try:
            event = make_event(
                found,
                agent=self.name,
                scope=scope,
                time=time or now_iso(),
                turn_id=turn_id,
                **checked,
            )
        except InputError as exc:
            return pipeline, found, exc, profile_
        except BaseException:
            self._give_back(pipeline)
            raise
        return pipeline, found, event, profile_

    def _take(self) -> Pipeline:
        with self._lock:
            pipeline = self.pipeline
            self._running[id(pipeline)] = self._running.get(id(pipeline), 0) + 1
            return pipeline

    def _give_back(self, pipeline: Pipeline) -> None:
        with self._lock:
            left = self._running.pop(id(pipeline)) - 1
            if left:
                self._running[id(pipeline)] = left

    def swap(self, pipeline: Pipeline) -> Pipeline:
        """Make ``pipeline`` the one new evaluations take; return the one it replaces."""
        with self._lock:
            old, self.pipeline = self.pipeline, pipeline
            return old

    def in_use(self, pipeline: Pipeline) -> bool:
        """Whether an evaluation that started on ``pipeline`` is still running."""
        with self._lock:
            return id(pipeline) in self._running

    def swap_tools(self, tools: ToolSet) -> ToolSet:
        """Make ``tools`` the set new calls use; return the one it replaces."""
        with self._lock:
            old, self.tools = self.tools, tools
            return old

    # -- tools (engine/tools, docs/tools.md) -----------------------------------------------

    def call_tool(
        self,
        name: str,
        input: Mapping[str, Any],
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        call_id: str | None = None,
        emit: Any = None,
        ask: Any = None,
    ) -> ToolResult:
        """Call one of the agent's tools through its one guarded path: ``tool_call`` hooks
        (a block is an ``is_error`` result with the reason; a rewritten input is used), the
        input checked against the tool's schema (an ``is_error`` result listing the fields),
        the tool run under its time limit, ``tool_result`` hooks (a redaction replaces
        ``content``). Never raises for the tool's sake: an unknown tool, an exception or a
        timeout is an ``is_error`` result.

        Args:
            emit: called with each event the tool emits (Open WebUI ``__event_emitter__``).
            ask: the host's answer to a tool's ``__event_call__``.
        """
        from engine.tools.calls import Call, call_tool

        call = Call(self.name, name, input, user_id, session_id, call_id, emit, ask)
        default_ms = self.engine.settings.tools.timeout_ms
        store, mask = self.engine.artifact_store, self.pipeline.records.mask
        return call_tool(call, self.tools, self.evaluate, store, default_ms, mask)

    async def acall_tool(
        self,
        name: str,
        input: Mapping[str, Any],
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        call_id: str | None = None,
        emit: Any = None,
        ask: Any = None,
    ) -> ToolResult:
        """``call_tool`` on the running event loop: hooks awaited there, the tool in a thread."""
        from engine.tools.calls import Call, acall_tool

        call = Call(self.name, name, input, user_id, session_id, call_id, emit, ask)
        default_ms = self.engine.settings.tools.timeout_ms
        store, mask = self.engine.artifact_store, self.pipeline.records.mask
        return await acall_tool(call, self.tools, self.aevaluate, store, default_ms, mask)

    def tool_specs(self, format: str = "openai-chat") -> list[dict[str, Any]]:
        """The enabled tools' specs in ``format``: ``openai-chat``, ``openai-responses``,
        ``anthropic`` or ``mcp``; made once per loaded version of the tools (shared: do not
        change them).

        Raises:
            ValueError: an unknown format.
        """
        return list(self.tools.export(format))

    def session(
        self,
        session_id: str,
        hooks: list[str] | tuple[str, ...] = (),
        *,
        drop_agent_hooks: bool = False,
    ) -> Session:
        """A handle on this agent for conversation ``session_id``, with its own hooks.

        Its points run the agent's hooks (none with ``drop_agent_hooks``), then ``hooks``
        (names of files in the agent's ``hooks/`` folder), then the host layer; a hook set in
        several layers runs once, in its outermost one. It follows the agent's reloads.
        Close it when the conversation ends (or use it as a context manager).

        Raises:
            EventError: ``session_id`` is not text, ``hooks`` not a list of names.
            ConfigError: a name is not a hook in the agent's hooks/ folder (the message names
                the folder and the hooks there), or a hook there does not load.
        """
        if not isinstance(session_id, str) or not session_id:
            raise EventError([{"loc": ["session_id"], "msg": "must be non-empty text"}])
        return Session(self, session_id, session_key(hooks, drop_agent_hooks))


_SAID = Point.BEFORE_ASSISTANT_MESSAGE


def _answer_event(
    pipeline: Pipeline, out: Outcome, event: dict[str, Any]
) -> dict[str, Any] | InputError | None:
    """The ``before_assistant_message`` event of an answer given at ``before_user_message``
    (a cached answer, an off-topic reply), when the pipeline has hooks there: that answer goes
    out as any answer does, so the same hooks (a redaction, a disclaimer) see it first. The
    boundary's refusal when it is over a cap; None when there is nothing to pass on."""
    if not out.short_circuit or not pipeline.by_point[_SAID]:
        return None
    question = out.question if out.question is not None else event["question"]
    try:
        return make_event(
            _SAID,
            agent=event["agent"],
            scope=event["scope"],
            time=event["time"],
            turn_id=event.get("turn_id"),
            question=question,
            answer=out.answer,
        )
    except InputError as exc:
        return exc


def _pass_answer(out: Outcome, said: Outcome) -> None:
    """Give ``out`` the answer as ``before_assistant_message`` left it (redacted, appended
    to, or withheld), with what its hooks said besides."""
    out.answer = said.answer
    out.appended = said.appended
    out.notices = [*out.notices, *said.notices]
    out.events = [*out.events, *said.events]
    out.failed = [*out.failed, *said.failed]
    out.unsupported = [*out.unsupported, *said.unsupported]
    out.changed = out.changed or said.changed
    out.duration_ms += said.duration_ms


def _no_tools() -> ToolSet:
    from engine.tools.toolset import ToolSet

    return ToolSet()
