"""The MCP gateway: an MCP server in front of another one, whose tool calls the engine decides.

The gateway lists the upstream server's tools (schemas and annotations unchanged, filtered by
the allow and deny globs) and answers each ``tools/call`` in three steps:

==============  ==============================================================================
step            what happens
==============  ==============================================================================
tool_call       the agent's hooks see ``{name, input, call_id}``. A block answers the call with
                ``CallToolResult(is_error=True)`` holding the reason; the upstream is not
                called. A rewritten input must fit the tool's ``inputSchema``, else the call is
                blocked with the reason.
upstream        the call goes upstream; progress reaches the client, a cancelled call is
                cancelled upstream. An upstream that cannot answer is a dead upstream: the
                call is answered ``is_error`` and the gateway stops (a non-zero exit).
tool_result     the hooks see ``{content, structuredContent, isError}`` (binary blocks as
                ``{type, mimeType, bytes}`` stubs unless ``include_binary``). A replacement
                must be a valid ``CallToolResult`` whose ``structuredContent`` fits the
                ``outputSchema``; a replacement that does not, a block and a failed hook
                withhold the result (``is_error`` with the cause). An agent with no hook at
                ``tool_result`` and no records is not asked: nothing would look at the result.
==============  ==============================================================================

A refusal is always a ``CallToolResult`` with ``is_error``, never a raised error: that would
become a JSON-RPC error, which clients drop. Tool annotations (``readOnlyHint``, ...) come from
the upstream server and are only hints: every call is evaluated whatever they say.
"""

from __future__ import annotations

import base64
import fnmatch
import logging
import os
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from engine.boundary import CUT_KEY
from engine.points import Point

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession

    from engine.outcome import Outcome
    from engine.runtime import Agent, Engine

HOST = "mcp"
"""The engine's host profile for the gateway (engine/hosts.py)."""

PREFIX = "hookengine: "
"""Starts every text the gateway writes itself, so the user sees where it came from."""

MAX_SESSIONS = 1000
"""How many HTTP client sessions the gateway remembers to send ``tools/list_changed`` to."""

log = logging.getLogger("hookengine.mcp")


@dataclass(frozen=True)
class GatewayOptions:
    """How one gateway runs: which agent decides, which upstream it fronts."""

    agent: str
    """The agent whose hooks decide every tool call."""
    command: tuple[str, ...]
    """The upstream MCP server's command and arguments (run over stdio)."""
    user_id: str | None = None
    """The scope's user for every evaluation."""
    allow_tools: tuple[str, ...] = ()
    """Globs of tool names to offer (none given: every tool)."""
    deny_tools: tuple[str, ...] = ()
    """Globs of tool names never offered nor called (wins over ``allow_tools``)."""
    include_binary: bool = False
    """Hand hooks binary blocks whole (base64) instead of ``{type, mimeType, bytes}`` stubs."""
    clean_env: bool = False
    """Start the upstream with the MCP SDK's minimal environment instead of this one's."""


@dataclass
class Counters:
    """What the gateway did since it started (tests and the bench read them)."""

    calls: int = 0
    upstream_calls: int = 0
    blocked: int = 0
    withheld: int = 0


class UpstreamDied(Exception):
    """The upstream server could not answer a call (its process ended or its pipe broke)."""


class UpstreamMisfit(Exception):
    """The upstream's result does not fit the ``outputSchema`` it declared for the tool.

    The gateway's MCP client checks that itself and raises a plain ``RuntimeError``; left to
    itself that error would reach the caller as a JSON-RPC error, which clients drop.
    """


_CLIENT_CHECKS = (
    "Invalid structured content returned by tool",
    "Invalid schema for tool",
    "has an output schema but did not return structured content",
)
"""What the MCP client's own result checks say in their ``RuntimeError`` (validate_tool_result)."""


class Gateway:
    """One upstream MCP server, fronted by an MCP server whose tool calls an agent decides.

    Args:
        engine: the loaded engine (its agent ``options.agent`` must exist).
        options: the agent, the upstream command and the filters.
    """

    def __init__(self, engine: Engine, options: GatewayOptions) -> None:
        if not options.command:
            raise ValueError("command: the upstream MCP server's command is missing")
        engine.agent(options.agent)  # an unknown agent fails now, not at the first call
        self.engine = engine
        self.options = options
        self.counters = Counters()
        self.failure: str | None = None
        """Why the gateway stopped (the upstream died), else None."""
        self.dead = threading.Event()
        """Set when the upstream died: the gateway stops."""
        self.tools: dict[str, types.Tool] = {}
        self._upstream: Client | None = None
        self.id = uuid.uuid4().hex
        """The session id hooks see for a client without one of its own (stdio: the only one)."""
        self._sessions: dict[str, ServerSession] = {}
        """Per client session, its latest request's session: notices go out through it."""
        self._validators: dict[tuple[str, str], tuple[Mapping[str, Any], Any]] = {}
        """Per tool and schema kind, the schema last checked against and its validator."""

    # -- the server ---------------------------------------------------------------------------

    def server(self) -> Server[Gateway]:
        """The downstream MCP server; the upstream is opened in its lifespan."""
        return _GatewayServer(
            "hookengine-mcp",
            lifespan=self.lifespan,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    @asynccontextmanager
    async def lifespan(self, _server: Server[Gateway]) -> AsyncIterator[Gateway]:
        """Open the upstream (legacy handshake) for as long as the server runs.

        The gateway declares no roots capability upstream: it has no roots of its own to give.
        """
        params = StdioServerParameters(
            command=self.options.command[0],
            args=list(self.options.command[1:]),
            env=None if self.options.clean_env else dict(os.environ),
        )
        async with Client(params, mode="legacy", message_handler=self._on_upstream) as client:
            self._upstream = client
            log.info("upstream %s: %s", self.options.command[0], client.server_info)
            try:
                yield self
            finally:
                self._upstream = None

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """The upstream's tools that pass the filters, as the upstream describes them."""
        self._scope(ctx)
        cursor = params.cursor if params is not None else None
        listed = await self._client().list_tools(cursor=cursor, cache_mode="bypass")
        for tool in listed.tools:
            self.tools[tool.name] = tool
        offered = [tool for tool in listed.tools if self.offers(tool.name)]
        return types.ListToolsResult(tools=offered, next_cursor=listed.next_cursor)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Decide, call upstream, decide again; every refusal is an ``is_error`` result."""
        self.counters.calls += 1
        name, arguments = params.name, dict(params.arguments or {})
        scope = self._scope(ctx)
        if not self.offers(name):
            return self._blocked(f"the tool {name!r} is not offered by this gateway")
        try:
            out = await self._agent().atool_call(name, arguments, host=HOST, **scope)
        except Exception as exc:  # the edge: a failed check blocks the tool
            log.exception("tool_call %s: the check failed", name)
            return self._blocked(describe(exc))
        if out.blocked:
            return self._blocked(out.reason or "blocked by policy")
        try:
            if out.input is not None and out.input != arguments:
                problem = await self._input_problem(name, out.input)
                if problem:
                    return self._blocked(problem)
                arguments = out.input
            result = await self._call_upstream(ctx, name, arguments)
            return await self._checked_result(name, arguments, result, scope)
        except UpstreamDied as exc:
            return self._stop(str(exc))
        except UpstreamMisfit as exc:
            log.warning("tools/call %s: %s", name, exc)
            return self._withheld(str(exc))
        except ValidationError as exc:  # the upstream's answer is no CallToolResult
            log.warning("tools/call %s: the upstream's answer is not valid: %s", name, exc)
            return self._withheld("the upstream server's answer is not a valid tool result")

    def offers(self, name: str) -> bool:
        """Whether the tool passes ``allow_tools`` and ``deny_tools``."""
        allowed = not self.options.allow_tools or _matches(name, self.options.allow_tools)
        return allowed and not _matches(name, self.options.deny_tools)

    # -- one call ---------------------------------------------------------------------------------

    async def _call_upstream(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """The upstream's answer; its own JSON-RPC errors pass through as raised ``MCPError``."""
        client = self._client()
        self.counters.upstream_calls += 1
        try:
            return await client.call_tool(
                name, arguments, progress_callback=ctx.session.report_progress
            )
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise UpstreamDied(f"the upstream server closed the connection ({exc})") from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            raise UpstreamDied(f"the upstream server is gone ({type(exc).__name__})") from exc
        except RuntimeError as exc:
            if not any(check in str(exc) for check in _CLIENT_CHECKS):
                raise
            first = str(exc).splitlines()[0]
            raise UpstreamMisfit(
                f"the upstream server's result does not fit the tool's outputSchema ({first})"
            ) from exc

    async def _checked_result(
        self,
        name: str,
        arguments: dict[str, Any],
        result: types.CallToolResult,
        scope: dict[str, Any],
    ) -> types.CallToolResult:
        """``result`` as the hooks leave it, or withheld when they fail or leave it invalid."""
        agent = self._agent()
        if not _evaluates(agent, Point.TOOL_RESULT):
            return result
        seen, stubs = result_event(result, include_binary=self.options.include_binary)
        try:
            out = await agent.atool_result(name, arguments, seen, host=HOST, **scope)
        except Exception as exc:  # the edge: an unchecked result is withheld
            log.exception("tool_result %s: the check failed", name)
            return self._withheld(describe(exc))
        if out.blocked or out.failed:
            return self._withheld(_result_reason(out))
        if out.result == seen:
            return result
        try:
            replaced = result_from_change(out.result, stubs)
            if not _same_structure(replaced, result):
                await self._check_output(name, replaced)
        except ValueError as exc:
            return self._withheld(f"a hook's replacement result is not valid: {exc}")
        return replaced

    async def _input_problem(self, name: str, arguments: dict[str, Any]) -> str | None:
        """Why a rewritten input does not fit the tool's ``inputSchema`` (None: it fits)."""
        tool = await self._tool(name)
        if tool is None:
            return f"the input was rewritten, but the tool {name!r} is not listed to check it"
        error = self._schema_error(name, "input", tool.input_schema, arguments)
        if error is None:
            return None
        return f"a hook rewrote the input of {name!r} so that it does not fit the tool: {error}"

    async def _check_output(self, name: str, result: types.CallToolResult) -> None:
        tool = await self._tool(name)
        schema = tool.output_schema if tool is not None else None
        if schema is None or result.is_error:
            return
        if result.structured_content is None:
            raise ValueError("structuredContent is missing, and the tool has an outputSchema")
        error = self._schema_error(name, "output", schema, result.structured_content)
        if error is not None:
            raise ValueError(f"structuredContent does not fit the outputSchema: {error}")

    def _schema_error(
        self, name: str, kind: str, schema: Mapping[str, Any], value: Any
    ) -> str | None:
        """Why ``value`` does not fit ``schema`` (None: it fits), with the validator built
        once per schema: a re-listed tool brings a new schema object, which gets its own."""
        cached = self._validators.get((name, kind))
        if cached is not None and cached[0] is schema:
            validator = cached[1]
        else:
            validator = jsonschema.validators.validator_for(schema)(schema)
            self._validators[(name, kind)] = (schema, validator)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return None
        where = "/".join(str(part) for part in error.absolute_path) or "(the whole value)"
        return f"{where}: {error.message}"

    async def _tool(self, name: str) -> types.Tool | None:
        """The upstream's description of ``name``; listed again once if it is not known."""
        if name not in self.tools:
            cursor: str | None = None
            while True:
                page = await self._client().list_tools(cursor=cursor, cache_mode="bypass")
                self.tools.update((tool.name, tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        return self.tools.get(name)

    # -- answers ------------------------------------------------------------------------------

    def _blocked(self, reason: str) -> types.CallToolResult:
        self.counters.blocked += 1
        return _error_result(reason)

    def _withheld(self, reason: str) -> types.CallToolResult:
        self.counters.withheld += 1
        return _error_result(f"{PREFIX}the tool's result was withheld: {reason}")

    def _stop(self, why: str) -> types.CallToolResult:
        """Answer the call that found the upstream dead, and stop the gateway."""
        self.failure = why
        log.error("%s; the gateway stops", why)
        self.dead.set()
        return _error_result(f"{PREFIX}{why}; the gateway stops")

    # -- plumbing -----------------------------------------------------------------------------

    async def _on_upstream(self, message: Any) -> None:
        """Pass the upstream's ``tools/list_changed`` on to every connected client."""
        if isinstance(message, Exception):
            log.warning("upstream: %s", message)
            return
        if isinstance(message, types.ToolListChangedNotification):
            self.tools.clear()
            for session in list(self._sessions.values()):
                try:
                    await session.send_tool_list_changed()
                except Exception as exc:  # noqa: BLE001 - a gone client misses one notice
                    log.warning("tools/list_changed not sent: %s", exc)

    def _scope(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """The evaluation's scope: the user given, the client's session, the request's id."""
        headers = getattr(ctx.request, "headers", None)
        session = (headers.get("mcp-session-id") if headers is not None else None) or self.id
        # a session outlives its requests: sending through it later uses the client's channel
        self._sessions.pop(session, None)
        self._sessions[session] = ctx.session
        if len(self._sessions) > MAX_SESSIONS:  # the longest idle client misses list changes
            del self._sessions[next(iter(self._sessions))]
        call_id = str(ctx.request_id) if ctx.request_id is not None else None
        return {"user_id": self.options.user_id, "session_id": session, "call_id": call_id}

    def _agent(self) -> Agent:
        return self.engine.agent(self.options.agent)

    def _client(self) -> Client:
        if self._upstream is None or self.failure is not None:
            raise UpstreamDied(self.failure or "the upstream server is not connected")
        return self._upstream


class _GatewayServer(Server["Gateway"]):
    """The lowlevel server, declaring ``tools.listChanged`` on every transport."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        notices = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(notices, experimental_capabilities, extensions)


# -- results as hooks see them ------------------------------------------------------------------


@dataclass
class _Stubs:
    """The binary blocks hidden from hooks, by the stub that stands for each."""

    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def restore(self, item: Any) -> Any:
        for stub, original in self.blocks:
            if item == stub:
                return original
        return item


def result_event(
    result: types.CallToolResult, *, include_binary: bool = False
) -> tuple[dict[str, Any], _Stubs]:
    """``{content, structuredContent, isError}`` as hooks see it, and the stubs to restore.

    Without ``include_binary`` an image or audio block, or an embedded blob, is a stub
    ``{type, mimeType, bytes}`` (plus ``uri`` for a resource): hooks decide on its kind and
    size, and a stub left in place is the original block again.
    """
    stubs = _Stubs()
    content = []
    for block in result.content:
        item = block.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not include_binary:
            stub = _stub(item)
            if stub is not None:
                stubs.blocks.append((stub, item))
                item = stub
        content.append(item)
    seen = {"content": content, "structuredContent": result.structured_content}
    seen["isError"] = bool(result.is_error)
    return seen, stubs


def _stub(item: dict[str, Any]) -> dict[str, Any] | None:
    if item.get("type") in ("image", "audio") and isinstance(item.get("data"), str):
        return {"type": item["type"], "mimeType": item.get("mimeType"), "bytes": _size(item)}
    resource = item.get("resource")
    if item.get("type") == "resource" and isinstance(resource, dict) and "blob" in resource:
        return {
            "type": "resource",
            "uri": resource.get("uri"),
            "mimeType": resource.get("mimeType"),
            "bytes": _size(resource, "blob"),
        }
    return None


def _size(item: Mapping[str, Any], key: str = "data") -> int:
    try:
        return len(base64.b64decode(item[key], validate=False))
    except ValueError:
        return len(item[key])


def result_from_change(value: Any, stubs: _Stubs | None = None) -> types.CallToolResult:
    """The ``CallToolResult`` a hook's replacement result stands for.

    Raises:
        ValueError: ``value`` is not an object with a ``content`` list, or is not a valid
            ``CallToolResult`` (the message names the field).
    """
    if not isinstance(value, Mapping):
        raise ValueError(
            f"must be an object {{content, structuredContent, isError}}, not {_kind(value)}"
        )
    if not isinstance(value.get("content"), list):
        raise ValueError(f"content: must be a list, not {_kind(value.get('content'))}")
    if not isinstance(value.get("isError", False), bool):
        raise ValueError(f"isError: must be true or false, not {_kind(value['isError'])}")
    unknown = sorted(set(value) - {"content", "structuredContent", "isError"})
    if CUT_KEY in unknown:  # the boundary cut the result to fit the event (docs/points.md)
        raise ValueError("the result is over the event's size cap, and was cut for the hooks")
    if unknown:
        raise ValueError(f"{unknown[0]}: is not a field of a tool result")
    data = dict(value)
    if stubs is not None:
        data["content"] = [stubs.restore(item) for item in value["content"]]
    if data.get("structuredContent") is None:
        data.pop("structuredContent", None)
    try:
        return types.CallToolResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from exc


def describe(exc: BaseException) -> str:
    """One line naming what failed (never the call's values)."""
    from engine.errors import EventError

    text = str(exc)
    text = text if len(text) <= 500 else text[:500] + "…"
    if isinstance(exc, EventError):
        return f"{PREFIX}the tool call is not valid for the policy check: {text}"
    return f"{PREFIX}the policy check failed ({type(exc).__name__}: {text})"


def _result_reason(out: Outcome) -> str:
    if out.failed:
        return f"the check of the result failed (hook {', '.join(map(repr, out.failed))})"
    if isinstance(out.result, str) and out.result.strip():
        return out.result
    return out.reason or "blocked by policy"


def _evaluates(agent: Agent, point: Point) -> bool:
    """Whether evaluating ``point`` can change or record anything: the agent's pipeline has
    a hook there, or writes a record of every evaluation."""
    pipeline = agent.pipeline
    return bool(pipeline.by_point[point]) or pipeline.records.enabled


def _same_structure(replaced: types.CallToolResult, original: types.CallToolResult) -> bool:
    """Whether a replacement kept the server's own ``structuredContent``, which this
    gateway's client already checked against the ``outputSchema`` (it checks a result that
    is no error, so an error turned into a success is checked again)."""
    return (
        not original.is_error
        and original.structured_content is not None
        and replaced.structured_content == original.structured_content
    )


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
