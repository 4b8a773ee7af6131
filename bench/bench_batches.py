"""Script hooks of one point in one round trip, and the a-methods on the event loop.

Rows: tool_call decided by 1 and by 10 distinct script hooks (JavaScript, Python), records
off, with the ratio of 10 to 1 (one round trip per point: the target is <= 4x); then the
same guard through ``atool_call`` from 1 and from 8 tasks on one loop, decisions per second
and the host's CPU per decision next to the sync path's.

Run: python bench/bench_batches.py [--runs N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import measure, pct

from engine import Engine

JS = """function on_tool_call(event, host) {{
  if (event.name === "delete_file_{i}") return {{block: "no"}};
  return null;
}}
"""
PY = """def on_tool_call(event, host):
    if event["name"] == "delete_file_{i}":
        return {{"block": "no"}}
"""


def write_config(root: Path) -> Path:
    """Agents js1, js10, py1, py10: 1 or 10 distinct guards each."""
    config = root / "config"
    for lang, text in (("js", JS), ("py", PY)):
        for n in (1, 10):
            folder = config / "agents" / f"{lang}{n}" / "hooks"
            folder.mkdir(parents=True)
            names = [f"g{i}" for i in range(n)]
            (folder.parent / "agent.yaml").write_text(f"hooks: [{', '.join(names)}]\n")
            language = "javascript" if lang == "js" else "python"
            for i, name in enumerate(names):
                source = "".join(f"  {line}\n" for line in text.format(i=i).splitlines())
                (folder / f"{name}.yaml").write_text(
                    f"kind: script_hook\nname: {name}\nlanguage: {language}\nsource: |\n{source}"
                )
    return config


def per_point(engine: Engine, runs: int) -> None:
    print(f"tool_call through 1 and 10 script hooks, records off, {runs} runs each")
    print(f"{'case':<28} {'p50 µs':>10} {'p99 µs':>10} {'x 1 hook':>10}")
    for lang in ("js", "py"):
        p50 = {}
        for n in (1, 10):
            agent = engine.agent(f"{lang}{n}")
            times = measure(lambda agent=agent: agent.tool_call("read", {"p": 1}), runs=runs)
            p50[n] = statistics.median(times)
            print(
                f"{lang} {n:>2} hooks{'':<18} {p50[n] * 1e6:>10.1f} "
                f"{pct(times, 0.99) * 1e6:>10.1f} {p50[n] / p50[1]:>10.1f}"
            )


async def _tasks(engine: Engine, tasks: int, seconds: float) -> tuple[int, float]:
    agent = engine.agent("js1")
    done = 0
    end = time.monotonic() + seconds

    async def loop() -> None:
        nonlocal done
        while time.monotonic() < end:
            await agent.atool_call("read", {"p": 1})
            done += 1

    cpu = time.process_time()
    await asyncio.gather(*(loop() for _ in range(tasks)))
    return done, time.process_time() - cpu


def on_the_loop(engine: Engine, seconds: float) -> None:
    agent = engine.agent("js1")
    start, cpu, n = time.monotonic(), time.process_time(), 0
    while time.monotonic() < start + seconds:
        agent.tool_call("read", {"p": 1})
        n += 1
    sync_rate, sync_cpu = n / seconds, (time.process_time() - cpu) / n
    print(f"\ntool_call on the JS guard for {seconds:g} s each; host CPU per decision")
    print(f"{'case':<28} {'decisions/s':>12} {'CPU µs':>10} {'x 1 task':>10} {'CPU x sync':>11}")
    print(f"{'sync, 1 thread':<28} {sync_rate:>12.0f} {sync_cpu * 1e6:>10.1f}")
    one = 0.0
    for tasks in (1, 8):
        done, used = asyncio.run(_tasks(engine, tasks, seconds))
        rate = done / seconds
        one = one or rate
        print(
            f"{f'async, {tasks} task(s)':<28} {rate:>12.0f} {used / done * 1e6:>10.1f} "
            f"{rate / one:>10.2f} {used / done / sync_cpu:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp))
        with Engine.load(config, db=str(Path(tmp) / "bench.db"), records=False) as engine:
            per_point(engine, args.runs)
            on_the_loop(engine, args.seconds)


if __name__ == "__main__":
    main()
