"""The engine of one evaluation: ``hook_tool … tool`` run per tool call, a Claude Code hook.

Imported only by the commands that evaluate once: it holds the engine (and pydantic, the
stores, the sandbox) that ``hook_tool --help`` or a usage error never needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.cli.earlypool import EarlyPool, runs_scripts
from engine.config.loader import ProjectConfig
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

    def __init__(
        self, project: ProjectConfig, *, early: EarlyPool | None = None, **options: Any
    ) -> None:
        """``early``: the pool ``load_engine`` started already (by default one starts now if
        a hook is a script hook); ``options`` as ``Engine``'s."""
        if early is None and runs_scripts(project):
            early = EarlyPool(project.settings)
        self._early = early
        try:
            super().__init__(project, **options)
        except BaseException:
            if self._early is not None:
                self._early.discard()
            raise

    def sandbox(self) -> Any:
        """The worker pool ``EarlyPool`` started (or, with no script hook, one started now)."""
        with self._lock:
            early, self._early = self._early, None
            if self._sandbox is None and early is not None:
                self._sandbox = early.take()  # if it failed, the next call starts one anew
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


def _record_only(hook: Any) -> bool:
    """Whether ``hook`` touches no store when it runs (the pipeline writes its record)."""
    if hook.kind == "script_hook":
        return not hook.uses_state
    return hook.kind in ("inject", "escalate")
