"""Hot reload: file changes -> re-read, rebuild, test -> atomic swap; keeps the last good version.

A reload reads an agent's files into specs, checks that what it read is still what is on disk
(and reads again if not), builds the hooks that changed (unchanged ones are reused), runs their
YAML tests, and only then swaps the agent's pipeline; any problem keeps the last good pipeline
and is reported (log, ``status()``, listeners) with file and line. A replaced pipeline's hooks
are closed once no evaluation that started on it is still running. What a reload reads, and how
it tells what changed, lives in ``engine.reload_reads``; the watcher thread, which reports every
error and never dies, in ``engine.reload_watch``. Files are read outside the reload lock.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config.loader import AgentSpec, HookSpec, load_agent
from engine.errors import ConfigError, Problem
from engine.pipeline import Pipeline, Slot
from engine.points import Point
from engine.reload_events import AgentState, ReloadEvent, error_data, now_iso
from engine.reload_reads import READ_ATTEMPTS as READ_ATTEMPTS
from engine.reload_reads import (
    describe,
    files_of,
    read_checked,
    read_host,
    read_stable,
    shown,
    slot_key,
    tests_key,
    wanted_files,
)
from engine.reload_watch import Watcher
from engine.yamltests import as_problems, run_hooks

if TYPE_CHECKING:
    from engine.runtime import Agent, Engine

log = logging.getLogger("engine.reload")

CLOSE_WAIT_S = 2.0
"""How long ``close()`` waits for the watcher thread, then for a reload in progress."""
CONFIRM_S = 1.0
"""How long the files of a watched change that takes a guard away (a hook dropped from
``agent.yaml``, a script losing an ``on_<point>`` function) must stay as they were read before
it goes live: a save paused halfway (truncate, part written, the rest later) reads as such a
change, and the rest of the save, landing meanwhile, is what goes live instead."""
_DEFINED = re.compile(r"\bon_([a-z_]+)\b")


# -- the reloader --------------------------------------------------------------------------------


class Reloader:
    """Rebuilds and swaps an engine's agents when their files change; one per engine.

    Reloads are serialized; evaluations never wait for one (they take the pipeline that is
    live when they start).
    """

    def __init__(self, engine: Engine, *, debounce_ms: int = 400, step_ms: int = 30) -> None:
        self.engine = engine
        self.root = engine.project.root
        self.specs: dict[str, AgentSpec] = dict(engine.project.agents)
        self.host_specs = tuple(engine.project.host_hooks)
        self.settings = engine.project.settings
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        every = [*self.host_specs, *(h for a in self.specs.values() for h in a.hooks)]
        self.tested = {s.path: tests_key(s) for s in every}
        started = now_iso()
        self.states = {name: AgentState(started) for name in self.specs}
        self.retired: list[tuple[Agent, Pipeline]] = []
        self._closed_hooks: set[int] = set()
        self._lock = threading.RLock()
        self._listeners: list[Callable[[ReloadEvent], None]] = []
        self.watcher = Watcher(
            self.watched_dirs, self._on_changes, debounce_ms=debounce_ms, step_ms=step_ms
        )

    # -- reloading ------------------------------------------------------------------------------

    def reload_agent(
        self, name: str, files: tuple[str, ...] = (), confirm_s: float = 0.0
    ) -> ReloadEvent:
        """Re-read, rebuild and test agent ``name``; swap it in if all is well.

        Files are read before the reload lock is taken, so a slow or stuck read never holds
        up ``close()`` or another agent's reload. With ``confirm_s`` (the watcher's
        ``CONFIRM_S``), a read that takes a guard away is used only once the files are still
        the same ``confirm_s`` later (see ``_confirmed``)."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            host = self.host_specs
            read = self._confirmed(name, self._read_agent(name, host), host, confirm_s)
            with self._lock:  # the host layer changed meanwhile: read again with the new one
                if self.host_specs is host or attempt == READ_ATTEMPTS:
                    return self._publish(self._rebuild(name, files, read))
        raise AssertionError("unreachable: the last attempt always returns")

    def _confirmed(
        self,
        name: str,
        read: AgentSpec | Exception,
        host: tuple[HookSpec, ...],
        confirm_s: float,
    ) -> AgentSpec | Exception:
        """``read``, or a later read of the agent's files when ``read`` takes a guard away
        (``weakens``) and the files changed within ``confirm_s`` after it: a half-written
        save is never what goes live while the rest of it is on its way."""
        for _ in range(READ_ATTEMPTS):
            if confirm_s <= 0 or isinstance(read, Exception):
                return read
            if not weakens(self.specs[name], read):
                return read
            if self.watcher.stopping.wait(confirm_s):  # closing: nothing goes live anyway
                return read
            again = self._read_agent(name, host)
            if not isinstance(again, Exception) and fingerprint(again) == fingerprint(read):
                return read  # it stayed: the edit is meant
            read = again
        return read

    def _read_agent(self, name: str, host: tuple[HookSpec, ...]) -> AgentSpec | Exception:
        """The agent's files read consistently, or the error that stopped the read."""
        folder = self.root / "agents" / name
        owner = folder / "agent.yaml"
        try:
            return read_checked(
                folder,
                owner,
                lambda: read_stable(
                    owner, lambda: load_agent(self.root, name, host), lambda s: list(s.hooks)
                ),
            )
        except Exception as exc:  # noqa: BLE001 - the reload edge: reported by _rebuild
            return exc

    def reload_host(self, files: tuple[str, ...] = (), confirm_s: float = 0.0) -> list[ReloadEvent]:
        """Re-read the host layer (engine.yaml, config/hooks); rebuild every agent with it.

        With ``confirm_s`` (the watcher's ``CONFIRM_S``), a read that takes a host hook or a
        point it guarded away is used only once the host files are still the same
        ``confirm_s`` later, and so is each agent's read (``_confirmed``)."""
        engine_yaml = self.root / "engine.yaml"
        read = self._confirmed_host(self._read_host(), confirm_s)
        if isinstance(read, Exception):  # the reload edge: report, keep last good
            return self._refuse_all(_problems(read, engine_yaml), files)
        settings, specs = read
        reads = {
            n: self._confirmed(n, self._read_agent(n, specs), specs, confirm_s)
            for n in self.engine.agents
        }
        with self._lock:
            try:
                slots = self._build(specs, "host", self.engine.host_slots)
                self._test(specs, slots)
            except Exception as exc:  # noqa: BLE001 - the reload edge: report, keep last good
                return self._refuse_all(_problems(exc, engine_yaml), files)
            notes = describe(self.host_specs, specs, "host") + self._settings_note(settings)
            self.host_specs, self.engine.host_slots = specs, slots
            self.engine.project = dataclasses.replace(self.engine.project, host_hooks=specs)
            return [
                self._publish(self._rebuild(n, files, reads[n], notes)) for n in self.engine.agents
            ]

    def _read_host(self) -> tuple[Any, tuple[HookSpec, ...]] | Exception:
        """engine.yaml's settings and the host layer's hooks, read consistently, or the error
        that stopped the read."""
        engine_yaml = self.root / "engine.yaml"
        try:
            read: tuple[Any, tuple[HookSpec, ...]] = read_checked(
                self.root,
                engine_yaml,
                lambda: read_stable(
                    engine_yaml, lambda: read_host(self.root), lambda r: list(r[1])
                ),
            )
        except Exception as exc:  # noqa: BLE001 - the reload edge: reported by the caller
            return exc
        return read

    def _confirmed_host(
        self, read: tuple[Any, tuple[HookSpec, ...]] | Exception, confirm_s: float
    ) -> tuple[Any, tuple[HookSpec, ...]] | Exception:
        """``_confirmed`` for the host layer: a read that takes a host guard away goes live
        only if a read ``confirm_s`` later finds the same files."""
        for _ in range(READ_ATTEMPTS):
            if confirm_s <= 0 or isinstance(read, Exception):
                return read
            if not guarded_by(self.host_specs) - guarded_by(read[1]):
                return read
            if self.watcher.stopping.wait(confirm_s):  # closing: nothing goes live anyway
                return read
            again = self._read_host()
            if not isinstance(again, Exception) and host_fingerprint(again) == host_fingerprint(
                read
            ):
                return read  # it stayed: the edit is meant
            read = again
        return read

    def _refuse_all(self, problems: list[Problem], files: tuple[str, ...]) -> list[ReloadEvent]:
        with self._lock:
            return [self._publish(self._refused(n, problems, files)) for n in self.engine.agents]

    def _settings_note(self, settings: Any) -> list[str]:
        keep = {"hooks", "hook_files", "records"}
        was, now = self.settings.model_dump(exclude=keep), settings.model_dump(exclude=keep)
        if was == now:
            return []
        changed = ", ".join(k for k in now if was.get(k) != now.get(k))
        return [f"engine.yaml: {changed} take effect on restart"]

    def _rebuild(
        self,
        name: str,
        files: tuple[str, ...],
        read: AgentSpec | Exception,
        notes: list[str] | None = None,
    ) -> ReloadEvent:
        """Build and test what ``_read_agent`` read, and swap it in (under the reload lock)."""
        agent = self.engine.agent(name)
        current = agent.pipeline
        owner = self.root / "agents" / name / "agent.yaml"
        tools = None
        try:
            if isinstance(read, Exception):
                raise read
            spec = read
            if self._same(spec, current) and spec.tools_version == agent.tools.version:
                self._test(spec.hooks, None)
                return ReloadEvent(name, True, current.generation, now_iso(), files=files)
            if spec.tools_version != agent.tools.version:
                tools = self.engine.make_tools(spec)
                self.engine.check_delegates({name: tools})
            slots = self._build(spec.hooks, "agent", current.slots)
            self._test(spec.hooks, slots)
        except Exception as exc:  # noqa: BLE001 - the reload edge: report, keep last good
            if tools is not None:
                tools.close()
            return self._refused(name, _problems(exc, owner), files)
        if tools is not None:
            agent.swap_tools(tools).retire()  # closed once no call runs on it
        changes = (notes or []) + describe(self.specs[name].hooks, spec.hooks, "agent")
        if tools is not None:
            changes.append(f"tools: {', '.join(sorted(tools.tools)) or 'none'}")
        records = spec.config.records or self.engine.settings.records
        pipeline = Pipeline(name, slots + self.engine.host_slots, self._next_generation(), records)
        self.retired.append((agent, agent.swap(pipeline)))
        self.specs[name] = spec
        self.engine.project = dataclasses.replace(
            self.engine.project, agents={**self.engine.project.agents, name: spec}
        )
        self.sweep()
        return ReloadEvent(
            name,
            True,
            pipeline.generation,
            now_iso(),
            True,
            tuple(changes) or ("agent.yaml changed",),
            (),
            files,
        )

    def _same(self, spec: AgentSpec, current: Pipeline) -> bool:
        """Nothing to swap: same agent.yaml, same hook versions, the live host layer."""
        old = self.specs[spec.name]
        host = tuple(s for s in current.slots if s.layer == "host")
        return (
            spec.config == old.config
            and host == self.engine.host_slots
            and [slot_key(h) for h in spec.hooks] == [slot_key(h) for h in old.hooks]
        )

    def _build(
        self, specs: tuple[HookSpec, ...], layer: str, current: tuple[Slot, ...]
    ) -> tuple[Slot, ...]:
        """The layer's slots: unchanged hooks reused, the others built (ConfigError if not)."""
        reuse = {slot_key(s.hook): s for s in current if s.layer == layer}
        fresh = iter(self.engine.build_slots([s for s in specs if slot_key(s) not in reuse], layer))
        return tuple(reuse.get(slot_key(s)) or next(fresh) for s in specs)

    def _test(self, specs: tuple[HookSpec, ...], slots: tuple[Slot, ...] | None) -> None:
        """Run the YAML tests of hooks whose version or tests changed; ConfigError on failure
        (the new slots that are not live are closed)."""
        changed = [s for s in specs if self.tested.get(s.path) != tests_key(s)]
        report = run_hooks(changed, self.engine.env)
        if not report.ok:
            if slots is not None:
                self._close_unused(slots)
            raise ConfigError(as_problems(report))
        self.tested.update({s.path: tests_key(s) for s in changed})

    def _refused(self, name: str, problems: list[Problem], files: tuple[str, ...]) -> ReloadEvent:
        generation = self.engine.agent(name).pipeline.generation
        return ReloadEvent(
            name, False, generation, now_iso(), problems=tuple(problems), files=files
        )

    def _next_generation(self) -> int:
        self.engine.generation += 1
        return self.engine.generation

    def _publish(self, event: ReloadEvent) -> ReloadEvent:
        state = self.states.setdefault(event.agent, AgentState(event.time))
        if event.ok:
            state.error = None
            if event.swapped:
                state.loaded_at, state.reloads = event.time, state.reloads + 1
                log.info("%s", "\n".join(event.lines()))
        else:
            state.error = state.last_error = event
            log.error("%s", "\n".join(event.lines()))
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("reload listener failed")
        return event

    def subscribe(self, listener: Callable[[ReloadEvent], None]) -> Callable[[], None]:
        """Call ``listener`` after every reload attempt; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # -- closing replaced hooks -----------------------------------------------------------------

    def _live_hooks(self) -> set[int]:
        slots = [*self.engine.host_slots]
        for name in self.engine.agents:
            slots += self.engine.agent(name).pipeline.slots
        return {id(s.hook) for s in slots}

    def sweep(self) -> None:
        """Close the hooks of replaced pipelines that no evaluation runs on any more."""
        with self._lock:
            busy = [(a, p) for a, p in self.retired if a.in_use(p)]
            done = [p for a, p in self.retired if (a, p) not in busy]
            self.retired = busy
            keep = self._live_hooks() | {id(s.hook) for _, p in busy for s in p.slots}
            for pipeline in done:
                self._close_unused(pipeline.slots, keep)

    def _close_unused(self, slots: tuple[Slot, ...], keep: set[int] | None = None) -> None:
        keep = self._live_hooks() if keep is None else keep
        for slot in slots:
            if id(slot.hook) in keep or id(slot.hook) in self._closed_hooks:
                continue
            self._closed_hooks.add(id(slot.hook))
            try:
                slot.hook.close()
            except Exception:
                log.exception("closing hook %s failed", slot.hook.name)

    # -- status ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """JSON data: whether files are watched and the watcher's health; per agent its
        generation, last (re)load, hook versions, and the reload error if the latest attempt
        was refused."""
        agents = {}
        for name in self.engine.agents:
            pipeline, state = self.engine.agent(name).pipeline, self.states[name]
            agents[name] = {
                "generation": pipeline.generation,
                "loaded_at": state.loaded_at,
                "reloads": state.reloads,
                "hooks": {s.hook.name: s.hook.version for s in pipeline.slots},
                "error": error_data(state.error),
                "last_error": error_data(state.last_error),
            }
        return {
            "watching": self.watching,
            "watcher": self.watcher.health(),
            "generation": self.engine.generation,
            "agents": agents,
        }

    # -- watching -------------------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """The watcher thread runs and is not stuck in a batch."""
        return self.watcher.alive and not self.watcher.stalled

    def watched_files(self) -> dict[Path, str | None]:
        """Every file that matters, mapped to its agent (None: the host layer, every agent)."""
        found: dict[Path, str | None] = {}
        for name, spec in self.specs.items():
            files = (
                set(spec.files)
                | files_of(spec.hooks)
                | wanted_files(spec.folder, spec.folder / "agent.yaml", root=self.root)
            )
            found.update(dict.fromkeys(files, name))
            # a session's own hooks (engine/session.py) reload with their agent
            found.update(dict.fromkeys(self.engine.agent(name).sessions.files(), name))
        host = files_of(self.host_specs) | wanted_files(
            self.root, self.root / "engine.yaml", root=self.root
        )
        found.update(dict.fromkeys(host, None))
        return found

    def watched_dirs(self) -> set[Path]:
        return {p.parent for p in self.watched_files() if p.parent.is_dir()}

    def start(self) -> None:
        """Watch the files in a background thread; returns once the watcher is live."""
        self.watcher.start()

    def _on_changes(self, paths: set[Path] | None) -> None:
        """The watcher's callback: reload what ``paths`` touch (None: everything watched)."""
        self.handle(set(self.watched_files()) if paths is None else paths)
        self.sweep()

    def handle(self, paths: set[Path]) -> list[ReloadEvent]:
        """Reload what ``paths`` (changed files) touch: the host layer (and so every agent), or
        only the agents they belong to."""
        owners = self.watched_files()
        relevant = {p for p in paths if p in owners}  # a watched symlink to a folder: no suffix
        if not relevant:
            return []
        touched = {owners[p] for p in relevant}
        files = tuple(sorted(shown(p) for p in relevant))
        if None in touched:
            return self.reload_host(files, CONFIRM_S)
        return [self._reload_guarded(n, files) for n in sorted(t for t in touched if t)]

    def _reload_guarded(self, name: str, files: tuple[str, ...]) -> ReloadEvent:
        """``reload_agent``, with an unexpected error reported as that agent's refusal."""
        try:
            return self.reload_agent(name, files, CONFIRM_S)
        except Exception as exc:  # noqa: BLE001 - one agent's failure never stops the others
            owner = self.root / "agents" / name / "agent.yaml"
            with self._lock:
                return self._publish(self._refused(name, _problems(exc, owner), files))

    def close(self) -> None:
        """Stop watching and close every replaced pipeline's hooks (the engine is closing)."""
        self.watcher.stop(CLOSE_WAIT_S)
        if not self._lock.acquire(timeout=CLOSE_WAIT_S):
            log.warning("a reload is still running; replaced hooks close with the engine")
            return
        try:
            retired, self.retired = self.retired, []
            keep = self._live_hooks()
            for _, pipeline in retired:
                self._close_unused(pipeline.slots, keep)
        finally:
            self._lock.release()


def guarded(spec: AgentSpec) -> set[tuple[str, str]]:
    """What an agent's hooks guard (see ``guarded_by``)."""
    return guarded_by(spec.hooks)


def guarded_by(hooks: tuple[HookSpec, ...]) -> set[tuple[str, str]]:
    """What ``hooks`` guard: (hook file, point) for each point a script hook takes (its
    ``points:``, else the ``on_<point>`` names its script holds), (hook file, ``*``) for a
    hook of another kind."""
    known = {str(point) for point in Point}
    found: set[tuple[str, str]] = set()
    for hook in hooks:
        where = str(hook.path)
        if hook.kind != "script_hook":
            found.add((where, "*"))
            continue
        declared = getattr(hook.config, "points", None)
        names = (
            {str(p) for p in declared}
            if declared
            else set(_DEFINED.findall(hook.script_text or "")) & known
        )
        found |= {(where, point) for point in names}
    return found


def weakens(old: AgentSpec, new: AgentSpec) -> bool:
    """Whether ``new`` takes away a hook, or a point a script hook guarded, that ``old``
    has (what a save cut short looks like: the end of a file, or of a ``hooks:`` list)."""
    return bool(guarded(old) - guarded(new))


def fingerprint(spec: AgentSpec) -> tuple[Any, ...]:
    """What a read of an agent's files found, to tell whether a second read found the same."""
    hooks = tuple((str(h.path), h.version) for h in spec.hooks)
    return (spec.config.model_dump_json(), hooks, spec.tools_version)


def host_fingerprint(read: tuple[Any, tuple[HookSpec, ...]]) -> tuple[Any, ...]:
    """What a read of the host layer found (settings, hook files and versions)."""
    settings, specs = read
    return (settings.model_dump_json(), tuple((str(h.path), h.version) for h in specs))


def _problems(exc: Exception, owner: Path) -> list[Problem]:
    if isinstance(exc, ConfigError):
        return exc.problems
    return [Problem(shown(owner), None, None, f"{type(exc).__name__}: {exc}")]


__all__ = ["AgentState", "ReloadEvent", "Reloader", "describe"]
