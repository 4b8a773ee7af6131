"""What every hook kind implements, and the context a hook runs in."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.points import Point, Scope
from engine.policy import Mode, OnError

if TYPE_CHECKING:
    from engine.store import Store

__all__ = ["Hook", "HookContext", "Memo", "Mode", "OnError"]


@dataclass
class HookContext:
    """What a hook may use while it handles one event. One context per hook per evaluation."""

    agent: str
    scope: Scope
    store: Store
    memo: Memo
    """In-process memory of this hook (counters, reminders); survives reloads of the hook."""
    logs: list[str] = field(default_factory=list)
    """Lines the hook logged; they go into the record."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """UI events (status / message / citation) the hook emitted; they go into the outcome."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Anything else worth recording (judge requests and answers, state writes)."""
    replay: Mapping[str, Any] | None = None
    """During replay: this hook's recorded extras, so judge answers are not asked again."""

    @property
    def scope_key(self) -> str:
        return self.scope.key()


class Memo:
    """A small thread-safe in-process dict per hook: counters and flags by scope key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {}

    def update(self, key: str, fn: Any, default: Any = None) -> Any:
        """Atomically replace ``data[key]`` by ``fn(old)`` and return the new value."""
        with self._lock:
            value = fn(self._data.get(key, default))
            self._data[key] = value
            return value

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._data.get(key, default)

    def pop(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._data.pop(key, default)


class Hook(Protocol):
    """A loaded hook, ready to run. Built once per (re)load; called from many threads."""

    name: str
    kind: str
    version: str
    """Hash of the hook's YAML (and script): records say which version decided."""
    on_error: OnError
    mode: Mode
    source: Path
    """The YAML file the hook came from."""
    points: frozenset[Point]
    """The points this hook subscribes to."""

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        """Handle ``event`` at ``point``; return a change (a mapping) or ``None``.

        Raise anything to fail: the pipeline records it and applies the error policy.
        """
        ...

    def close(self) -> None:
        """Release what the hook holds (called when a reload replaces it)."""
        ...
