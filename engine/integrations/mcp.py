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
upstream        the call goes upstream; progress (without its text) reaches the client, a
                cancelled call is cancelled upstream, a call with no answer and no progress
                for ``call_timeout_s`` is cancelled there and answered ``is_error``. An error
                the upstream answers is an ``is_error`` result saying so, which the
                ``tool_result`` hooks see like any other. An upstream whose output ended is a
                dead upstream: the call is answered ``is_error`` and the gateway stops.
tool_result     the hooks see ``{content, structuredContent, isError}`` and ``_meta`` when the
                upstream sent one (binary blocks as numbered stubs unless ``include_binary``).
                A replacement must be a valid ``CallToolResult`` whose ``structuredContent``
                fits the ``outputSchema``; a replacement that does not, a block and a failed
                hook withhold the result (``is_error`` with the cause). An agent with no hook
                at ``tool_result`` and no records is not asked: nothing would look at it.
==============  ==============================================================================

What a hook did not change goes on as the client or the upstream sent it: the engine's own
normalising of an event (an integer past 2**53 shown as a string) is never handed on.

A refusal is always a ``CallToolResult`` with ``is_error``, never a raised error: that would
become a JSON-RPC error, which clients drop. Tool annotations (``readOnlyHint``, ...) come from
the upstream server and are only hints: every call is evaluated whatever they say.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import os
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from engine.integrations.mcp_link import UNREADABLE, UpstreamLink
from engine.integrations.mcp_results import (
    result_event,
    result_from_change,
    same_json,
    with_originals,
)
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

CALL_TIMEOUT_S = 300.0
"""How long an upstream call may go without an answer or a progress notice, by default."""

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
    call_timeout_s: float | None = CALL_TIMEOUT_S
    """Seconds an upstream call may go without an answer or a progress notice before it is
    cancelled upstream and answered ``is_error`` (None: no limit)."""


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
    """The upstream's answer is no result to hand on: the SDK could not read it, or it does
    not fit the ``outputSchema`` the upstream declared for the tool.

    The gateway's MCP client checks the schema itself and raises a plain ``RuntimeError``;
    left to itself that error would reach the caller as a JSON-RPC error, which clients drop.
    """


class UpstreamSilent(Exception):
    """The upstream sent neither an answer nor progress for ``call_timeout_s``."""


_CLIENT_CHECKS = (
    "Invalid structured content returned by tool",
    "Invalid schema for tool",
    "has an output schema but did not return structured content",
)
"""What the MCP client's own result checks say in their ``RuntimeError`` (validate_tool_result)."""


def _misfit(exc: RuntimeError) -> str:
    """Why the client found the upstream's result misfit, without the result's values: the
    client's own message quotes the value that did not fit (a key, a secret), which no hook
    has seen. Named by the rule of the schema it breaks (``properties/n/type``)."""
    error = exc.__cause__
    if isinstance(error, jsonschema.exceptions.ValidationError):
        return _broken_rule(error)
    if "Invalid structured content" in str(exc):  # the values may follow: say nothing more
        return "it does not validate"
    return str(exc).splitlines()[0]  # the schema's own fault, or no structuredContent


def _where(exc: ValidationError) -> str:
    """The places and kinds of a pydantic error, without the values it quotes."""
    found = [
        f"{'.'.join(str(part) for part in e['loc'])}: {e['type']}"
        for e in exc.errors(include_input=False, include_url=False)
    ]
    more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
    return "; ".join(found[:5]) + more


def _broken_rule(error: jsonschema.exceptions.ValidationError) -> str:
    """A schema misfit named by the schema's rule (``properties/n/type``), not by the value
    nor its keys: the text goes to the model, and a value a hook put there (a credential it
    added to the input) or one no hook has seen (the upstream's) may be a secret."""
    rule = "/".join(str(part) for part in error.schema_path)
    return f"it breaks the schema's {rule or 'root'} rule"


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
        self._link: UpstreamLink | None = None
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
        self._link = UpstreamLink(params)
        upstream = Client(self._link(), mode="legacy", message_handler=self._on_upstream)
        async with upstream as client:
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
            if out.hook_changed("input") and out.input is not None:
                rewritten = with_originals(out.input, arguments)
                problem = await self._input_problem(name, rewritten, arguments)
                if problem:
                    return self._blocked(problem)
                arguments = rewritten
            result = await self._call_upstream(ctx, name, arguments)
            return await self._checked_result(name, arguments, result, scope)
        except UpstreamDied as exc:
            return self._stop(str(exc))
        except UpstreamSilent as exc:
            log.warning("tools/call %s: %s", name, exc)
            return _error_result(f"{PREFIX}{exc}")
        except UpstreamMisfit as exc:
            log.warning("tools/call %s: %s", name, exc)
            return self._withheld(str(exc))
        except ValidationError as exc:  # the upstream's answer is no CallToolResult
            # where it failed, never the values (pydantic's text quotes them: a secret no
            # hook saw would reach the log)
            log.warning("tools/call %s: the upstream's answer is not valid: %s", name, _where(exc))
            return self._withheld("the upstream server's answer is not a valid tool result")

    def offers(self, name: str) -> bool:
        """Whether the tool passes ``allow_tools`` and ``deny_tools``."""
        allowed = not self.options.allow_tools or _matches(name, self.options.allow_tools)
        return allowed and not _matches(name, self.options.deny_tools)

    # -- one call ---------------------------------------------------------------------------------

    async def _call_upstream(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """The upstream's answer; an error it answers is an ``is_error`` result saying so.

        Raises:
            UpstreamDied: the upstream's output ended.
            UpstreamSilent: no answer nor progress for ``call_timeout_s`` (cancelled upstream).
            UpstreamMisfit: the answer is unreadable, or does not fit the ``outputSchema``.
        """
        client = self._client()
        self.counters.upstream_calls += 1
        limit = self.options.call_timeout_s
        with anyio.CancelScope() as waiting:

            async def relay(progress: float, total: float | None, message: str | None) -> None:
                # the text is the upstream's own words, which no hook sees: it stays behind
                waiting.deadline = anyio.current_time() + (limit or math.inf)
                await ctx.session.report_progress(progress, total)

            waiting.deadline = anyio.current_time() + (limit or math.inf)
            try:
                return await client.call_tool(name, arguments, progress_callback=relay)
            except MCPError as exc:
                return self._answered_error(name, exc)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
                raise UpstreamDied(f"the upstream server is gone ({type(exc).__name__})") from exc
            except RuntimeError as exc:
                if not any(check in str(exc) for check in _CLIENT_CHECKS):
                    raise
                raise UpstreamMisfit(
                    f"the upstream server's result does not fit the tool's outputSchema "
                    f"({_misfit(exc)})"
                ) from exc
        raise UpstreamSilent(
            f"the upstream server sent no answer to {name!r} for {limit:g} s; "
            "the call was cancelled there"
        )

    def _answered_error(self, name: str, exc: MCPError) -> types.CallToolResult:
        """The ``is_error`` result standing for an error the upstream answered (its ``data``
        left out), for the ``tool_result`` hooks to see like any result.

        The SDK reports a closed connection as an error with code ``CONNECTION_CLOSED``, the
        code of JSON-RPC's ordinary server error (-32000): only a link whose output ended is
        a dead upstream.
        """
        link = self._link
        if exc.code == types.CONNECTION_CLOSED and link is not None and link.ended:
            raise UpstreamDied("the upstream server closed the connection") from exc
        if link is not None and exc.code == types.PARSE_ERROR and exc.data == link.marker:
            raise UpstreamMisfit(UNREADABLE) from exc
        log.warning("tools/call %s: the upstream server answered error %s", name, exc.code)
        text = f"{PREFIX}the upstream server answered {name!r} with error {exc.code}: {exc.message}"
        return _error_result(text)

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
        if not out.hook_changed("result"):
            return result
        changed = with_originals(out.result, seen)
        if same_json(changed, seen):
            return result
        try:
            replaced = result_from_change(changed, stubs)
            if not _same_structure(replaced, result):
                await self._check_output(name, replaced)
        except ValueError as exc:
            return self._withheld(f"a hook's replacement result is not valid: {exc}")
        return replaced

    async def _input_problem(
        self, name: str, arguments: dict[str, Any], sent: dict[str, Any]
    ) -> str | None:
        """Why a rewritten input does not fit the tool's ``inputSchema`` (None: it fits, or
        is the input the client ``sent``)."""
        if same_json(arguments, sent):
            return None
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
        return None if error is None else _broken_rule(error)

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
