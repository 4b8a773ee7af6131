"""Adversarial suite: hostile scripts in both languages; the host stays up and nothing leaks."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import ScriptCompileError, ScriptError
from engine.sandbox import CompiledScript, Language, PoolPolicy, WorkerPool
from tests.sandbox.attacks import JAVASCRIPT, PYTHON, SECRET, SECRET_ENV, Attack
from tests.sandbox.conftest import TEST_LIMITS

GRACE_S = 1.0
"""Slack on top of the deadline for a loaded 2-core machine (a killed worker is replaced)."""
CALL_DEADLINE_S = 2 * TEST_LIMITS.timeout_ms / 1000 + 0.25 + GRACE_S
COMPILE_DEADLINE_S = 2 * TEST_LIMITS.compile_timeout_ms / 1000 + 0.25 + GRACE_S
BENIGN = {
    Language.PYTHON: (
        "def on_tool_call(event, host):\n"
        "    return {'notice': event['name'], 'n': host.state.get('n')}\n"
    ),
    Language.JAVASCRIPT: (
        "function on_tool_call(event, host) {\n"
        "  return {notice: event.name, n: host.state.get('n')};\n}\n"
    ),
}


def rss_bytes() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def hostile_pool() -> Iterator[WorkerPool]:
    # Planted before the workers start: a worker that inherited the environment would have it.
    os.environ[SECRET_ENV] = SECRET
    try:
        # attacks that kill workers come back to back here: replace them fast (each attack is
        # its own hook, so none is quarantined); tests/sandbox/test_pool.py covers the limits
        policy = PoolPolicy(respawns_per_s=50, respawn_burst=4)
        with WorkerPool(size=2, limits=TEST_LIMITS, policy=policy) as pool:
            yield pool
    finally:
        os.environ.pop(SECRET_ENV, None)


@pytest.fixture(scope="module")
def rss_at_start() -> int:
    return rss_bytes()


@pytest.fixture(scope="module")
def benign(hostile_pool: WorkerPool) -> dict[Language, CompiledScript]:
    return {
        lang: hostile_pool.compile(src, filename=f"benign.{lang.value}", language=lang)
        for lang, src in BENIGN.items()
    }


def run_attack(pool: WorkerPool, attack: Attack, language: Language, workdir: Path) -> str:
    """Compile and call; return what came back (value or error), for the leak checks."""
    started = time.monotonic()
    try:
        script = pool.compile(
            attack.source, filename=f"{attack.name}.{language.value}", language=language
        )
    except ScriptCompileError as exc:
        assert time.monotonic() - started < COMPILE_DEADLINE_S
        return str(exc)
    started = time.monotonic()
    config = {"dir": str(workdir)}
    state = {"n": 1}
    try:
        result = pool.call(
            script, "on_tool_call", {"name": "x", "time": "t"}, config=config, state=state
        )
    except ScriptError as exc:
        outcome = f"{type(exc).__name__}({exc.cause}): {exc}"
    else:
        assert not (result.value or {}).get("leak"), f"attack got through: {result.value!r}"
        outcome = repr(result)
    assert time.monotonic() - started < CALL_DEADLINE_S, "the call overran its deadline"
    return outcome


def check_aftermath(
    pool: WorkerPool, benign: dict[Language, CompiledScript], outcome: str, workdir: Path
) -> None:
    assert SECRET not in outcome
    assert list(workdir.iterdir()) == [], "a file was written"
    assert not Path("/tmp/pwned").exists()
    replaced_by = time.monotonic() + 20  # killed workers are replaced in the background
    while pool.health()["respawns_pending"] and time.monotonic() < replaced_by:
        time.sleep(0.01)
    for script in benign.values():
        follow_up = pool.call(script, "on_tool_call", {"name": "ok"}, config={}, state={"n": 7})
        assert follow_up.value == {"notice": "ok", "n": 7}
        assert follow_up.state_writes == {}


def test_there_are_enough_attacks() -> None:
    assert len(PYTHON) >= 40 and len(JAVASCRIPT) >= 40


@pytest.mark.parametrize("attack", PYTHON, ids=lambda a: a.name)
def test_python_attack_is_contained(
    hostile_pool: WorkerPool,
    benign: dict[Language, CompiledScript],
    rss_at_start: int,
    attack: Attack,
    tmp_path: Path,
) -> None:
    outcome = run_attack(hostile_pool, attack, Language.PYTHON, tmp_path)
    check_aftermath(hostile_pool, benign, outcome, tmp_path)


@pytest.mark.parametrize("attack", JAVASCRIPT, ids=lambda a: a.name)
def test_javascript_attack_is_contained(
    hostile_pool: WorkerPool,
    benign: dict[Language, CompiledScript],
    rss_at_start: int,
    attack: Attack,
    tmp_path: Path,
) -> None:
    outcome = run_attack(hostile_pool, attack, Language.JAVASCRIPT, tmp_path)
    check_aftermath(hostile_pool, benign, outcome, tmp_path)


def test_host_memory_growth_is_bounded(hostile_pool: WorkerPool, rss_at_start: int) -> None:
    # Runs after the attacks (file order); the host only ever held JSON.
    assert rss_bytes() - rss_at_start < 64 * 1024 * 1024
