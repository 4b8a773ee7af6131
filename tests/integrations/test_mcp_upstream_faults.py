"""The MCP gateway in front of an upstream that misbehaves (mcp_raw_upstream.py): its errors,
unreadable or missing answers, and the side channels a secret could leave by (progress text,
``_meta``, binary blocks hooks see as stubs), and values the engine normalises for hooks."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from engine import Engine
from engine.integrations.mcp import Gateway, GatewayOptions
from tests.integrations.mcp_raw_upstream import A, B
from tests.integrations.mcp_setup import REPO, SECRET, proxy_command, proxy_env, write_project

RAW = Path(__file__).with_name("mcp_raw_upstream.py")
BIG = 123456789012345678901234567890
"""An integer past 2**53: hooks see it as its decimal string."""


def upstream(log: Path) -> list[str]:
    return [sys.executable, str(RAW), str(log)]


class Calls:
    """A client connected to a gateway, called from the test's thread."""

    def __init__(self, portal: BlockingPortal, client: Client, log: Path) -> None:
        self.portal, self.client, self.log = portal, client, log

    def __call__(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
        async def bounded() -> Any:
            with anyio.fail_after(30):  # a hanging call fails the test, not the run
                return await self.client.call_tool(name, arguments or {}, **kw)

        return self.portal.call(bounded)


@pytest.fixture
def call(tmp_path: Path) -> Iterator[Calls]:
    """``hookengine mcp-proxy`` (agent ``fs``, which redacts ``sk-`` keys) in front of the
    raw upstream: one per test, as a test may leave a gateway stopped."""
    config, _ = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    command = proxy_command(config, upstream(log))
    server = StdioServerParameters(command=command[0], args=command[1:], env=proxy_env(), cwd=REPO)
    client = Client(server, mode="legacy")
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(client):
        yield Calls(portal, client, log)


def said(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def dumped(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True))


# -- errors the upstream answers --------------------------------------------------------------


@pytest.mark.parametrize("code", [-32000, -32603, -32602, 7])
def test_an_upstream_error_is_a_tool_error_the_result_hooks_redact(call: Calls, code: int) -> None:
    result = call("fail", {"code": code})
    assert result.is_error
    assert said(result) == (
        f"hookengine: the upstream server answered 'fail' with error {code}: "
        "boom API_KEY=[REDACTED]"
    )
    assert SECRET not in dumped(result)
    assert call("echo", {"n": 1}).structured_content == {"n": 1}  # the gateway goes on


def test_an_error_with_the_closed_code_keeps_the_gateway_and_a_real_exit_stops_it(
    tmp_path: Path,
) -> None:
    config, _ = write_project(tmp_path)
    command = proxy_command(config, upstream(tmp_path / "upstream.log"))
    with subprocess.Popen(
        command, cwd=REPO, env=proxy_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as process:
        try:
            hello = {"protocolVersion": "2025-11-25", "capabilities": {}}
            hello["clientInfo"] = {"name": "raw", "version": "0"}
            rpc(process, "initialize", hello, 1)
            rpc(process, "notifications/initialized", None, None)
            fail = rpc(process, "tools/call", {"name": "fail", "arguments": {"code": -32000}}, 2)
            assert fail["result"]["isError"] is True
            assert SECRET not in json.dumps(fail) and "[REDACTED]" in json.dumps(fail)
            echo = rpc(process, "tools/call", {"name": "echo", "arguments": {"n": 5}}, 3)
            assert echo["result"]["structuredContent"] == {"n": 5}
            died = rpc(process, "tools/call", {"name": "die", "arguments": {}}, 4)
            assert died["result"]["isError"] is True
            assert "the upstream server closed the connection" in json.dumps(died)
            assert process.wait(timeout=20) == 1
        finally:
            process.kill()


def rpc(
    process: subprocess.Popen[bytes], method: str, params: Any, request_id: int | None
) -> dict[str, Any]:
    """Send one message; for a request, its answer (the next stdout line)."""
    assert process.stdin is not None and process.stdout is not None
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    message |= {"params": params} if params is not None else {}
    message |= {"id": request_id} if request_id is not None else {}
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    if request_id is None:
        return {}
    answer = json.loads(process.stdout.readline())
    assert answer["id"] == request_id
    return answer  # type: ignore[no-any-return]


# -- answers the SDK cannot read, and no answer ----------------------------------------------


@pytest.mark.parametrize("name", ["null_result", "surrogate"])
def test_an_answer_the_sdk_cannot_read_is_withheld_at_once(call: Calls, name: str) -> None:
    result = call(name)  # the default limit is minutes: an answer now is the fast path
    assert result.is_error
    assert said(result) == (
        "hookengine: the tool's result was withheld: "
        "the upstream server's answer is not a valid MCP message"
    )
    assert SECRET not in dumped(result)


@pytest.mark.parametrize("as_key", [False, True])
def test_a_result_that_misfits_its_output_schema_is_withheld_without_its_values(
    call: Calls, as_key: bool
) -> None:
    # The client's reason quoted the value that did not fit, which no hook had seen: a
    # secret in the wrong field reached the model in the withheld notice.
    result = call("misfit", {"as_key": as_key})
    assert result.is_error
    assert said(result).startswith(
        "hookengine: the tool's result was withheld: "
        "the upstream server's result does not fit the tool's outputSchema"
    )
    assert SECRET not in dumped(result)
    assert call("echo", {"n": 1}).structured_content == {"n": 1}  # the gateway goes on


def test_an_answer_of_the_wrong_shape_is_withheld_and_logged_without_its_values(
    short_limit: tuple[Gateway, Path], caplog: pytest.LogCaptureFixture
) -> None:
    gateway, _ = short_limit

    async def session() -> Any:
        async with Client(gateway.server(), mode="legacy") as client:
            with anyio.fail_after(20):
                return await client.call_tool("bad_shape", {})

    with caplog.at_level(logging.WARNING, logger="engine.integrations.mcp"):
        result = anyio.run(session)
    assert result.is_error
    assert SECRET not in dumped(result)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad_shape" in logged and "content.0" in logged, logged  # where, not what
    assert SECRET not in logged, logged


@pytest.fixture
def short_limit(tmp_path: Path) -> Iterator[tuple[Gateway, Path]]:
    """A gateway in process whose upstream calls may wait one second, and its upstream's log."""
    config, _ = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    options = GatewayOptions(agent="fs", command=tuple(upstream(log)), call_timeout_s=1)
    with Engine.load(config, db=str(tmp_path / "store.db")) as engine:
        yield Gateway(engine, options), log


@pytest.mark.parametrize("name", ["silent", "wrong_id"])
def test_a_call_without_an_answer_ends_at_the_limit_naming_the_tool(
    short_limit: tuple[Gateway, Path], name: str
) -> None:
    gateway, log = short_limit

    async def session() -> tuple[Any, Any]:
        async with Client(gateway.server(), mode="legacy") as client:
            with anyio.fail_after(20):
                waited = await client.call_tool(name, {})
            return waited, await client.call_tool("echo", {"n": 2})

    waited, after = anyio.run(session)
    assert waited.is_error
    assert said(waited) == (
        f"hookengine: the upstream server sent no answer to {name!r} for 1 s; "
        "the call was cancelled there"
    )
    assert SECRET not in dumped(waited)
    assert "notifications/cancelled" in log.read_text("utf-8").splitlines()
    assert after.structured_content == {"n": 2}


# -- side channels ----------------------------------------------------------------------------


def test_progress_reaches_the_client_without_its_text(call: Calls) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    assert said(call("progress", progress_callback=progress)) == "done"
    assert seen == [(1, 2, None)]


def test_a_results_meta_is_shown_to_the_hooks(call: Calls) -> None:
    result = call("meta")
    assert result.meta == {"debug": "API_KEY=[REDACTED]"}
    assert SECRET not in dumped(result)


def test_each_stub_restores_its_own_image_and_a_dropped_one_stays_out(call: Calls) -> None:
    kept = call("images")  # the redacted text changes the result: the stubs are restored
    assert [block.data for block in kept.content if block.type == "image"] == [A, B]
    assert said(kept) == "API_KEY=[REDACTED]"
    dropped = call("images", {"dropFirst": True})  # the hook withholds image A
    assert [block.type for block in dropped.content] == ["text", "image"]
    assert dropped.content[1].data == B


# -- values the engine normalises for hooks ---------------------------------------------------


@pytest.mark.parametrize("key", ["n", "m"])  # n: an integer by the tool's schema
def test_a_big_integer_no_hook_changed_goes_on_as_sent(call: Calls, key: str) -> None:
    result = call("echo", {key: BIG})
    assert not result.is_error, said(result)
    assert said(result) == json.dumps({key: BIG})  # the upstream got the number
    assert result.structured_content == {key: BIG}


def test_a_big_integer_beside_a_redaction_stays_a_number(call: Calls) -> None:
    result = call("echo", {"n": BIG, "key": SECRET})
    assert said(result) == json.dumps({"n": BIG, "key": "[REDACTED]"})
    assert result.structured_content == {"n": BIG, "key": "[REDACTED]"}
