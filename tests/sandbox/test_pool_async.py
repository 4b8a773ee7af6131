"""acall_batch: batches awaited on the event loop, without a thread, and cancelled cleanly."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from engine.errors import ScriptLimitError
from engine.sandbox import BatchCall, CallResult, CompiledScript, Language, Limits, WorkerPool
from engine.sandbox.hotwait import Spin
from engine.sandbox.pool import Worker, Workers
from engine.sandbox.process import _loop_idle

LIMITS = Limits(timeout_ms=2000, memory_mb=32, compile_timeout_ms=2000)
NAME = "function on_tool_call(event, host) { return { notice: host.config.tag + event.name }; }\n"
SLOW = (
    "function on_tool_call(event, host) {\n"
    "  var t = 0; for (var i = 0; i < host.config.n; i++) { t += i; }\n"
    "  return { notice: String(t) };\n}\n"
)
HANG = "function on_tool_call(event, host) { while (true) {} }\n"


def js(pool: WorkerPool, source: str, name: str) -> CompiledScript:
    return pool.compile(source, filename=f"{name}.js", language=Language.JAVASCRIPT)


def call(script: CompiledScript, owner: str, config: dict[str, Any], **kw: Any) -> BatchCall:
    return BatchCall(
        script=script,
        function="on_tool_call",
        config=config,
        config_key=repr(sorted(config.items())),
        state={},
        limits=kw.get("limits", LIMITS),
        owner=owner,
    )


def settled(pool: WorkerPool, timeout: float = 20.0) -> dict[str, Any]:
    """The pool's health once no worker is busy and none is owed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        health = pool.health()
        if not health["busy"] and not health["respawns_pending"]:
            return health
        time.sleep(0.02)
    raise AssertionError(f"the pool did not settle: {pool.health()}")


def test_many_tasks_each_get_their_own_answers() -> None:
    with WorkerPool(size=2, limits=LIMITS) as pool:
        script = js(pool, NAME, "name")

        async def one(i: int) -> list[Any]:
            calls = [call(script, f"h{j}", {"tag": f"{j}:"}) for j in range(3)]
            results = await pool.acall_batch("tool_call", {"name": f"t{i}"}, calls)
            return [r.value if isinstance(r, CallResult) else r for r in results]

        async def main() -> list[list[Any]]:
            return await asyncio.gather(*(one(i) for i in range(24)))

        answers = asyncio.run(main())
        assert answers == [[{"notice": f"{j}:t{i}"} for j in range(3)] for i in range(24)]
        assert settled(pool)["spawned_total"] == 2


def test_the_loop_runs_other_tasks_while_a_batch_waits() -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        slow = js(pool, SLOW, "slow")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        async def main() -> list[Any]:
            task = asyncio.get_running_loop().create_task(ticker())
            # two batches, one worker: the second waits for it on the loop too
            results = await asyncio.gather(
                pool.acall_batch("tool_call", {"name": "x"}, [call(slow, "a", {"n": 3_000_000})]),
                pool.acall_batch("tool_call", {"name": "x"}, [call(slow, "b", {"n": 3_000_000})]),
            )
            task.cancel()
            return results

        results = asyncio.run(main())
        assert all(isinstance(r[0], CallResult) for r in results)
        assert ticks > 0


def test_a_cancelled_task_leaves_its_worker_drained_not_lost() -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        slow, name = js(pool, SLOW, "slow"), js(pool, NAME, "name")

        async def main() -> list[Any]:
            task = asyncio.get_running_loop().create_task(
                pool.acall_batch(
                    "tool_call",
                    {"name": "x"},
                    [call(slow, "a", {"n": 5_000_000}), call(slow, "a", {"n": 10})],
                )
            )
            await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            assert task.cancelled()
            # the same (only) worker: its next answer is this call's, not the cancelled one's
            return await pool.acall_batch(
                "tool_call", {"name": "y"}, [call(name, "b", {"tag": ""})]
            )

        (result,) = asyncio.run(main())
        assert isinstance(result, CallResult) and result.value == {"notice": "y"}
        health = settled(pool)
        assert health["spawned_total"] == 1 and health["workers"] == 1


def test_a_cancelled_task_whose_script_hangs_gets_its_worker_replaced() -> None:
    with WorkerPool(size=1, limits=Limits(timeout_ms=100)) as pool:
        hang, name = js(pool, HANG, "hang"), js(pool, NAME, "name")

        async def main() -> list[Any]:
            task = asyncio.get_running_loop().create_task(
                pool.acall_batch(
                    "tool_call", {"name": "x"}, [call(hang, "h", {}, limits=pool.limits)]
                )
            )
            await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return await pool.acall_batch(
                "tool_call", {"name": "y"}, [call(name, "b", {"tag": ""}, limits=pool.limits)]
            )

        (result,) = asyncio.run(main())
        assert isinstance(result, CallResult) and result.value == {"notice": "y"}
        assert settled(pool)["workers"] == 1


def test_an_async_call_past_its_deadline_fails_as_a_timeout() -> None:
    with WorkerPool(size=1, limits=Limits(timeout_ms=50)) as pool:
        hang = js(pool, HANG, "hang")
        (error,) = asyncio.run(
            pool.acall_batch("tool_call", {}, [call(hang, "h", {}, limits=pool.limits)])
        )
        assert isinstance(error, ScriptLimitError) and error.cause == "timeout"


def test_threads_and_tasks_share_the_pool() -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        script = js(pool, NAME, "name")
        answers: list[Any] = []

        def thread() -> None:
            for i in range(30):
                (r,) = pool.call_batch(
                    "tool_call", {"name": f"s{i}"}, [call(script, "t", {"tag": ""})]
                )
                answers.append(r.value if isinstance(r, CallResult) else r)

        async def task(i: int) -> Any:
            (r,) = await pool.acall_batch(
                "tool_call", {"name": f"a{i}"}, [call(script, f"h{i % 3}", {"tag": ""})]
            )
            return r.value if isinstance(r, CallResult) else r

        async def main() -> list[Any]:
            return await asyncio.gather(*(task(i) for i in range(30)))

        worker = threading.Thread(target=thread)
        worker.start()
        got = asyncio.run(main())
        worker.join()
        assert got == [{"notice": f"a{i}"} for i in range(30)]
        assert answers == [{"notice": f"s{i}"} for i in range(30)]


def test_a_task_waiting_for_a_worker_is_handed_one_gives_up_in_time_or_leaves_none_behind() -> None:
    workers = Workers(1)
    try:
        held = workers.take(None, timeout_s=1)

        async def main() -> None:
            with pytest.raises(ScriptLimitError) as info:
                await workers.atake("late", timeout_s=0.05)
            assert info.value.cause == "busy"
            cancelled = asyncio.get_running_loop().create_task(workers.atake("c", timeout_s=5))
            waiting = asyncio.get_running_loop().create_task(workers.atake("w", timeout_s=5))
            await asyncio.sleep(0.01)
            cancelled.cancel()
            await asyncio.sleep(0)
            workers.give_back(held, healthy=True)  # handed to the task still waiting
            got = await waiting
            assert isinstance(got, Worker) and workers.health()["busy"] == 1
            workers.give_back(got, healthy=True, owner="w")

        asyncio.run(main())
        health = workers.health()
        assert health["busy"] == 0 and health["workers"] == 1
    finally:
        workers.close()


def test_closing_the_pool_ends_the_wait_of_a_task() -> None:
    workers = Workers(1)
    held = workers.take(None, timeout_s=1)

    async def main() -> None:
        task = asyncio.get_running_loop().create_task(workers.atake("w", timeout_s=5))
        await asyncio.sleep(0.01)
        workers.close()
        with pytest.raises(ScriptLimitError) as info:
            await task
        assert info.value.cause == "crashed"

    try:
        asyncio.run(main())
    finally:
        held.kill()


def test_a_task_handed_the_worker_sends_its_request_before_the_giver_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker runs the next task's call while the task that gave it back does its own
    work (on one loop, nothing else could start it)."""
    order: list[str] = []
    send = Worker.send

    def logged(self: Worker, data: bytes) -> None:
        order.append("send " + ("a" if b'"name":"a"' in data else "b"))
        send(self, data)

    monkeypatch.setattr(Worker, "send", logged)
    with WorkerPool(size=1, limits=LIMITS) as pool:
        slow = js(pool, SLOW, "slow")
        order.clear()  # the compile's request

        async def one(name: str) -> None:
            # a's call runs long enough for b to queue behind it whatever the machine's load
            batch = [call(slow, "h", {"n": 1_000_000 if name == "a" else 1})]
            await pool.acall_batch("tool_call", {"name": name}, batch)
            order.append(f"{name} goes on")

        async def main() -> None:
            await asyncio.gather(one("a"), one("b"))

        asyncio.run(main())
    # (b may finish before a goes on: its answer can be in the pipe before it even looks)
    assert order[:2] == ["send a", "send b"] and sorted(order[2:]) == ["a goes on", "b goes on"]


def test_alarms_wake_each_wait_at_its_own_deadline_and_never_a_cleared_one() -> None:
    """The loop's one timer serves every wait: set out of order, each wakes with its own
    value once its deadline passed (not before), a cleared wait never wakes."""
    from engine.sandbox import hostclock
    from engine.sandbox.process import alarms

    async def main() -> tuple[list[str], bool]:
        loop = asyncio.get_running_loop()
        alarm = alarms(loop)
        assert alarms(loop) is alarm
        late, early, cleared = (loop.create_future() for _ in range(3))
        start = hostclock.now()
        alarm.set(loop, late, start + 0.2, "late")
        alarm.set(loop, cleared, start + 0.05, "cleared")
        alarm.set(loop, early, start + 0.1, "early")
        alarm.clear(cleared)
        woke = []
        for future in asyncio.as_completed([late, early], timeout=5):
            woke.append(await future)
            assert hostclock.now() - start >= (0.1 if woke[-1] == "early" else 0.2)
        await asyncio.sleep(0.05)
        return woke, cleared.done()

    woke, cleared_done = asyncio.run(main())
    assert woke == ["early", "late"]
    assert not cleared_done


def test_a_closed_loop_with_a_wait_s_timer_still_set_is_freed() -> None:
    """``asyncio.run`` per request: a loop that ends before its alarm timer fired is not held
    by the alarms (nor its epoll descriptor)."""
    import gc
    import weakref

    from engine.sandbox import hostclock
    from engine.sandbox.process import alarms

    async def main() -> weakref.ref[asyncio.AbstractEventLoop]:
        loop = asyncio.get_running_loop()
        waited = loop.create_future()
        alarms(loop).set(loop, waited, hostclock.now() + 60, None)
        alarms(loop).clear(waited)
        return weakref.ref(loop)

    gone = asyncio.run(main())
    gc.collect()
    assert gone() is None


def test_alarm_timers_made_moot_do_not_pile_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each earlier deadline sets a timer of its own; the later timers it made moot then do
    nothing when they fire, so the loop keeps one live timer, not one more per moot one."""
    from engine.sandbox import hostclock
    from engine.sandbox.process import Alarms, alarms

    armed = []
    arm = Alarms._arm
    monkeypatch.setattr(
        Alarms, "_arm", lambda self, loop, at: (armed.append(at), arm(self, loop, at))
    )

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        start = hostclock.now()
        waits = [loop.create_future() for _ in range(5)]
        for n in range(5, 0, -1):  # each earlier than the last: 5 timers
            alarms(loop).set(loop, waits[n - 1], start + n * 0.02, n)
        woke = [await wait for wait in waits]
        await asyncio.sleep(0.15)  # every moot timer has fired by now
        return woke

    assert asyncio.run(main()) == [1, 2, 3, 4, 5]
    # 5, then one per sweep that left a wait (and one spare: a timer may fire a hair early);
    # 15 if every moot timer swept and set a timer of its own
    assert len(armed) <= 5 + 4 + 1


def _waiting_hot(pool: WorkerPool, budget_s: float) -> Worker:
    """A worker of ``pool`` whose next hot wait lasts ``budget_s`` whatever the machine's load
    (the worker is sent no request, so nothing comes and the wait runs out)."""
    workers = pool._workers._idle  # the pool keeps no public list
    worker = workers[-1]
    worker.spin = Spin(lambda now: True, cap=budget_s)
    worker.spin.since = time.perf_counter()
    return worker


def test_a_tasks_hot_wait_lets_every_ready_task_run_between_its_looks() -> None:
    """The async hot wait spins only while the loop has nothing else to run: a task that is
    ready (here one that yields at once, again and again) runs all through it."""
    with WorkerPool(size=1, limits=LIMITS) as pool:

        async def main() -> tuple[bool, int, float]:
            worker = _waiting_hot(pool, 0.2)
            turns = 0
            done = False

            async def other() -> None:
                nonlocal turns
                while not done:
                    turns += 1
                    await asyncio.sleep(0)

            task = asyncio.get_running_loop().create_task(other())
            await asyncio.sleep(0)
            began = time.perf_counter()
            came = await worker._hot()
            waited = time.perf_counter() - began
            done = True
            await task
            return came, turns, waited

        came, turns, waited = asyncio.run(main())
    assert not came  # no request, no answer: the wait ran out
    assert waited >= 0.15  # from the budget's start, set just before
    # a wait that spun without yielding would have let the other task run once at most
    assert turns > 100


def test_a_tasks_hot_wait_on_an_idle_loop_holds_it_only_for_its_budget() -> None:
    """With nothing else to run, the wait spins for its budget, then the loop is free: a
    timer due meanwhile fires right after the budget, not after the (much longer) call."""
    with WorkerPool(size=1, limits=LIMITS) as pool:
        slow = js(pool, SLOW, "slow")

        async def main() -> tuple[list[Any], float]:
            fired: list[float] = []
            loop = asyncio.get_running_loop()
            began = time.perf_counter()
            loop.call_later(0.001, lambda: fired.append(time.perf_counter() - began))
            results = await pool.acall_batch(
                "tool_call", {"name": "x"}, [call(slow, "a", {"n": 3_000_000})]
            )
            return results, fired[0]

        results, fired_after = asyncio.run(main())
    assert isinstance(results[0], CallResult)
    # the hot wait lasts at most SPIN_CAP_S (200 µs) from the request's write; the call runs
    # for tens of milliseconds. Generous: the timer may wait for a core on a loaded machine.
    assert fired_after < 0.015, fired_after


def test_loop_idle_reads_the_asyncio_loops_ready_queue() -> None:
    async def main() -> list[bool]:
        loop = asyncio.get_running_loop()
        seen = [_loop_idle()]
        handle = loop.call_soon(lambda: None)
        seen.append(_loop_idle())
        handle.cancel()  # a cancelled handle stays queued until the loop skips it
        seen.append(_loop_idle())
        return seen

    assert asyncio.run(main()) == [True, False, True]
