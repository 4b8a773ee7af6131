"""``hookengine mcp-proxy --http``: the gateway on streamable HTTP, behind a bearer token."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integrations.mcp_setup import (
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

TOKEN = "test-token-" + "0123456789abcdef"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the gateway exited before it served"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail("the gateway did not listen within 30 s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """The gateway's URL, the allowed folder and the upstream's call log."""
    require_node()
    config, allowed = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    port = free_port()
    command = proxy_command(config, upstream_command(allowed, log), "--http", str(port))
    env = {**proxy_env(), "HOOKENGINE_MCP_TOKEN": TOKEN}
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE) as process:
        try:
            wait_for(port, process)
            yield f"http://127.0.0.1:{port}/mcp", allowed, log
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=20) == 0
            assert process.stdout is not None and process.stdout.read() == b""
        finally:
            process.kill()


def test_a_request_without_the_bearer_token_is_refused_with_401(
    served: tuple[str, Path, Path],
) -> None:
    url, _, log = served
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
        response = httpx.post(url, json=hello, headers={**headers, **auth}, timeout=10)
        assert response.status_code == 401, auth
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert calls_upstream(log) == 0


def test_a_remote_client_with_the_token_is_guarded_like_a_local_one(
    served: tuple[str, Path, Path],
) -> None:
    url, allowed, log = served

    async def session() -> list[Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "write_file" in names
            notes = str(allowed / "notes.txt")
            write = await client.call_tool("write_file", {"path": notes, "content": "x"})
            read = await client.call_tool("read_text_file", {"path": str(allowed / "secret.env")})
            return [write, read]

    write, read = anyio.run(session)
    assert write.is_error
    assert write.content[0].text == "this gateway is read-only: write_file is not allowed"
    assert (allowed / "notes.txt").read_text("utf-8") == NOTES
    assert not read.is_error
    assert read.structured_content == {"content": "API_KEY=[REDACTED]\nuser=ann\n"}
    assert SECRET not in json.dumps(read.model_dump(mode="json"))
    assert calls_upstream(log) == 1


def test_http_needs_a_token_of_sixteen_characters_or_more(tmp_path: Path) -> None:
    config, _ = write_project(tmp_path)
    command = proxy_command(config, ["unused"], "--http", str(free_port()))
    env = {**proxy_env(), "HOOKENGINE_MCP_TOKEN": "short"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "HOOKENGINE_MCP_TOKEN" in done.stderr
