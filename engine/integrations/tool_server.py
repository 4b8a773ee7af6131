"""``hookengine mcp-serve``: an agent's own tools as an MCP server (stdio), every call through
``Agent.acall_tool``, the one guarded path."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server


class ToolServer:
    """The MCP server of one agent's tools.

    Args:
        engine: the loaded ``Engine``.
        agent: the agent whose tools are offered (its hooks guard every call).
        user_id: the user every call is scoped to.
        session_id: the session every call is scoped to (default: one per server, made here);
            the artifacts calls make belong to it.
    """

    def __init__(
        self,
        engine: Any,
        agent: str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> None:
        self.engine, self.agent = engine, agent
        self.user_id = user_id
        self.session_id = session_id or uuid.uuid4().hex
        engine.agent(agent)  # an unknown agent fails now, naming the loaded ones

    def server(self) -> Server[Any]:
        return Server(
            "hookengine-tools", on_list_tools=self.list_tools, on_call_tool=self.call_tool
        )

    async def list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """The agent's enabled tools as MCP tools (``tool_specs("mcp")``)."""
        specs = self.engine.agent(self.agent).tool_specs("mcp")
        return types.ListToolsResult(tools=[types.Tool.model_validate(s) for s in specs])

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """One call through the agent's hooks; refusals and failures are ``isError`` results.
        ``structuredContent`` is the result's dict ``data``, unless a ``tool_result`` hook
        replaced the content."""
        result = await self.engine.agent(self.agent).acall_tool(
            params.name,
            dict(params.arguments or {}),
            user_id=self.user_id,
            session_id=self.session_id,
            call_id=str(getattr(ctx, "request_id", "") or "") or None,
        )
        # data is what no tool_result hook sees: when a hook replaced the content (a
        # redaction, a withheld result), the data may hold what it took out
        shown = not result.is_error and not result.replaced
        structured = result.data if isinstance(result.data, dict) and shown else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)],
            structured_content=structured,
            is_error=result.is_error,
        )


def serve_stdio(tools: ToolServer) -> None:
    """Serve on this process's stdin and stdout until the client leaves."""
    anyio.run(_serve_stdio, tools)


async def _serve_stdio(tools: ToolServer) -> None:
    from mcp.server.stdio import stdio_server

    server = tools.server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
