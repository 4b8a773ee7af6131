"""OpenAI Agents SDK: the engine's points as the SDK's guardrails, model-input filter and run.

===========================  ========================  =======================================
SDK piece                    point                     what a decision becomes
===========================  ========================  =======================================
tool input guardrail         tool_call                 block, malformed arguments, a failed
                                                       check: ``reject_content(reason)``, the
                                                       tool does not run
``guard_tools``' invoker     tool_call                 a rewritten input: the tool runs with it
tool output guardrail        tool_result               a replaced or withheld result:
                                                       ``reject_content(text)``
``call_model_input_filter``  before_call               ``ModelInputData(input, instructions)``;
                                                       a block raises ``ModelCallBlocked``
input guardrail              before_user_message       block, answer, rewrite: the tripwire
output guardrail             before_assistant_message  a changed answer: the tripwire
``run``                      before_user_message,      rewrite, injected messages, answer; the
                             before_assistant_message, final answer replaced; after_turn
                             after_turn
===========================  ========================  =======================================

Every guard fails closed: an engine failure, a bad scope or unreadable arguments block the tool
(or trip the guardrail, or refuse the model call) with a reason naming the cause, and the host
process stays up. docs/openai-agents.md has the setup and what the SDK cannot carry.

Importing this module imports the ``agents`` package (``hookengine[openai-agents]``);
``import engine`` never does.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
    RunConfig,
    RunContextWrapper,
    Runner,
    RunResult,
    Tool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolOutputGuardrail,
)
from agents.exceptions import AgentsException
from agents.items import ToolCallItem
from agents.run_config import CallModelData, ModelInputData
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData
from pydantic import BaseModel

from engine.errors import EngineError, EventError
from engine.outcome import Outcome
from engine.runtime import Agent as EngineAgent

log = logging.getLogger(__name__)

HOST = "openai-agents"
"""The engine's host profile (engine/hosts.py) for every evaluation made here."""
PREFIX = "hookengine: "
"""Starts every text this module writes itself, so the model and the user see its source."""
SCOPE_KEYS = ("user_id", "session_id", "template", "process")

ScopeSource = Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] | None
"""Where each evaluation's scope comes from: a fixed mapping of ``SCOPE_KEYS``, a callable
taking the run's context object (``Runner.run(context=...)``) and returning one, or None: the
context's own ``user_id`` and ``session_id`` (keys of a mapping, or attributes), if it has
them."""

_TURN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hookengine_turn_id", default=None
)
"""The turn ``run`` is in: every point evaluated inside it carries the turn's id."""

_DECIDED: weakref.WeakKeyDictionary[ToolContext[Any], Outcome] = weakref.WeakKeyDictionary()
"""The tool_call outcome of each invocation, by its ToolContext: the SDK hands the same object
to the tool's input guardrail, its invoker and its output guardrail, so ``guard_tools``'
invoker applies the rewrite its guardrail decided, and tool_result sees the input the tool
ran with."""

_GUARDED = "__hookengine_guarded__"
"""Marks an invoker made by ``guard_tools``: a tool is never guarded twice."""


class ModelCallBlocked(EngineError, AgentsException):
    """``call_model_input_filter`` refused a model call (a hook blocked at before_call, or the
    check failed): the SDK ends the run with it, and ``run`` turns it into a refused turn.

    Attributes:
        reason: the text to show (a hook's block reason, or what failed).
        outcome: the before_call outcome, or None when the check itself failed.
    """

    def __init__(self, reason: str, outcome: Outcome | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.outcome = outcome


class ToolGuardrails(NamedTuple):
    """The guardrails for ``FunctionTool`` or ``MCPServerStdio``'s ``tool_input_guardrails``
    and ``tool_output_guardrails``."""

    input: list[ToolInputGuardrail[Any]]
    output: list[ToolOutputGuardrail[Any]]


@dataclass
class Turn:
    """What ``run`` made of one user turn."""

    final_output: Any
    """What to show the user: the answer as before_assistant_message left it, a hook's answer,
    or the reason the turn was refused."""
    turn_id: str | None
    blocked: bool = False
    """The turn was refused (before_user_message or before_call blocked) or its answer
    withheld (before_assistant_message failed)."""
    reason: str | None = None
    answered: bool = False
    """A hook answered at before_user_message: the model was not called."""
    result: RunResult | None = field(default=None, repr=False)
    """The SDK's result (None when the model was not run). Its ``final_output`` is the
    model's own, from before before_assistant_message: show ``final_output`` above."""
    notices: list[str] = field(default_factory=list)
    """Notices hooks gave at before_user_message and before_assistant_message."""


# -- the public pieces --------------------------------------------------------------------------


def tool_guardrails(agent: EngineAgent, *, scope: ScopeSource = None) -> ToolGuardrails:
    """Tool guardrails evaluating ``tool_call`` and ``tool_result`` of ``agent``.

    A block, or a rewritten input (which a guardrail cannot pass on: wrap function tools with
    ``guard_tools`` for that), rejects the call; a replaced or withheld result rejects the
    output with the new text. Use them on ``FunctionTool`` or ``MCPServerStdio``.

    Raises:
        EventError: ``scope`` is a mapping with a key not in ``SCOPE_KEYS``.
        TypeError: ``agent`` is not an engine agent.
    """
    return _tool_guards(_Policy(agent, scope), rewrites=False)


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
    policy = _Policy(agent, scope)
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


def input_guardrail(agent: EngineAgent, *, scope: ScopeSource = None) -> InputGuardrail[Any]:
    """An input guardrail evaluating ``before_user_message``; it runs before the model
    (``run_in_parallel=False``), so a tripped wire means no model call.

    It trips on a block, an answer and a rewritten question (none of which a guardrail can
    pass on), and when the check fails; ``output_info`` is the outcome (or, on a failure, the
    text naming it). Injected messages cannot be added here: ``run`` adds them.
    """
    policy = _Policy(agent, scope)

    async def hookengine_before_user_message(
        ctx: RunContextWrapper[Any], sdk_agent: Agent[Any], input: str | list[Any]
    ) -> GuardrailFunctionOutput:
        try:
            question = question_of(input)
            out = await policy.evaluate("before_user_message", {"question": question}, ctx.context)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check trips the wire
            return GuardrailFunctionOutput(output_info=_failed(exc), tripwire_triggered=True)
        trip = out.blocked or out.answer is not None or _rewritten(out, "question", question)
        return GuardrailFunctionOutput(output_info=out, tripwire_triggered=trip)

    return InputGuardrail(
        guardrail_function=hookengine_before_user_message,
        name="hookengine_before_user_message",
        run_in_parallel=False,
    )


def output_guardrail(agent: EngineAgent, *, scope: ScopeSource = None) -> OutputGuardrail[Any]:
    """An output guardrail evaluating ``before_assistant_message`` on the final output.

    It trips when hooks changed the answer (replaced, appended to, or withheld it: a
    guardrail cannot change the output; ``run`` can) and when the check fails; ``output_info``
    is the outcome (``out.answer`` the answer to show instead) or the text naming the failure.
    """
    policy = _Policy(agent, scope)

    async def hookengine_before_assistant_message(
        ctx: RunContextWrapper[Any], sdk_agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        try:
            answer = answer_text(output)
            fields = {"question": question_of(ctx.turn_input), "answer": answer}
            out = await policy.evaluate("before_assistant_message", fields, ctx.context)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check trips the wire
            return GuardrailFunctionOutput(output_info=_failed(exc), tripwire_triggered=True)
        trip = out.blocked or (out.answer is not None and out.answer != answer)
        return GuardrailFunctionOutput(output_info=out, tripwire_triggered=trip)

    return OutputGuardrail(
        guardrail_function=hookengine_before_assistant_message,
        name="hookengine_before_assistant_message",
    )


def call_model_input_filter(
    agent: EngineAgent, *, scope: ScopeSource = None
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``RunConfig.call_model_input_filter`` evaluating ``before_call`` before each model call.

    The event: ``instruction`` (the system instructions), ``messages`` (the input items as
    JSON), ``tools`` (the agent's tool names) and ``settings`` (its model settings). Sections
    are appended to the instructions, a new instruction or message list replaces the old one;
    tools and settings cannot be changed here (listed as unsupported). A block, or a failed
    check, raises ``ModelCallBlocked``: the model is not called.
    """
    policy = _Policy(agent, scope)

    async def hookengine_before_call(data: CallModelData[Any]) -> ModelInputData:
        model = data.model_data
        fields = {
            "instruction": model.instructions or "",
            "messages": [_json_data(item) for item in model.input],
            "tools": [getattr(tool, "name", type(tool).__name__) for tool in data.agent.tools],
            "settings": _json_data(data.agent.model_settings.to_json_dict()),
        }
        try:
            out = await policy.evaluate("before_call", fields, data.context)
        except Exception as exc:  # the edge: a failed check refuses the call
            raise ModelCallBlocked(_failed(exc)) from exc
        if out.blocked:
            raise ModelCallBlocked(out.reason or PREFIX + "blocked by policy", out)
        return _model_input(model, out)

    return hookengine_before_call


async def run(
    agent: Agent[Any],
    input: str | list[Any],
    *,
    engine_agent: EngineAgent,
    scope: ScopeSource = None,
    run_config: RunConfig | None = None,
    **options: Any,
) -> Turn:
    """One user turn through ``Runner.run``, with every point of ``engine_agent`` applied.

    before_user_message first (a block or an answer ends the turn with no model call; a
    rewritten question and injected messages change the input), then the run with the agent's
    tools guarded (``guard_tools``) and ``call_model_input_filter`` (after the one
    ``run_config`` may carry), then before_assistant_message on the final output, then
    after_turn. ``options`` go to ``Runner.run`` (``context``, ``max_turns``, ``session``, ...).

    Raises:
        EventError: ``input`` is neither text nor a list of items, or ``scope`` gives a bad
            value (naming it): the call is wrong, and nothing ran.
        EngineError: a tool cannot be guarded (``guard_tools``), or an MCP server of the
            agent has no ``tool_guardrails``: nothing ran.
        AgentsException: what ``Runner.run`` raises (but ``ModelCallBlocked``: a refused turn).
    """
    policy = _Policy(engine_agent, scope)
    context = options.get("context")
    question = question_of(input)
    _check_servers(agent)
    guarded = agent.clone(tools=guard_tools(agent.tools, engine_agent, scope=scope))
    try:
        first = await policy.evaluate("before_user_message", {"question": question}, context)
    except EventError:
        raise
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
        return _refused(_failed(exc), None)
    token = _TURN.set(first.turn_id)
    try:
        return await _turn(guarded, input, first, policy, run_config, options)
    finally:
        _TURN.reset(token)


# -- the turn ------------------------------------------------------------------------------------


async def _turn(
    agent: Agent[Any],
    input: str | list[Any],
    first: Outcome,
    policy: _Policy,
    run_config: RunConfig | None,
    options: dict[str, Any],
) -> Turn:
    """``run`` after before_user_message decided ``first`` (``agent``'s tools guarded)."""
    context = options.get("context")
    if first.blocked:
        return _refused(first.reason or PREFIX + "blocked by policy", first)
    asked = first.question if first.question is not None else question_of(input)
    if first.answer is not None:
        await _after_turn(policy, asked, first.answer, [], context)
        return Turn(first.answer, first.turn_id, answered=True, notices=list(first.notices))
    config = _with_filter(run_config or RunConfig(), policy)
    try:
        result = await Runner.run(agent, _input_with(input, first), run_config=config, **options)
    except ModelCallBlocked as exc:
        return _refused(exc.reason, first)
    turn = await _final(policy, asked, result, context)
    turn.notices[:0] = first.notices
    if not turn.blocked:
        shown = answer_text(turn.final_output)
        await _after_turn(policy, asked, shown, _tool_calls(result), context)
    return turn


async def _final(policy: _Policy, asked: str, result: RunResult, context: Any) -> Turn:
    """The turn's answer after before_assistant_message; withheld when the check failed."""
    answer = answer_text(result.final_output)
    fields = {"question": asked, "answer": answer}
    try:
        out = await policy.evaluate("before_assistant_message", fields, context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check withholds the answer
        reason = _failed(exc)
        return Turn(reason, _TURN.get(), blocked=True, reason=reason, result=result)
    if out.blocked:
        shown = out.answer or out.reason or PREFIX + "the answer was withheld"
        return Turn(shown, out.turn_id, True, out.reason, result=result, notices=out.notices)
    final = out.answer if out.answer is not None and out.answer != answer else result.final_output
    return Turn(final, out.turn_id, result=result, notices=list(out.notices))


async def _after_turn(
    policy: _Policy, question: str, answer: str, calls: list[dict[str, Any]], context: Any
) -> None:
    """Tell after_turn hooks the turn ended; a failure is logged (they only hear)."""
    fields = {"question": question, "answer": answer, "tool_calls": calls}
    try:
        await policy.evaluate("after_turn", fields, context)
    except Exception as exc:  # noqa: BLE001 - the edge: after_turn hooks only hear
        log.warning("openai-agents: after_turn failed: %s", _failed(exc))


def _check_servers(agent: Agent[Any]) -> None:
    """Refuse a run whose MCP servers would call tools with no tool_call hook before them.

    Raises:
        EngineError: naming the first server without this module's tool guardrails.
    """
    for index, server in enumerate(agent.mcp_servers):
        names = {g.get_name() for g in getattr(server, "tool_input_guardrails", None) or []}
        outs = {g.get_name() for g in getattr(server, "tool_output_guardrails", None) or []}
        if "hookengine_tool_call" not in names or "hookengine_tool_result" not in outs:
            raise EngineError(
                f"mcp_servers[{index}] ({server.name}): its tools are not guarded; create it with "
                "tool_input_guardrails and tool_output_guardrails from tool_guardrails()"
            )


def _refused(reason: str, out: Outcome | None) -> Turn:
    notices = list(out.notices) if out is not None else []
    turn_id = out.turn_id if out is not None else None
    return Turn(reason, turn_id, blocked=True, reason=reason, notices=notices)


def _with_filter(config: RunConfig, policy: _Policy) -> RunConfig:
    """``config`` with before_call as its model-input filter, after the one it had."""
    ours = call_model_input_filter(policy.agent, scope=policy.scope)
    theirs = config.call_model_input_filter
    if theirs is None:
        return replace(config, call_model_input_filter=ours)

    async def both(data: CallModelData[Any]) -> ModelInputData:
        first = theirs(data)
        data.model_data = await first if inspect.isawaitable(first) else first
        return await ours(data)

    return replace(config, call_model_input_filter=both)


def _input_with(input: str | list[Any], out: Outcome) -> str | list[Any]:
    """The run's input with before_user_message's rewritten question and injected messages
    (before the user's message)."""
    question = question_of(input)
    new = out.question if _rewritten(out, "question", question) else None
    injected = [{"role": m["role"], "content": m["content"]} for m in out.messages]
    if new is None and not injected:
        return input
    items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
    last = _last_user(items)
    where = len(items) if last is None else last
    if new is not None:
        user = {"role": "user", "content": new}
        items[where : where + 1] = [user]
    items[where:where] = injected
    if isinstance(input, str) and not injected:
        return items[0]["content"]
    return items


def _tool_calls(result: RunResult) -> list[dict[str, Any]]:
    """The turn's tool calls for after_turn: ``{name, input, call_id}`` each."""
    calls = []
    for item in result.new_items:
        if not isinstance(item, ToolCallItem):
            continue
        raw = item.raw_item
        name = _get(raw, "name")
        if not isinstance(name, str):
            continue
        try:
            data: Any = _arguments(_get(raw, "arguments") or "")
        except ValueError:
            data = {"arguments": str(_get(raw, "arguments"))}
        calls.append({"name": name, "input": data, "call_id": _get(raw, "call_id")})
    return calls


# -- tools ---------------------------------------------------------------------------------------


def _tool_guards(policy: _Policy, *, rewrites: bool) -> ToolGuardrails:
    async def hookengine_tool_call(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        return await _decide_tool_call(policy, data.context, rewrites=rewrites)

    async def hookengine_tool_result(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        return await _decide_tool_result(policy, data.context, data.output)

    return ToolGuardrails(
        [ToolInputGuardrail(hookengine_tool_call, name="hookengine_tool_call")],
        [ToolOutputGuardrail(hookengine_tool_result, name="hookengine_tool_result")],
    )


async def _decide_tool_call(
    policy: _Policy, ctx: ToolContext[Any], *, rewrites: bool
) -> ToolGuardrailFunctionOutput:
    """tool_call for one invocation: allow, or reject with the text the model gets instead."""
    try:
        args = _arguments(ctx.tool_arguments)
    except ValueError as exc:
        why = PREFIX + f"the tool's arguments are not valid ({exc}); the tool was not run"
        return ToolGuardrailFunctionOutput.reject_content(why)
    fields = {"name": ctx.tool_name, "input": args, "call_id": ctx.tool_call_id}
    try:
        out = await policy.evaluate("tool_call", fields, ctx.context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
        return ToolGuardrailFunctionOutput.reject_content(_failed(exc, "the tool was not run"))
    _DECIDED[ctx] = out
    if out.blocked:
        reason = out.reason or PREFIX + "blocked by policy"
        return ToolGuardrailFunctionOutput.reject_content(reason, output_info=out)
    if not rewrites and _rewritten(out, "input", args):
        return ToolGuardrailFunctionOutput.reject_content(_NO_REWRITE, output_info=out)
    return ToolGuardrailFunctionOutput.allow(output_info=out)


_NO_REWRITE = (
    PREFIX + "a policy hook rewrote this call's input, which this tool cannot take (only tools "
    "wrapped with guard_tools can); the tool was not run"
)


async def _decide_tool_result(
    policy: _Policy, ctx: ToolContext[Any], output: Any
) -> ToolGuardrailFunctionOutput:
    """tool_result for one invocation: allow, or reject with the replaced or withheld text."""
    shown = hook_result(output)
    decided = _DECIDED.get(ctx)
    try:
        ran = decided.input if decided is not None else None
        args = ran if ran is not None else _arguments(ctx.tool_arguments)
        fields = {
            "name": ctx.tool_name,
            "input": args,
            "result": shown,
            "call_id": ctx.tool_call_id,
        }
        out = await policy.evaluate("tool_result", fields, ctx.context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check withholds the output
        return ToolGuardrailFunctionOutput.reject_content(_failed(exc, "the output was withheld"))
    if out.blocked or _rewritten(out, "result", shown):
        text = _text(out.result) if out.result is not None else out.reason or _WITHHELD
        return ToolGuardrailFunctionOutput.reject_content(text, output_info=out)
    return ToolGuardrailFunctionOutput.allow(output_info=out)


_WITHHELD = PREFIX + "the tool's output was withheld by policy"


def _guard(tool: FunctionTool, policy: _Policy) -> FunctionTool:
    guards = _tool_guards(policy, rewrites=True)
    inner = tool.on_invoke_tool

    async def invoke(ctx: ToolContext[Any], input: str) -> Any:
        out = _DECIDED.get(ctx) if isinstance(ctx, ToolContext) else None
        if out is None:  # called without its input guardrail (directly): decide here
            if not isinstance(ctx, ToolContext):
                return PREFIX + "the tool call cannot be checked without a ToolContext"
            verdict = await _decide_tool_call(policy, ctx, rewrites=True)
            if verdict.behavior["type"] != "allow":
                return verdict.behavior.get("message", _WITHHELD)
            out = _DECIDED[ctx]
        if _changed(out, "input") and out.input is not None:
            if getattr(ctx, "_function_tool_arguments", None) is not None:
                ctx._function_tool_arguments = None  # prepared for the model's arguments
            return await inner(ctx, json.dumps(out.input, ensure_ascii=False))
        return await inner(ctx, input)

    setattr(invoke, _GUARDED, True)
    return replace(
        tool,
        on_invoke_tool=invoke,
        tool_input_guardrails=[*guards.input, *(tool.tool_input_guardrails or [])],
        tool_output_guardrails=[*guards.output, *(tool.tool_output_guardrails or [])],
    )


# -- shared pieces ------------------------------------------------------------------------------


class _Policy:
    """One engine agent and where each evaluation's scope comes from."""

    def __init__(self, agent: EngineAgent, scope: ScopeSource) -> None:
        if not isinstance(agent, EngineAgent):
            raise TypeError(
                f"agent: must be an engine agent (engine.agent(name)), not {type(agent).__name__}"
            )
        if scope is not None and not callable(scope):
            _checked_scope(scope)  # a fixed scope is checked once, here
        self.agent = agent
        self.scope = scope

    async def evaluate(self, point: str, fields: dict[str, Any], context: Any) -> Outcome:
        """Evaluate ``point`` for the scope of ``context`` as the openai-agents host."""
        scope = self.scope_for(context)
        out = await self.agent.aevaluate(point, fields, host=HOST, turn_id=_TURN.get(), **scope)
        for item in out.unsupported:
            log.warning("openai-agents: %s", item["message"])
        return out

    def scope_for(self, context: Any) -> dict[str, Any]:
        if self.scope is None:
            return _scope_from_context(context)
        found = self.scope(context) if callable(self.scope) else self.scope
        return _checked_scope(found)


def _checked_scope(found: Any) -> dict[str, Any]:
    """A scope mapping with only ``SCOPE_KEYS``; EventError naming each other key."""
    if not isinstance(found, Mapping):
        msg = f"must be a mapping of {', '.join(SCOPE_KEYS)}, not {type(found).__name__}"
        raise EventError([{"loc": ["scope"], "msg": msg}])
    known = ", ".join(SCOPE_KEYS)
    errors = [
        {"loc": ["scope", str(key)], "msg": f"unknown scope key (known: {known})"}
        for key in found
        if key not in SCOPE_KEYS
    ]
    if errors:
        raise EventError(errors)
    return dict(found)


def _scope_from_context(context: Any) -> dict[str, Any]:
    found = {}
    for key in ("user_id", "session_id"):
        value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
        if value is not None:
            found[key] = value
    return found


def question_of(input: Any) -> str:
    """The user's text in a run's input: the text itself, or the last user message's text
    (its text parts joined by newlines); "" when no message is the user's.

    Raises:
        EventError: ``input`` is neither text nor a list of items (``loc`` ``["input"]``).
    """
    if isinstance(input, str):
        return input
    if not isinstance(input, list):
        msg = f"must be text or a list of input items, not {type(input).__name__}"
        raise EventError([{"loc": ["input"], "msg": msg}])
    last = _last_user(input)
    return "" if last is None else _content_text(_get(input[last], "content"))


def answer_text(output: Any) -> str:
    """A final output as text: text as it is, a model or other data as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(_json_data(output), ensure_ascii=False)


def hook_result(output: Any) -> Any:
    """A tool's output as the JSON data tool_result hooks see.

    Text stays text. The SDK's content items (an MCP tool's output arrives as
    ``{"type": "text", "text": ...}`` or a list of them) become their text joined by newlines,
    an image or a file a stub such as ``[image: image/png]``. A model becomes its JSON data;
    anything else that is not JSON data, its text.
    """
    if isinstance(output, str):
        return output
    items = output if isinstance(output, list) else [output]
    if items and all(_content_type(item) in _CONTENT_TYPES for item in items):
        return "\n".join(_item_text(item) for item in items)
    return _json_data(output)


_CONTENT_TYPES = frozenset({"text", "image", "file"})


def _content_type(item: Any) -> Any:
    return _get(item, "type") if isinstance(item, (Mapping, BaseModel)) else None


def _item_text(item: Any) -> str:
    kind = _get(item, "type")
    if kind == "text":
        return str(_get(item, "text") or "")
    if kind == "image":
        url = str(_get(item, "image_url") or "")
        mime = url[5:].split(";", 1)[0] if url.startswith("data:") else "url"
        return f"[image: {mime}]"
    return f"[file: {_get(item, 'filename') or 'unnamed'}]"


def _json_data(value: Any) -> Any:
    """``value`` as JSON data (a model dumped; anything JSON cannot hold, as text)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False, default=_dump))
    except (TypeError, ValueError):
        return str(value)


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _arguments(text: Any) -> dict[str, Any]:
    """A tool call's JSON arguments as an object; ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"arguments must be JSON text, not {type(text).__name__}")
    if not text.strip():
        return {}
    data = json.loads(text)  # json.JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(data).__name__}")
    return data


def _model_input(model: ModelInputData, out: Outcome) -> ModelInputData:
    """The model input before_call's hooks left: instruction, sections, messages."""
    instructions = out.instruction if _changed(out, "instruction") else model.instructions
    if out.sections:
        instructions = "\n\n".join(part for part in [instructions, *out.sections] if part)
    if not _changed(out, "messages"):
        return ModelInputData(input=model.input, instructions=instructions)
    # a hook's messages are the input items it wants sent, as JSON data: the SDK takes dicts
    return ModelInputData(input=list(out.messages), instructions=instructions)  # type: ignore[arg-type]


def _last_user(items: list[Any]) -> int | None:
    for index in range(len(items) - 1, -1, -1):
        if _get(items[index], "role") == "user":
            return index
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [_get(part, "text") for part in content]
    return "\n".join(part for part in parts if isinstance(part, str))


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _changed(out: Outcome, name: str) -> bool:
    """Whether an enforced hook changed ``name`` (the engine's normalising of the event, a
    text cut with a marker, is no change to hand back)."""
    return any(h.mode == "enforce" and h.change and name in h.change for h in out.hooks)


def _rewritten(out: Outcome, name: str, before: Any) -> bool:
    """Whether a hook changed ``name`` to something other than ``before``."""
    return _changed(out, name) and getattr(out, name) != before


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _failed(exc: BaseException, then: str = "") -> str:
    """One line naming what failed (never the event's values), logged as a warning."""
    text = str(exc)
    text = text if len(text) <= 500 else text[:500] + "…"
    if isinstance(exc, EventError):
        line = PREFIX + f"the policy check could not run: {text}"
    else:
        line = PREFIX + f"the policy check failed ({type(exc).__name__}: {text})"
    line += f"; {then}" if then else ""
    log.warning("openai-agents: %s", line)
    return line
