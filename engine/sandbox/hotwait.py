"""Hot waits on a pipe: how long to poll(0) for what the other process is about to write,
before blocking. Used by the host for a worker's answer and by a worker for the host's next
request (engine/sandbox/process.py, engine/sandbox/worker.py); standard library only, so a
worker imports nothing more for it."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable

SPIN_CAP_S = 200e-6
"""The longest the host waits hot for one answer (from the request's write) before it blocks."""
WORKER_SPIN_CAP_S = 200e-6
"""The longest a worker waits hot for the next request (from its last answer) before it blocks."""
_SPIN_PROBE = 32
"""A worker whose answers stopped coming within a spin is spun for again every this many calls."""
_SPIN_TRUST = 8
"""Answers caught hot that a run of misses must use up before the spin is dropped."""
_LOAD_EVERY_S = 0.1
"""How often the host looks again whether the machine has a core to spare for a spin."""


class CpuLoad:
    """Whether the machine has a core to spare: the 1-minute load average and the processes
    running now (``/proc/loadavg``) both within the core count, looked at every
    ``_LOAD_EVERY_S`` at most (a look is one pread). Unknown (no /proc): not quiet."""

    __slots__ = ("_at", "_cores", "_fd", "_quiet")

    def __init__(self) -> None:
        self._cores = os.cpu_count() or 1
        self._fd: int | None = None
        self._at = -_LOAD_EVERY_S
        self._quiet = False

    def quiet(self, now: float) -> bool:
        """Whether a spin may run now (``now``: time.perf_counter())."""
        if now - self._at >= _LOAD_EVERY_S:
            self._at = now
            self._quiet = self._look()
        return self._quiet

    def _look(self) -> bool:
        try:
            if self._fd is None:
                self._fd = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
            fields = os.pread(self._fd, 128, 0).split()
            load, running = float(fields[0]), int(fields[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            return False
        return load < self._cores and running <= self._cores


_LOAD: CpuLoad | None = None


def _load() -> CpuLoad:
    """The process's one ``CpuLoad`` (its descriptor is opened on the first look)."""
    global _LOAD
    if _LOAD is None:
        _LOAD = CpuLoad()
    return _LOAD


class Spin:
    """How long the host waits hot for one worker's next answer before its blocking poll.

    Waking an idle vCPU from a blocking poll is slow on this VM: with the child answering at
    once, ``python bench/bench_wakeup.py --calls 3000 --rounds 1`` (load 3.3 on 2 cores)
    printed a round trip of 40.2 µs p50 (12.9 µs host CPU) for the blocking poll and 7.3 µs
    (4.1 µs CPU) for this wait (as it was before it stood down on a busy machine, below). A
    fixed spin is the wrong bet whenever the answer is slow: in
    the same run, with the child working 200 µs, a 200 µs spin (what the pool did before
    issue 10) took 198.8 µs of host CPU per call against 8.3 µs, and doubled the round trip.
    So the spin is learnt per worker: it lasts about twice the answers this worker gave while
    the host spun (at most ``SPIN_CAP_S`` from the write: 200 µs; the no_deletes guard keeps a
    worker busy about as long as the 60 µs cap the host had before, so most answers came after
    it), it is dropped after a run of answers
    that came after it (a slow script, a worker waiting for a CPU), and then tried again on one
    call in ``_SPIN_PROBE`` only.

    And no spin at all while the machine has no core to spare (``CpuLoad``): there a spin
    takes CPU from the worker and from the host's other threads. Measured, not assumed:
    ``tests/test_load_timeouts.py`` (two host threads, two processes burning the cores, load
    about 10) refused 1 and 3 harmless calls as ``busy`` in two runs with a spin that ignored
    the load, and none without a spin.

    The same wait serves the other direction: a worker waits hot for the host's next request
    after each answer (``cap=WORKER_SPIN_CAP_S``, ``since`` the answer's write), because the
    worker's own wake-up from a blocking read is the other half of the slow round trip.
    """

    __slots__ = ("_calls", "_cap", "_quiet", "_trust", "_typical", "since")

    def __init__(
        self, quiet: Callable[[float], bool] | None = None, *, cap: float = SPIN_CAP_S
    ) -> None:
        self._quiet = quiet if quiet is not None else _load().quiet
        self._cap = cap
        self._trust = _SPIN_TRUST // 2
        self._typical = cap / 2
        self._calls = 0
        self.since = 0.0
        """perf_counter when the request was written, or when the answer before came."""

    def budget(self) -> float:
        """Seconds from ``since`` to wait hot for the next answer (0: block at once)."""
        if self._trust > 0:
            return min(self._cap, 2 * self._typical + 10e-6)
        return self._cap if self._calls % _SPIN_PROBE == 0 else 0.0

    def wait(self, poll: select.poll) -> bool:
        """Spin on ``poll(0)`` for the budget: whether what it waits for came meanwhile."""
        until = self.start()
        if not until:
            return False
        while not poll.poll(0):
            if time.perf_counter() >= until:
                self.missed()
                return False
        self.came()
        return True

    def start(self) -> float:
        """A wait begins: the ``perf_counter`` time to wait hot until (0: block at once).
        The waiter then calls ``came`` or ``missed`` (``wait`` does all three)."""
        self._calls += 1
        budget = self.budget()
        if not budget or not self._quiet(self.since):
            return 0.0
        return self.since + budget

    def came(self) -> None:
        """What was waited for came within the hot wait."""
        took = time.perf_counter() - self.since
        self._typical += (took - self._typical) / 4
        self._trust = min(self._trust + 1, _SPIN_TRUST)

    def missed(self) -> None:
        """The hot wait ran out first."""
        self._trust = max(self._trust - 2, 0)
