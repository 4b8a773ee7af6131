"""Lifecycle points: the Point enum, the event each point carries, the change fields it takes."""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.boundary import normalize_host_value
from engine.errors import EventError, InputError, PluginError


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


TEXT_CAPS: dict[Point, dict[str, int]] = {
    Point.BEFORE_USER_MESSAGE: {"question": 100_000},
    Point.TOOL_CALL: {"name": 200},
    Point.TOOL_RESULT: {"name": 200},
    Point.BEFORE_ASSISTANT_MESSAGE: {"question": 100_000, "answer": 200_000},
    Point.AFTER_TURN: {"question": 100_000, "answer": 200_000},
    Point.AFTER_LOOP: {"status": 200},
}
"""Characters a text field may hold. Past its cap the point is refused (its failure policy,
as for any event the boundary refuses), naming the field and the cap: these are texts a person
typed or a model wrote, and a cut question would be answered as if it were whole. Every other
field is cut with a marker by the whole-event cap (``engine.boundary.MAX_EVENT_BYTES``)."""

ID_CAP = 256
"""Characters of an identifier the host passes: turn_id, call_id, time, each scope value."""
_IDS = ("turn_id", "call_id", "time")
_JSON_TYPES = (str, int, float, bool, type(None), dict, list, tuple)


def make_event(point: Point, **fields: Any) -> dict[str, Any]:
    """Check the host's fields for ``point``, normalise them (engine/boundary.py), validate
    them, and return the event as JSON data.

    Raises:
        EventError: the call is wrong: a field missing, unknown or of the wrong type, an
            identifier over ``ID_CAP``, a value anywhere in the event that is not JSON data
            (bytes, a set, an object, NaN or an infinity, a key that is not text);
            ``errors`` names each by its ``loc`` (``["input", "items", 3]``).
        InputError: the event is JSON data but a text is over its cap (``TEXT_CAPS``); the
            problem names its path (``event.question: ... over the cap ...``).
    """
    scope = fields.get("scope")
    if isinstance(scope, Scope):
        fields["scope"] = dict(scope.__dict__)
    _check_fields(fields)
    over = _over_caps(point, fields)
    raw, refused = normalize_host_value({"point": point.value, **fields})
    try:
        model = EVENTS[point].model_validate(raw)
    except ValidationError as exc:
        wrong = [{"loc": list(err["loc"]), "msg": err["msg"]} for err in exc.errors()]
        raise EventError(wrong + refused) from None
    if refused:
        raise EventError(refused)
    if over:
        raise InputError(over, event=raw)
    # a shallow dump: the fields are JSON values already (normalised), only the two models
    # inside need turning into data; this is on every evaluation's path
    event = dict(model.__dict__)
    event["point"] = point.value
    event["scope"] = dict(model.scope.__dict__)
    return event


def _check_fields(fields: dict[str, Any]) -> None:
    """EventError for what is wrong with the call itself: a field whose own value is not JSON
    data (bytes as the question), an identifier that is not short text."""
    errors: list[dict[str, Any]] = []
    for name, value in fields.items():
        if not isinstance(value, _JSON_TYPES):
            errors.append({"loc": [name], "msg": f"{type(value).__name__} is not JSON data"})
    scope = fields.get("scope")
    ids = [([name], fields.get(name)) for name in _IDS]
    if isinstance(scope, dict):
        ids += [(["scope", str(k)], v) for k, v in scope.items()]
    for loc, value in ids:
        if isinstance(value, str) and len(value) > ID_CAP:
            errors.append({"loc": loc, "msg": f"longer than {ID_CAP} characters"})
    if errors:
        raise EventError(errors)


def _over_caps(point: Point, fields: dict[str, Any]) -> list[str]:
    """The text fields over their cap (``TEXT_CAPS``), each replaced in ``fields`` by its head
    and a marker, so the refused event is still small enough to record."""
    problems = []
    for name, cap in TEXT_CAPS.get(point, {}).items():
        text = fields.get(name)
        if isinstance(text, str) and len(text) > cap:
            problems.append(
                f"event.{name}: {len(text)} characters, over the cap of {cap} for {name} "
                f"at {point.value}"
            )
            fields[name] = f"{text[:1000]}…[cut: {len(text) - 1000} more characters]"
    return problems
