"""docs/langchain.md: its setup runs as written and prints what the page says; its bench
command runs (a quick run) and checks its decisions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

DOC = REPO / "docs" / "langchain.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_setup_runs_as_written_and_prints_what_the_page_says(tmp_path: Path) -> None:
    install, make_config = blocks("sh")
    assert "hookengine[langchain]" in install
    subprocess.run(["bash", "-euc", make_config], cwd=tmp_path, check=True, timeout=30)
    [example] = blocks("python")
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == blocks("text")[0]


def test_the_bench_runs_its_langchain_rows_and_checks_each_decision() -> None:
    done = subprocess.run(
        [sys.executable, "bench/bench_adapters.py", "--only", "langchain", "--quick"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:6]]
    assert rows == ["direct:", "langchain:", "direct", "langchain"]
    verdicts = [line for line in done.stdout.splitlines() if "target <= +300" in line]
    assert len(verdicts) == 2 and all(v.endswith(("met", "MISSED")) for v in verdicts)
