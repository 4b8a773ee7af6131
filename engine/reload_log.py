"""The recent successful reloads of a watching engine: what ``serve --watch`` logs and
``GET /v1/status`` lists (generation, files, hash)."""

from __future__ import annotations

import collections
import hashlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

from engine.reload import ReloadEvent
from engine.runtime import Engine

KEPT = 20
"""How many reloads the log keeps (the newest)."""

_LOGS: weakref.WeakKeyDictionary[Engine, ReloadLog] = weakref.WeakKeyDictionary()
_LOGS_LOCK = threading.Lock()


def hooks_hash(engine: Engine, agent: str) -> str:
    """A short hash of the hooks an agent runs (each hook's name and version), so a reload
    can be matched with the files deployed."""
    slots = engine.agent(agent).pipeline.slots
    text = "\n".join(f"{s.hook.name}={s.hook.version}" for s in slots)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class ReloadLog:
    """Listens to an engine's reloads; keeps the newest ``KEPT`` that went live."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._entries: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEPT)
        self._lock = threading.Lock()
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with each new entry (``serve --watch`` prints it)."""
        reloader = getattr(engine, "reloader", None)
        if reloader is not None:
            reloader.subscribe(self._heard)

    @classmethod
    def of(cls, engine: Engine) -> ReloadLog:
        """The one log of ``engine`` (made on first use; a stand-in engine that cannot be
        weakly referenced, as tests use, gets a log of its own)."""
        with _LOGS_LOCK:
            try:
                return _LOGS[engine]
            except KeyError:
                log = _LOGS[engine] = cls(engine)
            except TypeError:
                log = cls(engine)
            return log

    def _heard(self, event: ReloadEvent) -> None:
        if not (event.ok and event.swapped):
            return
        entry = {
            "time": event.time,
            "agent": event.agent,
            "generation": event.generation,
            "files": list(event.files),
            "hash": hooks_hash(self.engine, event.agent),
        }
        with self._lock:
            self._entries.append(entry)
        for listener in list(self.listeners):
            listener(entry)

    def entries(self) -> list[dict[str, Any]]:
        """The reloads kept, oldest first."""
        with self._lock:
            return list(self._entries)


def entry_line(entry: dict[str, Any]) -> str:
    """One reload as the service logs it."""
    files = ", ".join(entry["files"]) or "-"
    return (
        f"reloaded {entry['agent']}: generation {entry['generation']}, "
        f"files {files}, hash {entry['hash']}"
    )


__all__ = ["KEPT", "ReloadLog", "entry_line", "hooks_hash"]
