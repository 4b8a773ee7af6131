"""LangChain objects as the engine's events, and outcomes back as LangChain objects.

The middleware (engine/integrations/langchain.py) calls these around each evaluation: one
function makes a point's event from a request or the agent state, another applies the
outcome (a state update, a request override, a message). None calls the engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

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

from engine.jsontext import shown_data

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ModelRequest
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from engine.outcome import Outcome

PREFIX = "hookengine: "
"""Starts every text the middleware writes itself, so the reader sees where it came from."""

ToolOutput = ToolMessage | Command[Any]
"""What a tool call answers: a message, or a Command with messages and state updates."""


# -- before_user_message ----------------------------------------------------------------------


def new_question(state: Mapping[str, Any]) -> HumanMessage | None:
    """The run's new user message: the last message, if a person wrote it (a run started on
    other input has none, and asks nothing at ``before_user_message``)."""
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
        return {**update, **refused_turn(out.reason if out.blocked else out.answer)}
    if out.question is not None and out.question != question.text:
        rewritten = HumanMessage(content=out.question, id=question.id, name=question.name)
        update["messages"] = [rewritten]  # the same id: add_messages replaces it in place
    return update


def refused_turn(text: str | None) -> dict[str, Any]:
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
        at = question_index(request.messages)
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


def question_index(messages: list[Any]) -> int:
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
        data = shown_data(message.artifact)
        if data is not None:
            fields["data"] = data
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


def tool_messages(output: ToolOutput) -> list[ToolMessage]:
    """The tool's answers the model will read: the ``ToolMessage``, or the tool messages in a
    ``Command``'s update, in whatever form LangGraph takes them there (a ``ToolMessage``, a
    dict such as ``{"role": "tool", ...}``; the update a mapping or a list of pairs)."""
    if isinstance(output, ToolMessage):
        return [output]
    found = [_tool_message(m) for m in _update_messages(output)]
    return [m for m in found if m is not None]


def with_messages(output: ToolOutput, checked: list[ToolMessage]) -> ToolOutput:
    """``output`` with its tool messages replaced by ``checked`` (in order)."""
    if isinstance(output, ToolMessage):
        return checked[0]
    if not checked:
        return output
    replaced = iter(checked)

    def swap(messages: Any) -> Any:
        if not isinstance(messages, list | tuple):
            messages = [messages]
        return [next(replaced) if _tool_message(m) is not None else m for m in messages]

    update = output.update
    if isinstance(update, Mapping):
        return replace(output, update={**update, "messages": swap(update["messages"])})
    pairs = cast("list[tuple[str, Any]]", update)  # _update_messages found pairs
    return replace(output, update=[(k, swap(v) if k == "messages" else v) for k, v in pairs])


def _update_messages(output: ToolOutput) -> list[Any]:
    """The entries of a ``Command``'s ``messages`` update (one message or a list of them)."""
    update = output.update if isinstance(output, Command) else None
    if isinstance(update, Mapping):
        values = [update.get("messages")]
    elif isinstance(update, list | tuple):
        values = [v for pair in update if _is_pair(pair) for k, v in [pair] if k == "messages"]
    else:
        return []
    found: list[Any] = []
    for v in values:
        found.extend(v if isinstance(v, list | tuple) else [] if v is None else [v])
    return found


def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)


def _tool_message(m: Any) -> ToolMessage | None:
    """``m`` as the ``ToolMessage`` LangGraph will make of it, or None for any other message
    (or what LangGraph would refuse anyway)."""
    if isinstance(m, ToolMessage):
        return m
    if isinstance(m, BaseMessage) or not isinstance(m, Mapping):
        return None
    try:
        (made,) = convert_to_messages([m])
    except (KeyError, ValueError, TypeError, NotImplementedError):
        return None
    return made if isinstance(made, ToolMessage) else None


def apply_result(message: ToolMessage, out: Outcome) -> ToolMessage:
    """The tool's message with the result hooks left (a withheld one is an error).

    The ``artifact`` goes on as the hooks saw it (the event's ``data``) with a content they
    left as it was; it is dropped with a replaced content (it may hold what a redaction took
    out), and when it is not JSON data (no hook could see it)."""
    if out.blocked:
        return withheld(message, str(out.result))
    artifact = shown_data(message.artifact)
    if out.result == message.content:
        if artifact is None and message.artifact is not None:
            return message.model_copy(update={"artifact": None})
        return message
    return message.model_copy(update={"content": as_content(out.result), "artifact": None})


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


def final_answer(state: Mapping[str, Any]) -> AIMessage | None:
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


def question_text(state: Mapping[str, Any]) -> str:
    messages = state.get("messages") or []
    at = question_index(messages)
    return messages[at].text if at < len(messages) else ""


def turn_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    """The ``after_turn`` event: the question, the answer, and the tools the model called
    since the question (``name``, ``input``, ``call_id``)."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    calls = [
        {"name": c["name"], "input": c["args"], "call_id": c.get("id")}
        for m in messages[question_index(messages) :]
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]
    answer = last.text if isinstance(last, AIMessage) else ""
    return {"question": question_text(state), "answer": answer, "tool_calls": calls}
