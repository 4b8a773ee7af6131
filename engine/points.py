"""Lifecycle points: the Point enum, the event each point carries, the change fields it takes."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from copy import copy
from enum import StrEnum
from functools import partial
from typing import Any, Literal, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.boundary import normalize_host_value, plain_copy
from engine.errors import EventError, InputError, PluginError, phrase, unknown_field


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


_SCOPES: dict[tuple[str | None, ...], Scope] = {}
"""The scopes ``scope_of`` made, by their values (a few thousand at most: cleared when full)."""
_SCOPES_KEPT = 4096


def scope_of(data: Any) -> Scope:
    """``Scope.model_validate(data or {})``, made once per distinct scope: an event's scope is
    a dict of all four keys (``make_event``), and a Scope is a frozen value.

    Raises:
        ValidationError: ``data`` is not a scope.
    """
    if type(data) is not dict or data.keys() != _SCOPE_SET:
        return Scope.model_validate(data or {})
    key = (data["user_id"], data["session_id"], data["template"], data["process"])
    scope = _SCOPES.get(key)
    if scope is None:
        scope = Scope.model_validate(data)
        if len(_SCOPES) >= _SCOPES_KEPT:
            _SCOPES.clear()
        _SCOPES[key] = scope
    return scope


_SCOPE_KEYS = ("user_id", "session_id", "template", "process")
_SCOPE_SET = frozenset(_SCOPE_KEYS)


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
    data: Any = None
    """The tool's structured data beside ``result`` (JSON; None: none). Hooks see it and cannot
    change it: a host hands it on only from a result no hook changed."""
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
field is cut with a marker by the whole-event cap (``engine.boundary.MAX_EVENT_BYTES``), and
a cut event is refused too, except at the points that only hear (``_cut_problem``)."""

ID_CAP = 256
"""Characters of an identifier the host passes: turn_id, call_id, time, each scope value."""
_IDS = ("turn_id", "call_id", "time")
_JSON_TYPES = (str, int, float, bool, type(None), dict, list, tuple)
_EXACT_TYPES = frozenset(_JSON_TYPES)


def make_event(point: Point, **fields: Any) -> dict[str, Any]:
    """Check the host's fields for ``point``, normalise them (engine/boundary.py), validate
    them, and return the event as JSON data.

    Raises:
        EventError: the call is wrong: a field missing, unknown or of the wrong type, an
            identifier over ``ID_CAP``, a value anywhere in the event that is not JSON data
            (bytes, a set, an object, NaN or an infinity, a key that is not text);
            ``errors`` names each by its ``loc`` (``["input", "items", 3]``).
        InputError: the event is JSON data but a text is over its cap (``TEXT_CAPS``), or, at
            a point whose hooks can change anything, the size or depth cap cut a value; the
            problem names its path (``event.question: ... over the cap ...``).
    """
    scope = fields.get("scope")
    if isinstance(scope, Scope):
        fields["scope"] = dict(scope.__dict__)
    event = _plain_event(point, fields)
    if event is not None:
        return event
    _check_fields(fields)
    over = _over_caps(point, fields)
    raw, refused, cuts = normalize_host_value({"point": _NAMES[point], **fields})
    if cuts and not refused and not point.hears_only:  # before the model: a marker may misfit
        raise InputError([_cut_problem(cuts)], event=raw, brief=[_cut_problem(cuts, brief=True)])
    try:
        model = EVENTS[point].model_validate(raw)
    except ValidationError as exc:
        wrong = [_event_error(err, EVENTS[point]) for err in exc.errors()]
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


_NAMES: dict[Point, str] = {p: p._value_ for p in Point}
"""Each point's name as plain text (a member's ``.value`` is a descriptor call)."""
_Check = Callable[[Any], bool]
_FIELDS: dict[Point, tuple[_Field, ...]] = {}


def _plain_event(point: Point, fields: dict[str, Any]) -> dict[str, Any] | None:
    """The event, when the host's fields are the common case: each of exactly the type its
    field takes, every value plain JSON data the boundary keeps as it is, no text over its
    cap. Then nothing below can fail or change anything, and this is the event they make
    (a copy). None otherwise: the checks below then run in full and name each problem."""
    typed = _typed(point, fields)
    return None if typed is None else plain_copy(typed)


def _typed(point: Point, given: dict[str, Any]) -> dict[str, Any] | None:
    """The event ``EVENTS[point]`` makes of the host's fields when each has exactly the
    type it takes (text as ``str``, a mapping as ``dict``, ...), by direct type tests: the
    fields in the model's order, with its defaults. None when a field is missing, unknown or
    of any other type, or a text over its cap: the model and the caps then decide (and name
    the mistake). The values are the host's own: ``plain_copy`` checks and copies them."""
    fields = _FIELDS.get(point) or _FIELDS.setdefault(point, _field_checks(point))
    event: dict[str, Any] = {}
    found = 0
    for name, types, test, default, cap in fields:
        if name in given:
            value = given[name]
            if types is not None and type(value) not in types:
                return None
            if test is not None and not test(value):
                return None
            if cap and value is not None and len(value) > cap:
                return None
            event[name] = value
            found += 1
        elif default is None:
            return None
        else:
            event[name] = default()
    if found != len(given):  # a field the model does not have
        return None
    scope = _scope(event["scope"])
    if scope is None:
        return None
    event["point"], event["scope"] = _NAMES[point], scope
    return event


def _scope(value: Any) -> dict[str, str | None] | None:
    """``Scope``'s dump of ``value``; None if the model must decide. The host's own dict
    when it is that dump already (``plain_copy`` copies it)."""
    if type(value) is not dict or not value.keys() <= _SCOPE_SET:
        return None
    for item in value.values():
        if item is not None and (type(item) is not str or len(item) > ID_CAP):
            return None
    if len(value) == len(_SCOPE_KEYS) and tuple(value) == _SCOPE_KEYS:
        return value
    return {key: value.get(key) for key in _SCOPE_KEYS}


_Field = tuple[str, frozenset[type] | None, _Check | None, Callable[[], Any] | None, int]


def _field_checks(point: Point) -> tuple[_Field, ...]:
    """Per field of ``point``'s event model: its name; the types a value may have where the
    model takes it as it is, and a further test (None: any); its default's factory (None:
    required); the cap of its text (``TEXT_CAPS``, ``ID_CAP``; 0: none)."""
    caps = {**dict.fromkeys(_IDS, ID_CAP), **TEXT_CAPS.get(point, {})}
    out: list[_Field] = []
    for name, info in EVENTS[point].model_fields.items():
        if name == "point":  # make_event's own argument
            out.append((name, None, None, _none, 0))
            continue
        default: Callable[[], Any] | None
        if info.is_required():
            default = None
        elif name == "scope":  # the empty scope (its dump is made by ``_scope``)
            default = dict
        elif info.default_factory is not None:  # list, dict: they take no argument
            default = cast(Callable[[], Any], info.default_factory)
        else:
            default = partial(copy, info.default)
        out.append((name, *_check_of(info.annotation), default, caps.get(name, 0)))
    return tuple(out)


def _none() -> None:
    return None


def _check_of(annotation: Any) -> tuple[frozenset[type] | None, _Check | None]:
    if annotation is Any:
        return None, None
    if get_origin(annotation) is Literal:
        allowed = frozenset(get_args(annotation))
        return frozenset({str}), allowed.__contains__
    types: dict[Any, tuple[frozenset[type] | None, _Check | None]] = {
        str: (frozenset({str}), None),
        str | None: (frozenset({str, type(None)}), None),
        dict[str, Any]: (frozenset({dict}), None),
        list[Any]: (frozenset({list}), None),
        list[dict[str, Any]]: (frozenset({list}), _all_dicts),
        Scope: (frozenset({dict}), None),
    }
    return types[annotation]


def _all_dicts(value: list[Any]) -> bool:
    return all(type(item) is dict for item in value)


def _event_error(err: Any, model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic error as the host's mistake, in Python terms (a dict, a str)."""
    loc = list(err["loc"])
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        names = [n for n in model.model_fields if n not in ("agent", "point")]
        message, hint = unknown_field(str(loc[0]), names)
        return {"loc": loc, "msg": f"{message} ({hint})"}
    return {"loc": loc, "msg": phrase(err, "python")}


def _check_fields(fields: dict[str, Any]) -> None:
    """EventError for what is wrong with the call itself: a field whose own value is not JSON
    data (bytes as the question), an identifier that is not short text."""
    errors: list[dict[str, Any]] = []
    for name, value in fields.items():
        if type(value) not in _EXACT_TYPES and not isinstance(value, _JSON_TYPES):
            errors.append({"loc": [name], "msg": f"{type(value).__name__} is not JSON data"})
    ids = [([name], fields.get(name)) for name in _IDS]
    scope = fields.get("scope")
    if isinstance(scope, dict):
        ids += [(["scope", str(k)], v) for k, v in scope.items()]
    for loc, value in ids:
        if value is not None and isinstance(value, str) and len(value) > ID_CAP:
            errors.append({"loc": loc, "msg": f"longer than {ID_CAP} characters"})
    if errors:
        raise EventError(errors)


def _cut_problem(cuts: list[str], *, brief: bool = False) -> str:
    """The refusal of an event a cap cut: hooks would decide on part of what the host acts
    on (it runs the tool with its own input, shows its own result or answer), so the point
    fails closed instead (docs/points.md, "Cut events are refused"). ``brief``: naming the
    event's field only, not the path within it (``InputError.brief``)."""
    more = len(cuts) - 1
    also = f" (and {more} more cut{'s' if more > 1 else ''})" if more else ""
    field = ".".join(cuts[0].split(":", 1)[0].split("[", 1)[0].split(".")[:2])
    if brief:
        cap = "depth" if "the depth cap" in cuts[0] else "size"
        return f"{field}: cut at the event's {cap} cap{also}: no hook could see all of it"
    return f"{cuts[0]}{also}: no hook could see all of {field}"


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
