"""engine/ is mypy clean (STYLE.md section 3): the configuration in pyproject.toml, no errors."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


CACHE = Path(tempfile.gettempdir()) / (
    "hookengine-mypy-cache-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
)
"""mypy's incremental cache, kept between runs outside the checkout (one per checkout): mypy
checks each module's source hash and its dependencies' interfaces against it and re-checks
whatever changed, so the answer is the same as a cold run's; a clean checkout starts cold."""


def test_mypy_reports_no_errors_in_engine() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(CACHE), "engine"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"
