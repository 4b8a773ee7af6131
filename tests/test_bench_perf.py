"""bench/bench_perf.py keeps running as the engine changes: a quick run of two cheap rows.

Nothing is timed: the run must exit 0 and print its rows and their verdicts, whatever they are.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_bench_perf_quick_run_prints_its_rows_and_verdicts() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "bench/bench_perf.py",
            "--quick",
            "--only",
            "inject10",
            "--only",
            "import",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "load average" in out.stdout
    verdicts = [
        line for line in out.stdout.splitlines() if line.rstrip().endswith(("MET", "NOT met"))
    ]
    assert any("10 inject hooks, records off, p50" in line for line in verdicts), out.stdout
    assert any('python -X importtime -c "import engine"' in line for line in verdicts), out.stdout
    assert "harmless calls blocked, hooks failed" in out.stdout
