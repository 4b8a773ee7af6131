"""What the MCP gateway's tests and bench share: the project, the upstream, the proxy command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "tests" / "fixtures" / "node"
FILESYSTEM_SERVER = NODE_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
SHIM = Path(__file__).with_name("mcp_shim.py")
GUARD = Path(__file__).with_name("mcp_project") / "guard.js"

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
NOTES = "hello from the notes\n"

FILES = {
    "engine.yaml": "scripts:\n  workers: 1\n  timeout_ms: 1000\n",
    "agents/fs/agent.yaml": "hook_files: [hooks/guard.yaml]\n",
    "agents/fs/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.js\n",
}
"""Agent ``fs``: a read-only guard (edit_file dryRun passes) that also redacts ``sk-`` keys."""


def require_node() -> None:
    """Fail under CI when the Node packages are missing (npm ci not run); skip loudly elsewhere."""
    if FILESYSTEM_SERVER.exists() and shutil.which("node"):
        return
    message = (
        f"{FILESYSTEM_SERVER} is missing: run `cd tests/fixtures/node && npm ci --no-audit "
        "--no-fund` (the MCP gateway tests run the real filesystem server)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def write_project(root: Path) -> tuple[Path, Path]:
    """The config folder and the filesystem server's allowed folder, under ``root``."""
    config = root / "config"
    for rel, text in FILES.items():
        (config / rel).parent.mkdir(parents=True, exist_ok=True)
        (config / rel).write_text(text, encoding="utf-8")
    shutil.copy(GUARD, config / "agents" / "fs" / "hooks" / "guard.js")
    allowed = root / "files"
    allowed.mkdir()
    (allowed / "notes.txt").write_text(NOTES, encoding="utf-8")
    (allowed / "secret.env").write_text(f"API_KEY={SECRET}\nuser=ann\n", encoding="utf-8")
    return config, allowed.resolve()


def upstream_command(allowed: Path, log: Path, *, die_on: str | None = None) -> list[str]:
    """The filesystem server behind the counting relay (mcp_shim.py)."""
    relay = [sys.executable, str(SHIM), str(log)] + (["--die-on", die_on] if die_on else [])
    return [*relay, "--", str(FILESYSTEM_SERVER), str(allowed)]


def proxy_command(config: Path, upstream: list[str], *options: str) -> list[str]:
    """``hookengine mcp-proxy`` for agent ``fs`` in front of ``upstream``."""
    gateway = [sys.executable, "-m", "engine.cli.hookengine", "mcp-proxy", "--agent", "fs"]
    return [*gateway, "--config", str(config), "--db", ":memory:", *options, "--", *upstream]


def proxy_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def calls_upstream(log: Path) -> int:
    """How many ``tools/call`` requests reached the upstream server."""
    if not log.exists():
        return 0
    return log.read_text(encoding="utf-8").splitlines().count("tools/call")
