"""The supervised worker pool: scripts compile and run in pre-started worker processes."""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import ScriptLimitError
from engine.sandbox import hostclock
from engine.sandbox.process import START_TIMEOUT_S, Worker, WorkerDied, alarms
from engine.sandbox.supervise import KillLog, PoolPolicy, TokenBucket

if TYPE_CHECKING:
    import asyncio  # imported where used: only the async paths need it

GRACE_S = 0.25
"""Wall-clock time past a call's own limit before the parent kills the worker."""
BACKOFF_S = (0.1, 2.0)
"""The first and the longest wait between failed spawns: after spawning works again, the pool
is back within the longest wait plus a worker's start-up."""


@dataclass(eq=False)
class _Waiter:
    """A task waiting for a worker (``atake``)."""

    owner: str | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Worker | None]


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs ``loop`` now."""
    import asyncio

    return asyncio._get_running_loop() is loop


class _Ticket:
    """One call waiting in ``Workers.take`` (compared by identity)."""

    __slots__ = ("owner",)

    def __init__(self, owner: str | None) -> None:
        self.owner = owner


def new_folder() -> tempfile.TemporaryDirectory[str]:
    """The empty folder a pool's workers run in (their working directory)."""
    return tempfile.TemporaryDirectory(prefix="hookengine-sandbox-")


class Prestarted:
    """A worker started before its pool exists, for a pool to take (``Workers``).

    A one-shot ``hook_tool`` starts one before it imports the engine's configuration models:
    the worker's own start-up (a Python start, its imports) then runs beside those imports on
    the other core instead of after them. Its folder goes to the pool with it. ``close``
    stops a worker no pool took.
    """

    def __init__(self) -> None:
        """Raises OSError when the process cannot start (the caller goes on without it)."""
        self.folder = new_folder()
        try:
            self._worker: Worker | None = Worker(self.folder.name)
        except BaseException:
            self.folder.cleanup()
            raise

    def take(self) -> list[Worker]:
        """The worker, once (a pool takes it and its folder)."""
        worker, self._worker = self._worker, None
        return [worker] if worker is not None else []

    def close(self) -> None:
        """Stop the worker and remove its folder, unless a pool took them."""
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
            self.folder.cleanup()


class Workers:
    """A thread-safe set of workers shared fairly between hooks.

    ``take`` waits at most the caller's own timeout and holds each hook (``owner``) to its
    share of the pool; a worker that failed is killed at once and replaced by a background
    thread, at a limited rate, so no caller pays for a spawn and a storm of kills cannot
    become a storm of processes. A hook that keeps killing workers is quarantined.
    """

    def __init__(
        self,
        size: int,
        policy: PoolPolicy = PoolPolicy(),  # noqa: B008
        *,
        prestarted: Prestarted | None = None,
    ) -> None:
        """Start ``size`` workers. Those that cannot start (EAGAIN at a process limit, out of
        memory) are owed to the background spawner: the pool starts smaller and fills up.
        ``prestarted``: a worker started before the pool (``Prestarted``), which the pool
        takes as one of its own (with its folder).

        Raises:
            ScriptLimitError: a worker started and died (the interpreter is broken).
        """
        self._dir = prestarted.folder if prestarted is not None else new_folder()
        self.size = max(1, size)
        self.policy = policy
        self.per_hook = policy.per_hook(self.size)
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        """Notified when a worker is given back or spawned, a slot frees, or the pool closes."""
        self._waiters: list[_Waiter] = []
        """Event-loop tasks waiting for a worker (``atake``), served first come first."""
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
        started = self._start_all(prestarted.take() if prestarted is not None else [])
        self._all.update(started)
        self._idle.extend(started)
        self.spawned_total = len(started)
        with self._lock:
            self._owed.extend([None] * (self.size - len(started)))
            # started now, it idles until needed: at a process limit no thread could start
            self._start_spawner()

    def _start_all(self, given: list[Worker]) -> list[Worker]:
        """The workers that could start, ready (they start in parallel), ``given`` first."""
        started: list[Worker] = list(given)
        for _ in range(self.size - len(given)):
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
        end = hostclock.now() + timeout_s
        ticket = _Ticket(owner)
        with self._lock:
            if not self._waiting:  # nobody queued before: no turn to wait for
                worker = self._take_now(owner)
                if isinstance(worker, Worker):
                    return worker
            self._waiting.append(ticket)
            try:
                while True:
                    left = end - hostclock.now()
                    # out of time, a free worker beats the order (see _my_turn)
                    worker = self._take_now(owner, turn=left <= 0 or self._my_turn(ticket))
                    if isinstance(worker, Worker):
                        self._waiting.remove(ticket)
                        return worker
                    if left <= 0:
                        raise ScriptLimitError(self._busy_reason(worker, timeout_s), cause="busy")
                    self._freed.wait(left)
            except BaseException:
                self._waiting.remove(ticket)
                self._freed.notify_all()  # a waiter behind this one may be served now
                raise

    async def atake(self, owner: str | None, *, timeout_s: float) -> Worker:
        """``take`` for the event loop: waits for a free worker without blocking the loop.

        A waiting task is handed a worker (charged to its hook) as one comes free, first come
        first served, so a worker is never fought over by tasks woken for it.
        """
        import asyncio

        loop = asyncio.get_running_loop()
        with self._lock:
            worker = self._take_now(owner)
            if isinstance(worker, Worker):
                return worker
            waiter = _Waiter(owner, loop, loop.create_future())
            self._waiters.append(waiter)
        alarm = alarms(loop)
        alarm.set(loop, waiter.future, hostclock.now() + timeout_s, None)
        try:
            handed = await waiter.future
        except asyncio.CancelledError:
            self._drop(waiter)
            raise
        finally:
            alarm.clear(waiter.future)
        if handed is None:
            at_cap = self._drop(waiter)
            raise ScriptLimitError(self._busy_reason(at_cap, timeout_s), cause="busy")
        return handed

    def _drop(self, waiter: _Waiter) -> bool:
        """A task stopped waiting: a worker handed to it meanwhile goes back. Whether its hook
        is at its share."""
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            at_cap = self._at_cap(waiter.owner)
        future = waiter.future
        delivered = future.done() and not future.cancelled() and future.exception() is None
        handed = future.result() if delivered else None
        if handed is not None:
            self.give_back(handed, healthy=True, owner=waiter.owner)
        return at_cap

    def _take_now(self, owner: str | None, *, turn: bool = True) -> Worker | bool:
        """Under the lock: a free worker for ``owner`` now, or whether it is at its cap.
        ``turn``: False while a thread queued before this one could take the worker."""
        if self._closed:
            raise ScriptLimitError("the sandbox is closed", cause="crashed")
        self._check_quarantine(owner)
        if self._owed or self._spawner is None:
            self._start_spawner()  # it may have failed to start before
        if not self._all and self.last_spawn_error is not None:
            raise ScriptLimitError(self._unavailable_reason(), cause="unavailable")
        at_cap = self._at_cap(owner)
        if not self._idle or at_cap or not turn:
            return at_cap
        if owner is not None:
            self._busy[owner] = self._busy.get(owner, 0) + 1
        # LIFO: the worker used last has its script context and caches hot.
        return self._idle.pop()

    def _check_quarantine(self, owner: str | None) -> None:
        if owner is not None and owner in self._kills.quarantined:
            raise ScriptLimitError(self._kills.quarantined[owner].reason, cause="quarantined")

    def charge_all(self, owners: Sequence[str]) -> tuple[int, ScriptLimitError | None]:
        """Count a worker already taken against ``owners`` too, in order, while each is within
        its share (a batch runs several hooks on one worker): how many were charged, and the
        error that stopped it if one is quarantined (None: the next one holds its share)."""
        if not owners:
            return 0, None
        with self._lock:
            for done, owner in enumerate(owners):
                try:
                    self._check_quarantine(owner)
                except ScriptLimitError as exc:
                    return done, exc
                if self._busy.get(owner, 0) >= self.per_hook:
                    return done, None
                self._busy[owner] = self._busy.get(owner, 0) + 1
            return len(owners), None

    def release(self, owner: str) -> None:
        """Undo one ``take``/``charge`` of ``owner`` (its calls on the worker are done)."""
        with self._lock:
            self._release(owner)
            self._notify_freed()

    def _notify_freed(self) -> bool:
        """Under the lock: hand free workers to waiting tasks, then wake the waiting threads.
        Whether a task of this thread's loop was handed one (see ``give_back``)."""
        handed = False
        if self._waiters:
            waiting, self._waiters = self._waiters, []
            for at, waiter in enumerate(waiting):
                if self._none_servable():
                    self._waiters += waiting[at:]
                    break
                if waiter.future.done():
                    continue
                served = not self._waits_on(waiter.owner) and self._serve(waiter)
                if not served:
                    self._waiters.append(waiter)
                handed = handed or (served and waiter.future.done())
        if self._waiting:  # no thread waits otherwise (notify_all costs a lock probe)
            self._freed.notify_all()
        return handed

    def _none_servable(self) -> bool:
        """Under the lock: whether every waiting task waits on (no worker idle, and no error
        to tell any of them), so the rest of the queue need not be looked at: a worker given
        back is handed to the first task that can take it, and then usually none is left."""
        return (
            not self._idle and bool(self._all) and not self._closed and not self._kills.quarantined
        )

    def _waits_on(self, owner: str | None) -> bool:
        """Under the lock: whether ``_take_now`` would tell ``owner`` to wait (no error, no
        worker): checked first, as most waiters of a busy pool are at their hook's share."""
        if self._closed or not self._all or owner in self._kills.quarantined:
            return False
        return not self._idle or self._at_cap(owner)

    def _serve(self, waiter: _Waiter) -> bool:
        """Under the lock: hand ``waiter`` a worker, or the error that ends its wait, if there
        is one now."""
        try:
            handed: Worker | bool = self._take_now(waiter.owner)
        except ScriptLimitError as exc:
            handed = False
            outcome: Worker | ScriptLimitError = exc
        else:
            if not isinstance(handed, Worker):
                return False
            outcome = handed
        if _on_loop(waiter.loop):  # its future is this thread's: set it now, no hop
            self._deliver(waiter, outcome)
            return True
        try:
            waiter.loop.call_soon_threadsafe(self._deliver, waiter, outcome)
        except RuntimeError:  # its loop is closed: nobody waits there any more
            if isinstance(handed, Worker):
                self._release(waiter.owner)
                self._idle.append(handed)
        return True

    def _deliver(self, waiter: _Waiter, outcome: Worker | ScriptLimitError) -> None:
        """On the waiter's loop: its worker (or error), unless it stopped waiting (under the
        pool's lock only while the future is not done: giving back takes the lock)."""
        if not waiter.future.done():
            if isinstance(outcome, Worker):
                waiter.future.set_result(outcome)
            else:
                waiter.future.set_exception(outcome)
        elif isinstance(outcome, Worker):
            self.give_back(outcome, healthy=True, owner=waiter.owner)

    def _at_cap(self, owner: str | None) -> bool:
        return owner is not None and self._busy.get(owner, 0) >= self.per_hook

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

    def _busy_reason(self, at_cap: Worker | bool, timeout_s: float) -> str:
        waited = f"within {timeout_s * 1000:.0f} ms"
        if at_cap:
            return (
                f"sandbox busy: this hook already holds its {self.per_hook} worker(s) "
                f"(scripts.max_workers_per_hook) and none came free {waited}"
            )
        return f"sandbox busy: no worker free {waited}"

    def give_back(
        self, worker: Worker, *, healthy: bool, owner: str | None = None, also: Iterable[str] = ()
    ) -> bool:
        """Return a worker; one that failed is killed and counted against ``owner``. From its
        second kill within the quarantine window on, the owner's slot stays taken until the
        replacement runs (which slows a hook that keeps killing workers to the respawn rate);
        a first kill frees it at once, so one overrun on a loaded machine does not leave an
        innocent guard without a worker for the next second. The owners in ``also`` (the other
        hooks of a batch still charged for the worker) are released, never blamed.

        Returns whether a task waiting on this thread's event loop was handed a worker: the
        caller on that loop does best to yield, so the task sends its request before the
        caller goes on with its own work (the worker runs meanwhile)."""
        with self._lock:
            for other in also:
                self._release(other)
            if healthy and not self._closed:
                self._release(owner)
                self._idle.append(worker)
                return self._notify_freed()
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
            handed = self._notify_freed()
        worker.kill()
        return handed

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
            self._notify_freed()

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
        self._notify_freed()

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
            self._notify_freed()
            self._wanted.notify_all()
            spawner = self._spawner
        for worker in workers:
            worker.close()
        if spawner is not None:
            spawner.join(START_TIMEOUT_S + 1)
        self._dir.cleanup()
