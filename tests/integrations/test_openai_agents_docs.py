"""docs/openai-agents.md: the setup runs as written and prints what the page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from engine.hosts import HOSTS
from engine.points import Point
from tests.conftest import REPO
from tests.test_docs import anchors

DOC = (REPO / "docs" / "openai-agents.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)


def test_the_setup_runs_as_written_and_prints_what_the_page_says(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(["sh", "-e", "-c", blocks("sh")[0]], cwd=tmp_path, check=True, timeout=30)
    done = subprocess.run(
        [sys.executable, "-c", blocks("python")[0]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == blocks("text")[0].splitlines()


def test_the_page_maps_every_point_and_names_the_host_profile() -> None:
    mapping = DOC.split("## Point mapping", 1)[1].split("\n## ", 1)[0]
    for point in Point:
        assert f"`{point.value}`" in mapping, point
    assert "openai-agents" in HOSTS and "`openai-agents`" in DOC


def test_the_hosts_page_links_here_and_every_link_of_the_page_resolves() -> None:
    hosts = (REPO / "docs" / "hosts.md").read_text(encoding="utf-8")
    assert "(openai-agents.md)" in hosts
    links = re.findall(r"\]\(([a-z_-]*\.md)?(?:#([^)]*))?\)", DOC)
    assert links
    for target, anchor in links:
        page = (REPO / "docs" / target).read_text(encoding="utf-8") if target else DOC
        if anchor:
            assert anchor in anchors(page), f"#{anchor}"
