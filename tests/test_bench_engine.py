"""bench/bench_engine.py keeps running as the engine changes: a short run, nothing timed."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_bench_engine_short_run_prints_its_rows_and_targets() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_engine.py", "--decisions", "200"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("load average") == 2
    for row in ("1 JavaScript guard", "1 Python guard", "10 inject hooks", "an inject hook"):
        assert row in out.stdout, out.stdout
    targets = [line for line in out.stdout.splitlines() if line.rstrip().endswith("met")]
    assert len(targets) == 3, out.stdout
