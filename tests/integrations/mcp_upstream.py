"""A small MCP server (the Python SDK's lowlevel Server, stdio) for what the filesystem server
never does: progress, a tool that never ends, ``tools/list_changed`` and an image.

Tools: ``count`` (three progress notices, then "counted"), ``slow`` (progress, then waits
until cancelled), ``change`` (sends ``tools/list_changed``), ``picture`` (a PNG block),
``marker`` (the value of ``$HOOKENGINE_TEST_MARKER`` in its environment, or "absent"),
``misfit`` (declares an ``outputSchema`` and answers structured content that does not fit it).
"""

from __future__ import annotations

import base64
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()
"""The picture's data: a PNG signature and 40 more bytes (48 in all)."""

TOOLS = [
    types.Tool(name=name, description=name, input_schema={"type": "object"})
    for name in ("count", "slow", "change", "picture", "marker")
] + [
    types.Tool(
        name="misfit",
        description="misfit",
        input_schema={"type": "object"},
        output_schema={
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    )
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name in ("count", "slow"):
        for step in (1, 2, 3):
            await ctx.session.report_progress(step, 3, f"step {step}")
    if params.name == "slow":
        await anyio.sleep(60)
    if params.name == "change":
        await ctx.session.send_tool_list_changed()
    if params.name == "picture":
        image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
        return types.CallToolResult(content=[image])
    if params.name == "marker":
        text = os.environ.get("HOOKENGINE_TEST_MARKER", "absent")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    if params.name == "misfit":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="many")],
            structured_content={"count": "many"},
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name + "ed")])


async def main() -> None:
    server = Server("test-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
