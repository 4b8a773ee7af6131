"""Worker lifecycle: workers are isolated, replaced when they die, and reaped on close."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from engine.errors import ScriptLimitError
from engine.sandbox import Language, Limits, PoolPolicy, WorkerPool
from engine.sandbox import pool as pool_module
from engine.sandbox.pool import GRACE_S, Workers
from engine.sandbox.supervise import KillLog

GUARD = "def on_tool_call(event, host):\n    return {'notice': event['name']}\n"


def children_of(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


def test_close_reaps_every_worker() -> None:
    before = children_of(os.getpid())
    pool = WorkerPool(size=2)
    script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
    pool.call(script, "on_tool_call", {"name": "x"}, config={}, state={})
    assert len(children_of(os.getpid()) - before) == 2
    pool.close()
    assert children_of(os.getpid()) - before == set()
    with pytest.raises(ScriptLimitError) as info:
        pool.call(script, "on_tool_call", {"name": "x"}, config={}, state={})
    assert info.value.cause == "crashed"


def test_a_worker_killed_from_outside_is_replaced() -> None:
    with WorkerPool(size=1, limits=Limits(timeout_ms=100)) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        (pid,) = children_of(os.getpid())
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ScriptLimitError) as info:
            pool.call(script, "on_tool_call", {"name": "x"}, config={}, state={})
        assert info.value.cause == "crashed"
        recovered(pool)  # the replacement starts in the background
        result = pool.call(script, "on_tool_call", {"name": "y"}, config={}, state={})
        assert result.value == {"notice": "y"}


def test_workers_start_with_an_empty_environment_in_an_empty_directory() -> None:
    os.environ["HOOKENGINE_TEST_PLANTED"] = "1"
    try:
        with WorkerPool(size=1) as pool:
            pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
            (pid,) = children_of(os.getpid())
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
            assert b"HOOKENGINE_TEST_PLANTED" not in env
            cwd = os.readlink(f"/proc/{pid}/cwd")
            assert os.listdir(cwd) == []
            fds = {
                int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")
            }
            # stdin, stdout, stderr (/dev/null), its own size (the memory guard) and the load
            # average (the hot wait for the next request): nothing of the host's
            assert fds[0].startswith("pipe:") and fds[1].startswith("pipe:")
            assert fds[2] == "/dev/null"
            own = {"/dev/null", f"/proc/{pid}/statm", "/proc/loadavg"}
            assert set(fds.values()) - {fds[0], fds[1]} <= own
            assert len(fds) <= 5
    finally:
        os.environ.pop("HOOKENGINE_TEST_PLANTED", None)


def test_inputs_that_are_not_json_are_a_script_error() -> None:
    from engine.errors import ScriptRuntimeError

    with WorkerPool(size=1) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        with pytest.raises(ScriptRuntimeError):
            pool.call(script, "on_tool_call", {"name": object()}, config={}, state={})


# -- fairness: deadlines, shares, respawns, quarantine -------------------------------------------

KILLERS = {
    # uninterruptible in-process: C-level sorts run past the wall deadline; the parent kills
    "js": "function on_tool_call(event, host) {\n"
    "  for (var i = 0; i < 6; i++) { 'ab'.repeat(1 << 20).split('').sort(); }\n  return null;\n}\n",
    "py": "def on_tool_call(event, host):\n"
    "    sorted(sorted(sorted(sorted(range(1000000), key=str), key=str), key=str), key=str)\n",
    # running out of the address space is final: the Python worker recycles itself
    "py-memory": "def on_tool_call(event, host):\n    s = 'x' * 1000000\n    while True:\n"
    "        s = s + s\n",
}
KILLER_LANG = {"js": Language.JAVASCRIPT, "py": Language.PYTHON, "py-memory": Language.PYTHON}


def recovered(pool: WorkerPool, timeout: float = 20.0) -> dict[str, object]:
    """Wait until every killed worker has been replaced; the pool's health then."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        health = pool.health()
        if not health["respawns_pending"] and health["workers"] == health["size"]:
            return health
        time.sleep(0.02)
    raise AssertionError(f"the pool did not recover: {pool.health()}")


def test_take_gives_up_within_its_timeout_when_no_worker_is_free() -> None:
    workers = Workers(1)
    try:
        held = workers.take(None, timeout_s=1)
        started = time.monotonic()
        with pytest.raises(ScriptLimitError) as info:
            workers.take("other", timeout_s=0.2)
        assert time.monotonic() - started < 1.2
        assert info.value.cause == "busy"
        assert "no worker free within 200 ms" in info.value.message
        workers.give_back(held, healthy=True)
        workers.give_back(workers.take("other", timeout_s=0.2), healthy=True, owner="other")
    finally:
        workers.close()


def test_a_call_that_cannot_get_a_worker_fails_as_busy_within_its_own_deadline() -> None:
    slow_src = "def on_tool_call(event, host):\n    while True:\n        pass\n"
    with WorkerPool(size=1, limits=Limits(timeout_ms=50)) as pool:
        slow = pool.compile(slow_src, filename="slow.py", language=Language.PYTHON)
        guard = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        errors: list[ScriptLimitError] = []

        def hog() -> None:
            try:
                pool.call(slow, "on_tool_call", {}, config={}, state={}, limits=Limits(1500))
            except ScriptLimitError as exc:
                errors.append(exc)

        thread = threading.Thread(target=hog)
        thread.start()
        time.sleep(0.3)  # the hog holds the only worker now
        started = time.monotonic()
        with pytest.raises(ScriptLimitError) as info:
            pool.call(guard, "on_tool_call", {"name": "x"}, config={}, state={})
        # its deadline is 2 x 50 ms + grace; a generous bound, not a timing measurement
        assert time.monotonic() - started < 3 * 0.05 + 2 * GRACE_S + 1.0
        assert info.value.cause == "busy" and "sandbox busy" in info.value.message
        thread.join()
        assert [e.cause for e in errors] == ["timeout"]


def test_one_hook_holds_at_most_its_share_and_waits_for_its_own_slot() -> None:
    workers = Workers(3)
    try:
        assert workers.per_hook == 2
        first, second = (workers.take("greedy", timeout_s=1) for _ in range(2))
        with pytest.raises(ScriptLimitError) as info:
            workers.take("greedy", timeout_s=0.1)
        assert info.value.cause == "busy" and "holds its 2 worker(s)" in info.value.message
        other = workers.take("modest", timeout_s=0.1)  # the spare was kept for others
        workers.give_back(other, healthy=True, owner="modest")
        # a freed slot of its own lets the greedy hook in again
        threading.Timer(
            0.1, workers.give_back, (first,), {"healthy": True, "owner": "greedy"}
        ).start()
        third = workers.take("greedy", timeout_s=2)
        for worker in (second, third):
            workers.give_back(worker, healthy=True, owner="greedy")
        assert workers.health()["busy"] == 0
    finally:
        workers.close()


def test_the_share_per_hook_is_the_operators_choice_and_at_least_one() -> None:
    assert PoolPolicy().per_hook(1) == 1
    assert PoolPolicy().per_hook(4) == 3
    assert PoolPolicy(workers_per_hook=1).per_hook(4) == 1
    assert PoolPolicy(workers_per_hook=9).per_hook(4) == 4


@pytest.mark.parametrize("killer", sorted(KILLERS))
def test_a_hook_that_keeps_killing_workers_is_quarantined_until_forgotten(killer: str) -> None:
    policy = PoolPolicy(quarantine_kills=3, respawn_burst=4, respawns_per_s=20)
    # py-memory: a small cap the doubling reaches at once, and time enough that a loaded
    # machine cannot make it an (in-process, non-killing) timeout first
    memory = killer == "py-memory"
    limits = Limits(timeout_ms=1000 if memory else 50, memory_mb=32 if memory else 256)
    with WorkerPool(size=2, limits=limits, policy=policy) as pool:
        script = pool.compile(
            KILLERS[killer], filename=f"k.{killer[:2]}", language=KILLER_LANG[killer]
        )
        guard = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        causes = []
        for _ in range(3):
            with pytest.raises(ScriptLimitError) as info:
                pool.call(script, "on_tool_call", {}, config={}, state={}, owner="killer")
            causes.append(info.value.cause)
            recovered(pool)
        assert set(causes) <= {"timeout", "memory"} and len(causes) == 3
        spawned = pool.health()["spawned_total"]
        for _ in range(3):  # at once, and without touching (or killing) a worker
            with pytest.raises(ScriptLimitError) as info:
                pool.call(script, "on_tool_call", {}, config={}, state={}, owner="killer")
            assert info.value.cause == "quarantined"
            assert "quarantined after 3 worker kills in 60 s" in info.value.message
            assert "reload" in info.value.message
        health = pool.health()
        assert health["spawned_total"] == spawned
        assert [q["hook"] for q in health["quarantined"]] == ["killer"]
        # other hooks are not affected
        assert pool.call(guard, "on_tool_call", {"name": "ok"}, config={}, state={}).value
        pool.forget("killer")  # what a reload does to the old hook
        assert pool.health()["quarantined"] == []
        with pytest.raises(ScriptLimitError) as info:
            pool.call(script, "on_tool_call", {}, config={}, state={}, owner="killer")
        assert info.value.cause in {"timeout", "memory"}


def test_kills_outside_the_window_do_not_quarantine() -> None:
    log = KillLog(3, window_s=10)
    for at in (0.0, 5.0, 11.0, 16.0):  # never 3 within 10 s
        log.record("h", at, at)
    assert log.quarantined == {}
    log.record("h", 19.0, 19.0)
    assert log.quarantined["h"].kills == 3


def test_respawns_in_a_burst_of_kills_are_rate_limited() -> None:
    before = children_of(os.getpid())
    policy = PoolPolicy(respawns_per_s=2, respawn_burst=2, quarantine_kills=1000)
    workers = Workers(2, policy)
    seen: set[int] = set()
    try:
        started = time.monotonic()
        kills = 0
        while time.monotonic() - started < 2.0:
            try:
                worker = workers.take(None, timeout_s=0.05)
            except ScriptLimitError:
                continue  # none free: the replacements are waiting for the bucket
            seen.add(worker.proc.pid)
            workers.give_back(worker, healthy=False)
            kills += 1
        elapsed = time.monotonic() - started
        respawned = workers.health()["spawned_total"] - 2
        # at most the burst plus the rate over the time, whatever the number of kills
        assert 1 <= respawned <= 2 + 2 * elapsed + 1
        assert kills <= respawned + 2
        assert len(children_of(os.getpid()) - before) <= 2
    finally:
        workers.close()
    assert children_of(os.getpid()) - before == set()


def test_a_failed_spawn_is_retried_so_the_pool_does_not_shrink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = pool_module.Worker.__init__
    failures = [3]

    def flaky(self: pool_module.Worker, cwd: str) -> None:
        if failures[0]:
            failures[0] -= 1
            raise OSError(11, "Resource temporarily unavailable")
        real(self, cwd)

    with WorkerPool(size=2, limits=Limits(timeout_ms=200)) as pool:
        script = pool.compile(KILLERS["py-memory"], filename="m.py", language=Language.PYTHON)
        monkeypatch.setattr(pool_module.Worker, "__init__", flaky)
        with pytest.raises(ScriptLimitError):
            pool.call(script, "on_tool_call", {}, config={}, state={})
        health = recovered(pool)
        assert health["workers"] == 2 and health["spawn_failures"] == 3
        guard = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        assert pool.call(guard, "on_tool_call", {"name": "z"}, config={}, state={}).value


def test_a_first_kill_frees_the_hooks_slot_at_once_a_second_keeps_it_until_the_respawn() -> None:
    # One overrun on a loaded machine must not leave an innocent guard without a worker for
    # the next second; a hook that keeps killing workers is slowed to the respawn rate.
    policy = PoolPolicy(respawns_per_s=0.2, respawn_burst=1)  # the second respawn waits
    workers = Workers(3, policy)
    try:
        assert workers.per_hook == 2
        first = workers.take("guard", timeout_s=1)
        workers.give_back(first, healthy=False, owner="guard")  # killed: its first
        a, b = (workers.take("guard", timeout_s=1) for _ in range(2))  # both slots free
        workers.give_back(a, healthy=False, owner="guard")  # its second kill
        with pytest.raises(ScriptLimitError) as info:  # that slot waits for the respawn
            workers.take("guard", timeout_s=0.2)
        assert info.value.cause == "busy"
        workers.give_back(b, healthy=True, owner="guard")
    finally:
        workers.close()


def test_an_answer_already_in_the_pipe_is_read_even_past_the_deadline(tmp_path: Path) -> None:
    # A host thread that waited long for the GIL must not kill a worker that answered in time.
    worker = pool_module.Worker(str(tmp_path))
    try:
        ready = time.monotonic() + 10
        while not worker._poll.poll(100) and time.monotonic() < ready:
            pass
        assert worker._read(time.monotonic() - 1, 1024) == {"ready": True}
    finally:
        worker.close()


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks


def test_a_worker_between_requests_waits_hot_only_briefly() -> None:
    """After each answer a worker may wait hot for the next request, for at most
    WORKER_SPIN_CAP_S: a worker left idle burns no CPU, and requests spaced far apart (the hot
    wait misses each time) are answered all the same."""
    with WorkerPool(size=1, limits=Limits(timeout_ms=1000)) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        for i in range(5):
            result = pool.call(script, "on_tool_call", {"name": f"t{i}"}, config={}, state={})
            assert result.value == {"notice": f"t{i}"}
            time.sleep(0.02)
        (pid,) = children_of(os.getpid())
        before = _cpu_ticks(pid)
        time.sleep(1.0)
        assert _cpu_ticks(pid) - before <= 2  # 1 s idle: at most 2 ticks (20 ms) of CPU
