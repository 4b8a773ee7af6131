"""Run the real Claude Code CLI (``claude -p``) offline against a loopback fake model.

The CLI is the pinned ``@anthropic-ai/claude-code`` under ``tests/fixtures/node`` (installed by
``npm ci`` there). Each run gets its own HOME and project folder, the hooks in a settings
file passed with ``--settings``, non-essential traffic (telemetry, update checks) off, and
``--allowedTools`` so that the tools would run without asking: whatever stops a tool is the
hook. The output is ``stream-json``, one JSON event a line.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "tests" / "fixtures" / "node"
CLAUDE = NODE_DIR / "node_modules" / ".bin" / "claude"
RUN_TIMEOUT_S = 90

# Quiet, offline and deterministic: no telemetry, no update checks, no auto-updater.
QUIET_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def require_claude() -> Path:
    """The CLI's path; without it the test fails in CI (``CI=true``) and skips loudly elsewhere."""
    problem = _claude_problem()
    if problem is None:
        return CLAUDE
    reason = f"the Claude Code CLI cannot run: {problem} (run `npm ci` in {NODE_DIR})"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(reason)
    pytest.skip(reason)


def _claude_problem() -> str | None:
    if not CLAUDE.exists():
        return f"{CLAUDE} is missing"
    try:
        done = subprocess.run(
            [str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`claude --version` failed: {exc}"
    if done.returncode != 0 or "Claude Code" not in done.stdout:
        return f"`claude --version` answered {done.returncode}: {done.stdout}{done.stderr}"
    return None


def command_hook(command: str, *, timeout_s: int = 30, on_failure: str | None = "block") -> dict:
    """One ``type: "command"`` hook entry; ``on_failure=None`` leaves the key out."""
    hook: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout_s}
    if on_failure is not None:
        hook["onFailure"] = on_failure
    return hook


def http_hook(url: str, *, timeout_s: int = 10, on_failure: str | None = "block") -> dict:
    """One ``type: "http"`` hook entry: the CLI POSTs the hook input JSON to ``url``."""
    hook: dict[str, Any] = {"type": "http", "url": url, "timeout": timeout_s}
    if on_failure is not None:
        hook["onFailure"] = on_failure
    return hook


def hooks_settings(hook: dict, events: Iterable[str], *, matcher: str = "*") -> dict:
    """Settings that run ``hook`` at each of ``events`` (tool events match ``matcher``)."""
    tool_events = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"}
    table: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        entry: dict[str, Any] = {"hooks": [hook]}
        if event in tool_events:
            entry["matcher"] = matcher
        table[event] = [entry]
    return {"hooks": table}


@dataclass(frozen=True)
class Run:
    """What one ``claude -p`` run printed."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        """The closing ``{"type": "result", ...}`` event."""
        found = [e for e in self.events if e.get("type") == "result"]
        assert found, f"no result event; stderr: {self.stderr[-2000:]}"
        return found[-1]

    def describe(self) -> str:
        """Every event and the stderr tail, for assertion messages."""
        lines = [json.dumps(e)[:600] for e in self.events]
        return "\n".join([*lines, "stderr:", self.stderr[-2000:]])


def run_claude(
    prompt: str,
    *,
    base_url: str,
    project: Path,
    home: Path,
    settings: dict | None,
    env: dict[str, str] | None = None,
    allowed_tools: tuple[str, ...] = ("Bash", "Write"),
) -> Run:
    """Run ``claude -p prompt`` in ``project`` with ``settings`` and return its events.

    ``settings=None`` passes no ``--settings``: the project's ``.claude/settings.json`` holds
    the hooks.

    Raises AssertionError when the CLI fails to start or exits non-zero: in these tests that is
    a failure, never a skip.
    """
    claude = require_claude()
    home.mkdir(parents=True, exist_ok=True)
    argv = [str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    if settings is not None:
        settings_file = home / "hook-settings.json"
        settings_file.write_text(json.dumps(settings), encoding="utf-8")
        argv += ["--settings", str(settings_file)]
    argv += ["--allowedTools", *allowed_tools]
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        **QUIET_ENV,
        **(env or {}),
    }
    done = subprocess.run(
        argv,
        cwd=project,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    run = Run(done.returncode, events, done.stderr)
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{run.describe()}"
    return run
