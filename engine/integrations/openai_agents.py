"""OpenAI Agents SDK: the engine's points as the SDK's guardrails, model-input filter and run.

===========================  ========================  =======================================
SDK piece                    point                     what a decision becomes
===========================  ========================  =======================================
tool input guardrail         tool_call                 block, malformed arguments, a failed
                                                       check: ``reject_content(reason)``, the
                                                       tool does not run
``guard_tools``' invoker     tool_call                 a rewritten input: the tool runs with it
``guard_tools``'             tool_call                 an approval: the run's
``needs_approval``                                     ``interruptions``; answer each with
                                                       ``resolve_approval``
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

The tool pieces live in openai_agents_tools.py, the scope and the SDK's values as event data
in openai_agents_events.py; this module is the one to import. Importing it imports the
``agents`` package (``hookengine[openai-agents]``); ``import engine`` never does.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
    RunConfig,
    RunContextWrapper,
    Runner,
    RunResult,
)
from agents.exceptions import AgentsException
from agents.run_config import CallModelData, ModelInputData

from engine.errors import EngineError, EventError
from engine.integrations.openai_agents_events import (
    HOST,
    PREFIX,
    SCOPE_KEYS,
    TURN,
    Policy,
    ScopeSource,
    answer_text,
    failed,
    hook_result,
    input_with,
    json_data,
    log,
    model_input,
    question_of,
    rewritten,
    tool_calls,
)
from engine.integrations.openai_agents_tools import (
    ToolGuardrails,
    guard_tools,
    resolve_approval,
    tool_guardrails,
)
from engine.outcome import Outcome
from engine.runtime import Agent as EngineAgent

__all__ = [
    "HOST",
    "PREFIX",
    "SCOPE_KEYS",
    "ModelCallBlocked",
    "ScopeSource",
    "ToolGuardrails",
    "Turn",
    "answer_text",
    "call_model_input_filter",
    "guard_tools",
    "hook_result",
    "input_guardrail",
    "output_guardrail",
    "question_of",
    "resolve_approval",
    "run",
    "tool_guardrails",
]


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


# -- guardrails and the model-input filter ------------------------------------------------------


def input_guardrail(agent: EngineAgent, *, scope: ScopeSource = None) -> InputGuardrail[Any]:
    """An input guardrail evaluating ``before_user_message``; it runs before the model
    (``run_in_parallel=False``), so a tripped wire means no model call.

    It trips on a block, an answer and a rewritten question (none of which a guardrail can
    pass on), and when the check fails; ``output_info`` is the outcome (or, on a failure, the
    text naming it). Injected messages cannot be added here: ``run`` adds them.
    """
    policy = Policy(agent, scope)

    async def hookengine_before_user_message(
        ctx: RunContextWrapper[Any], sdk_agent: Agent[Any], input: str | list[Any]
    ) -> GuardrailFunctionOutput:
        try:
            question = question_of(input)
            out = await policy.evaluate("before_user_message", {"question": question}, ctx.context)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check trips the wire
            return GuardrailFunctionOutput(output_info=failed(exc), tripwire_triggered=True)
        trip = out.blocked or out.answer is not None or rewritten(out, "question", question)
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
    policy = Policy(agent, scope)

    async def hookengine_before_assistant_message(
        ctx: RunContextWrapper[Any], sdk_agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        try:
            answer = answer_text(output)
            fields = {"question": question_of(ctx.turn_input), "answer": answer}
            out = await policy.evaluate("before_assistant_message", fields, ctx.context)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check trips the wire
            return GuardrailFunctionOutput(output_info=failed(exc), tripwire_triggered=True)
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
    policy = Policy(agent, scope)

    async def hookengine_before_call(data: CallModelData[Any]) -> ModelInputData:
        model = data.model_data
        fields = {
            "instruction": model.instructions or "",
            "messages": [json_data(item) for item in model.input],
            "tools": [getattr(tool, "name", type(tool).__name__) for tool in data.agent.tools],
            "settings": json_data(data.agent.model_settings.to_json_dict()),
        }
        try:
            out = await policy.evaluate("before_call", fields, data.context)
        except Exception as exc:  # the edge: a failed check refuses the call
            raise ModelCallBlocked(failed(exc)) from exc
        if out.blocked:
            raise ModelCallBlocked(out.reason or PREFIX + "blocked by policy", out)
        return model_input(model, out)

    return hookengine_before_call


# -- the turn ------------------------------------------------------------------------------------


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
        TypeError: ``run_config`` is not a ``RunConfig``.
        AgentsException: what ``Runner.run`` raises (but ``ModelCallBlocked``: a refused turn).
    """
    policy = Policy(engine_agent, scope)
    context = options.get("context")
    question = question_of(input)
    if run_config is not None and not isinstance(run_config, RunConfig):
        raise TypeError(f"run_config: must be a RunConfig, not {type(run_config).__name__}")
    _check_servers(agent)
    guarded = agent.clone(tools=guard_tools(agent.tools, engine_agent, scope=scope))
    try:
        first = await policy.evaluate("before_user_message", {"question": question}, context)
    except EventError:
        raise
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
        return _refused(failed(exc), None)
    token = TURN.set(first.turn_id)
    try:
        return await _turn(guarded, input, first, policy, run_config, options)
    finally:
        TURN.reset(token)


async def _turn(
    agent: Agent[Any],
    input: str | list[Any],
    first: Outcome,
    policy: Policy,
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
        result = await Runner.run(agent, input_with(input, first), run_config=config, **options)
    except ModelCallBlocked as exc:
        return _refused(exc.reason, first)
    turn = await _final(policy, asked, result, context)
    turn.notices[:0] = first.notices
    if not turn.blocked:
        shown = answer_text(turn.final_output)
        await _after_turn(policy, asked, shown, tool_calls(result), context)
    return turn


async def _final(policy: Policy, asked: str, result: RunResult, context: Any) -> Turn:
    """The turn's answer after before_assistant_message; withheld when the check failed."""
    answer = answer_text(result.final_output)
    fields = {"question": asked, "answer": answer}
    try:
        out = await policy.evaluate("before_assistant_message", fields, context)
    except Exception as exc:  # noqa: BLE001 - the edge: a failed check withholds the answer
        reason = failed(exc)
        return Turn(reason, TURN.get(), blocked=True, reason=reason, result=result)
    if out.blocked:
        shown = out.answer or out.reason or PREFIX + "the answer was withheld"
        return Turn(shown, out.turn_id, True, out.reason, result=result, notices=out.notices)
    final = out.answer if out.answer is not None and out.answer != answer else result.final_output
    return Turn(final, out.turn_id, result=result, notices=list(out.notices))


async def _after_turn(
    policy: Policy, question: str, answer: str, calls: list[dict[str, Any]], context: Any
) -> None:
    """Tell after_turn hooks the turn ended; a failure is logged (they only hear)."""
    fields = {"question": question, "answer": answer, "tool_calls": calls}
    try:
        await policy.evaluate("after_turn", fields, context)
    except Exception as exc:  # noqa: BLE001 - the edge: after_turn hooks only hear
        log.warning("openai-agents: after_turn failed: %s", failed(exc))


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


def _with_filter(config: RunConfig, policy: Policy) -> RunConfig:
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
