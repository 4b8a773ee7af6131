"""The supervised worker pool: scripts compile and run in pre-started worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from engine.errors import ScriptLimitError
from engine.sandbox.supervise import KillLog, PoolPolicy, TokenBucket

_ROOT = Path(__file__).resolve().parents[2]
# The worker imports only engine/sandbox: the stubs keep engine/__init__ (the whole engine,
# pydantic and SQLAlchemy included) out of every worker's memory and start-up time.
_BOOT = (
    "import sys, types\n"
    "for name, sub in (('engine', 'engine'), ('engine.sandbox', 'engine/sandbox')):\n"
    "    m = types.ModuleType(name); m.__path__ = [sys.argv[1] + '/' + sub]\n"
    "    sys.modules[name] = m\n"
    "from engine.sandbox.worker import main\n"
    "main()\n"
)
START_TIMEOUT_S = 10.0
SPIN_S = 0.0002
"""How long a caller polls for an answer without sleeping before it blocks."""
GRACE_S = 0.25
"""Wall-clock time past a call's own limit before the parent kills the worker."""
BACKOFF_S = (0.1, 2.0)
"""The first and the longest wait between failed spawns: after spawning works again, the pool
is back within the longest wait plus a worker's start-up."""


class WorkerDied(Exception):
    """The worker closed its pipe, overran its deadline or answered nonsense."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


class Worker:
    """One worker process and its pipes; used by one thread at a time (the pool sees to it)."""

    def __init__(self, cwd: str) -> None:
        self.proc = subprocess.Popen(
            # -s -P is -I minus -E, which would ignore PYTHONHASHSEED; the env is only what follows.
            [sys.executable, "-s", "-P", "-c", _BOOT, str(_ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            # A fixed hash seed: a set of strings iterates in the same order in every worker.
            env={"LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"},
            close_fds=True,
        )
        self._out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._in = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._buf = b""
        self._ready = False
        self.known: set[str] = set()

    def wait_ready(self) -> None:
        """Wait for the worker's ready line (its start-up), at most START_TIMEOUT_S."""
        if not self._ready:
            self._read(time.monotonic() + START_TIMEOUT_S, 1024)
            self._ready = True

    def request(self, data: bytes, *, deadline_s: float, max_bytes: int) -> dict[str, Any]:
        """Send one request line and wait for its answer until the wall-clock deadline."""
        self.wait_ready()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._in, view) :]
        except OSError as exc:
            raise WorkerDied(f"worker pipe closed: {exc}") from exc
        return self._read(time.monotonic() + deadline_s, max_bytes)

    def _read(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        while b"\n" not in self._buf:
            if not self._spin():
                # Past the deadline, one last look: a host thread that waited for the GIL (or
                # the CPU) may wake late to an answer the worker gave in time.
                left = max(deadline - time.monotonic(), 0.0)
                if not self._poll.poll(left * 1000):
                    raise WorkerDied("worker overran its deadline", timed_out=True)
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise WorkerDied("worker exited")
            self._buf += chunk
            if len(self._buf) > max_bytes:
                raise WorkerDied(f"worker answer larger than {max_bytes} bytes")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise WorkerDied("worker answered malformed JSON") from exc
        if type(answer) is not dict:
            raise WorkerDied("worker answered a non-object")
        return answer

    def _spin(self) -> bool:
        """Poll without sleeping for a short while: most answers come within SPIN_S, and
        waking from a blocking poll costs more on a VM than the whole call."""
        until = time.perf_counter() + SPIN_S
        while time.perf_counter() < until:
            if self._poll.poll(0):
                return True
        return False

    def close(self) -> None:
        """End the process (EOF first, then kill) and reap it, so nothing is left behind."""
        proc = self.proc
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        self.proc.kill()
        self.close()


class _Ticket:
    """One call waiting in ``Workers.take`` (compared by identity)."""

    __slots__ = ("owner",)

    def __init__(self, owner: str | None) -> None:
        self.owner = owner


class Workers:
    """A thread-safe set of workers shared fairly between hooks.

    ``take`` waits at most the caller's own timeout and holds each hook (``owner``) to its
    share of the pool; a worker that failed is killed at once and replaced by a background
    thread, at a limited rate, so no caller pays for a spawn and a storm of kills cannot
    become a storm of processes. A hook that keeps killing workers is quarantined.
    """

    def __init__(self, size: int, policy: PoolPolicy = PoolPolicy()) -> None:  # noqa: B008
        """Start ``size`` workers. Those that cannot start (EAGAIN at a process limit, out of
        memory) are owed to the background spawner: the pool starts smaller and fills up.

        Raises:
            ScriptLimitError: a worker started and died (the interpreter is broken).
        """
        self._dir = tempfile.TemporaryDirectory(prefix="hookengine-sandbox-")
        self.size = max(1, size)
        self.policy = policy
        self.per_hook = policy.per_hook(self.size)
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        """Notified when a worker is given back or spawned, a slot frees, or the pool closes."""
        self._wanted = threading.Condition(self._lock)
        """Notified when a replacement is wanted or the pool closes (the spawner waits on it)."""
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._busy: dict[str, int] = {}
        self._waiting: list[_Ticket] = []
        """Calls in ``take``, first come first; each is served in this order (``_my_turn``)."""
        self._owed: deque[str | None] = deque()
        """Owners of killed workers, in order; each holds its slot until its replacement runs."""
        self._closed = False
        self._bucket = TokenBucket(policy.respawns_per_s, policy.respawn_burst, time.monotonic())
        self._kills = KillLog(policy.quarantine_kills, policy.quarantine_window_s)
        self._respawned: deque[float] = deque()
        self.spawned_total = 0
        self.spawn_failures = 0
        self.last_spawn_error: str | None = None
        """Why the newest spawn failed; None once one succeeded after it."""
        self._spawner: threading.Thread | None = None
        started = self._start_all()
        self._all.update(started)
        self._idle.extend(started)
        self.spawned_total = len(started)
        with self._lock:
            self._owed.extend([None] * (self.size - len(started)))
            # started now, it idles until needed: at a process limit no thread could start
            self._start_spawner()

    def _start_all(self) -> list[Worker]:
        """The workers that could start, ready (they start in parallel)."""
        started: list[Worker] = []
        for _ in range(self.size):
            try:
                started.append(Worker(self._dir.name))
            except OSError as exc:
                self._spawn_failed(exc)
        try:
            for worker in started:
                worker.wait_ready()
        except WorkerDied as exc:
            for worker in started:
                worker.kill()
            self._dir.cleanup()
            raise ScriptLimitError(
                f"sandbox workers did not start: {exc}", cause="crashed"
            ) from exc
        return started

    def _spawn_failed(self, exc: BaseException) -> None:
        self.spawn_failures += 1
        self.last_spawn_error = f"{type(exc).__name__}: {exc}"

    def take(self, owner: str | None, *, timeout_s: float) -> Worker:
        """A free worker within ``timeout_s``, and within ``owner``'s share of the pool.

        Raises:
            ScriptLimitError: cause 'quarantined' (at once), 'unavailable' (at once: no worker
                runs and spawning fails), 'busy' (none free in time) or 'crashed' (the pool is
                closed).
        """
        end = time.monotonic() + timeout_s
        ticket = _Ticket(owner)
        with self._lock:
            self._waiting.append(ticket)
            try:
                while True:
                    if self._closed:
                        raise ScriptLimitError("the sandbox is closed", cause="crashed")
                    if owner is not None and owner in self._kills.quarantined:
                        raise ScriptLimitError(
                            self._kills.quarantined[owner].reason, cause="quarantined"
                        )
                    self._start_spawner()  # it may have failed to start before
                    if not self._all and self.last_spawn_error is not None:
                        raise ScriptLimitError(self._unavailable_reason(), cause="unavailable")
                    if self._my_turn(ticket):
                        break
                    left = end - time.monotonic()
                    at_cap = owner is not None and self._busy.get(owner, 0) >= self.per_hook
                    if left <= 0:
                        if self._idle and not at_cap:
                            break  # out of time: a free worker beats the order
                        raise ScriptLimitError(self._busy_reason(at_cap, timeout_s), cause="busy")
                    self._freed.wait(left)
            except BaseException:
                self._waiting.remove(ticket)
                self._freed.notify_all()  # a waiter behind this one may be served now
                raise
            self._waiting.remove(ticket)
            if owner is not None:
                self._busy[owner] = self._busy.get(owner, 0) + 1
            # LIFO: the worker used last has its script context and caches hot.
            return self._idle.pop()

    def _my_turn(self, ticket: _Ticket) -> bool:
        """Under the lock: whether ``ticket`` gets an idle worker now, first come first served.

        Each waiter queued before it that could take a worker (one is idle, its hook is below
        its share) is served first. Without this order, a thread that gives a worker back and
        at once asks again takes it before the waiter it woke is scheduled, again and again:
        on a loaded machine that waiter was refused as ``busy`` while the hook's worker served
        a call every few milliseconds. A call whose wait runs out takes an idle worker within
        its hook's share whatever the order: a waiter ahead of it that is slow to wake (on a
        loaded machine) must not make it fail as ``busy`` beside a free worker.
        """
        idle = len(self._idle)
        served: dict[str, int] = {}
        for waiter in self._waiting:
            owner = waiter.owner
            fits = owner is None or self._busy.get(owner, 0) + served.get(owner, 0) < self.per_hook
            if waiter is ticket:
                return idle > 0 and fits
            if fits and idle:
                idle -= 1
                if owner is not None:
                    served[owner] = served.get(owner, 0) + 1
        return False

    def _unavailable_reason(self) -> str:
        return (
            f"sandbox unavailable: 0 of {self.size} workers are running and they cannot be "
            f"started ({self.last_spawn_error}); retrying in the background"
        )

    def _busy_reason(self, at_cap: bool, timeout_s: float) -> str:
        waited = f"within {timeout_s * 1000:.0f} ms"
        if at_cap:
            return (
                f"sandbox busy: this hook already holds its {self.per_hook} worker(s) "
                f"(scripts.max_workers_per_hook) and none came free {waited}"
            )
        return f"sandbox busy: no worker free {waited}"

    def give_back(self, worker: Worker, *, healthy: bool, owner: str | None = None) -> None:
        """Return a worker; one that failed is killed and counted against ``owner``. From its
        second kill within the quarantine window on, the owner's slot stays taken until the
        replacement runs (which slows a hook that keeps killing workers to the respawn rate);
        a first kill frees it at once, so one overrun on a loaded machine does not leave an
        innocent guard without a worker for the next second."""
        with self._lock:
            if healthy and not self._closed:
                self._release(owner)
                self._idle.append(worker)
                self._freed.notify_all()
                return
            self._all.discard(worker)
            if self._closed:
                self._release(owner)
            else:
                if owner is not None:
                    self._kills.record(owner, time.monotonic(), time.time())
                    if self._kills.recent(owner) < 2:
                        self._release(owner)
                        owner = None
                self._owed.append(owner)
                self._start_spawner()
                self._wanted.notify_all()
            self._freed.notify_all()
        worker.kill()

    def _release(self, owner: str | None) -> None:
        if owner is None:
            return
        left = self._busy.get(owner, 0) - 1
        if left > 0:
            self._busy[owner] = left
        else:
            self._busy.pop(owner, None)

    def _start_spawner(self) -> None:
        """Under the lock: make sure the spawner runs (it lives as long as the pool). A thread
        that cannot start (a process limit counts threads too) is tried again by the next
        ``take``, ``give_back`` or ``health``."""
        if not self._closed and (self._spawner is None or not self._spawner.is_alive()):
            spawner = threading.Thread(
                target=self._respawn_loop, name="hookengine-respawn", daemon=True
            )
            try:
                spawner.start()
            except RuntimeError as exc:
                self._spawn_failed(exc)
                return
            self._spawner = spawner

    def _respawn_loop(self) -> None:
        """Start one replacement per owed worker, no faster than the token bucket allows."""
        failures = 0
        while self._next_token():
            worker = self._start_one()
            if not isinstance(worker, Worker):
                with self._lock:  # back off, then retry: a failed start does not shrink the pool
                    self._spawn_failed(worker)
                    self._free_owed_slots()
                    first, longest = BACKOFF_S
                    self._wanted.wait(min(longest, first * 2 ** min(failures, 16)))
                failures += 1
                continue
            failures = 0
            with self._lock:
                if not self._closed:
                    self.last_spawn_error = None
                    self._add_replacement(worker)
                    continue
            worker.close()  # the pool closed while it started
            return

    def _free_owed_slots(self) -> None:
        """Under the lock: while spawning fails, the hooks whose workers died get their slots
        back (the pool still owes the workers), so they share the workers still running."""
        if any(owner is not None for owner in self._owed):
            for owner in self._owed:
                self._release(owner)
            self._owed = deque([None] * len(self._owed))
            self._freed.notify_all()

    def _add_replacement(self, worker: Worker) -> None:
        """Under the lock: the worker joins the pool and the slot it was owed for frees."""
        self._release(self._owed.popleft())
        self._all.add(worker)
        self._idle.append(worker)
        self.spawned_total += 1
        now = time.monotonic()
        self._respawned.append(now)
        while self._respawned[0] < now - 60:
            self._respawned.popleft()
        self._freed.notify_all()

    def _next_token(self) -> bool:
        """Wait until a replacement is owed and the bucket has a token; False once closed."""
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                delay = self._bucket.delay(now) if self._owed else None
                if delay == 0:
                    self._bucket.take(now)
                    return True
                self._wanted.wait(delay)
            return False

    def _start_one(self) -> Worker | Exception:
        """A new worker that is ready to serve, or why it could not start."""
        try:
            worker = Worker(self._dir.name)
        except (OSError, MemoryError, ValueError, subprocess.SubprocessError) as exc:
            return exc  # EAGAIN at a process limit, ENOMEM, EMFILE: retried
        try:
            worker.wait_ready()
        except WorkerDied as exc:
            worker.kill()
            return exc
        return worker

    def forget(self, owner: str) -> None:
        """A hook was rebuilt or closed: clear its kill count and quarantine."""
        with self._lock:
            self._kills.forget(owner)

    def health(self) -> dict[str, Any]:
        """Counts for ``Engine.status()``: workers, busy, spawns, respawns, quarantined hooks."""
        with self._lock:
            self._start_spawner()
            now = time.monotonic()
            while self._respawned and self._respawned[0] < now - 60:
                self._respawned.popleft()
            return {
                "workers": len(self._all),
                "busy": len(self._all) - len(self._idle),
                "size": self.size,
                "per_hook": self.per_hook,
                "spawned_total": self.spawned_total,
                "spawn_failures": self.spawn_failures,
                "last_spawn_error": self.last_spawn_error,
                "respawns_last_minute": len(self._respawned),
                "respawns_pending": len(self._owed),
                "quarantined": [
                    {"hook": q.owner, "kills": q.kills, "window_s": q.window_s, "since": q.since}
                    for q in self._kills.quarantined.values()
                ],
            }

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
            self._freed.notify_all()
            self._wanted.notify_all()
            spawner = self._spawner
        for worker in workers:
            worker.close()
        if spawner is not None:
            spawner.join(START_TIMEOUT_S + 1)
        self._dir.cleanup()
