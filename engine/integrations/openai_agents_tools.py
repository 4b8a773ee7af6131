"""OpenAI Agents SDK tools: tool guardrails evaluating tool_call and tool_result, and
``guard_tools``, whose copies run a tool with the input the hooks rewrote."""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any, NamedTuple

from agents import (
    FunctionTool,
    RunContextWrapper,
    RunState,
    Tool,
    ToolApprovalItem,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolOutputGuardrail,
)
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData

from engine.errors import ApprovalError, EngineError
from engine.integrations.openai_agents_events import (
    PREFIX,
    Policy,
    ScopeSource,
    arguments,
    as_text,
    failed,
    hook_result,
    rewritten,
)
from engine.outcome import Outcome
from engine.points import Point
from engine.runtime import Agent as EngineAgent
from engine.store.approvals import input_digest

_DECIDED: weakref.WeakKeyDictionary[ToolContext[Any], Outcome] = weakref.WeakKeyDictionary()
"""The tool_call outcome of each invocation, by its ToolContext: the SDK hands the same object
to the tool's input guardrail, its invoker and its output guardrail, so ``guard_tools``'
invoker applies the rewrite its guardrail decided, and tool_result sees the input the tool
ran with."""

_GUARDED = "__hookengine_guarded__"
"""Marks an invoker made by ``guard_tools``: a tool is never guarded twice."""


class ToolGuardrails(NamedTuple):
    """The guardrails for ``FunctionTool`` or ``MCPServerStdio``'s ``tool_input_guardrails``
    and ``tool_output_guardrails``."""

    input: list[ToolInputGuardrail[Any]]
    output: list[ToolOutputGuardrail[Any]]


def tool_guardrails(agent: EngineAgent, *, scope: ScopeSource = None) -> ToolGuardrails:
    """Tool guardrails evaluating ``tool_call`` and ``tool_result`` of ``agent``.

    A block, or a rewritten input (which a guardrail cannot pass on: wrap function tools with
    ``guard_tools`` for that), rejects the call; a replaced or withheld result rejects the
    output with the new text. Use them on ``FunctionTool`` or ``MCPServerStdio``.

    Raises:
        EventError: ``scope`` is a mapping with a key not in ``SCOPE_KEYS``.
        TypeError: ``agent`` is not an engine agent.
    """
    return _tool_guards(Policy(agent, scope), rewrites=False)


def guard_tools(
    tools: Sequence[Tool], agent: EngineAgent, *, scope: ScopeSource = None
) -> list[Tool]:
    """Copies of ``tools`` that ask ``agent`` before and after each call.

    Each copy carries the tool guardrails (first, before its own) and an ``on_invoke_tool``
    that runs the tool with the input tool_call hooks rewrote. A tool guarded already is kept.

    Raises:
        EngineError: a tool is not a ``FunctionTool`` (hosted and shell tools run where no
            hook can stop them), naming its position and name.
        EventError, TypeError: as ``tool_guardrails``.
    """
    policy = Policy(agent, scope)
    guarded: list[Tool] = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, FunctionTool):
            name = getattr(tool, "name", type(tool).__name__)
            raise EngineError(
                f"tools[{index}] ({name}): a {type(tool).__name__} cannot be guarded (no hook "
                "runs before it); leave it out or call it from a FunctionTool"
            )
        done = getattr(tool.on_invoke_tool, _GUARDED, False)
        guarded.append(tool if done else _guard(tool, policy))
    return guarded


def _tool_guards(policy: Policy, *, rewrites: bool) -> ToolGuardrails:
    async def hookengine_tool_call(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        return await _decide_tool_call(policy, data.context, rewrites=rewrites)

    async def hookengine_tool_result(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        return await _decide_tool_result(policy, data.context, data.output)

    return ToolGuardrails(
        [ToolInputGuardrail(hookengine_tool_call, name="hookengine_tool_call")],
        [ToolOutputGuardrail(hookengine_tool_result, name="hookengine_tool_result")],
    )


async def _decide_tool_call(
    policy: Policy, ctx: ToolContext[Any], *, rewrites: bool
) -> ToolGuardrailFunctionOutput:
    """tool_call for one invocation: allow, or reject with the text the model gets instead."""
    try:
        args = arguments(ctx.tool_arguments)
    except ValueError as exc:
        why = PREFIX + f"the tool's arguments are not valid ({exc}); the tool was not run"
        return ToolGuardrailFunctionOutput.reject_content(why)
    fields = {"name": ctx.tool_name, "input": args, "call_id": ctx.tool_call_id}
    try:
        out = await policy.evaluate("tool_call", fields, ctx.context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
        return ToolGuardrailFunctionOutput.reject_content(failed(exc, "the tool was not run"))
    _DECIDED[ctx] = out
    if out.blocked:
        reason = out.reason or PREFIX + "blocked by policy"
        return ToolGuardrailFunctionOutput.reject_content(reason, output_info=out)
    if not rewrites and rewritten(out, "input", args):
        return ToolGuardrailFunctionOutput.reject_content(_NO_REWRITE, output_info=out)
    return ToolGuardrailFunctionOutput.allow(output_info=out)


_NO_REWRITE = (
    PREFIX + "a policy hook rewrote this call's input, which this tool cannot take (only tools "
    "wrapped with guard_tools can); the tool was not run"
)


async def _decide_tool_result(
    policy: Policy, ctx: ToolContext[Any], output: Any
) -> ToolGuardrailFunctionOutput:
    """tool_result for one invocation: allow, or reject with the replaced or withheld text."""
    shown = hook_result(output)
    decided = _DECIDED.get(ctx)
    try:
        ran = decided.input if decided is not None else None
        args = ran if ran is not None else arguments(ctx.tool_arguments)
        fields = {
            "name": ctx.tool_name,
            "input": args,
            "result": shown,
            "call_id": ctx.tool_call_id,
        }
        out = await policy.evaluate("tool_result", fields, ctx.context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check withholds the output
        return ToolGuardrailFunctionOutput.reject_content(failed(exc, "the output was withheld"))
    if out.blocked or rewritten(out, "result", shown):
        text = as_text(out.result) if out.result is not None else out.reason or _WITHHELD
        return ToolGuardrailFunctionOutput.reject_content(text, output_info=out)
    return ToolGuardrailFunctionOutput.allow(output_info=out)


_WITHHELD = PREFIX + "the tool's output was withheld by policy"
_UNCHECKED = (
    PREFIX + "this call is not the one the policy checked (no ToolContext, or other "
    "arguments); the tool was not run"
)


_ASKED: dict[tuple[str, str, str], str] = {}
"""The approval a tool call waits on, by its call id, tool and arguments (``needs_approval``
notes it, ``resolve_approval`` takes it); bounded by ``_ASKED_MAX``. The call id alone is
not enough: two runs may wait on calls with one id (a model numbering its calls), and the
item a person answers must resolve the approval of the call they saw, not the other's."""


def _asked_key(call_id: str, tool: str | None, params: dict[str, Any]) -> tuple[str, str, str]:
    return call_id, tool or "", input_digest(params)


_ASKED_MAX = 10_000


def _needs_approval(tool: FunctionTool, policy: Policy) -> Any:
    """The copy's ``needs_approval``: the tool's own, or else whether tool_call asks a
    person (an approval hook): the SDK then interrupts the run for the host to decide.
    Only for an agent that has such a hook when the tools are guarded: the SDK asks for
    approval of any call whose arguments it cannot parse once the setting is a function,
    where the tool's guardrail would refuse it with the reason."""
    own = tool.needs_approval
    slots = policy.agent.pipeline.by_point[Point.TOOL_CALL]
    if not any(getattr(slot.hook, "runs_last", False) for slot in slots):
        return own

    async def needs_approval(
        ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        if own is True or (callable(own) and await own(ctx, params, call_id)):
            return True
        fields = {"name": tool.name, "input": params, "call_id": call_id}
        try:
            out = await policy.evaluate("tool_call", fields, ctx.context)
        except Exception:  # noqa: BLE001 - the tool's input guardrail decides (and blocks)
            return False
        if out.approval is None:
            return False
        if len(_ASKED) >= _ASKED_MAX:
            _ASKED.pop(next(iter(_ASKED)))
        _ASKED[_asked_key(call_id, tool.name, params)] = out.approval["id"]
        return True

    return needs_approval


async def resolve_approval(
    state: RunState[Any],
    item: ToolApprovalItem,
    agent: EngineAgent,
    approve: bool,
    *,
    by: str,
    note: str | None = None,
) -> None:
    """Answer one of a run's ``interruptions`` in the engine (recorded: who, when, why) and
    in the run's ``state``; then ``Runner.run(agent, state)`` goes on. Approving only in
    ``state`` is not enough: the engine still asks, and the tool is rejected saying so.

    Raises:
        StoreError: the engine's store could not be written.
    """
    try:
        params = arguments(item.arguments or "")
    except ValueError:  # not the call the engine asked about: the tool's guardrail refuses
        params = None
    key = _asked_key(item.call_id or "", item.tool_name, params) if params is not None else None
    approval_id = _ASKED.pop(key, None) if key is not None else None
    if approval_id is not None:
        with suppress(ApprovalError):  # decided already, or expired: the engine says which
            await agent.aresolve(approval_id, approve, by=by, note=note)
    if approve:
        state.approve(item)
    else:
        state.reject(item, rejection_message=f"denied by {by}" + (f": {note}" if note else ""))


def _guard(tool: FunctionTool, policy: Policy) -> FunctionTool:
    guards = _tool_guards(policy, rewrites=True)
    inner = tool.on_invoke_tool

    async def invoke(ctx: ToolContext[Any], input: str) -> Any:
        if not isinstance(ctx, ToolContext) or input != ctx.tool_arguments:
            return _UNCHECKED
        out = _DECIDED.get(ctx)
        if out is None:  # called without its input guardrail (directly): decide here
            verdict = await _decide_tool_call(policy, ctx, rewrites=True)
            if verdict.behavior["type"] != "allow":
                return verdict.behavior.get("message", _WITHHELD)
            out = _DECIDED[ctx]
        if out.blocked:
            return out.reason or PREFIX + "blocked by policy"
        if out.hook_changed("input") and out.input is not None:
            if getattr(ctx, "_function_tool_arguments", None) is not None:
                ctx._function_tool_arguments = None  # prepared for the model's arguments
            return await inner(ctx, json.dumps(out.input, ensure_ascii=False))
        return await inner(ctx, input)

    setattr(invoke, _GUARDED, True)
    return replace(
        tool,
        on_invoke_tool=invoke,
        needs_approval=_needs_approval(tool, policy),
        tool_input_guardrails=[*guards.input, *(tool.tool_input_guardrails or [])],
        tool_output_guardrails=[*guards.output, *(tool.tool_output_guardrails or [])],
    )
