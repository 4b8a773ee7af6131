"""Every entry point takes the one call path: HTTP (a real server on loopback), the CLI, and
``hookengine mcp-serve`` under ``mcp.Client``; each blocks, rewrites and redacts via hooks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from engine.cli.hookengine import main
from engine.runtime import Engine
from tests.conftest import REPO, console, write
from tests.http.test_http import run_server
from tests.tools.conftest import ECHO_JS, ECHO_PY, ECHO_SCRIPT, GUARD

ADMIN, DECIDE = "admin-token-for-tools", "decide-token-for-tools"


def script_project(root: Path) -> Path:
    """Script tools only: what a subprocess loads without the test kind."""
    return write(
        root,
        {
            "engine.yaml": (
                "http: {token_env: T_ADMIN, tokens: [{name: d, env: T_DECIDE, scopes: [decide]}]}\n"
            ),
            "agents/a/agent.yaml": "hooks: [guard]\ntools: [echo_py, echo_js]\n",
            "agents/a/hooks/guard.yaml": GUARD,
            "agents/a/tools/echo_py.yaml": ECHO_PY,
            "agents/a/tools/echo.py": ECHO_SCRIPT,
            "agents/a/tools/echo_js.yaml": ECHO_JS,
        },
    )


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("T_ADMIN", ADMIN)
    monkeypatch.setenv("T_DECIDE", DECIDE)
    return script_project(tmp_path / "config")


@pytest.fixture
def base(config: Path, tmp_path: Path) -> Iterator[str]:
    with Engine.load(config, db=str(tmp_path / "store.db"), records=False) as engine:
        yield from run_server(engine)


def post(base: str, tool: str, body: dict[str, Any], token: str = DECIDE) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{base}/v1/agents/a/tools/{tool}/call", json=body, headers=headers)


def test_http_calls_block_rewrite_and_redact(base: str) -> None:
    blocked = post(base, "echo_js", {"input": {"text": "bad"}}).json()
    assert blocked["is_error"] and "no bad words" in blocked["content"]
    rewritten = post(base, "echo_js", {"input": {"text": "rewrite me"}}).json()
    assert rewritten["content"] == "echo: rewritten" and rewritten["data"] == {"n": 9}
    redacted = post(base, "echo_js", {"input": {"text": "secret5"}}).json()
    assert redacted["content"] == "echo: [REDACTED]"
    bad = post(base, "echo_js", {"input": {"text": 3}}).json()
    assert bad["is_error"] and "text: 3 is not of type 'string'" in bad["content"]
    timeout = post(base, "echo_js", {"input": {"text": "loop"}}).json()
    assert timeout["is_error"] and "time limit" in timeout["content"]
    assert post(base, "echo_js", {"input": {"text": "ok"}}).json()["content"] == "echo: ok"


def test_http_needs_a_decide_token_and_names_an_unknown_agent(base: str) -> None:
    assert post(base, "echo_js", {"input": {}}, token="wrong").status_code == 401
    headers = {"Authorization": f"Bearer {DECIDE}"}
    missing = httpx.post(f"{base}/v1/agents/zz/tools/echo_js/call", json={}, headers=headers)
    assert missing.status_code == 404 and "no agent 'zz'" in missing.text


def test_http_lists_specs_per_format(base: str) -> None:
    headers = {"Authorization": f"Bearer {DECIDE}"}
    got = httpx.get(f"{base}/v1/agents/a/tools?format=anthropic", headers=headers)
    assert got.status_code == 200
    assert sorted(s["name"] for s in got.json()) == ["echo_js", "echo_py"]
    wrong = httpx.get(f"{base}/v1/agents/a/tools?format=gemini", headers=headers)
    assert wrong.status_code == 422 and "openai-chat" in wrong.text


def test_artifacts_are_served_to_admins_only(base: str) -> None:
    made = post(base, "echo_py", {"input": {"text": "hi"}, "session_id": "s9"}).json()
    (artifact,) = made["artifacts"]
    url = f"{base}/v1/artifacts/s9/{artifact['id']}"
    assert httpx.get(url, headers={"Authorization": f"Bearer {DECIDE}"}).status_code == 403
    got = httpx.get(url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert got.status_code == 200 and got.text == "hi"
    assert got.headers["content-type"].startswith("text/plain")
    other = httpx.get(
        f"{base}/v1/artifacts/s8/{artifact['id']}", headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert other.status_code == 404


def cli(config: Path, tmp_path: Path, *args: str) -> list[str]:
    return [*args, "--config", str(config), "--db", str(tmp_path / "store.db")]


def test_the_cli_calls_through_the_hooks(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(cli(config, tmp_path, "tools", "call", "--agent", "a", "echo_js", '{"text": "bad"}'))
        == 1
    )
    assert "no bad words" in json.loads(capsys.readouterr().out)["content"]
    argv = cli(config, tmp_path, "tools", "call", "--agent", "a", "echo_py", '{"text": "secret1"}')
    assert main([*argv, "--session", "c1"]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "echo: [REDACTED]"
    assert main(cli(config, tmp_path, "artifacts", "c1", "--json")) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["tool"] == "echo_py" and row["name"] == "echo.txt"


def test_the_cli_lists_shows_exports_and_tests(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(cli(config, tmp_path, "tools", "list", "--agent", "a")) == 0
    listed = capsys.readouterr().out
    assert "echo_js" in listed and "script_tool" in listed
    assert main(cli(config, tmp_path, "tools", "show", "--agent", "a", "echo_js")) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["input_schema"]["required"] == ["text"]
    argv = cli(config, tmp_path, "tools", "export", "--agent", "a", "--format", "mcp")
    assert main(argv) == 0
    assert {s["name"] for s in json.loads(capsys.readouterr().out)} == {"echo_js", "echo_py"}
    assert main(cli(config, tmp_path, "tools", "test", "--agent", "a")) == 0
    assert "echo_js: no tests" in capsys.readouterr().out
    assert main(cli(config, tmp_path, "tools", "show", "--agent", "a", "nope")) == 2


def test_the_console_script_calls_a_tool(config: Path, tmp_path: Path) -> None:
    argv = cli(config, tmp_path, "tools", "call", "--agent", "a", "echo_js", '{"text": "x"}')
    done = subprocess.run(
        [str(console("hookengine")), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"] == "echo: x"


def test_mcp_serve_works_for_mcp_client(config: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "engine.cli.hookengine", "mcp-serve", "--agent", "a"]
    command += ["--config", str(config), "--db", str(tmp_path / "store.db"), "--session", "m1"]
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={**os.environ, "PYTHONPATH": str(REPO)}
    )

    async def session() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            listed = await client.list_tools()
            echo = await client.call_tool("echo_js", {"text": "rewrite me"})
            blocked = await client.call_tool("echo_js", {"text": "bad"})
            redacted = await client.call_tool("echo_py", {"text": "secret3"})
            bad = await client.call_tool("echo_js", {})
            return {
                "names": sorted(t.name for t in listed.tools),
                "echo": (echo.content[0].text, echo.is_error, echo.structured_content),
                "blocked": (blocked.content[0].text, blocked.is_error),
                "redacted": redacted.content[0].text,
                "bad": (bad.content[0].text, bad.is_error),
            }

    got = anyio.run(session)
    assert got["names"] == ["echo_js", "echo_py"]
    assert got["echo"] == ("echo: rewritten", False, {"n": 9})
    assert got["blocked"][1] and "no bad words" in got["blocked"][0]
    assert got["redacted"] == "echo: [REDACTED]"
    assert got["bad"][1] and "'text' is a required property" in got["bad"][0]
    with Engine.load(config, db=str(tmp_path / "store.db"), records=False) as engine:
        assert [r["tool"] for r in engine.artifacts("m1")] == ["echo_py"]


def test_forgetting_a_session_deletes_its_artifacts(base: str, tmp_path: Path) -> None:
    made = post(base, "echo_py", {"input": {"text": "hi"}, "session_id": "gone"}).json()
    (artifact,) = made["artifacts"]
    admin = {"Authorization": f"Bearer {ADMIN}"}
    deleted = httpx.delete(f"{base}/v1/memory/session:gone", headers=admin)
    assert deleted.status_code == 200 and deleted.json()["deleted"] >= 1
    assert httpx.get(f"{base}/v1/artifacts/gone/{artifact['id']}", headers=admin).status_code == 404
    assert not list((tmp_path / "data" / "artifacts").rglob("echo.txt"))
