"""LangChain v1 middleware: an engine agent's hooks at the steps of a ``create_agent`` loop.

``HookMiddleware(agent)`` is an ``AgentMiddleware`` with sync and async forms of each hook
(a sync-only hook raises under ``ainvoke``). docs/langchain.md has the whole table:

===================  ========================  ===============================================
LangChain hook       point                     what the middleware does
===================  ========================  ===============================================
before_agent         before_user_message       block / answer: ``jump_to: end`` with an
                                               ``AIMessage``; a rewritten question replaces the
                                               ``HumanMessage`` (same id); injected messages
                                               join each model request of the turn
wrap_model_call      before_call               ``request.override(system_message=, messages=,
                                               tools=, model_settings=)``; block: an
                                               ``AIMessage``, the model is not called
wrap_tool_call       tool_call, tool_result    block: an error ``ToolMessage``; a rewrite:
                                               ``request.override(tool_call=)``; the result's
                                               content is replaced
after_model          before_assistant_message  the final answer becomes an ``AIMessage`` with
                                               the same id
after_agent          after_turn                nothing (hooks only hear)
===================  ========================  ===============================================

Every failure fails closed: a check that raises blocks the turn, the model call or the tool,
withholds the tool's result or the answer, and is logged. Only ``after_turn`` just logs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    hook_config,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_function
from langgraph.types import Command

from engine.errors import EventError
from engine.points import Point

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime

    from engine.outcome import Outcome
    from engine.runtime import Agent

HOST = "langchain"
"""The engine's host profile (engine/hosts.py) every evaluation names."""

PREFIX = "hookengine: "
"""Starts every text the middleware writes itself, so the reader sees where it came from."""

SCOPE_KEYS = frozenset({"user_id", "session_id", "template", "process"})

ScopeOf = Callable[[Any], Mapping[str, Any]]
"""Given the hook's runtime (``Runtime``, or ``ToolRuntime`` at a tool call), the scope."""

ToolOutput = ToolMessage | Command[Any]

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
    """

    state_schema = HookState

    def __init__(self, agent: Agent, *, scope: ScopeOf | None = None) -> None:
        super().__init__()
        self.agent = agent
        self.scope = scope

    # -- before_agent: before_user_message -----------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        question = _new_question(state)
        if question is None:
            return None
        fields = {"question": question.text}
        try:
            out = self._evaluate(Point.BEFORE_USER_MESSAGE, fields, runtime, None)
            return user_message_update(out, question)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
            return _refused_turn(_failed("before_user_message", exc))

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        question = _new_question(state)
        if question is None:
            return None
        fields = {"question": question.text}
        try:
            out = await self._aevaluate(Point.BEFORE_USER_MESSAGE, fields, runtime, None)
            return user_message_update(out, question)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check refuses the turn
            return _refused_turn(_failed("before_user_message", exc))

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
        try:
            out = self._evaluate(Point.TOOL_CALL, tool_fields(call), request.runtime, request.state)
            if out.blocked:
                return tool_refusal(call, out.reason)
            request = with_input(request, out.input)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        output = handler(request)
        checked = [self._checked(request, m) for m in tool_messages(output, call)]
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
            if out.blocked:
                return tool_refusal(call, out.reason)
            request = with_input(request, out.input)
        except Exception as exc:  # noqa: BLE001 - the edge: a failed check blocks the tool
            return tool_refusal(call, _failed("tool_call", exc))
        output = await handler(request)
        checked = [await self._achecked(request, m) for m in tool_messages(output, call)]
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
        final = _final_answer(state)
        if final is None:
            return None
        fields = {"question": _question_text(state), "answer": final.text}
        try:
            out = self._evaluate(Point.BEFORE_ASSISTANT_MESSAGE, fields, runtime, state)
        except Exception as exc:  # noqa: BLE001 - the edge: an unchecked answer is withheld
            return answer_update(final, _failed("before_assistant_message", exc))
        return answer_update(final, out.answer)

    async def aafter_model(self, state: HookState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        final = _final_answer(state)
        if final is None:
            return None
        fields = {"question": _question_text(state), "answer": final.text}
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
    """Log a failed check and return the text that tells the model (never input values)."""
    log.warning("langchain middleware: %s check failed: %r", point, exc)
    if isinstance(exc, EventError):
        return PREFIX + f"the {point} event is not valid input: {_cut(str(exc))}"
    return PREFIX + f"the policy check failed at {point} ({type(exc).__name__}: {_cut(str(exc))})"


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# -- before_user_message ----------------------------------------------------------------------


def _new_question(state: Mapping[str, Any]) -> HumanMessage | None:
    """The run's new user message: the last message, if a person wrote it (a run resumed
    after a tool or an interrupt has none, and asks nothing at this point)."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last if isinstance(last, HumanMessage) else None


def user_message_update(out: Outcome, question: HumanMessage) -> dict[str, Any]:
    """The state update for ``before_user_message``'s outcome."""
    update: dict[str, Any] = {
        "hookengine_turn_id": out.turn_id,
        "hookengine_context": list(out.messages),
    }
    if out.blocked or out.answer is not None:
        return {**update, **_refused_turn(out.reason if out.blocked else out.answer)}
    if out.question is not None and out.question != question.text:
        rewritten = HumanMessage(content=out.question, id=question.id, name=question.name)
        update["messages"] = [rewritten]  # the same id: add_messages replaces it in place
    return update


def _refused_turn(text: str | None) -> dict[str, Any]:
    """End the run with ``text`` as the answer; the model is not asked."""
    answer = AIMessage(content=text or PREFIX + "the turn was refused")
    return {"jump_to": "end", "messages": [answer], "hookengine_context": []}


# -- before_call ------------------------------------------------------------------------------

ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
"""The role hooks see for each LangChain message type (the engine's, OpenAI's names)."""


def with_context(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """The request with this run's injected messages: system texts appended to the system
    message, the others placed just before the user's question."""
    state: Mapping[str, Any] = request.state or {}
    context: list[dict[str, Any]] = state.get("hookengine_context") or []
    if not context:
        return request
    system = [m["content"] for m in context if m["role"] == "system"]
    others = [
        _new_message(m, f"hookengine_context[{i}]")
        for i, m in enumerate(context)
        if m["role"] != "system"
    ]
    changes: dict[str, Any] = {}
    if system:
        changes["system_message"] = _appended(request.system_message, system)
    if others:
        at = _question_index(request.messages)
        changes["messages"] = [*request.messages[:at], *others, *request.messages[at:]]
    return request.override(**changes)


def call_fields(request: ModelRequest[Any]) -> dict[str, Any]:
    """The ``before_call`` event of a model request."""
    system = request.system_message
    return {
        "instruction": system.text if system is not None else "",
        "messages": [message_data(m) for m in request.messages],
        "tools": [tool_data(t) for t in request.tools],
        "settings": dict(request.model_settings),
    }


def message_data(message: BaseMessage) -> dict[str, Any]:
    """A message as hooks see it: ``role``, ``content`` and ``id``; an assistant's
    ``tool_calls`` (``name``, ``args``, ``id``); a tool result's ``tool_call_id``, ``name``."""
    data: dict[str, Any] = {"role": ROLES.get(message.type, message.type)}
    data["content"], data["id"] = message.content, message.id
    if isinstance(message, AIMessage) and message.tool_calls:
        data["tool_calls"] = [
            {"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        data["tool_call_id"], data["name"] = message.tool_call_id, message.name
    return data


def tool_data(tool: Any) -> Any:
    """A tool as hooks see it: ``{name, description, parameters}``; a provider's built-in
    tool (a dict) as given."""
    return dict(tool) if isinstance(tool, Mapping) else convert_to_openai_function(tool)


def apply_call(request: ModelRequest[Any], sent: dict[str, Any], out: Outcome) -> ModelRequest[Any]:
    """The request with what ``before_call``'s hooks changed (``sent``: the event given).

    Raises:
        ValueError: a message a hook wrote cannot be made a LangChain message.
    """
    changes: dict[str, Any] = {}
    instruction = out.instruction if out.instruction is not None else sent["instruction"]
    if instruction != sent["instruction"]:
        joined = "\n\n".join(t for t in [instruction, *out.sections] if t)
        changes["system_message"] = SystemMessage(content=joined) if joined else None
    elif any(out.sections):
        changes["system_message"] = _appended(request.system_message, out.sections)
    if out.messages != sent["messages"]:
        changes["messages"] = messages_back(out.messages, request.messages)
    if out.tools is not None and out.tools != sent["tools"]:
        changes["tools"] = [request.tools[sent["tools"].index(t)] for t in out.tools]
    if out.settings is not None and out.settings != sent["settings"]:
        changes["model_settings"] = dict(out.settings)
    return request.override(**changes) if changes else request


def messages_back(data: list[Any], originals: list[AnyMessage]) -> list[AnyMessage]:
    """Hooks' messages as LangChain messages: one they left as it was is the original
    object; one whose content alone changed is a copy with that content; any other is new."""
    by_id = {m.id: m for m in originals if m.id}
    found: list[AnyMessage] = []
    for i, item in enumerate(data):
        given = item.get("id") if isinstance(item, Mapping) else None
        original = by_id.get(given) if isinstance(given, str) else None
        if original is None:
            found.append(_new_message(item, f"messages[{i}]"))
            continue
        before = message_data(original)
        if before == item:
            found.append(original)
        elif {**before, "content": item.get("content")} == item:
            found.append(original.model_copy(update={"content": item["content"]}))
        else:
            found.append(_new_message(item, f"messages[{i}]"))
    return found


_MESSAGE_KEYS = ("role", "content", "id", "tool_calls", "tool_call_id", "name")


def _new_message(item: Any, where: str) -> AnyMessage:
    if not isinstance(item, Mapping) or item.get("role") not in ROLES.values():
        roles = ", ".join(sorted(ROLES.values()))
        raise ValueError(f"{where}: must be a message with a role of {roles}")
    payload = {k: item[k] for k in _MESSAGE_KEYS if item.get(k) is not None}
    return convert_to_messages([payload])[0]  # type: ignore[return-value]


def _appended(system: SystemMessage | None, texts: list[str]) -> SystemMessage:
    joined = "\n\n".join(t for t in texts if t)
    if system is None or not system.content:
        return SystemMessage(content=joined)
    if isinstance(system.content, str):
        return system.model_copy(update={"content": system.content + "\n\n" + joined})
    blocks = [*system.content, {"type": "text", "text": joined}]
    return system.model_copy(update={"content": blocks})


def _question_index(messages: list[Any]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return len(messages)


def refusal(text: str | None) -> AIMessage:
    """The model's answer when its call was blocked: the reason (the model is not called)."""
    return AIMessage(content=text or PREFIX + "the model call was blocked")


# -- tool_call and tool_result ----------------------------------------------------------------


def tool_fields(call: Mapping[str, Any], message: ToolMessage | None = None) -> dict[str, Any]:
    """The ``tool_call`` event of ``call``, or with ``message`` its ``tool_result`` event."""
    fields = {"name": call["name"], "input": call["args"], "call_id": call.get("id")}
    if message is not None:
        fields["result"] = message.content
    return fields


def tool_refusal(call: Mapping[str, Any], text: str | None) -> ToolMessage:
    """The answer to a blocked call: an error ``ToolMessage`` the model reads (the tool did
    not run)."""
    return ToolMessage(
        content=text or PREFIX + "the tool call was blocked",
        tool_call_id=call.get("id") or "",
        name=call["name"],
        status="error",
    )


def with_input(request: ToolCallRequest, new_input: dict[str, Any] | None) -> ToolCallRequest:
    """The request with the tool's input hooks left (itself when unchanged)."""
    if new_input is None or new_input == request.tool_call["args"]:
        return request
    return request.override(tool_call={**request.tool_call, "args": new_input})


def tool_messages(output: ToolOutput, call: Mapping[str, Any]) -> list[ToolMessage]:
    """The tool's answers the model will read: the ``ToolMessage``, or those in a
    ``Command``'s ``update["messages"]``."""
    if isinstance(output, ToolMessage):
        return [output]
    update = output.update if isinstance(output, Command) else None
    messages = update.get("messages") if isinstance(update, Mapping) else None
    return [m for m in messages or [] if isinstance(m, ToolMessage)]


def with_messages(output: ToolOutput, checked: list[ToolMessage]) -> ToolOutput:
    """``output`` with its tool messages replaced by ``checked`` (in order)."""
    if isinstance(output, ToolMessage):
        return checked[0]
    if not checked:
        return output
    replaced = iter(checked)
    update = dict(cast("Mapping[str, Any]", output.update))  # tool_messages found a mapping
    update["messages"] = [
        next(replaced) if isinstance(m, ToolMessage) else m for m in update["messages"]
    ]
    return replace(output, update=update)


def apply_result(message: ToolMessage, out: Outcome) -> ToolMessage:
    """The tool's message with the result hooks left (a withheld one is an error)."""
    if out.blocked:
        return withheld(message, str(out.result))
    if out.result == message.content:
        return message
    return message.model_copy(update={"content": as_content(out.result)})


def withheld(message: ToolMessage, text: str) -> ToolMessage:
    """The tool's message with its result withheld: ``text``, an error, no artifact."""
    return message.model_copy(update={"content": text, "status": "error", "artifact": None})


def as_content(value: Any) -> str | list[Any]:
    """A result as a message's content: text or a list of content blocks as they are, any
    other JSON value as its JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (str, dict)) for v in value):
        return value
    return json.dumps(value, ensure_ascii=False)


# -- before_assistant_message and after_turn --------------------------------------------------


def _final_answer(state: Mapping[str, Any]) -> AIMessage | None:
    """The model's last message if it is an answer (it calls no tool)."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last if isinstance(last, AIMessage) and not last.tool_calls else None


def answer_update(final: AIMessage, answer: str | None) -> dict[str, Any] | None:
    """Replace the final answer's text (an ``AIMessage`` with the same id), if it changed."""
    if answer is None or answer == final.text:
        return None
    shown = AIMessage(
        content=answer,
        id=final.id,
        name=final.name,
        response_metadata=final.response_metadata,
        usage_metadata=final.usage_metadata,
    )
    return {"messages": [shown]}


def _question_text(state: Mapping[str, Any]) -> str:
    messages = state.get("messages") or []
    at = _question_index(messages)
    return messages[at].text if at < len(messages) else ""


def turn_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    """The ``after_turn`` event: the question, the answer, and the tools the model called
    since the question (``name``, ``input``, ``call_id``)."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    calls = [
        {"name": c["name"], "input": c["args"], "call_id": c.get("id")}
        for m in messages[_question_index(messages) :]
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]
    answer = last.text if isinstance(last, AIMessage) else ""
    return {"question": _question_text(state), "answer": answer, "tool_calls": calls}
