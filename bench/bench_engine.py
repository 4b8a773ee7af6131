"""The engine's own host CPU per decision: everything above ``WorkerPool.call_batch``.

A decision's wall time is mostly the worker round trip and, on a shared machine, waiting for
a core; this bench takes both out so the engine's own Python (checking and copying the
event, the pipeline, the error policy, the merge, the outcome) can be measured on a busy
machine. Each script hook's pool answers from a recording: the real worker's answers to
the same calls, taken once at start-up. What is timed is the caller's thread CPU
(``time.thread_time``) per decision, so neither the workers nor the record writer's thread
count.

Rows (records off; the same three events as ``bench_perf.py`` decide in turn):

- ``tool_call`` through one JavaScript and one Python ``no_deletes`` guard; target: at most
  20 µs of engine Python per decision;
- ``before_user_message`` through 1 and through 10 built-in ``inject`` hooks; the cost of a
  hook is (10 hooks - 1 hook) / 9; target: at most 10 µs per hook.

Each case runs in 5 interleaved rounds; the median of the rounds is printed.

Run: python bench/bench_engine.py [--decisions N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pipeline import write_config as write_inject_config
from common import (
    EVENTS,
    GUARD_CONFIG,
    copy_scripts,
    script_hook,
    tool_calls,
    uptime,
    write_agent,
)

from engine import Engine

ROUNDS = 5
QUESTION = "Где мой заказ?"


def replayed(engine: Engine, agents: list[str]) -> None:
    """Make the engine's pool answer every call the agents make from a recording of the
    worker's own answers (one real round trip per distinct call, made here)."""
    pool = engine.sandbox()
    real = pool.call_batch
    answers: dict[tuple[str, str], Any] = {}

    def recording(point: str, event: dict[str, Any], calls: list[Any]) -> Any:
        key = (calls[0].script.filename, event["name"])
        answers[key] = real(point, event, calls)
        return answers[key]

    pool.call_batch = recording  # an instance attribute: the class is untouched
    for name in agents:
        decide = tool_calls(engine.agent(name), EVENTS)
        for _ in EVENTS:
            decide()
    pool.call_batch = lambda point, event, calls: answers[(calls[0].script.filename, event["name"])]


def cpu_per_call(fn: Callable[[], object], decisions: int) -> float:
    """The caller thread's CPU seconds per call of ``fn``."""
    start = time.thread_time()
    for _ in range(decisions):
        fn()
    return (time.thread_time() - start) / decisions


def timed(cases: dict[str, Callable[[], object]], decisions: int) -> dict[str, float]:
    """µs of caller-thread CPU per call: the median of ``ROUNDS`` interleaved rounds."""
    for fn in cases.values():
        cpu_per_call(fn, decisions // 10)  # warm-up
    rounds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            rounds[name].append(cpu_per_call(fn, decisions) * 1e6)
    return {name: statistics.median(times) for name, times in rounds.items()}


def guard_engine(root: Path) -> Engine:
    config = root / "guard" / "config"
    copy_scripts(config)
    for lang in ("js", "py"):
        hook = {"no_deletes": script_hook("no_deletes", f"no_deletes.{lang}", GUARD_CONFIG)}
        write_agent(config, lang, hook, records=False)
    engine = Engine.load(config, db=str(root / "guard" / "store.db"))
    replayed(engine, ["js", "py"])
    return engine


def inject_engine(root: Path, hooks: int) -> Engine:
    config = write_inject_config(root / f"inject{hooks}")
    agent = config / "agents" / "bench" / "agent.yaml"
    names = [f"ctx{i}" for i in range(hooks)]
    agent.write_text(f"hooks: [{', '.join(names)}]\n", encoding="utf-8")
    return Engine.load(config, db=str(root / f"inject{hooks}" / "store.db"), records=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=20_000, help="per case and round")
    args = parser.parse_args(argv)
    print(f"start: {uptime()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with (
            guard_engine(root) as guards,
            inject_engine(root, 1) as one,
            inject_engine(root, 10) as ten,
        ):
            cases = {
                "tool_call, 1 JavaScript guard": tool_calls(guards.agent("js"), EVENTS),
                "tool_call, 1 Python guard": tool_calls(guards.agent("py"), EVENTS),
                "before_user_message, 1 inject hook": lambda: one.agent(
                    "bench"
                ).before_user_message(QUESTION, user_id="u1"),
                "before_user_message, 10 inject hooks": lambda: ten.agent(
                    "bench"
                ).before_user_message(QUESTION, user_id="u1"),
            }
            t = timed(cases, args.decisions)
    print("\n## engine host CPU per decision (caller thread, records off, worker answers replayed)")
    for name, us in t.items():
        print(f"  {name:<48} {us:>8.1f} µs")
    per_hook = (
        t["before_user_message, 10 inject hooks"] - t["before_user_message, 1 inject hook"]
    ) / 9
    print(f"  {'an inject hook ((10 hooks - 1 hook) / 9)':<48} {per_hook:>8.1f} µs")
    print("\n## targets")
    for name in ("tool_call, 1 JavaScript guard", "tool_call, 1 Python guard"):
        met = "met" if t[name] <= 20 else "NOT met"
        print(f"  {name:<48} {t[name]:>8.1f} µs   <= 20 µs   {met}")
    met = "met" if per_hook <= 10 else "NOT met"
    print(f"  {'an inject hook':<48} {per_hook:>8.1f} µs   <= 10 µs   {met}")
    print(f"\nend: {uptime()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
