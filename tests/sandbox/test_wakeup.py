"""The hot waits (hotwait.Spin): the host's for a worker's answer, a worker's for the next
request; learnt, bounded, dropped when slow, never on a machine with no core to spare."""

from __future__ import annotations

import time

from engine.sandbox.hotwait import (
    _LOAD_EVERY_S,
    _SPIN_PROBE,
    SPIN_CAP_S,
    WORKER_SPIN_CAP_S,
    CpuLoad,
    Spin,
)


class _Poll:
    """A poll that answers ``ready`` to every look, counting the looks."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.looks = 0

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        assert timeout == 0, "a spin never blocks"
        self.looks += 1
        return [(0, 1)] if self.ready else []


def _quiet(now: float) -> bool:
    return True


def _sent(spin: Spin) -> Spin:
    spin.since = time.perf_counter()
    return spin


def test_an_answer_already_there_is_taken_with_one_look() -> None:
    poll = _Poll(ready=True)
    assert _sent(Spin(_quiet)).wait(poll)  # type: ignore[arg-type]
    assert poll.looks == 1


def test_a_spin_that_misses_gives_up_for_the_blocking_poll() -> None:
    spin = _sent(Spin(_quiet))
    assert 0 < spin.budget() <= SPIN_CAP_S
    poll = _Poll(ready=False)
    assert not spin.wait(poll)  # type: ignore[arg-type]
    assert poll.looks >= 1


def test_answers_that_keep_coming_after_the_spin_drop_it_but_for_rare_probes() -> None:
    spin = Spin(_quiet)
    for _ in range(8):
        _sent(spin).wait(_Poll(ready=False))  # type: ignore[arg-type]
    poll, looked = _Poll(ready=False), 0
    for _ in range(4 * _SPIN_PROBE):
        before = poll.looks
        _sent(spin).wait(poll)  # type: ignore[arg-type]
        looked += poll.looks > before
    assert looked == 4  # only the probes looked


def test_answers_caught_hot_bring_the_spin_back() -> None:
    spin = Spin(_quiet)
    for _ in range(8):
        _sent(spin).wait(_Poll(ready=False))  # type: ignore[arg-type]
    poll = _Poll(ready=True)
    while not poll.looks:  # up to the next probe
        _sent(spin).wait(poll)  # type: ignore[arg-type]
    poll = _Poll(ready=True)
    _sent(spin).wait(poll)  # type: ignore[arg-type]
    assert poll.looks == 1  # trusted again: not a probe, yet it looked


def test_no_spin_while_the_machine_has_no_core_to_spare() -> None:
    poll = _Poll(ready=True)
    assert not _sent(Spin(lambda now: False)).wait(poll)  # type: ignore[arg-type]
    assert poll.looks == 0  # the blocking poll follows


def test_the_load_is_read_from_proc_at_most_every_interval() -> None:
    load = CpuLoad()
    first = load.quiet(100.0)
    load._cores = 0  # nothing can be quiet now: a fresh look would say so
    assert load.quiet(100.0 + _LOAD_EVERY_S / 2) == first
    assert not load.quiet(100.0 + 2 * _LOAD_EVERY_S)


def test_a_worker_waits_hot_for_the_next_request_within_its_own_cap() -> None:
    spin = _sent(Spin(_quiet, cap=WORKER_SPIN_CAP_S))
    assert 0 < spin.budget() <= WORKER_SPIN_CAP_S
    poll = _Poll(ready=False)
    started = time.perf_counter()
    assert not spin.wait(poll)  # type: ignore[arg-type]
    assert poll.looks >= 1
    assert time.perf_counter() - started < 0.5  # bounded: it gives up for the blocking read


def test_the_load_is_not_looked_at_until_a_spin_asks() -> None:
    from engine.sandbox import hotwait

    hotwait._LOAD = None
    Spin(cap=WORKER_SPIN_CAP_S)
    assert hotwait._LOAD is not None and hotwait._LOAD._fd is None  # opened on the first look
