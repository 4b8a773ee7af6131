"""What the MCP gateway passes between client and upstream untouched: progress, cancellation,
``tools/list_changed``, binary content (as stubs to hooks); and hooks that reload."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.integrations.mcp_setup import (
    REPO,
    SHIM,
    calls_upstream,
    proxy_command,
    proxy_env,
    require_node,
    upstream_command,
    write_project,
)
from tests.integrations.mcp_upstream import PNG

UPSTREAM = Path(__file__).with_name("mcp_upstream.py")


def gateway(tmp_path: Path, *options: str) -> tuple[StdioServerParameters, Path]:
    """The gateway (agent ``fs``) in front of mcp_upstream.py, and the upstream's call log."""
    config, _ = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    upstream = [sys.executable, str(SHIM), str(log), "--", sys.executable, str(UPSTREAM)]
    command = proxy_command(config, upstream, *options)
    server = StdioServerParameters(command=command[0], args=command[1:], env=proxy_env(), cwd=REPO)
    return server, log


def test_progress_reaches_the_client_without_its_text(tmp_path: Path) -> None:
    # the text is the upstream's own words, which no hook sees (test_mcp_upstream_faults.py)
    server, _ = gateway(tmp_path)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def session() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("count", {}, progress_callback=progress)

    result = anyio.run(session)
    assert result.content[0].text == "counted"
    assert seen == [(1, 3, None), (2, 3, None), (3, 3, None)]


def test_a_call_the_client_cancels_is_cancelled_upstream(tmp_path: Path) -> None:
    server, log = gateway(tmp_path)
    started = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        started.set()

    async def session() -> None:
        async with Client(server, mode="legacy") as client:
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(lambda: client.call_tool("slow", {}, None, progress))
                    await started.wait()
                    tasks.cancel_scope.cancel()
            assert not scope.cancelled_caught, "the slow call never reported progress"
            for _ in range(100):  # the notice travels client -> gateway -> relay
                if "notifications/cancelled" in log.read_text("utf-8").splitlines():
                    return
                await anyio.sleep(0.05)

    anyio.run(session)
    assert calls_upstream(log) == 1
    assert "notifications/cancelled" in log.read_text("utf-8").splitlines()


def test_tools_list_changed_reaches_the_client(tmp_path: Path) -> None:
    server, _ = gateway(tmp_path)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def session() -> None:
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            await client.call_tool("change", {})
            with anyio.fail_after(10):
                await changed.wait()

    anyio.run(session)


@pytest.mark.parametrize("include_binary", [False, True])
def test_hooks_see_binary_content_as_a_stub_unless_asked(
    tmp_path: Path, include_binary: bool
) -> None:
    server, _ = gateway(tmp_path, *(["--include-binary"] if include_binary else []))

    async def session() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("picture", {})

    result = anyio.run(session)
    image, said = result.content
    assert (image.type, image.data, image.mime_type) == ("image", PNG, "image/png")
    if include_binary:
        assert json.loads(said.text) == {"type": "image", "data": PNG, "mimeType": "image/png"}
    else:
        stub = {"type": "image", "mimeType": "image/png", "bytes": 48, "stub": 0}
        assert json.loads(said.text) == stub


@pytest.mark.parametrize(("options", "seen"), [((), "present"), (("--clean-env",), "absent")])
def test_clean_env_keeps_the_gateways_environment_from_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...], seen: str
) -> None:
    monkeypatch.setenv("HOOKENGINE_TEST_MARKER", "present")
    server, _ = gateway(tmp_path, *options)

    async def session() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("marker", {})

    assert anyio.run(session).content[0].text == seen


def test_hooks_reload_with_watch(tmp_path: Path) -> None:
    require_node()
    config, allowed = write_project(tmp_path)
    log = tmp_path / "upstream.log"
    command = proxy_command(config, upstream_command(allowed, log), "--watch")
    server = StdioServerParameters(command=command[0], args=command[1:], env=proxy_env(), cwd=REPO)
    guard = config / "agents" / "fs" / "hooks" / "guard.js"
    notes = {"path": str(allowed / "notes.txt")}

    async def session() -> None:
        async with Client(server, mode="legacy") as client:
            assert not (await client.call_tool("read_text_file", notes)).is_error
            source = guard.read_text("utf-8").replace(
                "function on_tool_call(event, host) {",
                'function on_tool_call(event, host) {\n  return { block: "reloaded" };',
            )
            guard.write_text(source, encoding="utf-8")
            with anyio.fail_after(20):
                while True:
                    result = await client.call_tool("read_text_file", notes)
                    if result.is_error:
                        assert result.content[0].text == "reloaded"
                        return
                    await anyio.sleep(0.1)

    anyio.run(session)


def test_an_upstream_result_that_misfits_its_output_schema_is_withheld_as_a_tool_error(
    tmp_path: Path,
) -> None:
    # The gateway's own client checks the upstream's structuredContent and raises on a misfit;
    # the caller must get an is_error result naming it, not a JSON-RPC error it would drop.
    server, log = gateway(tmp_path)

    async def session() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("misfit", {})

    result = anyio.run(session)
    assert result.is_error is True
    text = result.content[0].text
    assert "outputSchema" in text and "properties/count/type" in text, text
    assert "'many'" not in text, text  # the rule it breaks, not the value: no hook saw that
    assert calls_upstream(log) == 1
