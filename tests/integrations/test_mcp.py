"""The MCP gateway against the real filesystem server, through the Python SDK's client.

One gateway per handshake (``auto`` negotiates the 2026 protocol with the gateway, ``legacy``
the initialize handshake; upstream it is always legacy) serves the tests of this module; the
upstream's call log counts the calls that reached the filesystem server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

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


@pytest.fixture(autouse=True)
def node() -> None:
    require_node()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The config folder, the allowed folder and the upstream's call log."""
    config, allowed = write_project(tmp_path)
    return config, allowed, tmp_path / "upstream.log"


def gateway(
    config: Path, allowed: Path, log: Path, *options: str, die_on: str | None = None
) -> StdioServerParameters:
    command = proxy_command(config, upstream_command(allowed, log, die_on=die_on), *options)
    return StdioServerParameters(command=command[0], args=command[1:], env=proxy_env(), cwd=REPO)


@dataclass
class Session:
    """A client connected to a running gateway, called from the test's thread."""

    portal: BlockingPortal
    client: Client
    allowed: Path
    log: Path

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(lambda: self.client.call_tool(name, arguments))

    def tools(self) -> dict[str, Any]:
        listed = self.portal.call(self.client.list_tools)
        return {tool.name: tool for tool in listed.tools}

    def upstream_calls(self) -> int:
        return calls_upstream(self.log)


@pytest.fixture(scope="module", params=["auto", "legacy"])
def fs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    """The gateway in front of the filesystem server, one per client handshake."""
    require_node()
    root = tmp_path_factory.mktemp(f"gateway-{request.param}")
    config, allowed = write_project(root)
    log = root / "upstream.log"
    client = Client(gateway(config, allowed, log), mode=request.param)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(client):
        yield Session(portal, client, allowed, log)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


# -- the filesystem server, both handshakes --------------------------------------------------


def test_writes_are_blocked_as_is_error_with_the_file_unchanged_and_no_upstream_call(
    fs: Session,
) -> None:
    notes = fs.allowed / "notes.txt"
    edits = [{"oldText": "hello", "newText": "bye"}]
    before = fs.upstream_calls()
    for name, arguments in [
        ("write_file", {"path": str(notes), "content": "overwritten"}),
        ("move_file", {"source": str(notes), "destination": str(fs.allowed / "moved.txt")}),
        ("edit_file", {"path": str(notes), "edits": edits}),
        ("edit_file", {"path": str(notes), "edits": edits, "dryRun": False}),
    ]:
        result = fs.call(name, arguments)
        assert result.is_error, name
        assert text(result) == f"this gateway is read-only: {name} is not allowed"
    assert fs.upstream_calls() == before
    assert notes.read_text("utf-8") == NOTES
    assert not (fs.allowed / "moved.txt").exists()


def test_an_edit_with_dry_run_passes_the_argument_aware_guard(fs: Session) -> None:
    notes = fs.allowed / "notes.txt"
    before = fs.upstream_calls()
    edits = [{"oldText": "hello", "newText": "bye"}]
    result = fs.call("edit_file", {"path": str(notes), "edits": edits, "dryRun": True})
    assert not result.is_error
    assert "+bye from the notes" in text(result)
    assert notes.read_text("utf-8") == NOTES
    assert fs.upstream_calls() == before + 1


def test_a_secret_is_redacted_in_content_and_structured_content(fs: Session) -> None:
    # the client checks structuredContent against the outputSchema: had it not fit, it raises
    result = fs.call("read_text_file", {"path": str(fs.allowed / "secret.env")})
    assert not result.is_error
    assert text(result) == "API_KEY=[REDACTED]\nuser=ann\n"
    assert result.structured_content == {"content": "API_KEY=[REDACTED]\nuser=ann\n"}
    assert SECRET not in json.dumps(result.model_dump(mode="json"))


def test_schemas_and_annotations_pass_through_and_no_roots_are_declared_upstream(
    fs: Session, tmp_path: Path
) -> None:
    command = upstream_command(fs.allowed, tmp_path / "direct.log")

    async def listed() -> list[dict[str, Any]]:
        direct = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(direct, mode="legacy") as client:
            tools = (await client.list_tools()).tools
            return [tool.model_dump(mode="json", by_alias=True) for tool in tools]

    through = [tool.model_dump(mode="json", by_alias=True) for tool in fs.tools().values()]
    direct = anyio.run(listed)
    if fs.client.protocol_version != "2025-11-25":
        # the 2026 protocol has no tool ``execution`` (tasks): the SDK drops it on that wire
        direct = [{**tool, "execution": None} for tool in direct]
    assert through == direct
    lines = fs.log.read_text("utf-8").splitlines()
    handshake = [line for line in lines if line.startswith("initialize ")]
    assert len(handshake) == 1
    assert "roots" not in json.loads(handshake[0].split(" ", 1)[1])


# -- failures close the call ------------------------------------------------------------------


def test_a_crashing_guard_blocks_even_a_tool_annotated_read_only(fs: Session) -> None:
    assert fs.tools()["read_text_file"].annotations.read_only_hint is True
    before = fs.upstream_calls()
    result = fs.call("read_text_file", {"path": str(fs.allowed / "guardcrash")})
    assert result.is_error
    assert "hook 'guard'" in text(result)
    assert fs.upstream_calls() == before


def test_a_crashing_redactor_withholds_the_result(fs: Session) -> None:
    path = fs.allowed / "resultcrash.env"
    path.write_text(f"KEY={SECRET}\n", encoding="utf-8")
    before = fs.upstream_calls()
    result = fs.call("read_text_file", {"path": str(path)})
    assert result.is_error
    assert result.structured_content is None
    assert "withheld" in text(result) and SECRET not in text(result)
    assert fs.upstream_calls() == before + 1


def test_a_rewrite_must_fit_the_input_schema(fs: Session) -> None:
    before = fs.upstream_calls()
    bad = fs.call("read_text_file", {"path": str(fs.allowed / "rewrite-bad")})
    assert bad.is_error
    assert "does not fit the tool: it breaks the schema's properties/path/type rule" in text(bad)
    assert "42" not in text(bad)  # the rule, not the value the hook wrote
    assert fs.upstream_calls() == before
    good = fs.call("read_text_file", {"path": str(fs.allowed / "rewrite-ok")})
    assert not good.is_error and text(good) == NOTES
    assert fs.upstream_calls() == before + 1


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("badshape.txt", "content: must be a list, not str"),
        (
            "badschema.txt",
            "structuredContent does not fit the outputSchema: it breaks the schema's "
            "properties/content/type rule",
        ),
    ],
)
def test_an_invalid_replacement_result_is_withheld(fs: Session, name: str, why: str) -> None:
    (fs.allowed / name).write_text("plain text\n", encoding="utf-8")
    result = fs.call("read_text_file", {"path": str(fs.allowed / name)})
    assert result.is_error
    assert why in text(result)
    assert "plain text" not in text(result)


# -- filters ----------------------------------------------------------------------------------


def test_denied_tools_are_neither_listed_nor_called(setup: tuple[Path, Path, Path]) -> None:
    config, allowed, log = setup
    denied = ("--deny-tools", "read_*", "--deny-tools", "list_directory")
    target = str(allowed / "notes.txt")

    async def session() -> None:
        async with Client(gateway(config, allowed, log, *denied), mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "get_file_info" in names
            assert not names & {"read_text_file", "read_file", "list_directory"}
            result = await client.call_tool("read_text_file", {"path": target})
            assert result.is_error
            assert "'read_text_file' is not offered" in text(result)
            assert calls_upstream(log) == 0
            info = await client.call_tool("get_file_info", {"path": target})
            assert not info.is_error and calls_upstream(log) == 1

    anyio.run(session)


def test_allow_tools_offers_only_the_matching_tools(setup: tuple[Path, Path, Path]) -> None:
    config, allowed, log = setup

    async def session() -> None:
        allow = ("--allow-tools", "read_text_file", "--allow-tools", "list_*")
        async with Client(gateway(config, allowed, log, *allow), mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"read_text_file", "list_directory", "list_directory_with_sizes"} | {
                "list_allowed_directories"
            }
            result = await client.call_tool("get_file_info", {"path": str(allowed)})
            assert result.is_error and calls_upstream(log) == 0

    anyio.run(session)


# -- a dead upstream, and stdout carries only protocol -----------------------------------------


def rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def answer(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The next stdout line, which must be one JSON-RPC message."""
    assert process.stdout is not None
    line = process.stdout.readline()
    message = json.loads(line)
    assert message["jsonrpc"] == "2.0"
    return message


def test_a_dead_upstream_answers_is_error_and_the_gateway_exits_non_zero(
    setup: tuple[Path, Path, Path],
) -> None:
    config, allowed, log = setup
    command = proxy_command(config, upstream_command(allowed, log, die_on="tools/call"))
    with subprocess.Popen(
        command,
        cwd=REPO,
        env=proxy_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        try:
            hello = {"protocolVersion": "2025-11-25", "capabilities": {}}
            hello["clientInfo"] = {"name": "raw", "version": "0"}
            rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
            assert answer(process)["result"]["capabilities"]["tools"] == {"listChanged": True}
            rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"name": "read_text_file", "arguments": {"path": str(allowed / "notes.txt")}}
            rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            result = answer(process)
            assert result["id"] == 2
            assert result["result"]["isError"] is True
            assert "upstream server" in result["result"]["content"][0]["text"]
            # the client keeps stdin open: the gateway leaves by itself
            assert process.wait(timeout=20) == 1
            assert process.stdout is not None and process.stdout.read() == b""
            assert process.stderr is not None
            errors = process.stderr.read().decode()
        finally:
            process.kill()
    assert "hookengine mcp-proxy: error: the upstream server" in errors


def test_an_upstream_that_cannot_start_exits_non_zero(setup: tuple[Path, Path, Path]) -> None:
    config, _, _ = setup
    missing = str(REPO / "no-such-server")
    done = subprocess.run(
        proxy_command(config, [missing]),
        cwd=REPO,
        env=proxy_env(),
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == b""
    assert "hookengine mcp-proxy: error:" in done.stderr.decode()


def test_the_command_line_is_checked_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli.hookengine import main

    assert main(["mcp-proxy", "--agent", "fs", "--config", str(tmp_path)]) == 2
    assert main(["mcp-proxy", "--agent", "fs", "--http", "9", "--", "x"]) == 2
    assert main(["mcp-proxy", "--agent", "fs", "--call-timeout", "-1", "--", "x"]) == 2
    assert main(["mcp-proxy", "--agent", "fs", "--call-timeout", "nan", "--", "x"]) == 2
    assert capsys.readouterr().err.count("--call-timeout: a number of seconds >= 0") == 2


def test_importing_the_engine_does_not_import_the_mcp_sdk() -> None:
    probe = "import engine, sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=proxy_env(), capture_output=True, text=True
    )
    assert done.stdout.strip() == "[]", done.stderr
