"""The reload watcher thread: file events to a callback; it reports every error and never dies.

The thread watches folders with watchfiles and hands each batch of changed paths to the
reloader. Whatever a batch raises is logged and shown in ``health()``; an error escaping the
loop (the OS watcher failing, a folder that vanished) reopens the watch after a back-off and
then catches up on what the gap missed. ``stop()`` returns within its bound even when a
callback is stuck: the thread is a daemon and nothing waits on it for longer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("engine.reload")

STALL_S = 30.0
"""A batch running longer than this marks the watcher as stalled in ``health()``."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Backoff:
    """Seconds to wait before reopening the watch after an error: doubles up to ``most``."""

    first: float = 0.1
    most: float = 5.0

    def after(self, delay: float) -> float:
        return min(delay * 2, self.most)


class Watcher:
    """Watches the folders ``dirs()`` names; calls ``handle(paths)`` per batch of changes.

    Args:
        dirs: the folders to watch, asked again after every batch (a hook may move).
        handle: reloads what changed paths touch; ``None`` means "catch up on everything".
        debounce_ms, step_ms: watchfiles' batching.
        backoff: the wait before reopening after an error.
    """

    def __init__(
        self,
        dirs: Callable[[], set[Path]],
        handle: Callable[[set[Path] | None], None],
        *,
        debounce_ms: int = 400,
        step_ms: int = 30,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.dirs, self.handle = dirs, handle
        self.debounce_ms, self.step_ms, self.backoff = debounce_ms, step_ms, backoff
        self.restarts = 0
        self.error: str | None = None
        """The latest error, cleared by the next batch handled without one."""
        self.last_error: str | None = None
        self.last_error_at: str | None = None
        self.last_event_at: str | None = None
        self._busy_since: float | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 5.0) -> None:
        """Start the thread; returns once the OS watcher is set up (or after ``timeout``)."""
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="hookengine-reload", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)

    def stop(self, timeout: float = 2.0) -> bool:
        """Ask the thread to stop and wait at most ``timeout`` s; False if it is still stuck."""
        self._stop.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        if thread.is_alive():
            log.warning("the reload watcher did not stop within %.1f s; left behind", timeout)
            return False
        return True

    @property
    def stopping(self) -> threading.Event:
        """Set once ``stop`` is asked for: a wait in a batch (``Reloader._confirmed``) ends
        early on it."""
        return self._stop

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    @property
    def stalled(self) -> bool:
        started = self._busy_since
        return started is not None and time.monotonic() - started > STALL_S

    def health(self) -> dict[str, Any]:
        """JSON data: whether the thread runs, is stuck in a batch, its errors and restarts."""
        return {
            "alive": self.alive,
            "stalled": self.stalled,
            "error": self.error,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at,
            "last_event_at": self.last_event_at,
            "restarts": self.restarts,
        }

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        delay, catch_up = self.backoff.first, False
        while not self._stop.is_set():
            try:
                self._watch(catch_up)
                delay = self.backoff.first
            except Exception as exc:  # noqa: BLE001 - the watcher's edge: report, reopen
                self._failed(exc)
                self.restarts += 1
                self._ready.set()
                self._stop.wait(delay)
                delay = self.backoff.after(delay)
            catch_up = True  # reopened: what changed in the gap was not seen
        self._ready.set()

    def _watch(self, catch_up: bool) -> None:
        """Watch the current folders until they change (return) or the engine closes."""
        import watchfiles

        dirs = self.dirs()
        if not dirs:  # nothing to watch yet: look again shortly
            self._ready.set()
            self._stop.wait(self.debounce_ms / 1000)
            return
        changes = watchfiles.watch(
            *sorted(dirs),
            watch_filter=None,
            debounce=self.debounce_ms,
            step=self.step_ms,
            stop_event=self._stop,
            rust_timeout=100,
            yield_on_timeout=True,
            recursive=False,
        )
        try:
            for batch in changes:  # the first batch comes once the OS watcher is set up
                self._ready.set()
                if catch_up:
                    catch_up = False
                    self._batch(None)
                if batch:
                    self.last_event_at = now_iso()
                    self._batch({Path(p) for _, p in batch})
                if self.dirs() != dirs:
                    return  # a hook moved: watch the new set of folders
        finally:
            changes.close()

    def _batch(self, paths: set[Path] | None) -> None:
        self._busy_since = time.monotonic()
        try:
            self.handle(paths)
        except Exception as exc:  # noqa: BLE001 - one bad batch never stops the watcher
            self._failed(exc)
        else:
            self.error = None
        finally:
            self._busy_since = None

    def _failed(self, exc: Exception) -> None:
        log.error("reload watcher: %s: %s", type(exc).__name__, exc, exc_info=exc)
        self.error = self.last_error = f"{type(exc).__name__}: {exc}"
        self.last_error_at = now_iso()


__all__ = ["STALL_S", "Backoff", "Watcher"]
