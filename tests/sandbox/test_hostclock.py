"""The pool's deadlines leave out the host's own collector pauses (sandbox/hostclock.py)."""

from __future__ import annotations

import gc
import threading
import time

from engine.sandbox import hostclock
from engine.sandbox.pool import Workers


def big_heap() -> list[list[int]]:
    return [[i] for i in range(3_000_000)]


def long_collection() -> float:
    """A full collection over the heap (a few million tracked objects): seconds it stopped
    the host."""
    before = hostclock.paused()
    gc.collect()
    return hostclock.paused() - before


def test_the_clock_leaves_out_collector_pauses() -> None:
    heap = big_heap()
    start_wall, start = time.monotonic(), hostclock.now()
    paused = long_collection()
    del heap
    assert paused > 0
    waited = (time.monotonic() - start_wall) - (hostclock.now() - start)
    assert abs(waited - paused) < 0.01


def test_a_wait_for_a_worker_is_not_refused_for_the_hosts_own_collection() -> None:
    """A call waiting for the only worker while the host stops for a full collection longer
    than its whole wait still gets the worker when it comes back: the pause was the host's."""
    pool = Workers(1)
    heap = big_heap()
    try:
        held = pool.take(None, timeout_s=1)
        got: list[object] = []

        def wait() -> None:
            try:
                got.append(pool.take(None, timeout_s=0.05))
            except Exception as exc:  # noqa: BLE001 - the test reports it
                got.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.01)  # the waiter is in its wait
        paused = long_collection()
        assert paused > 0.1, f"the collection took {paused:.3f} s: too short to test the rule"
        pool.give_back(held, healthy=True)
        waiter.join(5)
        assert got and got[0] is held, got
        pool.give_back(held, healthy=True)
    finally:
        del heap
        pool.close()
