"""Session layers: a conversation's own hooks, read from its agent's hooks/ folder, built once
per (hooks, agent generation), shared by the sessions that name them, closed when unused.

The order rule (``compose``): the agent's hooks (unless dropped), the session's, then the host
layer; a hook set in several layers runs once, in its outermost one.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from engine.config.loader import HookSpec, load_hook_file, show
from engine.errors import ConfigError, EventError, Problem
from engine.kinds import Hook
from engine.pipeline import Pipeline, Slot
from engine.points import suggest

if TYPE_CHECKING:
    from engine.runtime import Agent

log = logging.getLogger("engine.session")

SESSION_LAYER = "session"
"""The layer name of a session's hooks, in pipelines, records and ``explain``."""

_HOOK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,99}")
"""A session hook's name: a file stem in the agent's hooks/ folder (no dots: no path, no
``guard.test``, which is a hook's test file)."""

Key = tuple[tuple[str, ...], bool]
"""A session layer: its hook names in order, and whether the agent's own hooks are dropped."""


def hooks_there(folder: Path) -> list[str]:
    """The hook names in an agent's hooks/ folder: ``<name>.yaml`` files, test files left out."""
    try:
        files = [p for p in folder.glob("*.yaml") if p.is_file()]
    except OSError:
        return []
    return sorted(p.stem for p in files if _HOOK_NAME.fullmatch(p.stem))


def read_session_hooks(agent_folder: Path, names: Sequence[str], root: Path) -> list[HookSpec]:
    """The hooks ``names`` of the agent's hooks/ folder, validated.

    Raises:
        ConfigError: a name is not a hook there (naming the folder and the hooks it holds),
            is listed twice, or its file is invalid; every problem, not the first.
    """
    folder = agent_folder / "hooks"
    there, specs, problems = hooks_there(folder), [], []
    for i, name in enumerate(names):
        if not isinstance(name, str) or name not in there:
            problems.append(_unknown(folder, name, there, i))
        elif name in names[:i]:
            problems.append(Problem(show(folder), None, f"hooks[{i}]", f"{name!r} is listed twice"))
        else:
            spec, found = load_hook_file(folder / f"{name}.yaml", layer="agent", root=root)
            problems += found
            specs += [spec] if spec is not None else []
    if problems:
        raise ConfigError(problems)
    return specs


def _unknown(folder: Path, name: Any, there: list[str], i: int) -> Problem:
    listed = ", ".join(there) or "none"
    hint = suggest(name, there) if isinstance(name, str) else None
    return Problem(
        show(folder),
        None,
        f"hooks[{i}]",
        f"no hook {str(name)[:100]!r} in {show(folder)} (hooks there: {listed})",
        f"did you mean {hint!r}?" if hint else "a session names hooks/<name>.yaml files",
    )


def compose(base: Pipeline, session: Sequence[Slot], key: Key) -> Pipeline:
    """``base``'s pipeline with ``session``'s slots (the hooks of ``key``) between its agent
    and host layers. A hook set in several layers runs once, in its outermost one."""
    names, drop_agent_hooks = key
    host = [s for s in base.slots if s.layer == "host"]
    outer = {s.hook.name for s in host}
    kept = [s for s in session if s.hook.name not in outer]
    outer |= {s.hook.name for s in kept}
    inner = [] if drop_agent_hooks else [s for s in base.slots if s.layer == "agent"]
    inner = [s for s in inner if s.hook.name not in outer]
    layer = MappingProxyType({"hooks": list(names), "drop_agent_hooks": drop_agent_hooks})
    slots = (*inner, *kept, *host)
    return Pipeline(base.agent, slots, base.generation, base.records, layer)


@dataclass
class _Layer:
    """One session layer's pipeline, shared by the handles that name it."""

    key: Key
    specs: list[HookSpec]
    pipeline: Pipeline
    built: tuple[Hook, ...]
    """The session's hooks, in order: built for this layer, closed when it no longer runs."""
    handles: int = 0
    stale: bool = False
    """A file of the agent changed: read the session's hooks again at the next evaluation."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Held while the layer is rebuilt: its sessions wait, others do not."""


class SessionLayers:
    """An agent's session layers: built once per (hooks, generation), shared, closed when
    unused. Thread-safe; an evaluation waits only for a rebuild of its own layer."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._lock = threading.RLock()
        self._layers: dict[Key, _Layer] = {}
        self._running: dict[int, tuple[Pipeline, int]] = {}
        """Evaluations in flight per pipeline (by id): their hooks are not closed."""
        self._retired: list[Hook] = []
        """Hooks no layer has any more, closed once no evaluation runs them."""
        self._unsubscribe: Any = None

    def open(self, key: Key) -> None:
        """Count a handle of ``key``, building its layer if none is live (ConfigError if the
        hooks cannot be read or built). The build runs outside the lock."""
        with self._lock:
            layer = self._layers.get(key)
            if layer is not None:
                layer.handles += 1
                return
        new = self._build(key, self.agent.pipeline, None)
        with self._lock:
            layer = self._layers.setdefault(key, new)
            if layer is not new:  # another handle built it meanwhile
                self._retire(new.built)
            layer.handles += 1
            self._watch()

    def release(self, key: Key) -> None:
        """A handle of ``key`` is closed; the last one retires the layer."""
        with self._lock:
            layer = self._layers.get(key)
            if layer is None:
                return
            layer.handles -= 1
            if layer.handles <= 0:
                del self._layers[key]
                self._retire(layer.built)

    def take(self, key: Key, base: Pipeline) -> Pipeline:
        """The layer's pipeline over ``base`` (the agent's snapshot), counted as running until
        ``give_back``; rebuilt first when the agent reloaded or a file changed (only the
        sessions of this layer wait for that)."""
        with self._lock:
            layer = self._layers.get(key)
        if layer is None:
            raise EventError([{"loc": ["session"], "msg": "the session handle is closed"}])
        with layer.lock:
            if layer.pipeline.generation != base.generation or layer.stale:
                self._refresh(layer, base)
            with self._lock:
                pipeline = layer.pipeline
                _, count = self._running.get(id(pipeline), (pipeline, 0))
                self._running[id(pipeline)] = pipeline, count + 1
                return pipeline

    def give_back(self, pipeline: Pipeline) -> None:
        with self._lock:
            _, count = self._running.pop(id(pipeline))
            if count > 1:
                self._running[id(pipeline)] = pipeline, count - 1
            else:
                self._sweep()

    def close(self) -> None:
        """Close every layer's own hooks (the engine is closing)."""
        with self._lock:
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            for layer in self._layers.values():
                self._retired += layer.built
            self._layers.clear()
            self._running.clear()
            self._sweep()

    # -- building -------------------------------------------------------------------------------

    def _build(self, key: Key, base: Pipeline, last: _Layer | None) -> _Layer:
        """The layer of ``key`` over ``base``, its hooks reused from ``last`` where unchanged.

        A layer builds its own hooks, even those the agent has too: the agent's are closed
        when a reload replaces them, and a layer that keeps its last good hooks (a session
        hook that no longer loads) must not run closed ones."""
        engine = self.agent.engine
        folder = engine.project.root / "agents" / self.agent.name
        specs = read_session_hooks(folder, key[0], engine.project.root)
        reuse = {_key_of(h): h for h in (last.built if last else ())}
        fresh = iter(engine.build_slots([s for s in specs if _spec_key(s) not in reuse], "agent"))
        built = tuple(reuse.get(_spec_key(s)) or next(fresh).hook for s in specs)
        slots = [Slot(h, SESSION_LAYER) for h in built]
        return _Layer(key, specs, compose(base, slots, key), built)

    def _refresh(self, layer: _Layer, base: Pipeline) -> None:
        """Rebuild ``layer`` over ``base``; a session hook that no longer loads keeps the last
        good version of the session's hooks (reported in the log)."""
        layer.stale = False  # a change heard while reading makes it stale again
        try:
            new = self._build(layer.key, base, layer)
        except ConfigError as exc:
            log.error("agent %s: a session's hooks did not reload:\n%s", self.agent.name, exc)
            slots = [s for s in layer.pipeline.slots if s.layer == SESSION_LAYER]
            new = _Layer(
                layer.key,
                layer.specs,
                compose(base, slots, layer.key),
                layer.built,
            )
        with self._lock:
            gone = _without(layer.built, new.built)
            layer.specs, layer.pipeline, layer.built = new.specs, new.pipeline, new.built
            self._retire(gone)

    def _retire(self, hooks: tuple[Hook, ...]) -> None:
        self._retired += hooks
        self._sweep()

    def _sweep(self) -> None:
        """Close the retired hooks that no evaluation in flight runs (the others wait)."""
        running = {id(s.hook) for p, _ in self._running.values() for s in p.slots}
        waiting = []
        for hook in self._retired:
            if id(hook) in running:
                waiting.append(hook)
            else:
                _close(hook)
        self._retired = waiting

    # -- following reloads ----------------------------------------------------------------------

    def _watch(self) -> None:
        """Hear the agent's reloads: a reload that swapped nothing (a session hook's own file
        changed) still makes the layers read their hooks again."""
        reloader = self.agent.engine.reloader
        if self._unsubscribe is None and reloader is not None:
            ref = weakref.ref(self)
            self._unsubscribe = reloader.subscribe(lambda event: _heard(ref, event))

    def mark_stale(self) -> None:
        with self._lock:
            for layer in self._layers.values():
                layer.stale = True

    def files(self) -> set[Path]:
        """The files of the live layers' hooks (for the watcher)."""
        with self._lock:
            specs = [s for layer in self._layers.values() for s in layer.specs]
        return {s.path for s in specs} | {s.script_path for s in specs if s.script_path}


def _heard(ref: weakref.ref[SessionLayers], event: Any) -> None:
    """A reload event (engine/reload_events.py, a layer above) for the agent's layers."""
    layers = ref()
    if layers is not None and event.agent == layers.agent.name and event.ok:
        layers.mark_stale()


def _without(hooks: tuple[Hook, ...], kept: tuple[Hook, ...]) -> tuple[Hook, ...]:
    ids = {id(h) for h in kept}
    return tuple(h for h in hooks if id(h) not in ids)


def _key_of(hook: Hook) -> tuple[str, str, str]:
    return str(Path(hook.source)), hook.version, hook.name


def _spec_key(spec: HookSpec) -> tuple[str, str, str]:
    return str(spec.path), spec.version, spec.name


def _close(hook: Hook) -> None:
    try:
        hook.close()
    except Exception:
        log.exception("closing hook %s failed", hook.name)


def session_key(hooks: Any, drop_agent_hooks: Any) -> Key:
    """The key of a session's layer; EventError naming a wrong argument."""
    errors = []
    if isinstance(hooks, str) or not isinstance(hooks, Sequence):
        errors.append({"loc": ["hooks"], "msg": "must be a list of hook names"})
    elif not all(isinstance(h, str) for h in hooks):
        errors.append({"loc": ["hooks"], "msg": "every hook name must be text"})
    if not isinstance(drop_agent_hooks, bool):
        errors.append({"loc": ["drop_agent_hooks"], "msg": "must be true or false"})
    if errors:
        raise EventError(errors)
    return tuple(hooks), drop_agent_hooks


__all__ = [
    "SESSION_LAYER",
    "Key",
    "SessionLayers",
    "compose",
    "hooks_there",
    "read_session_hooks",
    "session_key",
]
