"""Workers.take serves waiting calls first come, first served: a caller cannot cut in line."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from engine.sandbox.pool import Workers, _Ticket


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_a_call_that_gives_its_worker_back_and_asks_again_queues_behind_the_waiter() -> None:
    workers = Workers(2)  # one worker per hook: the second call of the hook must wait
    order: list[str] = []
    try:
        held = workers.take("guard", timeout_s=1)

        def waiter() -> None:
            worker = workers.take("guard", timeout_s=5)
            order.append("waiter")
            time.sleep(0.05)
            workers.give_back(worker, healthy=True, owner="guard")

        thread = threading.Thread(target=waiter)
        thread.start()
        wait_for(lambda: workers.health()["busy"] == 1 and len(workers._waiting) == 1)
        workers.give_back(held, healthy=True, owner="guard")
        again = workers.take("guard", timeout_s=5)  # served after the waiter, not before
        order.append("again")
        workers.give_back(again, healthy=True, owner="guard")
        thread.join()
        assert order == ["waiter", "again"]
    finally:
        workers.close()


def test_a_waiter_at_its_hooks_share_does_not_hold_up_other_hooks() -> None:
    workers = Workers(3)  # two workers per hook
    try:
        greedy = [workers.take("greedy", timeout_s=1) for _ in range(2)]
        blocked = threading.Thread(target=lambda: _take_and_return(workers, "greedy"))
        blocked.start()
        wait_for(lambda: len(workers._waiting) == 1)
        other = workers.take("modest", timeout_s=0.2)  # the idle spare, at once
        workers.give_back(other, healthy=True, owner="modest")
        for worker in greedy:
            workers.give_back(worker, healthy=True, owner="greedy")
        blocked.join()
        assert workers.health()["busy"] == 0
    finally:
        workers.close()


def test_a_call_out_of_time_takes_a_free_worker_past_a_waiter_that_is_slow_to_wake() -> None:
    workers = Workers(2)
    try:
        workers._waiting.append(_Ticket("guard"))  # first in line, and never wakes
        started = time.monotonic()
        worker = workers.take("guard", timeout_s=0.1)
        assert time.monotonic() - started >= 0.1  # it waited its turn until its time ran out
        workers.give_back(worker, healthy=True, owner="guard")
    finally:
        workers.close()


def _take_and_return(workers: Workers, owner: str) -> None:
    workers.give_back(workers.take(owner, timeout_s=5), healthy=True, owner=owner)
