"""The one call path of every tool: tool_call hooks, input validation, execution under the
tool's time limit, tool_result hooks. Python, HTTP, the CLI and ``mcp-serve`` all use it."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import EngineError
from engine.jsontext import shown_data
from engine.masking import MASK, masked_values
from engine.points import suggest
from engine.tools.artifacts import ArtifactStore, CallContext
from engine.tools.base import Tool, ToolInputError, ToolResult
from engine.tools.isolation import ToolTimeout, run_in_process, run_in_thread
from engine.tools.schemas import input_errors
from engine.tools.toolset import ToolSet

log = logging.getLogger("engine.tools")

Evaluate = Callable[..., Any]
"""``Agent.evaluate``: (point, fields, **scope) -> Outcome."""
AEvaluate = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Call:
    """One tool call as a host makes it."""

    agent: str
    name: str
    input: Any
    user_id: str | None = None
    session_id: str | None = None
    call_id: str | None = None
    emit: Callable[[dict[str, Any]], None] | None = None
    ask: Callable[[dict[str, Any]], Any] | None = None

    @property
    def scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "session_id": self.session_id}


def failed(content: str, **parts: Any) -> ToolResult:
    return ToolResult(content=content, is_error=True, **parts)


def unknown(tools: ToolSet, call: Call) -> ToolResult | None:
    """The result of a call to a tool the agent does not offer, or of an input that is not an
    object (None: neither)."""
    name = call.name
    if isinstance(name, str) and name in tools.tools:
        if not isinstance(call.input, Mapping):
            got = type(call.input).__name__
            return failed(f"invalid input for tool {name!r}: (input): must be an object, not {got}")
        return None
    known = sorted(tools.tools)
    close = suggest(str(name), known) if isinstance(name, str) else None
    hint = f" (did you mean {close!r}?)" if close else f" (tools: {', '.join(known) or 'none'})"
    return failed(f"unknown tool {str(name)[:100]!r}{hint}")


def defaults_of(tool: Tool) -> dict[str, Any]:
    """The arguments the tool's own code would fill in when the input leaves them out (see
    ``Tool.invoke``): none for a tool without ``argument_defaults``."""
    defaults = getattr(tool, "argument_defaults", None)
    return dict(defaults()) if defaults is not None else {}


def with_defaults(value: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` with each default it leaves out (a copy of it: a call never shares one)."""
    filled = dict(value)
    for name, default in defaults.items():
        if name not in filled:
            filled[name] = copy.deepcopy(default)
    return filled


def blocked_or_input(
    given: dict[str, Any], tool: Tool, tools: ToolSet, out: Any, defaults: Mapping[str, Any]
) -> ToolResult | dict:
    """After the tool_call hooks: the refusal, or the (possibly rewritten) input, validated.

    ``given`` is the input the hooks were shown (the call's, defaults filled in). A rewritten
    input that leaves out an argument with a default is refused: the tool would fill in a value
    that the hooks after the rewrite never saw."""
    if out.blocked:
        reason = out.reason or out.input_error or "blocked by a tool_call hook"
        return failed(f"tool {tool.spec.name!r} was blocked: {reason}", events=list(out.events))
    value = out.input if out.input is not None else given
    if out.input is not None and isinstance(value, Mapping):
        left_out = {k: v for k, v in defaults.items() if k not in value}
        if left_out:
            named = ", ".join(f"{k!r} (default {v!r})" for k, v in left_out.items())
            return failed(
                f"tool {tool.spec.name!r} was not called: a tool_call hook's rewritten input "
                f"leaves out {named}, which the tool would fill in unseen by the hooks "
                "(a rewrite writes out every argument)"
            )
    errors = input_errors(tools.checker(tool), value)
    if errors:
        listed = "; ".join(errors[:20])
        return failed(f"invalid input for tool {tool.spec.name!r}: {listed}")
    return dict(value)


def context(call: Call, artifacts: ArtifactStore) -> CallContext:
    return CallContext(
        call.agent,
        call.name,
        call.session_id,
        call.user_id,
        call.call_id,
        artifacts,
        emit=call.emit,
        ask=call.ask,
    )


def execute(tool: Tool, value: dict[str, Any], ctx: CallContext, default_ms: int) -> ToolResult:
    """Run the tool under its time limit; any failure becomes an ``is_error`` result (and
    the artifact paths the call asked for go)."""
    timeout_ms = tool.timeout_ms or default_ms
    try:
        result = _run(tool, value, ctx, timeout_ms)
        ctx.finish()
    except ToolTimeout:
        ctx.end()
        return failed(f"tool {tool.spec.name!r} timed out after {timeout_ms} ms")
    except Exception as exc:  # noqa: BLE001 - the tool's edge: the model is told, the host stays up
        return _failure(tool, ctx, exc)
    return _checked(tool, result)


async def aexecute(
    tool: Tool, value: dict[str, Any], ctx: CallContext, default_ms: int
) -> ToolResult:
    """``execute`` for the event loop: a tool with an ``ainvoke`` coroutine (a delegate tool)
    is awaited on the loop under its time limit; any other runs in a thread."""
    ainvoke = getattr(tool, "ainvoke", None)
    if ainvoke is None:
        return await asyncio.to_thread(execute, tool, value, ctx, default_ms)
    timeout_ms = tool.timeout_ms or default_ms
    try:
        result = await asyncio.wait_for(ainvoke(value, ctx), timeout_ms / 1000)
        ctx.finish()
    except TimeoutError:
        ctx.end()
        return failed(f"tool {tool.spec.name!r} timed out after {timeout_ms} ms")
    except Exception as exc:  # noqa: BLE001 - the tool's edge: the model is told, the host stays up
        return _failure(tool, ctx, exc)
    return _checked(tool, result)


def _failure(tool: Tool, ctx: CallContext, exc: Exception) -> ToolResult:
    """The ``is_error`` result naming the exception. Its text may quote the input or a
    secret of the tool's: it reaches the model through the ``tool_result`` hooks, and the log
    only masked (``log_failure``, once the hooks' event is made)."""
    ctx.discard()
    if isinstance(exc, ToolInputError):
        return failed(f"tool {tool.spec.name!r}: {exc}")
    ctx.failure = f"{type(exc).__name__}: {exc}"
    return failed(f"tool {tool.spec.name!r} failed: {ctx.failure}")


def log_failure(ctx: CallContext, event: dict[str, Any], mask: Sequence[str]) -> None:
    """Log the tool's exception, if it raised one, masked by value as the agent's records
    are (docs/operations.md: every value at a ``mask`` path of the ``tool_result`` event, its
    ``input`` and the ``result`` quoting the exception included)."""
    if ctx.failure is None:
        return
    paths = [path for path in mask if path.startswith("event.")]
    text = MASK if "event.result" in paths else ctx.failure  # the result quotes all of it
    for value in sorted(masked_values(event, paths), key=len, reverse=True):
        text = text.replace(value, MASK)
    log.warning("tool %s failed: %s", ctx.tool, text)


def _checked(tool: Tool, result: Any) -> ToolResult:
    if not isinstance(result, ToolResult):
        return failed(f"tool {tool.spec.name!r} answered a {type(result).__name__}, not a result")
    return result


def _run(tool: Tool, value: dict[str, Any], ctx: CallContext, timeout_ms: int) -> Any:
    if tool.isolation == "process":
        return run_in_process(tool, value, ctx, timeout_ms / 1000)
    if getattr(tool, "bounded", False):  # runs in the sandbox, under its own limit
        return tool.invoke(value, ctx)
    return run_in_thread(lambda: tool.invoke(value, ctx), timeout_ms / 1000)


def finish(result: ToolResult, ctx: CallContext, out: Any, data: Any = None) -> ToolResult:
    """The result after the tool_result hooks (a redaction replaces ``content``), with the
    call's artifacts and events; the events made from the content (``ctx.after_result``: an
    Open WebUI citation) are made now, from the content the hooks left, and emitted.

    ``data`` is what the hooks were shown of the tool's data (``shown_data``): it is the
    result's ``data`` unless the hooks replaced the content or withheld the result, which
    drops it (a hook redacting ``result`` may have found in ``data`` what it took out)."""
    result.data = data
    if out is not None and out.result is not None and out.result != result.content:
        result.content = out.result if isinstance(out.result, str) else _text(out.result)
        result.replaced = True
    if out is not None and out.blocked:
        result.replaced = True
    if result.replaced:
        result.data = None
    result.artifacts = [*ctx.artifacts, *(a for a in result.artifacts if a not in ctx.artifacts)]
    made = [] if result.is_error else [make(result.content) for make in ctx.after_result]
    ctx.after_result.clear()
    for event in made:
        if ctx.emit is not None:
            ctx.emit(event)
    hook_events = list(out.events) if out is not None else []
    result.events = [*ctx.events, *result.events, *made, *hook_events]
    return result


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def call_tool(
    call: Call,
    tools: ToolSet,
    evaluate: Evaluate,
    artifacts: ArtifactStore,
    default_ms: int,
    mask: Sequence[str] = (),
) -> ToolResult:
    """The whole call path, synchronously (see the module docstring). ``tools`` stays open
    until the call ends, even if a reload replaces it meanwhile. ``mask``: the agent's
    records mask, which a logged exception of the tool's is masked by."""
    tools.enter()
    try:
        return _call_tool(call, tools, evaluate, artifacts, default_ms, mask)
    finally:
        tools.leave()


def _call_tool(
    call: Call,
    tools: ToolSet,
    evaluate: Evaluate,
    artifacts: ArtifactStore,
    default_ms: int,
    mask: Sequence[str],
) -> ToolResult:
    refused = unknown(tools, call)
    if refused is not None:
        return refused
    tool = tools.tools[call.name]
    defaults = defaults_of(tool)
    given = with_defaults(call.input, defaults)
    fields = {"name": call.name, "input": given, "call_id": call.call_id}
    try:
        out = evaluate("tool_call", fields, **call.scope)
    except EngineError as exc:  # the call's values are not an event (named in the message)
        return failed(f"tool {call.name!r} was not called: {exc}")
    checked = blocked_or_input(given, tool, tools, out, defaults)
    if isinstance(checked, ToolResult):
        return checked
    ctx = context(call, artifacts)
    result = execute(tool, checked, ctx, default_ms)
    data = shown_data(result.data)
    fields = {**fields, "input": checked, "result": result.content, "data": data}
    out = evaluate("tool_result", fields, **call.scope)
    log_failure(ctx, fields, mask)
    return finish(result, ctx, out, data)


async def acall_tool(
    call: Call,
    tools: ToolSet,
    aevaluate: AEvaluate,
    artifacts: ArtifactStore,
    default_ms: int,
    mask: Sequence[str] = (),
) -> ToolResult:
    """``call_tool`` on the running event loop (the tool itself runs in a thread)."""
    tools.enter()
    try:
        return await _acall_tool(call, tools, aevaluate, artifacts, default_ms, mask)
    finally:
        tools.leave()


async def _acall_tool(
    call: Call,
    tools: ToolSet,
    aevaluate: AEvaluate,
    artifacts: ArtifactStore,
    default_ms: int,
    mask: Sequence[str],
) -> ToolResult:
    refused = unknown(tools, call)
    if refused is not None:
        return refused
    tool = tools.tools[call.name]
    defaults = defaults_of(tool)
    given = with_defaults(call.input, defaults)
    fields = {"name": call.name, "input": given, "call_id": call.call_id}
    try:
        out = await aevaluate("tool_call", fields, **call.scope)
    except EngineError as exc:
        return failed(f"tool {call.name!r} was not called: {exc}")
    checked = blocked_or_input(given, tool, tools, out, defaults)
    if isinstance(checked, ToolResult):
        return checked
    ctx = context(call, artifacts)
    result = await aexecute(tool, checked, ctx, default_ms)
    data = shown_data(result.data)
    fields = {**fields, "input": checked, "result": result.content, "data": data}
    out = await aevaluate("tool_result", fields, **call.scope)
    log_failure(ctx, fields, mask)
    return finish(result, ctx, out, data)
