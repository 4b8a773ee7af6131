"""What every hook kind implements, and the context a hook runs in."""

from __future__ import annotations

import threading
from collections import OrderedDict
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


MEMO_KEYS = 10_000
"""Keys one hook's Memo keeps; the least recently used go first, so memory stays bounded
however many users and sessions arrive (an evicted counter starts again from its default)."""


class Memo:
    """A small thread-safe in-process dict per hook: counters and flags by scope key, the
    ``max_keys`` most recently used kept."""

    def __init__(self, max_keys: int = MEMO_KEYS) -> None:
        self._lock = threading.Lock()
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._max = max_keys

    def update(self, key: str, fn: Any, default: Any = None) -> Any:
        """Atomically replace ``data[key]`` by ``fn(old)`` and return the new value."""
        with self._lock:
            value = fn(self._data.get(key, default))
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)
            return value

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
            return self._data.get(key, default)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

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
