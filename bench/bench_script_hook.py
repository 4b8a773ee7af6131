"""One tool_call decided by the no_deletes guard: script hooks through the engine vs baselines.

Script rows go through the full engine path (Engine.load of a temp config with records on,
agent.tool_call: pipeline, sandbox worker, prepared fresh state, result validation, record).
Baselines make the same decision: a plain Python function (the floor), the same policy in Rego
evaluated in-process by regopy, and a process started per call (``python -c``, ``/bin/sh``).
The engine, the floor and Rego decide the three events of ``common.EVENTS`` in turn; a process
per call decides the first (``delete_file``), since what it costs is the start.

Run: python bench/bench_script_hook.py [--runs N] [--spawn-runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    EVENTS,
    FORBIDDEN,
    GUARD_CONFIG,
    RM_RF,
    copy_scripts,
    measure,
    pct,
    plain_python,
    rego,
    report,
    script_hook,
    tool_calls,
    write_agent,
)

from engine import Engine

EVENT = {"name": "delete_file", "input": {"path": "a.txt"}}
PY_DECIDE = (
    "import json, re, sys\n"
    "e = json.loads(sys.argv[1])\n"
    f"if e['name'] in {FORBIDDEN!r}: print('block')\n"
    f"elif e['name'] == 'shell' and re.search({RM_RF!r}, e['input'].get('command', '')):"
    " print('block')\n"
)
SH_DECIDE = (
    """case "$1" in *'"name": "delete_file"'*|*'"name": "drop_table"'*) echo block;;"""
    " *) echo ok;; esac"
)
TARGET_P50_US = 150.0


def write_config(root: Path) -> Path:
    config = root / "config"
    copy_scripts(config)
    for lang in ("js", "py"):
        write_agent(
            config,
            lang,
            {"no_deletes": script_hook("no_deletes", f"no_deletes.{lang}", GUARD_CONFIG)},
        )
    return config


def spawn(argv: list[str]) -> Callable[[], object]:
    def decide() -> object:
        out = subprocess.run([*argv, json.dumps(EVENT)], capture_output=True, check=True)
        assert out.stdout.strip() == b"block"
        return out

    return decide


def engine_rows(config: Path, db: Path, runs: int) -> list[tuple[str, list[float]]]:
    rows = []
    with Engine.load(config, db=str(db), records=True) as engine:
        for lang, label in (("js", "JavaScript"), ("py", "Python")):
            call = tool_calls(engine.agent(lang), EVENTS)
            rows.append((f"engine + script_hook ({label})", measure(call, runs=runs, warmup=300)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--spawn-runs", type=int, default=100)
    args = parser.parse_args()
    rows = [("plain Python function (floor)", measure(plain_python(), runs=args.runs))]
    with tempfile.TemporaryDirectory() as tmp:
        rows += engine_rows(write_config(Path(tmp)), Path(tmp) / "bench.db", args.runs)
    rows.append(("Rego in-process (regopy)", measure(rego(), runs=max(500, args.runs // 5))))
    rows.append(
        (
            "subprocess per call (/bin/sh)",
            measure(spawn(["/bin/sh", "-c", SH_DECIDE, "sh"]), runs=args.spawn_runs, warmup=5),
        )
    )
    rows.append(
        (
            "subprocess per call (python -c)",
            measure(
                spawn([sys.executable, "-I", "-S", "-c", PY_DECIDE]), runs=args.spawn_runs, warmup=5
            ),
        )
    )
    print(f"tool_call decided by no_deletes; {args.runs} engine runs each, records on")
    report(rows, baseline="plain Python function (floor)")
    verdict(dict(rows))


def verdict(rows: dict[str, list[float]]) -> None:
    p50 = {name: statistics.median(times) for name, times in rows.items()}
    rego_p50 = p50["Rego in-process (regopy)"]
    print()
    for label in ("JavaScript", "Python"):
        name = f"engine + script_hook ({label})"
        ours = p50[name]
        print(
            f"{label}: p50 {ours * 1e6:.1f} µs, p99 {pct(rows[name], 0.99) * 1e6:.1f} µs "
            f"(target p50 <= {TARGET_P50_US:.0f}: {_met(ours * 1e6 <= TARGET_P50_US)})"
        )
        print(
            f"  regopy / ours = {rego_p50 / ours:.1f}x (target >= 5: {_met(rego_p50 / ours >= 5)})"
        )
        for spawned in ("python -c", "/bin/sh"):
            ratio = p50[f"subprocess per call ({spawned})"] / ours
            print(
                f"  subprocess ({spawned}) / ours = {ratio:.1f}x "
                f"(target >= 100: {_met(ratio >= 100)})"
            )


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


if __name__ == "__main__":
    main()
