"""``hookengine mcp-serve``: an agent's own tools as an MCP server (stdio), every call through
``Agent.acall_tool``, the one guarded path."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
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

        ``structuredContent`` is the result's dict ``data`` as the ``tool_result`` hooks saw
        it (the call path drops ``data`` when a hook changed the result or it was withheld).
        A tool that declares an ``outputSchema`` whose result has no ``structuredContent``
        fitting it is answered ``isError`` with the content the hooks left: an MCP client
        refuses a successful result without one."""
        agent = self.engine.agent(self.agent)
        result = await agent.acall_tool(
            params.name,
            dict(params.arguments or {}),
            user_id=self.user_id,
            session_id=self.session_id,
            call_id=str(getattr(ctx, "request_id", "") or "") or None,
        )
        structured = result.data if isinstance(result.data, dict) and not result.is_error else None
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.content)]
        if not result.is_error:
            misfit = _misfit(_output_schema(agent, params.name), structured)
            if misfit is not None:
                note = f"hookengine: the result is answered as an error: {misfit}"
                content.append(types.TextContent(type="text", text=note))
                return types.CallToolResult(content=content, is_error=True)
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=result.is_error
        )


def _output_schema(agent: Any, name: str) -> dict[str, Any] | None:
    tool = agent.tools.tools.get(name)
    return tool.spec.output_schema if tool is not None else None


def _misfit(schema: dict[str, Any] | None, structured: dict[str, Any] | None) -> str | None:
    """Why ``structured`` cannot go out as the ``structuredContent`` of a tool with
    ``schema`` as its ``outputSchema`` (None: it can, or the tool declares none). Named by
    the schema's rule, never by the value (which the model reads)."""
    if schema is None:
        return None
    if structured is None:
        return (
            "the tool declares an outputSchema, and its structured part was dropped "
            "(a tool_result hook changed the result) or is missing"
        )
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(structured)
    )
    if error is None:
        return None
    rule = "/".join(str(part) for part in error.schema_path) or "root"
    return f"its structured part breaks the outputSchema's {rule} rule"


def serve_stdio(tools: ToolServer) -> None:
    """Serve on this process's stdin and stdout until the client leaves."""
    anyio.run(_serve_stdio, tools)


async def _serve_stdio(tools: ToolServer) -> None:
    from mcp.server.stdio import stdio_server

    server = tools.server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
