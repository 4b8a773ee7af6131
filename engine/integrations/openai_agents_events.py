"""How the OpenAI Agents SDK adapter asks the engine: one ``Policy`` (an engine agent, where
each call's scope comes from, the turn it is in) and the SDK's values as event data and back.

Used by engine/integrations/openai_agents.py and openai_agents_tools.py; it imports the
``agents`` package.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from agents import RunResult
from agents.items import ToolCallItem
from agents.run_config import ModelInputData
from pydantic import BaseModel

from engine.errors import EventError
from engine.jsontext import parse_strict
from engine.outcome import Outcome
from engine.runtime import Agent as EngineAgent

log = logging.getLogger("engine.integrations.openai_agents")

HOST = "openai-agents"
"""The engine's host profile (engine/hosts.py) for every evaluation made here."""

PREFIX = "hookengine: "
"""Starts every text the adapter writes itself, so the model and the user see its source."""

SCOPE_KEYS = ("user_id", "session_id", "template", "process")

ScopeSource = Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] | None
"""Where each evaluation's scope comes from: a fixed mapping of ``SCOPE_KEYS``, a callable
taking the run's context object (``Runner.run(context=...)``) and returning one, or None: the
context's own ``user_id`` and ``session_id`` (keys of a mapping, or attributes), if it has
them."""

TURN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hookengine_turn_id", default=None
)
"""The turn ``run`` is in: every point evaluated inside it carries the turn's id."""


class Policy:
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
        out = await self.agent.aevaluate(point, fields, host=HOST, turn_id=TURN.get(), **scope)
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


# -- the SDK's values as event data and back ---------------------------------------------------


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
    return json.dumps(json_data(output), ensure_ascii=False)


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
    return json_data(output)


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


def json_data(value: Any) -> Any:
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


def arguments(text: Any) -> dict[str, Any]:
    """A tool call's JSON arguments as an object; ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"arguments must be JSON text, not {type(text).__name__}")
    if not text.strip():
        return {}
    data = parse_strict(text)  # a repeated key, deep nesting ...: a ValueError saying which
    if not isinstance(data, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(data).__name__}")
    return data


def input_with(input: str | list[Any], out: Outcome) -> str | list[Any]:
    """The run's input with before_user_message's rewritten question and injected messages
    (before the user's message)."""
    question = question_of(input)
    new = out.question if rewritten(out, "question", question) else None
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


def model_input(model: ModelInputData, out: Outcome) -> ModelInputData:
    """The model input before_call's hooks left: instruction, sections, messages."""
    instructions = out.instruction if out.hook_changed("instruction") else model.instructions
    if out.sections:
        instructions = "\n\n".join(part for part in [instructions, *out.sections] if part)
    if not out.hook_changed("messages"):
        return ModelInputData(input=model.input, instructions=instructions)
    # a hook's messages are the input items it wants sent, as JSON data: the SDK takes dicts
    return ModelInputData(input=list(out.messages), instructions=instructions)  # type: ignore[arg-type]


def tool_calls(result: RunResult) -> list[dict[str, Any]]:
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
            data: Any = arguments(_get(raw, "arguments") or "")
        except ValueError:
            data = {"arguments": str(_get(raw, "arguments"))}
        calls.append({"name": name, "input": data, "call_id": _get(raw, "call_id")})
    return calls


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


def rewritten(out: Outcome, name: str, before: Any) -> bool:
    """Whether a hook changed ``name`` to something other than ``before``."""
    return out.hook_changed(name) and getattr(out, name) != before


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def failed(exc: BaseException, then: str = "") -> str:
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
