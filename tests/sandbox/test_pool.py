"""Worker lifecycle: workers are isolated, replaced when they die, and reaped on close."""

from __future__ import annotations

import os
import signal

import pytest

from engine.errors import ScriptLimitError
from engine.sandbox import Language, Limits, WorkerPool

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
            fds = os.listdir(f"/proc/{pid}/fd")
            assert len(fds) <= 4
    finally:
        os.environ.pop("HOOKENGINE_TEST_PLANTED", None)


def test_inputs_that_are_not_json_are_a_script_error() -> None:
    from engine.errors import ScriptRuntimeError

    with WorkerPool(size=1) as pool:
        script = pool.compile(GUARD, filename="g.py", language=Language.PYTHON)
        with pytest.raises(ScriptRuntimeError):
            pool.call(script, "on_tool_call", {"name": object()}, config={}, state={})
