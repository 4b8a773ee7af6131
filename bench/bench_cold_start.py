"""Cold start: ``import engine``, ``Engine.load``, and a one-shot ``hook_tool … tool`` (the JS
no-deletes guard of the demo config), each in a fresh interpreter, against ``python -c pass``;
then two parts of the one-shot run: what it imports, and a sandbox worker's start-up (which
overlaps those imports: the one-shot starts its worker before the engine's own modules load).

The engine's modules are byte-compiled first, as an install does (``compileall``): without
their .pyc files every run would compile them from source.

With ``--baseline DIR`` (another checkout, the commit before a change say) the one-shot run of
DIR's engine is timed too, each of its runs right after one of this checkout's, so that both
see the same load.

Run: python bench/bench_cold_start.py [--runs N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUARD = REPO / "config" / "agents" / "demo" / "hooks" / "no_deletes.yaml"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
IMPORT_TARGET_MS = 150.0
ONE_SHOT_TARGET_MS = 300.0
ONE_SHOT = "hook_tool guard.yaml tool … (one shot)"


CPU: dict[str, list[float]] = {}
"""CPU milliseconds (user + system, the process and the children it waited for) per case:
on a loaded machine they vary far less than wall-clock times."""


def wall_ms(argv: Sequence[str], case: str, repo: Path = REPO) -> float:
    """Wall-clock milliseconds of one run of ``argv`` with the engine of the checkout ``repo``
    (it must succeed); its CPU time is noted in ``CPU[case]``."""
    # in the checkout's folder too: ``python -m`` puts the working folder first on the path
    env = ENV | {"PYTHONPATH": str(repo)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    CPU.setdefault(case, []).append((usage.ru_utime + usage.ru_stime) * 1000)
    return wall


def import_ms(statement: str) -> float:
    """``python -X importtime -c statement``: the cumulative times of the engine's top-level
    lines (``engine``, and the modules its names were then imported from)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        env=ENV,
        check=True,
        capture_output=True,
        text=True,
    )
    found = re.findall(r"import time:\s+\d+ \|\s+(\d+) \| engine\b", done.stderr)
    return sum(int(us) for us in found) / 1000


def one_shot_imports_ms(argv: Sequence[str]) -> float:
    """All the imports of one run of ``argv`` (a ``python -m`` command): the sum of the
    cumulative times of the top-level lines of ``-X importtime``."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        env=ENV,
        check=True,
        capture_output=True,
        text=True,
    )
    found = re.findall(r"import time:\s+\d+ \|\s+(\d+) \| \S", done.stderr)
    return sum(int(us) for us in found) / 1000


def worker_ready_ms(folder: str) -> float:
    """Milliseconds from spawning a sandbox worker to its ready line (then it is closed)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # this checkout's worker, whatever is installed
    from engine.sandbox.process import Worker

    start = time.perf_counter()
    worker = Worker(folder)
    worker.wait_ready()
    ready = (time.perf_counter() - start) * 1000
    worker.close()
    return ready


def load_ms(db: Path) -> float:
    """Milliseconds of ``Engine.load`` of the demo config in a fresh interpreter (after its
    imports), closing included."""
    code = (
        "import time\nfrom engine import Engine\nstart = time.perf_counter()\n"
        f"Engine.load({str(REPO / 'config')!r}, db={str(db)!r}).close()\n"
        "print((time.perf_counter() - start) * 1000)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=ENV, check=True, capture_output=True, text=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def row(name: str, times: list[float], base: float, target: float | None = None) -> None:
    p50 = statistics.median(times)
    cpu = f"{statistics.median(CPU[name]):>9.1f}" if name in CPU else f"{'':>9}"
    goal = f"  target <= {target:.0f} ms: {'met' if p50 <= target else 'NOT met'}" if target else ""
    print(f"{name:<44} {p50:>9.1f} {min(times):>9.1f} {p50 / base:>12.1f} {cpu}{goal}")


def one_shot_of(repo: Path, db: Path) -> list[str]:
    """The one-shot ``hook_tool … tool`` command on the guard of the checkout ``repo``."""
    guard = repo / GUARD.relative_to(REPO)
    return [
        sys.executable, "-m", "engine.cli.hook_tool", str(guard),
        "tool", "delete_file", '{"path": "a.txt"}', "--db", str(db),
    ]  # fmt: skip


def interleaved(
    runs: int, one_shot: list[str], baseline: Path | None, db: Path
) -> dict[str, list[float]]:
    """The one-shot row, and with ``baseline`` the baseline's, each run of it right after one
    of this checkout's."""
    if baseline is None:
        return {ONE_SHOT: [wall_ms(one_shot, ONE_SHOT) for _ in range(runs)]}
    compileall.compile_dir(baseline / "engine", quiet=1)
    other = one_shot_of(baseline, db.with_name("baseline.db"))
    wall_ms(other, "warm-up", baseline)
    name = f"  the same, baseline {baseline.name}"
    rows: dict[str, list[float]] = {ONE_SHOT: [], name: []}
    for _ in range(runs):
        rows[ONE_SHOT].append(wall_ms(one_shot, ONE_SHOT))
        rows[name].append(wall_ms(other, name, baseline))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout, timed interleaved")
    options = parser.parse_args()
    runs, baseline = options.runs, options.baseline
    compileall.compile_dir(REPO / "engine", quiet=1)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, {runs} runs each")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "store.db"
        one_shot = one_shot_of(REPO, db)
        wall_ms(one_shot, "warm-up")  # creates the store: later runs find it current
        pass_ = [sys.executable, "-c", "pass"]
        rows = {
            "python -c pass": [wall_ms(pass_, "python -c pass") for _ in range(runs)],
            "import engine (-X importtime)": [import_ms("import engine") for _ in range(runs)],
            "from engine import Engine (-X importtime)": [
                import_ms("from engine import Engine") for _ in range(runs)
            ],
            "Engine.load(config), after imports": [load_ms(db) for _ in range(runs)],
            **interleaved(runs, one_shot, baseline and baseline.resolve(), db),
            "  its imports (-X importtime)": [one_shot_imports_ms(one_shot) for _ in range(runs)],
            "  a sandbox worker, spawn to ready": [worker_ready_ms(tmp) for _ in range(runs)],
        }
    base = statistics.median(rows["python -c pass"])
    print(f"{'case':<44} {'p50 ms':>9} {'min ms':>9} {'x python -c':>12} {'cpu p50':>9}")
    targets = {"import engine (-X importtime)": IMPORT_TARGET_MS, ONE_SHOT: ONE_SHOT_TARGET_MS}
    for name, times in rows.items():
        row(name, times, base, targets.get(name))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
