"""docs/mcp.md: its setup and its example run, against the real filesystem server, and print
what the page says they print."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from engine.hosts import HOSTS
from tests.integrations.mcp_setup import FILESYSTEM_SERVER, REPO, require_node

DOC = REPO / "docs" / "mcp.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text("utf-8"), flags=re.S)


def test_the_setup_and_the_python_example_run_and_print_what_the_page_says(
    tmp_path: Path,
) -> None:
    require_node()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the console script, running this checkout (the SDK starts servers with a minimal
    # environment: PYTHONPATH is set here, not inherited)
    hookengine = bin_dir / "hookengine"
    run = f'PYTHONPATH={REPO} exec {sys.executable} -m engine.cli.hookengine "$@"'
    hookengine.write_text(f"#!/bin/sh\n{run}\n")
    hookengine.chmod(0o755)
    (bin_dir / "mcp-server-filesystem").symlink_to(FILESYSTEM_SERVER)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(REPO)}
    work = tmp_path / "work"
    work.mkdir()

    setup = blocks("sh")[0]
    subprocess.run(["bash", "-euc", setup], cwd=work, env=env, check=True, timeout=60)
    example = blocks("python")[0]
    printed = re.findall(r"^prints\n\n```\n(.*?)```", DOC.read_text("utf-8"), re.S | re.M)[0]
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
    assert (work / "files" / "notes.txt").read_text("utf-8") == "hello\n"


def test_the_client_config_names_the_same_command() -> None:
    config = json.loads(blocks("json")[0])
    args = config["mcpServers"]["files"]["args"]
    assert config["mcpServers"]["files"]["command"] == "hookengine"
    assert args[:2] == ["mcp-proxy", "--agent"]
    assert args[args.index("--") + 1] == "mcp-server-filesystem"


def test_the_page_documents_every_option_of_the_command() -> None:
    from engine.cli.hookengine import parser

    sub = next(a for a in parser()._actions if a.dest == "command")
    proxy = sub.choices["mcp-proxy"]  # type: ignore[union-attr]
    text = DOC.read_text("utf-8")
    for action in proxy._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag != "--help":
                assert f"`{flag}" in text, flag


def test_the_host_profile_is_the_one_the_page_describes() -> None:
    mcp = HOSTS["mcp"]
    assert {p.value: sorted(f) for p, f in mcp.applies.items()} == {
        "tool_call": ["block", "input"],
        "tool_result": ["result"],
    }
