"""bench/bench_tools.py keeps running as the engine changes: a quick run prints every row and
its verdict (nothing is timed here: the verdicts are whatever they are)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

ROWS = (
    "-> p50 over raw",
    "call_tool, demo JS guard at both points",
    "script tool (call_tool, no hooks)",
    "cached spec export (tool_specs)",
    "mcp-serve round trip (script tool)",
)


def test_bench_tools_quick_run_prints_its_rows_and_verdicts() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_tools.py", "--quick"],
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
    for name in ROWS:
        assert any(name in line for line in verdicts), (name, out.stdout)
