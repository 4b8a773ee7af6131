"""The sandbox pool never dies: when workers cannot be spawned (EAGAIN at a process limit, which
also refuses new threads), every call fails within its deadline as 'unavailable', and the pool
fills up again by itself once spawning works again."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ScriptCompileError, ScriptLimitError
from engine.runtime import Engine
from engine.sandbox import Language, Limits, PoolPolicy, WorkerPool
from engine.sandbox import pool as pool_module
from engine.sandbox.pool import BACKOFF_S, GRACE_S
from tests.conftest import write
from tests.sandbox.test_pool import GUARD, children_of

GUARDS = {
    Language.PYTHON: GUARD,
    Language.JAVASCRIPT: "function on_tool_call(event, host) { return {notice: event.name}; }\n",
}
LIMITS = Limits(timeout_ms=200, compile_timeout_ms=2000)
CALL_BOUND_S = 3 * 0.2 + 2 * GRACE_S + 0.5
"""A call's own bound (3 budgets + 2 graces, see WorkerPool._exchange), plus slack."""
RECOVERY_S = BACKOFF_S[1] + 1.0 + 5.0
"""The longest back-off, one token of the respawn bucket, and a generous start-up."""


class ProcessLimit:
    """What RLIMIT_NPROC does to the engine while ``on``: a new process fails with EAGAIN, and
    so does a new thread (the respawner's)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.refused = 0
        real_popen, real_start = subprocess.Popen, threading.Thread.start

        def popen(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.refused += 1
                raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
            return real_popen(*args, **kwargs)

        def start(thread: threading.Thread) -> None:
            if self.on and thread.name == "hookengine-respawn":
                self.refused += 1
                raise RuntimeError("can't start new thread")
            real_start(thread)

        monkeypatch.setattr(pool_module.subprocess, "Popen", popen)
        monkeypatch.setattr(pool_module.threading.Thread, "start", start)


@pytest.fixture
def limit(monkeypatch: pytest.MonkeyPatch) -> ProcessLimit:
    return ProcessLimit(monkeypatch)


def refused(message: str) -> bool:
    """The message names what the limit refused: a process, or the respawner's thread."""
    return "Resource temporarily unavailable" in message or "can't start new thread" in message


def kill_workers() -> None:
    for pid in children_of(os.getpid()):
        os.kill(pid, signal.SIGKILL)


def call(pool: WorkerPool, script: Any) -> tuple[ScriptLimitError | Any, float]:
    started = time.monotonic()
    try:
        result: Any = pool.call(script, "on_tool_call", {"name": "x"}, config={}, state={})
    except ScriptLimitError as exc:
        result = exc
    return result, time.monotonic() - started


def wait_until_full(health: Any, size: int) -> float:
    started = time.monotonic()
    while time.monotonic() - started < RECOVERY_S:
        if health()["workers"] == size and not health()["respawns_pending"]:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"the pool did not recover: {health()}")


def calls_until_unavailable(pool: WorkerPool, script: Any) -> list[tuple[Any, float]]:
    """Call until the pool says it is unavailable (the dead workers fail first)."""
    outcomes: list[tuple[Any, float]] = []
    while len(outcomes) < 40:
        outcomes.append(call(pool, script))
        if getattr(outcomes[-1][0], "cause", None) == "unavailable":
            break
    return outcomes


@pytest.mark.parametrize("language", list(GUARDS))
@pytest.mark.parametrize("size", [1, 2])
def test_at_zero_workers_calls_fail_as_unavailable_and_the_pool_recovers(
    limit: ProcessLimit, language: Language, size: int
) -> None:
    policy = PoolPolicy(quarantine_kills=1000)
    with WorkerPool(size=size, limits=LIMITS, policy=policy) as pool:
        script = pool.compile(GUARDS[language], filename="g", language=language)
        limit.on = True
        kill_workers()
        outcomes = calls_until_unavailable(pool, script)
        outcomes += [call(pool, script) for _ in range(5)]
        assert all(elapsed < CALL_BOUND_S for _, elapsed in outcomes)
        assert all(isinstance(result, ScriptLimitError) for result, _ in outcomes)
        unavailable = [r for r, _ in outcomes if r.cause == "unavailable"]
        assert len(unavailable) >= 5
        assert "sandbox unavailable: 0 of" in unavailable[-1].message
        assert refused(unavailable[-1].message)
        health = pool.health()
        assert health["workers"] == 0 and health["respawns_pending"] == size
        assert health["spawn_failures"] >= 1 and limit.refused >= 1
        limit.on = False
        waited = wait_until_full(pool.health, size)
        assert waited < RECOVERY_S
        assert pool.health()["last_spawn_error"] is None
        result, _ = call(pool, script)
        assert result.value == {"notice": "x"}


def test_a_long_outage_keeps_retrying_with_backoff(limit: ProcessLimit) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        limit.on = True
        kill_workers()
        calls_until_unavailable(pool, script)
        time.sleep(2.5)  # past the first back-offs: the respawner is still at it
        tried = pool.health()["spawn_failures"]
        assert 2 <= tried <= 12  # backed off, not spinning
        limit.on = False
        wait_until_full(pool.health, 1)
        assert call(pool, script)[0].value == {"notice": "x"}


def test_a_pool_that_cannot_spawn_at_start_starts_empty_and_fills_up(limit: ProcessLimit) -> None:
    before = children_of(os.getpid())
    limit.on = True
    with WorkerPool(size=2, limits=LIMITS) as pool:
        assert pool.health()["workers"] == 0
        started = time.monotonic()
        with pytest.raises(ScriptCompileError) as info:
            pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        assert time.monotonic() - started < CALL_BOUND_S
        assert "sandbox unavailable" in str(info.value)
        limit.on = False
        wait_until_full(pool.health, 2)
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        assert call(pool, script)[0].value == {"notice": "x"}
    assert children_of(os.getpid()) - before == set()


def test_some_workers_failing_at_start_leave_a_smaller_pool_that_fills_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = subprocess.Popen
    refusals = [1]

    def popen(*args: Any, **kwargs: Any) -> Any:
        if refusals[0]:
            refusals[0] -= 1
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        return real(*args, **kwargs)

    monkeypatch.setattr(pool_module.subprocess, "Popen", popen)
    with WorkerPool(size=2, limits=LIMITS) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        assert call(pool, script)[0].value == {"notice": "x"}  # one served at once
        wait_until_full(pool.health, 2)
        assert pool.health()["spawn_failures"] == 1


def test_a_respawner_that_could_not_start_is_started_by_a_later_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = threading.Thread.start
    refusals = [1]

    def start(thread: threading.Thread) -> None:
        if thread.name == "hookengine-respawn" and refusals[0]:
            refusals[0] -= 1
            raise RuntimeError("can't start new thread")
        real(thread)

    monkeypatch.setattr(pool_module.threading.Thread, "start", start)
    with WorkerPool(size=1, limits=LIMITS) as pool:  # its respawner could not start
        assert refusals == [0]
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        kill_workers()
        crashed, _ = call(pool, script)  # the call started it
        assert crashed.cause == "crashed"
        wait_until_full(pool.health, 1)
        assert call(pool, script)[0].value == {"notice": "x"}


# -- through the engine, as a host calls it -------------------------------------------------


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    files = {
        "engine.yaml": "process: t\n"
        "scripts: {timeout_ms: 200, workers: 2, quarantine_kills: 1000}\n",
        "agents/a/agent.yaml": "hooks: [guard_py, guard_js]\n",
        "agents/a/hooks/guard_py.yaml": "kind: script_hook\nname: guard_py\nlanguage: python\n"
        "source: |\n  def on_tool_call(event, host):\n    return None\n",
        "agents/a/hooks/guard_js.yaml": "kind: script_hook\nname: guard_js\nlanguage: javascript\n"
        "source: |\n  function on_tool_call(event, host) { return null; }\n",
    }
    with Engine.load(write(tmp_path / "config", files), db=str(tmp_path / "s.db")) as eng:
        yield eng


def test_at_a_process_limit_tool_call_blocks_in_time_then_recovers(
    engine: Engine, limit: ProcessLimit
) -> None:
    agent = engine.agent("a")
    assert not agent.tool_call("shell", {"cmd": "ls"}, user_id="u1").blocked
    limit.on = True
    kill_workers()
    outs = []
    for _ in range(12):
        started = time.monotonic()
        out = agent.tool_call("shell", {"cmd": "ls"}, user_id="u1")
        outs.append((out, time.monotonic() - started))
    assert all(out.blocked and elapsed < CALL_BOUND_S for out, elapsed in outs)
    last = outs[-1][0]
    assert "(unavailable)" in (last.reason or "") and "'guard_py'" in (last.reason or "")
    assert "sandbox unavailable" in (last.hooks[0].error or "")
    sandbox = engine.status()["sandbox"]
    assert sandbox["workers"] == 0 and refused(str(sandbox["last_spawn_error"]))
    limit.on = False
    wait_until_full(lambda: engine.status()["sandbox"], 2)
    assert not agent.tool_call("shell", {"cmd": "ls"}, user_id="u1").blocked
