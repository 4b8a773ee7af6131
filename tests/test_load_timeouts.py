"""A harmless guard is never blocked by a spurious timeout while the machine is busy.

Two other processes each burn a core while two host threads make 100 000 decisions of the
JavaScript no_deletes guard (20 000 of the Python one) on harmless tool calls, records on.
Not one may be blocked or fail: a timeout, a ``busy`` pool or a crash would block a tool that
should run. Nothing here is timed; the elapsed time is printed, not asserted. A failure names
the longest pauses of the host's garbage collector: a collection stops every host thread, and
the pool's wall-clock deadlines (the wait for a worker, the run) keep counting meanwhile.
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.runtime import Agent, Engine
from tests.conftest import REPO

pytestmark = pytest.mark.slow

HARMLESS = [
    ("read_file", {"path": "notes.txt"}),
    ("shell", {"command": "ls -la /tmp | grep build"}),
    ("write_file", {"path": "b.txt", "text": "hello"}),
]
THREADS = 2


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """Two processes that each keep one core busy for the test's length."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


@pytest.fixture
def gc_pauses() -> Iterator[list[float]]:
    """The host's garbage collections during the test, in seconds each."""
    pauses: list[float] = []
    started = [0.0]

    def clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - started[0])

    gc.callbacks.append(clock)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(clock)


def guard_config(project: Callable[[dict[str, str]], Path], lang: str) -> Path:
    root = project(
        {
            "agents/guarded/agent.yaml": "hooks: [no_deletes]\n",
            "agents/guarded/hooks/no_deletes.yaml": f"""
                kind: script_hook
                name: no_deletes
                script: ../../../scripts/no_deletes.{lang}
                config:
                  forbidden: [delete_file, drop_table]
                  shell_tools: [shell]
            """,
        }
    )
    (root / "scripts").mkdir()
    shutil.copy(REPO / "config" / "scripts" / f"no_deletes.{lang}", root / "scripts")
    return root


def decide_harmless(agent: Agent, decisions: int) -> Counter[str]:
    """Make ``decisions`` harmless tool calls from THREADS threads; count the refused ones."""
    refused: Counter[str] = Counter()
    lock = threading.Lock()

    def work(offset: int) -> None:
        for i in range(offset, decisions, THREADS):
            name, tool_input = HARMLESS[i % len(HARMLESS)]
            out = agent.tool_call(name, tool_input, user_id=f"u{i % 7}")
            if out.blocked or out.failed:
                with lock:
                    refused[f"{name}: {out.reason} (failed: {out.failed})"] += 1

    with ThreadPoolExecutor(THREADS) as pool:
        for future in [pool.submit(work, offset) for offset in range(THREADS)]:
            future.result()
    return refused


@pytest.mark.parametrize(("lang", "decisions"), [("js", 100_000), ("py", 20_000)])
def test_harmless_calls_are_never_refused_while_other_processes_burn_the_cores(
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Engine],
    busy_cores: None,
    gc_pauses: list[float],
    lang: str,
    decisions: int,
) -> None:
    engine = load(guard_config(project, lang))
    agent = engine.agent("guarded")
    assert agent.tool_call("delete_file", {"path": "a.txt"}).blocked  # the guard is live
    started = time.perf_counter()
    refused = decide_harmless(agent, decisions)
    elapsed = time.perf_counter() - started
    print(f"{lang}: {decisions} decisions in {elapsed:.1f} s, refused: {dict(refused)}")
    longest = ", ".join(f"{p * 1000:.0f} ms" for p in sorted(gc_pauses)[-3:])
    print(f"sandbox: {engine.status()['sandbox']}; longest host GC pauses: {longest}")
    assert not refused, (
        f"{sum(refused.values())} of {decisions} refused: {dict(refused)}; "
        f"longest host GC pauses: {longest}"
    )
