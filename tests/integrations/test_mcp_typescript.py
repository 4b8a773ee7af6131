"""The MCP gateway in front of the real filesystem server, through the TypeScript SDK's Client."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.integrations.mcp_setup import (
    NODE_DIR,
    NOTES,
    REPO,
    SECRET,
    calls_upstream,
    proxy_command,
    proxy_env,
    require_node,
    upstream_command,
    write_project,
)

CLIENT = NODE_DIR / "mcp_gateway_client.mjs"


def run_client(command: list[str], calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """What the TypeScript client saw calling ``calls`` on the server ``command`` runs."""
    spec = {
        "command": command[0],
        "args": command[1:],
        "env": proxy_env(),
        "cwd": str(REPO),
        "calls": calls,
    }
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, str(CLIENT), json.dumps(spec)],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_the_typescript_client_sees_blocks_a_dry_run_and_a_redacted_secret(
    tmp_path: Path,
) -> None:
    require_node()
    config, allowed = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    notes = str(allowed / "notes.txt")
    edits = [{"oldText": "hello", "newText": "bye"}]
    writes: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": notes, "content": "overwritten"}),
        ("move_file", {"source": notes, "destination": str(allowed / "moved.txt")}),
        ("edit_file", {"path": notes, "edits": edits}),
    ]
    calls = [
        *writes,
        ("edit_file", {"path": notes, "edits": edits, "dryRun": True}),
        ("read_text_file", {"path": str(allowed / "secret.env")}),
    ]
    seen = run_client(proxy_command(config, upstream_command(allowed, log)), calls)

    assert seen["tools"]["write_file"]["destructiveHint"] is True
    *blocked, dry, read = seen["results"]
    for (name, _), result in zip(writes, blocked, strict=True):
        assert result["isError"] is True, name
        assert text(result) == f"this gateway is read-only: {name} is not allowed"
    assert dry["isError"] is False and "+bye from the notes" in text(dry)
    assert "thrown" not in read, read  # the client found structuredContent fits the schema
    assert read["isError"] is False
    assert text(read) == "API_KEY=[REDACTED]\nuser=ann\n"
    assert read["structuredContent"] == {"content": "API_KEY=[REDACTED]\nuser=ann\n"}
    assert SECRET not in json.dumps(seen)
    assert calls_upstream(log) == 2  # the dry run and the read; no write reached the server
    assert (allowed / "notes.txt").read_text("utf-8") == NOTES
    assert not (allowed / "moved.txt").exists()
