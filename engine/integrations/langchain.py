"""LangChain v1 middleware: an engine agent's hooks at the steps of a ``create_agent`` loop.

``HookMiddleware(agent)`` is an ``AgentMiddleware`` with sync and async forms of each hook
(a sync-only hook raises under ``ainvoke``). docs/langchain.md has the whole table:

===================  ========================  ===============================================
LangChain hook       point                     what the middleware does
===================  ========================  ===============================================
before_agent         before_user_message       block / answer: ``jump_to: end`` with an
                                               ``AIMessage``; a rewritten question replaces the
                                               ``HumanMessage`` (same id); injected messages
                                               join each model request of the run
wrap_model_call      before_call               ``request.override(system_message=, messages=,
                                               tools=, model_settings=)``; block: an
                                               ``AIMessage``, the model is not called
wrap_tool_call       tool_call, tool_result    block: an error ``ToolMessage``; a rewrite:
                                               ``request.override(tool_call=)``; the result's
                                               content is replaced; an approval: an
                                               ``interrupt`` (HumanInTheLoopMiddleware's shape)
after_model          before_assistant_message  the final answer becomes an ``AIMessage`` with
                                               the same id
after_agent          after_turn                nothing (hooks only hear)
===================  ========================  ===============================================

Every failure fails closed: a check that raises blocks the turn, the model call or the tool,
withholds the tool's result or the answer, and is logged. Only ``after_turn`` just logs.
Making the events and applying the outcomes is engine/integrations/langchain_events.py.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    hook_config,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import interrupt

from engine.errors import ApprovalError, EventError
from engine.integrations.langchain_approval import approval_request, decision_of
from engine.integrations.langchain_events import (
    PREFIX,
    ToolOutput,
    answer_update,
    apply_call,
    apply_result,
    call_fields,
    final_answer,
    new_question,
    question_text,
    refusal,
    refused_turn,
    tool_fields,
    tool_messages,
    tool_refusal,
    turn_fields,
    user_message_update,
    with_context,
    with_input,
    with_messages,
    withheld,
)
from engine.points import Point
from engine.runtime import Agent

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime

    from engine.outcome import Outcome

HOST = "langchain"
"""The engine's host profile (engine/hosts.py) every evaluation names."""

SCOPE_KEYS = frozenset({"user_id", "session_id", "template", "process"})

ScopeOf = Callable[[Any], Mapping[str, Any]]
"""Given the hook's runtime (``Runtime``, or ``ToolRuntime`` at a tool call), the scope."""

NO_TURN: dict[str, Any] = {"hookengine_turn_id": None, "hookengine_context": []}
"""The state update of a run that starts without a user message: nothing of an earlier
turn (its id, its injected messages) carries over to it."""

log = logging.getLogger("engine.integrations.langchain")


class HookState(AgentState[Any]):
    """The agent state plus what the middleware keeps for the run (private to it)."""

    hookengine_turn_id: NotRequired[Annotated[str | None, PrivateStateAttr]]
    """The turn id ``before_user_message`` gave; later points of the run pass it on."""
    hookengine_context: NotRequired[Annotated[list[dict[str, Any]], PrivateStateAttr]]
    """Messages hooks injected at ``before_user_message``: joined to each model request of
    this run, never written to the conversation."""


class HookMiddleware(AgentMiddleware[HookState, Any, Any]):
    """An engine agent's hooks as LangChain v1 middleware; list it last (innermost).

    Args:
        agent: the engine agent whose hooks decide (``engine.agent("name")``).
        scope: a callable given the hook's runtime, returning the scope (``user_id``,
            ``session_id``, ``template``, ``process``; any left out is None). Without it the
            scope is ``runtime.context``'s ``user_id`` and the run's ``thread_id``.

    Raises:
        TypeError: ``agent`` is not an engine agent, or ``scope`` is not callable.
    """

    state_schema = HookState

    def __init__(self, agent: Agent, *, scope: ScopeOf | None = None) -> None:
        if not isinstance(agent, Agent):
            kind = type(agent).__name__
            raise TypeError(f"agent: must be an engine agent (engine.agent(name)), not {kind}")
        if scope is not None and not callable(scope):
            raise TypeError(f"scope: must be a callable or None, not {type(scope).__name__}")
        super().__init__()
        self.agent = agent
        self.scope = scope

    # -- before_agent: before_user_message -----------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        question = new_question(state)
        if question is None:
            return NO_TURN
        fields = {"question": question.text}
        try:
            out = self._evaluate(Point.BEFORE_USER_MESSAGE, fields, runtime, None)
            return user_message_update(out, question)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
            return refused_turn(_failed("before_user_message", exc))

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        question = new_question(state)
        if question is None:
            return NO_TURN
        fields = {"question": question.text}
        try:
            out = await self._aevaluate(Point.BEFORE_USER_MESSAGE, fields, runtime, None)
            return user_message_update(out, question)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
            return refused_turn(_failed("before_user_message", exc))

    # -- wrap_model_call: before_call ----------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        try:
            request = with_context(request)
            fields = call_fields(request)
            out = self._evaluate(Point.BEFORE_CALL, fields, request.runtime, request.state)
            if out.blocked:
                return refusal(out.reason)
            request = apply_call(request, fields, out)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the call
            return refusal(_failed("before_call", exc))
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        try:
            request = with_context(request)
            fields = call_fields(request)
            out = await self._aevaluate(Point.BEFORE_CALL, fields, request.runtime, request.state)
            if out.blocked:
                return refusal(out.reason)
            request = apply_call(request, fields, out)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the call
            return refusal(_failed("before_call", exc))
        return await handler(request)

    # -- wrap_tool_call: tool_call, then tool_result --------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolOutput]
    ) -> ToolOutput:
        call = request.tool_call
        fields = tool_fields(call)
        try:
            out = self._evaluate(Point.TOOL_CALL, fields, request.runtime, request.state)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        if out.approval is not None:
            answer = interrupt(approval_request(out.approval))  # a person decides; resumed
            try:
                approve, by, note = decision_of(answer)
                with suppress(ApprovalError):  # decided already (or expired): ask again
                    self.agent.resolve(out.approval["id"], approve, by=by, note=note)
                out = self._evaluate(Point.TOOL_CALL, fields, request.runtime, request.state)
            except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
                return tool_refusal(call, _failed("tool_call", exc))
        try:
            if out.blocked:
                return tool_refusal(call, out.reason)
            request = with_input(request, out.input)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        output = handler(request)
        checked = [self._checked(request, m) for m in tool_messages(output)]
        return with_messages(output, checked)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolOutput]],
    ) -> ToolOutput:
        call = request.tool_call
        try:
            fields = tool_fields(call)
            out = await self._aevaluate(Point.TOOL_CALL, fields, request.runtime, request.state)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        if out.approval is not None:
            answer = interrupt(approval_request(out.approval))  # a person decides; resumed
            try:
                approve, by, note = decision_of(answer)
                with suppress(ApprovalError):  # decided already (or expired): ask again
                    await self.agent.aresolve(out.approval["id"], approve, by=by, note=note)
                out = await self._aevaluate(Point.TOOL_CALL, fields, request.runtime, request.state)
            except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
                return tool_refusal(call, _failed("tool_call", exc))
        try:
            if out.blocked:
                return tool_refusal(call, out.reason)
            request = with_input(request, out.input)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        output = await handler(request)
        checked = [await self._achecked(request, m) for m in tool_messages(output)]
        return with_messages(output, checked)

    def _checked(self, request: ToolCallRequest, message: ToolMessage) -> ToolMessage:
        fields = tool_fields(request.tool_call, message)
        try:
            out = self._evaluate(Point.TOOL_RESULT, fields, request.runtime, request.state)
            return apply_result(message, out)
        except Exception as exc:  # noqa: BLE001 - the edge: an unchecked result is withheld
            return withheld(message, _failed("tool_result", exc))

    async def _achecked(self, request: ToolCallRequest, message: ToolMessage) -> ToolMessage:
        fields = tool_fields(request.tool_call, message)
        try:
            out = await self._aevaluate(Point.TOOL_RESULT, fields, request.runtime, request.state)
            return apply_result(message, out)
        except Exception as exc:  # noqa: BLE001 - the edge: an unchecked result is withheld
            return withheld(message, _failed("tool_result", exc))

    # -- after_model: before_assistant_message --------------------------------------------------

    def after_model(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        final = final_answer(state)
        if final is None:
            return None
        fields = {"question": question_text(state), "answer": final.text}
        try:
            out = self._evaluate(Point.BEFORE_ASSISTANT_MESSAGE, fields, runtime, state)
        except Exception as exc:  # noqa: BLE001 - the edge: an unchecked answer is withheld
            return answer_update(final, _failed("before_assistant_message", exc))
        return answer_update(final, out.answer)

    async def aafter_model(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        final = final_answer(state)
        if final is None:
            return None
        fields = {"question": question_text(state), "answer": final.text}
        try:
            out = await self._aevaluate(Point.BEFORE_ASSISTANT_MESSAGE, fields, runtime, state)
        except Exception as exc:  # noqa: BLE001 - the edge: an unchecked answer is withheld
            return answer_update(final, _failed("before_assistant_message", exc))
        return answer_update(final, out.answer)

    # -- after_agent: after_turn ----------------------------------------------------------------

    def after_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        try:
            self._evaluate(Point.AFTER_TURN, turn_fields(state), runtime, state)
        except Exception as exc:  # noqa: BLE001 - the edge: hooks only hear; logged
            _failed("after_turn", exc)
        return None

    async def aafter_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        try:
            await self._aevaluate(Point.AFTER_TURN, turn_fields(state), runtime, state)
        except Exception as exc:  # noqa: BLE001 - the edge: hooks only hear; logged
            _failed("after_turn", exc)
        return None

    # -- the engine call ------------------------------------------------------------------------

    def _evaluate(self, point: Point, fields: dict[str, Any], runtime: Any, state: Any) -> Outcome:
        scope = self.scope_of(runtime)
        return self.agent.evaluate(point, fields, host=HOST, turn_id=_turn_id(state), **scope)

    async def _aevaluate(
        self, point: Point, fields: dict[str, Any], runtime: Any, state: Any
    ) -> Outcome:
        scope = self.scope_of(runtime)
        return await self.agent.aevaluate(
            point, fields, host=HOST, turn_id=_turn_id(state), **scope
        )

    def scope_of(self, runtime: Any) -> dict[str, Any]:
        """The scope an evaluation runs in: the ``scope`` callable's, or ``default_scope``.

        Raises:
            TypeError: the callable gave something other than a mapping of scope names.
        """
        if self.scope is None:
            return default_scope(runtime)
        given = self.scope(runtime)
        if not isinstance(given, Mapping):
            raise TypeError(f"scope: must return a mapping, not {type(given).__name__}")
        unknown = sorted(str(k) for k in given if k not in SCOPE_KEYS)
        if unknown:
            raise TypeError(f"scope: unknown key {unknown[0]!r} (known: {sorted(SCOPE_KEYS)})")
        return dict(given)


def default_scope(runtime: Any) -> dict[str, Any]:
    """``user_id`` from ``runtime.context`` (a mapping or an object), ``session_id`` from the
    run's ``thread_id``; either None when absent. Numbers are made text."""
    context = getattr(runtime, "context", None)
    if isinstance(context, Mapping):
        user = context.get("user_id")
    else:
        user = getattr(context, "user_id", None)
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    return {"user_id": _as_id(user), "session_id": _as_id(thread)}


def _as_id(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _turn_id(state: Any) -> str | None:
    turn = state.get("hookengine_turn_id") if isinstance(state, Mapping) else None
    return turn if isinstance(turn, str) else None


def _failed(point: str, exc: Exception) -> str:
    """Log a failed check and return the text that tells the model what failed."""
    log.warning("langchain middleware: %s check failed: %r", point, exc)
    if isinstance(exc, EventError):
        return PREFIX + f"the {point} event is not valid input: {_cut(str(exc))}"
    return PREFIX + f"the policy check failed at {point} ({type(exc).__name__}: {_cut(str(exc))})"


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
