"""The OpenAI Agents SDK's ``MCPServerStdio`` guarded by ``tool_guardrails``, on the real
filesystem server (@modelcontextprotocol/server-filesystem, from tests/fixtures/node)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call

from engine.errors import EngineError
from engine.integrations import openai_agents as oa
from engine.runtime import Agent as EngineAgent
from engine.runtime import Engine
from tests.conftest import REPO
from tests.integrations.oai_policy import SECRET, policy_config

SERVER = REPO / "tests/fixtures/node/node_modules/.bin/mcp-server-filesystem"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def need_server() -> None:
    """The Node packages are installed by `npm ci` in tests/fixtures/node (CI does it)."""
    if SERVER.exists():
        return
    message = f"{SERVER} is missing: run `npm ci` in tests/fixtures/node"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run the MCP tests)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("first line\n", encoding="utf-8")
    (root / "secret.txt").write_text(f"token {SECRET} end\n", encoding="utf-8")
    return root.resolve()


@pytest.fixture
def ops(tmp_path: Path, load: Callable[..., Engine]) -> EngineAgent:
    return load(policy_config(tmp_path / "config")).agent("ops")


@pytest.fixture
async def server(files: Path, ops: EngineAgent) -> AsyncIterator[MCPServerStdio]:
    need_server()
    guards = oa.tool_guardrails(ops)
    async with MCPServerStdio(
        params={"command": str(SERVER), "args": [str(files)]},
        name="files",
        tool_input_guardrails=guards.input,
        tool_output_guardrails=guards.output,
        client_session_timeout_seconds=30,
    ) as guarded:
        yield guarded


async def one_call(server: MCPServerStdio, name: str, args: dict[str, Any]) -> str:
    """Run one scripted call of MCP tool ``name``; return the output the model got."""
    model = ScriptedModel([[function_call(name, args, call_id="c1")], [assistant_message("ok")]])
    await Runner.run(Agent(name="a", model=model, mcp_servers=[server]), "go")
    (output,) = [
        i["output"] for i in model.calls[1].input if i.get("type") == "function_call_output"
    ]
    return output if isinstance(output, str) else "\n".join(part["text"] for part in output)


async def test_blocked_writes_reach_the_model_as_the_reason_and_change_no_file(
    server: MCPServerStdio, files: Path
) -> None:
    notes = files / "notes.txt"
    calls = [
        ("write_file", {"path": str(files / "new.txt"), "content": "x"}),
        ("move_file", {"source": str(notes), "destination": str(files / "moved.txt")}),
        ("edit_file", {"path": str(notes), "edits": [{"oldText": "first", "newText": "last"}]}),
    ]
    for name, args in calls:
        assert await one_call(server, name, args) == "the files are read-only here", name
    assert sorted(p.name for p in files.iterdir()) == ["notes.txt", "secret.txt"]
    assert notes.read_text(encoding="utf-8") == "first line\n"


async def test_an_argument_aware_guard_lets_a_dry_run_edit_through(
    server: MCPServerStdio, files: Path
) -> None:
    notes = files / "notes.txt"
    edit = {"oldText": "first", "newText": "last"}
    said = await one_call(
        server, "edit_file", {"path": str(notes), "edits": [edit], "dryRun": True}
    )
    assert "-first line" in said and "+last line" in said  # the server's diff
    assert notes.read_text(encoding="utf-8") == "first line\n"


async def test_a_secret_read_from_the_server_is_redacted_as_text(
    server: MCPServerStdio, files: Path, ops: EngineAgent
) -> None:
    said = await one_call(server, "read_text_file", {"path": str(files / "secret.txt")})
    assert said == "token [REDACTED] end\n"
    record = ops.engine.records(point="tool_result")[0]
    assert record.event["result"] == f"token {SECRET} end\n"  # hooks saw the content as text


async def test_an_mcp_tool_cannot_take_a_rewritten_input_so_the_call_is_blocked(
    server: MCPServerStdio, files: Path
) -> None:
    said = await one_call(server, "get_file_info", {"path": str(files / "notes.txt")})
    assert said.startswith("hookengine: a policy hook rewrote this call's input")


async def test_run_refuses_an_mcp_server_without_the_guardrails(
    files: Path, ops: EngineAgent
) -> None:
    need_server()
    bare = MCPServerStdio(params={"command": str(SERVER), "args": [str(files)]}, name="bare")
    agent = Agent(name="a", model=ScriptedModel([]), mcp_servers=[bare])
    with pytest.raises(EngineError, match=r"mcp_servers\[0\] \(bare\): its tools are not guarded"):
        await oa.run(agent, "hi", engine_agent=ops)
    assert ops.engine.records(point="before_user_message") == []


async def test_run_through_a_guarded_server(
    server: MCPServerStdio, files: Path, ops: EngineAgent
) -> None:
    model = ScriptedModel(
        [
            [function_call("write_file", {"path": str(files / "x"), "content": "1"}, call_id="c1")],
            [function_call("read_text_file", {"path": str(files / "secret.txt")}, call_id="c2")],
            [assistant_message("read it")],
        ]
    )
    agent = Agent(name="a", model=model, mcp_servers=[server])
    turn = await oa.run(agent, "look around", engine_agent=ops)
    outputs = {i["call_id"]: i["output"] for i in model.calls[2].input if "output" in i}
    assert outputs == {"c1": "the files are read-only here", "c2": "token [REDACTED] end\n"}
    assert turn.final_output == "read it" and not (files / "x").exists()
