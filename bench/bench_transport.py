"""The worker pool alone (no engine around it): batches, and async tasks against sync calls.

Rows, all on the same JavaScript guard (``config`` lists forbidden tool names):

- one hook per ``call`` vs one ``call_batch`` of 1, and 10 hooks as 10 ``call``s vs one
  ``call_batch`` of 10: p50 per decision, and the batch's ratio to one hook;
- decisions/s and host CPU per decision (``time.process_time``, so the workers' CPU is not
  counted): sync ``call_batch`` in a loop, ``acall_batch`` from 1 task and from 8 tasks on one
  event loop, with 2 workers. Printed with the pool's default share (one hook holds at most
  size - 1 workers) and with ``workers_per_hook=2``.

Run: python bench/bench_transport.py [--runs N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import measure, report

from engine.sandbox import BatchCall, Language, Limits, PoolPolicy, WorkerPool

GUARD = """function on_tool_call(event, host) {
  if (host.config.forbidden.includes(event.name)) {
    return { block: "the tool " + event.name + " deletes data and is not allowed here" };
  }
  return null;
}
"""
EVENT = {"name": "read_file", "input": {"path": "a.txt"}, "call_id": "c1"}
CONFIG = {"forbidden": ["delete_file", "drop_table"]}


def guards(pool: WorkerPool, n: int) -> list[BatchCall]:
    """``n`` hooks running the guard, each under its own key and owner (as loaded hooks are)."""
    script = pool.compile(GUARD, filename="guard.js", language=Language.JAVASCRIPT)
    return [
        BatchCall(
            script=script.owned_by(f"hook{i}"),
            function="on_tool_call",
            config=CONFIG,
            config_key="guard-config",
            state={},
            limits=pool.limits,
            owner=f"hook{i}",
        )
        for i in range(n)
    ]


def batch_rows(runs: int) -> None:
    with WorkerPool(size=2, limits=Limits(timeout_ms=200)) as pool:
        ten = guards(pool, 10)

        def singles(calls: list[BatchCall]) -> None:
            for c in calls:
                pool.call(c.script, c.function, EVENT, config=c.config, state={}, owner=c.owner)

        rows = [
            ("1 hook, call", measure(lambda: singles(ten[:1]), runs=runs)),
            (
                "1 hook, call_batch",
                measure(lambda: pool.call_batch("tool_call", EVENT, ten[:1]), runs=runs),
            ),
            ("10 hooks, 10 x call", measure(lambda: singles(ten), runs=runs // 4)),
            (
                "10 hooks, call_batch",
                measure(lambda: pool.call_batch("tool_call", EVENT, ten), runs=runs),
            ),
        ]
        report(rows, baseline="1 hook, call_batch")


def rate_rows(seconds: float, policy: PoolPolicy, title: str) -> None:
    with WorkerPool(size=2, limits=Limits(timeout_ms=200), policy=policy) as pool:
        calls = guards(pool, 1)

        def sync_run() -> int:
            done = 0
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pool.call_batch("tool_call", EVENT, calls)
                done += 1
            return done

        async def task_run(tasks: int) -> int:
            end = time.perf_counter() + seconds

            async def one() -> int:
                done = 0
                while time.perf_counter() < end:
                    await pool.acall_batch("tool_call", EVENT, calls)
                    done += 1
                return done

            return sum(await asyncio.gather(*(one() for _ in range(tasks))))

        cases = {
            "sync call_batch": sync_run,
            "acall_batch, 1 task": lambda: asyncio.run(task_run(1)),
            "acall_batch, 8 tasks": lambda: asyncio.run(task_run(8)),
        }
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(3):
            for name, run in cases.items():
                cpu, wall = time.process_time(), time.perf_counter()
                done = run()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                found[name].append((done / wall, cpu / done))
        rate = {name: statistics.median(r for r, _ in rows) for name, rows in found.items()}
        cpu = {name: statistics.median(c for _, c in rows) for name, rows in found.items()}
        print(f"\n{title}")
        head = ("decisions/s", "CPU µs/dec", "x 1 task", "CPU x sync")
        print(f"{'case':<24} {head[0]:>12} {head[1]:>11} {head[2]:>9} {head[3]:>11}")
        for name in cases:
            print(
                f"{name:<24} {rate[name]:>12.0f} {cpu[name] * 1e6:>11.1f}"
                f" {rate[name] / rate['acall_batch, 1 task']:>9.2f}"
                f" {cpu[name] / cpu['sync call_batch']:>11.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    batch_rows(args.runs)
    rate_rows(args.seconds, PoolPolicy(), "2 workers, one hook holds at most 1 (the default share)")
    rate_rows(args.seconds, PoolPolicy(workers_per_hook=2), "2 workers, workers_per_hook=2")


if __name__ == "__main__":
    main()
