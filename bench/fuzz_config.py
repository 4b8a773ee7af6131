"""Mutate the demo config N times and run ``hookengine check`` on each; print crashes, hangs,
the slowest run and the peak RSS.

    PYTHONPATH=$PWD python bench/fuzz_config.py --mutations 2000 [--seed 1] [--subprocess 20]

Each mutation runs in this process (``main([...])``); ``--subprocess N`` also runs every
N-th one through the real console script under a 2 GiB address-space cap. Exit status 1 if
any run crashed or hung, or a run in process took longer than ``--cap`` seconds (the console
script's time includes the interpreter's start, so it is shown apart).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from tests.config_fuzz import Run, check_in_process, check_in_subprocess, mutate, peak_rss_kib


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mutations", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cap", type=float, default=2.0, help="seconds a check may take")
    p.add_argument("--subprocess", type=int, default=50, help="every N-th also as a process")
    args = p.parse_args()
    rng = random.Random(args.seed)
    bad: list[tuple[int, list[str], Run]] = []
    times: dict[str, list[tuple[float, int, list[str]]]] = {"in process": [], "console": []}
    codes: dict[int | None, int] = {}
    sub_peak = 0
    start_rss = peak_rss_kib()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.mutations):
            mutant = mutate(rng, Path(tmp) / "m")
            runs = [("in process", check_in_process(mutant.root))]
            if args.subprocess and i % args.subprocess == 0:
                run, peak = check_in_subprocess(mutant.root)
                runs.append(("console", run))
                sub_peak = max(sub_peak, peak)
            for how, run in runs:
                codes[run.code] = codes.get(run.code, 0) + 1
                if not run.ok:
                    bad.append((i, mutant.steps, run))
                if not run.ok or (how == "in process" and run.seconds > args.cap):
                    print(f"  #{i} {mutant.steps}: {run.seconds:.2f} s, {run.crash}", flush=True)
                times[how].append((run.seconds, i, mutant.steps))
            if (i + 1) % 250 == 0:
                print(f"{i + 1} mutations, {len(bad)} bad", file=sys.stderr, flush=True)
    inside = sorted(times["in process"], reverse=True)
    console = sorted(times["console"], reverse=True)
    hangs = sum(1 for b in bad if b[2].crash in ("hang", "timeout"))
    print(f"mutations: {args.mutations} (seed {args.seed}); exit codes: {codes}")
    print(f"crashes: {len(bad) - hangs}")
    print(f"hangs: {hangs}")
    print(f"in process over the {args.cap} s cap: {sum(1 for t in inside if t[0] > args.cap)}")
    print(f"max time in process: {inside[0][0]:.2f} s ({inside[0][2]})")
    print(f"median time in process: {inside[len(inside) // 2][0] * 1000:.0f} ms")
    if console:
        print(f"console script runs: {len(console)}, max {console[0][0]:.2f} s (with startup)")
    print(f"peak RSS: this process {peak_rss_kib() // 1024} MiB (from {start_rss // 1024} MiB)")
    print(f"peak RSS of a console-script run: {sub_peak // 1024} MiB")
    for i, steps, run in bad[:20]:
        print(f"  #{i} {steps}: code {run.code} {run.crash or run.output[-300:]}")
    return 1 if bad or inside[0][0] > args.cap else 0


if __name__ == "__main__":
    sys.exit(main())
