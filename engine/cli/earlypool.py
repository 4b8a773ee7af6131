"""A one-shot engine's sandbox pool, started as early as its settings are known."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.config.loader import ProjectConfig
    from engine.config.models import EngineSettings
    from engine.sandbox.pool import Prestarted


class EarlyPool:
    """A one-shot engine's sandbox pool, started in a thread as soon as the settings are known.

    A worker's start-up (a Python start, its imports and hardening) then overlaps the host's
    own work before the first compile (building the engine, importing the hook's kind, reading
    and checking the script) instead of following it. The pool is the one ``Engine.sandbox``
    would make (``pool_for``).
    """

    def __init__(self, settings: EngineSettings, prestarted: Prestarted | None = None) -> None:
        import engine.sandbox  # noqa: F401 - imported here, not in the thread: one importer

        self._pool: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._start,
            args=(settings, prestarted),
            name="hookengine-pool-start",
            daemon=True,
        )
        self._thread.start()

    def _start(self, settings: EngineSettings, prestarted: Prestarted | None) -> None:
        try:
            self._pool = pool_for(settings, prestarted)
        except BaseException as exc:  # noqa: BLE001 - raised again by take()
            self._error = exc
        finally:
            if prestarted is not None:
                prestarted.close()  # a no-op once the pool took it

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


def pool_for(settings: EngineSettings, prestarted: Prestarted | None = None) -> Any:
    """The worker pool ``Engine.sandbox`` makes for ``settings`` (both call
    ``engine.sandbox.pool_for``), taking ``prestarted``'s worker as one of its own."""
    from engine.sandbox import pool_for as make

    return make(settings.scripts, prestarted)


def prestart(hook_file: Path) -> Prestarted | None:
    """A sandbox worker started now, before the engine's configuration is even imported, when
    the hook file reads like a script hook (a guess from its text: a wrong one only starts a
    worker for nothing, which ``close`` stops, or none, which the pool then starts); None when
    it does not, or when no process can start (the pool tries again, and says why)."""
    try:
        text = hook_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if "script_hook" not in text:
        return None
    from engine.sandbox.pool import Prestarted

    try:
        return Prestarted()
    except OSError:
        return None


def runs_scripts(project: ProjectConfig) -> bool:
    """Whether a hook of ``project`` is a script hook (its engine will want a worker)."""
    specs = [*project.host_hooks, *(s for a in project.agents.values() for s in a.hooks)]
    return any(spec.kind == "script_hook" for spec in specs)
