"""The host's hot wait for a worker's answer (process.Spin): learnt, bounded, dropped when slow."""

from __future__ import annotations

import time

from engine.sandbox.process import _SPIN_PROBE, SPIN_CAP_S, Spin


class _Poll:
    """A poll that answers ``ready`` to every look, counting the looks."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.looks = 0

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        assert timeout == 0, "a spin never blocks"
        self.looks += 1
        return [(0, 1)] if self.ready else []


def _sent(spin: Spin) -> Spin:
    spin.since = time.perf_counter()
    return spin


def test_an_answer_already_there_is_taken_with_one_look() -> None:
    poll = _Poll(ready=True)
    assert _sent(Spin()).wait(poll)  # type: ignore[arg-type]
    assert poll.looks == 1


def test_the_spin_never_outlasts_its_cap() -> None:
    spin = _sent(Spin())
    assert 0 < spin.budget() <= SPIN_CAP_S
    assert not spin.wait(_Poll(ready=False))  # type: ignore[arg-type]
    assert time.perf_counter() - spin.since >= spin.budget() or spin.budget() == 0


def test_answers_that_keep_coming_after_the_spin_drop_it_but_for_rare_probes() -> None:
    spin = Spin()
    for _ in range(8):
        _sent(spin).wait(_Poll(ready=False))  # type: ignore[arg-type]
    assert spin.budget() == 0.0 or spin.budget() == SPIN_CAP_S
    poll, looked = _Poll(ready=False), 0
    for _ in range(4 * _SPIN_PROBE):
        before = poll.looks
        _sent(spin).wait(poll)  # type: ignore[arg-type]
        looked += poll.looks > before
    assert looked == 4  # only the probes looked


def test_answers_caught_hot_bring_the_spin_back() -> None:
    spin = Spin()
    for _ in range(8):
        _sent(spin).wait(_Poll(ready=False))  # type: ignore[arg-type]
    poll = _Poll(ready=True)
    while not poll.looks:  # up to the next probe
        _sent(spin).wait(poll)  # type: ignore[arg-type]
    assert spin.budget() > 0  # trusted again: every call spins
    assert spin.budget() > 0
