"""LiteLLM's Generic Guardrail API: ``POST /beta/litellm_basic_guardrail_api``, which a LiteLLM
proxy's ``generic_guardrail_api`` guardrail calls before (``request``) and after
(``response``) each LLM call, answered by an agent's points.

The shapes are LiteLLM's own (litellm 1.110.2: ``GenericGuardrailAPIRequest`` and
``GenericGuardrailAPIResponse`` in ``litellm.types.proxy.guardrails.guardrail_hooks``):

========================  ============================================================
LiteLLM sends             the engine evaluates
========================  ============================================================
``request``               ``before_user_message`` on the last user message's text, then
                          ``before_call`` on the messages, tools and model
``response``              ``before_assistant_message`` on each text of the answer
``tool_calls`` (either)   ``tool_call`` for each, in order
========================  ============================================================

The answer is ``BLOCKED`` with ``blocked_reason`` (LiteLLM raises
``GuardrailRaisedException``), ``GUARDRAIL_INTERVENED`` with ``texts`` (LiteLLM writes them
back into the request or the response), or ``NONE``. ``decision_ids`` and ``unsupported``
are ours; LiteLLM reads neither.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from engine.errors import EngineError, EventError
from engine.http.errors import ApiError, responses, summarize
from engine.jsontext import parse_strict

log = logging.getLogger("engine.http.litellm")

PATH = "/beta/litellm_basic_guardrail_api"
"""LiteLLM appends this to the guardrail's ``api_base``."""
HOST = "litellm"
AGENT_PARAM = "agent"
"""The key of ``additional_provider_specific_params`` naming the agent to ask."""
PARAMS = ("body", "additional_provider_specific_params")


class _Lenient(BaseModel):
    # LiteLLM adds fields from version to version; what the engine does not read is ignored.
    model_config = ConfigDict(extra="ignore")


class RequestData(_Lenient):
    """Who is calling, as LiteLLM's proxy knows it (``GenericGuardrailAPIMetadata``)."""

    user_api_key_hash: str | None = None
    user_api_key_alias: str | None = None
    user_api_key_user_id: str | None = None
    user_api_key_user_email: str | None = None
    user_api_key_team_id: str | None = None
    user_api_key_team_alias: str | None = None
    user_api_key_end_user_id: str | None = None
    """The end user (the OpenAI ``user`` field): the scope's ``user_id``."""
    user_api_key_org_id: str | None = None


class ToolFunction(_Lenient):
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    """A JSON object as text (OpenAI's form), or the object itself."""


class ToolCallIn(_Lenient):
    """A tool call the model made (``ChatCompletionToolCallChunk``)."""

    id: str | None = None
    type: str | None = None
    function: ToolFunction


class GuardrailRequest(_Lenient):
    """What LiteLLM posts (``GenericGuardrailAPIRequest``)."""

    input_type: Literal["request", "response"]
    """``request``: before the LLM call; ``response``: the LLM's answer."""
    litellm_call_id: str | None = None
    """This LLM call: the decisions' ``turn_id``."""
    litellm_trace_id: str | None = None
    """The calls of one conversation: the scope's ``session_id``."""
    structured_messages: list[dict[str, Any]] | None = None
    images: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    texts: list[str] | None = None
    request_data: RequestData = Field(default_factory=RequestData)
    request_headers: dict[str, str] | None = None
    litellm_version: str | None = None
    additional_provider_specific_params: dict[str, Any] | None = None
    """``agent`` (required), and optionally ``user_id`` / ``session_id`` overriding the
    scope LiteLLM's metadata gives."""
    tool_calls: list[ToolCallIn] | None = None
    model: str | None = None


Action = Literal["NONE", "BLOCKED", "GUARDRAIL_INTERVENED"]


class GuardrailResponse(BaseModel):
    """What LiteLLM reads back (``GenericGuardrailAPIResponse``), plus the decisions made."""

    action: Action
    blocked_reason: str | None = None
    texts: list[str] | None = None
    """The request's or the answer's texts, changed, in LiteLLM's order and number."""
    decision_ids: list[str] = Field(default_factory=list)
    """The record id of each point evaluated, in order."""
    unsupported: list[dict[str, Any]] = Field(default_factory=list)
    """Changes hooks made that LiteLLM cannot apply: ``{hook, field, host, message}``."""


@dataclass
class Call:
    """One guardrail call: the agent, the scope, and what its evaluations left behind."""

    agent: Any
    scope: dict[str, str | None]
    origin: dict[str, list[str | int]]
    """Where each scope value came from in the body, for error paths."""
    decision_ids: list[str] = field(default_factory=list)
    unsupported: list[dict[str, Any]] = field(default_factory=list)

    async def evaluate(self, point: str, fields: dict[str, Any], loc: list[str | int]) -> Any:
        """Evaluate ``point`` for LiteLLM; a wrong call is a 422 naming the body's field."""
        try:
            out = await self.agent.aevaluate(point, fields, host=HOST, **self.scope)
        except EventError as exc:
            errors = self._paths(exc, loc)
            raise ApiError(422, "invalid_input", summarize(errors), errors) from exc
        self.decision_ids.append(out.id)
        for item in out.unsupported:
            log.warning("litellm cannot apply %s.%s at %s", item["hook"], item["field"], point)
            self.unsupported.append(dict(item))
        return out

    def _paths(self, exc: EventError, loc: list[str | int]) -> list[dict[str, Any]]:
        """Each error's path in the body: a scope value's source, or the field under ``loc``."""
        errors = []
        for error in exc.errors:
            path = error["loc"]
            key = str(path[-1]) if path[:1] == ["scope"] else str(path[0]) if path else ""
            errors.append({"loc": self.origin.get(key) or [*loc, *path], "msg": error["msg"]})
        return errors

    def answer(
        self, action: Action, *, reason: str | None = None, texts: list[str] | None = None
    ) -> GuardrailResponse:
        return GuardrailResponse(
            action=action,
            blocked_reason=reason,
            texts=texts,
            decision_ids=self.decision_ids,
            unsupported=self.unsupported,
        )

    def blocked(self, reason: str | None) -> GuardrailResponse:
        return self.answer("BLOCKED", reason=reason or "blocked by policy")


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The LiteLLM guardrail route over a loaded Engine.

    Args:
        engine: an ``engine.Engine``; the agent is named by the request.
        authorize: the FastAPI dependency admitting callers (``require("decide")``).
    """
    api = APIRouter(tags=["litellm"])

    @api.post(
        PATH,
        response_model=GuardrailResponse,
        responses=responses(401, 403, 404, 413, 422, 429, 503),
        dependencies=[Depends(authorize)],
    )
    async def guardrail(body: GuardrailRequest) -> GuardrailResponse:
        """LiteLLM's Generic Guardrail API: a request before its LLM call, or the LLM's
        response, answered by the agent named in ``additional_provider_specific_params``."""
        call = open_call(engine, body)
        if body.input_type == "request":
            return await on_request(call, body)
        return await on_response(call, body)

    return api


def open_call(engine: Any, body: GuardrailRequest) -> Call:
    """The agent and scope a request names; 422 or 404 when it names none that is loaded."""
    params = body.additional_provider_specific_params or {}
    name = text_param(params, AGENT_PARAM, required=True)
    try:
        agent = engine.agent(name)
    except EngineError:
        loaded = ", ".join(engine.agents) or "none"
        message = f"no agent {name[:100]!r} (loaded: {loaded})"
        loc = [*PARAMS, AGENT_PARAM]
        raise ApiError(404, "not_found", message, [{"loc": loc, "msg": "no such agent"}]) from None
    meta = body.request_data
    scope: dict[str, str | None] = {"turn_id": body.litellm_call_id}
    origin: dict[str, list[str | int]] = {"turn_id": ["body", "litellm_call_id"]}
    picks = (
        ("user_id", meta.user_api_key_end_user_id, ["request_data", "user_api_key_end_user_id"]),
        ("session_id", body.litellm_trace_id, ["litellm_trace_id"]),
    )
    for key, value, where in picks:
        given = text_param(params, key)
        scope[key] = given if given is not None else value
        origin[key] = [*PARAMS, key] if given is not None else ["body", *where]
    return Call(agent, scope, origin)


def text_param(params: Mapping[str, Any], key: str, *, required: bool = False) -> Any:
    """``params[key]`` when it is text; 422 when it is something else (or missing, if
    ``required``)."""
    value = params.get(key)
    loc = [*PARAMS, key]
    if value is None and required:
        msg = f"required: the agent to ask (additional_provider_specific_params.{key})"
        raise ApiError(422, "invalid_input", f"{'.'.join(loc)}: {msg}", [{"loc": loc, "msg": msg}])
    if value is not None and (not isinstance(value, str) or not value):
        msg = "must be non-empty text"
        raise ApiError(422, "invalid_input", f"{'.'.join(loc)}: {msg}", [{"loc": loc, "msg": msg}])
    return value


# -- request ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """The last user message's text: its message and its slots in ``texts``."""

    message: int | None
    slots: tuple[int, ...]
    text: str


async def on_request(call: Call, body: GuardrailRequest) -> GuardrailResponse:
    """``before_user_message``, ``before_call``, then each tool call; the first block wins."""
    texts = list(body.texts or [])
    messages = [dict(m) for m in body.structured_messages or []]
    question = find_question(messages, texts)
    rewritten = False
    if question is not None:
        where: list[str | int] = ["body", "texts", question.slots[0]]
        out = await call.evaluate("before_user_message", {"question": question.text}, where)
        if out.blocked or out.answer is not None:
            return call.blocked(out.reason if out.blocked else out.answer)
        if out.question is not None and out.question != question.text:
            rewritten = True
            rewrite_question(question, out.question, texts, messages)
    out = await call.evaluate("before_call", call_fields(body, messages), ["body"])
    if out.blocked:
        return call.blocked(out.reason)
    reason = await check_tool_calls(call, body.tool_calls or [])
    if reason is not None:
        return call.blocked(reason)
    if rewritten:
        return call.answer("GUARDRAIL_INTERVENED", texts=texts)
    return call.answer("NONE")


def text_slots(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """Each text of ``messages`` with its message index, in the order LiteLLM lists them in
    ``texts``: a string content, or each part of a list content that has ``text``."""
    slots = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            slots.append((index, content))
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    slots.append((index, part["text"]))
    return slots


def find_question(messages: list[dict[str, Any]], texts: list[str]) -> Question | None:
    """The last user message's text, when the messages line up with ``texts``; without
    messages that do, the last text (a completion's prompt has no roles)."""
    slots = text_slots(messages)
    if messages and [text for _, text in slots] == texts:
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users:
            return None
        mine = tuple(k for k, (i, _) in enumerate(slots) if i == users[-1])
        if not mine:
            return None
        return Question(users[-1], mine, "\n".join(texts[k] for k in mine))
    if not texts:
        return None
    return Question(None, (len(texts) - 1,), texts[-1])


def rewrite_question(
    question: Question, new: str, texts: list[str], messages: list[dict[str, Any]]
) -> None:
    """Put ``new`` in the question's first slot and empty its others, in ``texts`` and in
    the message ``before_call`` sees."""
    for n, k in enumerate(question.slots):
        texts[k] = new if n == 0 else ""
    if question.message is None:
        return
    message = messages[question.message]
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = new
        return
    parts, first = [], True
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            part = {**part, "text": new if first else ""}
            first = False
        parts.append(part)
    message["content"] = parts


def call_fields(body: GuardrailRequest, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``before_call``'s event: the system messages' text as the instruction, the messages,
    the tools offered and the model."""
    system = [
        text
        for i, text in text_slots(messages)
        if messages[i].get("role") in ("system", "developer")
    ]
    return {
        "instruction": "\n\n".join(system),
        "messages": messages,
        "tools": list(body.tools or []),
        "settings": {"model": body.model} if body.model else {},
    }


# -- response and tool calls -----------------------------------------------------------------


async def on_response(call: Call, body: GuardrailRequest) -> GuardrailResponse:
    """``before_assistant_message`` on each text, then each tool call; a block wins, a
    changed answer is written back."""
    texts = list(body.texts or [])
    session = call.scope.get("session_id")
    asked = (call.agent.last_prompt(session) if session else None) or ""
    changed = False
    for index, text in enumerate(texts):
        fields = {"question": asked, "answer": text}
        out = await call.evaluate("before_assistant_message", fields, ["body", "texts", index])
        if out.blocked:
            return call.blocked(out.reason)
        if out.answer is not None and out.answer != text:
            texts[index], changed = out.answer, True
    reason = await check_tool_calls(call, body.tool_calls or [])
    if reason is not None:
        return call.blocked(reason)
    return call.answer("GUARDRAIL_INTERVENED", texts=texts) if changed else call.answer("NONE")


async def check_tool_calls(call: Call, calls: Sequence[ToolCallIn]) -> str | None:
    """``tool_call`` for each call in order: the first block's reason, naming the tool.

    A call the engine cannot read (no name, arguments that are not a JSON object) blocks
    too: a guard that cannot see the call must not let it through.
    """
    for index, tool in enumerate(calls):
        name = tool.function.name
        if not name:
            return f"tool call {tool.id or index} has no name"
        try:
            arguments = read_arguments(tool.function.arguments)
        except ValueError as exc:
            return f"tool call {tool.id or index} has arguments that are not a JSON object ({exc})"
        fields = {"name": name, "input": arguments, "call_id": tool.id}
        out = await call.evaluate("tool_call", fields, ["body", "tool_calls", index])
        if out.blocked:
            return f"tool {name!r} blocked: {out.reason}"
    return None


def read_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    """A tool call's arguments as a mapping, read strictly (engine/jsontext.py): the tool
    would run with one of a repeated key's values, so a policy must not guess which.

    Raises:
        ValueError: not JSON, JSON a policy must not take, or not an object; says which.
    """
    if isinstance(arguments, dict):
        return arguments
    if arguments is None or not arguments.strip():
        return {}
    value = parse_strict(arguments)
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}")
    return value
