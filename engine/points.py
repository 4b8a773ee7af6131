"""Lifecycle points: the Point enum, the event each point carries, the change fields it takes."""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.boundary import normalize_event
from engine.errors import InputError, PluginError


class Point(StrEnum):
    """A fixed point of a conversation turn at which the host calls the engine."""

    BEFORE_USER_MESSAGE = "before_user_message"
    """A user message arrived; hooks may inject context, answer, rewrite or refuse it."""
    BEFORE_CALL = "before_call"
    """Before each LLM request; hooks may add sections, narrow tools, change settings."""
    TOOL_CALL = "tool_call"
    """Before a tool runs; hooks may block it or rewrite its input. A failure blocks."""
    TOOL_RESULT = "tool_result"
    """After a tool ran; hooks may replace (e.g. redact) its result."""
    BEFORE_ASSISTANT_MESSAGE = "before_assistant_message"
    """The answer is about to reach the user; hooks may replace it or append to it."""
    AFTER_TURN = "after_turn"
    """The turn ended; hooks only hear of it."""
    AFTER_LOOP = "after_loop"
    """The agent loop ended; hooks only hear of it."""
    FEEDBACK = "feedback"
    """The user rated a turn; hooks only hear of it."""

    @property
    def hears_only(self) -> bool:
        """True for points whose hooks cannot change anything (failures are only reported)."""
        return not ACCEPTED[self]


def parse_point(name: str, *, hook: str | None = None) -> Point:
    """Return the Point called ``name``; PluginError with a suggestion if there is none."""
    try:
        return Point(name)
    except ValueError:
        hint = suggest(name, [p.value for p in Point])
        raise PluginError(
            f"unknown point {name!r}" + (f" (did you mean {hint!r}?)" if hint else ""),
            hook=hook,
            point=name,
        ) from None


def suggest(word: str, choices: list[str]) -> str | None:
    """The closest of ``choices`` to a misspelt ``word``, if one is close enough."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


class Scope(BaseModel):
    """Who an event is about. Memory and state fall back user → session → template → process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: str | None = None
    session_id: str | None = None
    template: str | None = None
    process: str | None = None

    def key(self) -> str:
        """The scope key state and memory are kept under, e.g. ``user:u1``."""
        for kind in ("user_id", "session_id", "template", "process"):
            value = getattr(self, kind)
            if value:
                return f"{kind.removesuffix('_id')}:{value}"
        return "process:default"


class Message(BaseModel):
    """A chat message injected or passed to the LLM."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    point: Point
    scope: Scope = Field(default_factory=Scope)
    time: str
    """ISO-8601 time of the evaluation; scripts see it as ``host.now()``."""
    turn_id: str | None = None


class BeforeUserMessage(_Event):
    question: str


class BeforeCall(_Event):
    instruction: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)


class ToolCall(_Event):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None


class ToolResult(_Event):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    call_id: str | None = None


class BeforeAssistantMessage(_Event):
    question: str = ""
    answer: str


class AfterTurn(_Event):
    question: str = ""
    answer: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class AfterLoop(_Event):
    status: str


class Feedback(_Event):
    rating: Literal["like", "dislike"]


EVENTS: dict[Point, type[_Event]] = {
    Point.BEFORE_USER_MESSAGE: BeforeUserMessage,
    Point.BEFORE_CALL: BeforeCall,
    Point.TOOL_CALL: ToolCall,
    Point.TOOL_RESULT: ToolResult,
    Point.BEFORE_ASSISTANT_MESSAGE: BeforeAssistantMessage,
    Point.AFTER_TURN: AfterTurn,
    Point.AFTER_LOOP: AfterLoop,
    Point.FEEDBACK: Feedback,
}
"""The event model of each point: what hooks see, as JSON data."""

ACCEPTED: dict[Point, frozenset[str]] = {
    Point.BEFORE_USER_MESSAGE: frozenset({"messages", "notice", "answer", "question", "block"}),
    Point.BEFORE_CALL: frozenset(
        {"sections", "instruction", "messages", "tools", "settings", "block", "notice"}
    ),
    Point.TOOL_CALL: frozenset({"block", "input", "notice"}),
    Point.TOOL_RESULT: frozenset({"result", "notice"}),
    Point.BEFORE_ASSISTANT_MESSAGE: frozenset({"answer", "append", "notice"}),
    Point.AFTER_TURN: frozenset(),
    Point.AFTER_LOOP: frozenset(),
    Point.FEEDBACK: frozenset(),
}
"""The change fields each point takes; any other field is a PluginError."""


def make_event(point: Point, **fields: Any) -> dict[str, Any]:
    """Normalise the host's fields for ``point`` (engine/boundary.py), validate them, and
    return the event as JSON data.

    Raises:
        InputError: a value is not JSON data, or a field does not fit the point's event;
            each problem names its path (``event.input.data: bytes is not JSON``).
    """
    scope = fields.get("scope")
    if isinstance(scope, Scope):
        fields["scope"] = dict(scope.__dict__)
    raw = normalize_event({"point": point.value, **fields})
    try:
        model = EVENTS[point].model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"event.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        ]
        raise InputError(problems, event=raw) from None
    # a shallow dump: the fields are JSON values already (normalised), only the two models
    # inside need turning into data; this is on every evaluation's path
    event = dict(model.__dict__)
    event["point"] = point.value
    event["scope"] = dict(model.scope.__dict__)
    return event
