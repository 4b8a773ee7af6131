"""A benign guard's latency while an attacker hook runs at its limits (issue 8, class 5).

Through Engine.load of a temp config with 2 agents: ``good`` has a small JavaScript guard,
``evil`` an attacker hook at the operator's ceilings (timeout_ms 1000, memory_mb 256). First the
guard's p50/p99 idle, then, per attack variant (a fresh engine each, default pool policy),
the same while 4 threads call the attacker without pause. Printed per variant: the guard's
p99 against idle with the target (≤ 10×), guard calls that failed (must be 0), what the
attacker's calls ended in, worker processes spawned, respawns, and whether the attacker was
quarantined.

Run: python bench/bench_fairness.py [--seconds 60] [--variants js-busy-loop,...]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import pct

from engine import Engine

GUARD = (
    "function on_tool_call(event, host) {\n"
    "  if (event.name === 'rm') { return {block: 'no deletes'}; }\n  return null;\n}\n"
)
NESTED_SORTS = "sorted(" * 16 + "range(1000000)" + ", key=str)" * 16
ATTACKS = {
    "js-busy-loop": ("javascript", "function on_tool_call(event, host) { while (true) {} }"),
    "py-busy-loop": ("python", "def on_tool_call(event, host):\n    while True:\n        pass"),
    "py-uninterruptible": (
        "python",
        f"def on_tool_call(event, host):\n    while True:\n        {NESTED_SORTS}",
    ),
    "js-uninterruptible": (
        "javascript",
        "function on_tool_call(event, host) {\n"
        "  for (;;) { 'ab'.repeat(1 << 20).split('').sort(); }\n}",
    ),
    "py-memory-hog": (
        "python",
        "def on_tool_call(event, host):\n    x = 'a' * 10\n    while True:\n        x = x + x",
    ),
    "js-memory-hog": (
        "javascript",
        "function on_tool_call(event, host) {\n"
        "  var a = []; while (true) { a.push(new Array(10000).fill(1)); }\n}",
    ),
}
DEFAULT_VARIANTS = "js-busy-loop,py-busy-loop,py-uninterruptible,py-memory-hog"


def write_config(root: Path, attack: str | None, quarantine_kills: int) -> Path:
    scripts = f"{{timeout_ms: 50, workers: 2, quarantine_kills: {quarantine_kills}}}"
    files = {
        "engine.yaml": f"process: bench\nscripts: {scripts}\n",
        "agents/good/agent.yaml": "hooks: [guard]\n",
        "agents/good/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.js\n",
        "agents/good/hooks/guard.js": GUARD,
    }
    if attack is not None:
        language, source = ATTACKS[attack]
        files["agents/evil/agent.yaml"] = "hooks: [attacker]\n"
        files["agents/evil/hooks/attacker.yaml"] = (
            f"kind: script_hook\nname: attacker\nlanguage: {language}\n"
            "timeout_ms: 1000\nmemory_mb: 256\nsource: |\n" + textwrap.indent(source, "  ") + "\n"
        )
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def guard_times(engine: Engine, seconds: float) -> tuple[list[float], int]:
    """Seconds per guard call for ``seconds``, and how many calls failed (not decided)."""
    good = engine.agent("good")
    times, failed, i = [], 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        name = "rm" if i % 2 else "ls"
        start = time.perf_counter()
        out = good.tool_call(name, {}, user_id="alice")
        times.append(time.perf_counter() - start)
        for run in out.hooks:
            if run.status == "failed":
                failed += 1
                print(f"  guard failed: {run.cause}: {run.error}", file=sys.stderr)
        i += 1
    return times, failed


def run_variant(
    attack: str | None, seconds: float, folder: Path, quarantine_kills: int
) -> dict[str, object]:
    root = write_config(folder / (attack or "idle") / "config", attack, quarantine_kills)
    with Engine.load(root, records=False, db=str(root.parent / "store.db")) as engine:
        guard_times(engine, 0.5)  # warm up
        stop = threading.Event()
        causes: Counter[str] = Counter()

        def attacker() -> None:
            evil = engine.agent("evil")
            while not stop.is_set():
                out = evil.tool_call("x", {}, user_id="mallory")
                causes[str(out.hooks[0].cause) if out.blocked else "allowed"] += 1

        threads = [threading.Thread(target=attacker) for _ in range(4 if attack else 0)]
        for thread in threads:
            thread.start()
        time.sleep(0.5 if attack else 0)
        try:
            times, failed = guard_times(engine, seconds)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        health = engine.status()["sandbox"]
    return {"times": times, "failed": failed, "causes": causes, "health": health}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="total time budget")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=",".join(ATTACKS))
    parser.add_argument(
        "--quarantine-kills",
        type=int,
        default=5,
        help="engine.yaml scripts.quarantine_kills (default 5, the default; large: never)",
    )
    args = parser.parse_args(argv)
    logging.getLogger("engine").setLevel(logging.ERROR)  # the attacker's failures, by the 100
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in ATTACKS]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    # each variant also starts an engine and warms up (~1.5 s): keep the total near --seconds
    per = max(1.0, args.seconds / (len(variants) + 1) - 1.5)
    with tempfile.TemporaryDirectory() as tmp:
        idle = run_variant(None, per, Path(tmp), args.quarantine_kills)
        idle_p99 = pct(idle["times"], 0.99)  # type: ignore[arg-type]
        print(
            f"guard idle: {len(idle['times'])} calls, p50 "  # type: ignore[arg-type]
            f"{statistics.median(idle['times']) * 1e3:.2f} ms, p99 {idle_p99 * 1e3:.2f} ms"
        )
        print(
            f"{'attack':<20} {'p50 ms':>8} {'p99 ms':>8} {'p99/idle':>9}  target ≤ 10×  "
            f"{'failed':>6} {'spawned':>7} {'respawns/min':>12} quarantined  attacker calls"
        )
        for attack in variants:
            r = run_variant(attack, per, Path(tmp), args.quarantine_kills)
            times: list[float] = r["times"]  # type: ignore[assignment]
            health: dict[str, object] = r["health"]  # type: ignore[assignment]
            p50, p99 = statistics.median(times), pct(times, 0.99)
            ratio = p99 / idle_p99
            causes = ", ".join(f"{k} {v}" for k, v in sorted(r["causes"].items()))  # type: ignore[attr-defined]
            print(
                f"{attack:<20} {p50 * 1e3:>8.2f} {p99 * 1e3:>8.2f}"
                f" {ratio:>8.1f}×  {'met' if ratio <= 10 else 'MISSED':<12} {r['failed']:>6}"
                f" {health['spawned_total']:>7} {health['respawns_last_minute']:>12}"
                f" {'yes' if health['quarantined'] else 'no':<11}  {causes}"
            )


if __name__ == "__main__":
    main()
