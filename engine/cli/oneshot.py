"""The engine of one evaluation: ``hook_tool … tool`` run per tool call, a Claude Code hook.

Imported only by the commands that evaluate once: it holds the engine (and pydantic, the
stores, the sandbox) that ``hook_tool --help`` or a usage error never needs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.config.loader import ProjectConfig
from engine.config.models import EngineSettings
from engine.runtime import Engine
from engine.store import Store
from engine.store.lazy import LazyStore, open_lazy_store

if TYPE_CHECKING:
    from engine.tools.toolset import ToolSet


class OneShotEngine(Engine):
    """The engine of one evaluation (``hook_tool`` run per tool call, say): its SQLite stores
    write the record through the standard library and open the SQL store (SQLAlchemy) only
    when a hook reads or writes them (engine/store/lazy.py); its sandbox worker starts as the
    engine is built, while the host loads the hooks (``EarlyPool``). The decision and its
    record are the same as the full engine's."""

    def __init__(self, project: ProjectConfig, **options: Any) -> None:
        self._early = EarlyPool(project.settings) if _runs_scripts(project) else None
        try:
            super().__init__(project, **options)
        except BaseException:
            if self._early is not None:
                self._early.discard()
            raise

    def sandbox(self) -> Any:
        """The worker pool ``EarlyPool`` started (or, with no script hook, one started now)."""
        with self._lock:
            if self._sandbox is None and self._early is not None:
                self._sandbox, self._early = self._early.take(), None
        return super().sandbox()

    def close(self) -> None:
        super().close()
        if self._early is not None:  # started, never used: no script ran
            self._early.discard()

    def open_store(self, url_or_path: str) -> Store:
        key = url_or_path or self._default_store_url()
        with self._lock:
            if key not in self._stores:
                limits = self.settings.store
                self._stores[key] = open_lazy_store(
                    key,
                    connect_timeout_s=limits.connect_timeout_s,
                    statement_timeout_s=limits.statement_timeout_s,
                )
            return self._stores[key]

    def check_delegates(self, replaced: Mapping[str, ToolSet] | None = None) -> None:
        """Skipped while no agent has tools (``hook_tool`` loads a hook, not an agent's tool
        files): no delegate tool to check, and no import of the delegate module and the LLM
        providers behind it."""
        if replaced or any(spec.tools for spec in self.project.agents.values()):
            super().check_delegates(replaced)

    def open_what_hooks_use(self, agent: str) -> None:
        """Open the SQL stores now if a hook of ``agent`` uses a store beyond its record
        (script state, FAQ pairs, memory): the opening then counts in no hook's time."""
        if all(_record_only(slot.hook) for slot in self.agent(agent).pipeline.slots):
            return
        with self._lock:
            stores = list(self._stores.values())
        for store in stores:
            if isinstance(store, LazyStore):
                store.full()


class EarlyPool:
    """A one-shot engine's sandbox pool, started in a thread as soon as the settings are known.

    A worker's start-up (a Python start, its imports and hardening) then overlaps the host's
    own work before the first compile (building the engine, importing the hook's kind, reading
    and checking the script) instead of following it. The pool is the one ``Engine.sandbox``
    would make (``pool_for``).
    """

    def __init__(self, settings: EngineSettings) -> None:
        import engine.sandbox  # noqa: F401 - imported here, not in the thread: one importer

        self._pool: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._start, args=(settings,), name="hookengine-pool-start", daemon=True
        )
        self._thread.start()

    def _start(self, settings: EngineSettings) -> None:
        try:
            self._pool = pool_for(settings)
        except BaseException as exc:  # noqa: BLE001 - raised again by take()
            self._error = exc

    def take(self) -> Any:
        """The started pool (waits for its workers' start-up).

        Raises:
            ScriptLimitError: the workers did not start (as ``Engine.sandbox``).
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        pool, self._pool = self._pool, None
        return pool

    def discard(self) -> None:
        """Stop the pool if nobody took it."""
        self._thread.join()
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def pool_for(settings: EngineSettings) -> Any:
    """The worker pool ``Engine.sandbox`` makes for ``settings`` (a test keeps them equal)."""
    from engine.sandbox import Limits, PoolPolicy, WorkerPool

    s = settings.scripts
    return WorkerPool(
        size=s.workers,
        limits=Limits(timeout_ms=s.timeout_ms, memory_mb=s.memory_mb),
        policy=PoolPolicy(
            workers_per_hook=s.max_workers_per_hook,
            respawns_per_s=s.respawns_per_s,
            quarantine_kills=s.quarantine_kills,
            quarantine_window_s=s.quarantine_window_s,
        ),
        max_contexts=s.max_contexts,
    )


def _runs_scripts(project: ProjectConfig) -> bool:
    specs = [*project.host_hooks, *(s for a in project.agents.values() for s in a.hooks)]
    return any(spec.kind == "script_hook" for spec in specs)


def _record_only(hook: Any) -> bool:
    """Whether ``hook`` touches no store when it runs (the pipeline writes its record)."""
    if hook.kind == "script_hook":
        return not hook.uses_state
    return hook.kind in ("inject", "escalate")
