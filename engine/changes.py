"""Changes: what a hook answers with, checked per point, and the pure rules that merge them.

Merge rules (one place, stated once, beside the code that follows them):

- add up: ``notice``, ``sections``, ``append``, and ``messages`` at before_user_message;
- replace (a later change wins): ``question``, ``instruction``, ``tools``, ``input``,
  ``answer``, ``result``, and ``messages`` at before_call; a replaced ``answer`` already
  contains the appends before it (the hook saw them), so it restarts ``append``;
- merge: ``settings`` (a later key wins);
- block: the first ``block`` ends the chain; nothing after it is applied.

``merge`` is associative and the empty change is its identity (tests check both with
Hypothesis), so a pipeline is a fold of its hooks' changes over the empty change.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from engine.boundary import no_lone_surrogates, normalize_value
from engine.errors import PluginError, phrase
from engine.points import ACCEPTED, Message, Point

ADD_UP = ("notice", "sections", "append")
REPLACE = ("question", "instruction", "tools", "input", "answer", "result")
_REPLACED = frozenset(REPLACE) | {"block"}


@dataclass(slots=True)
class Change:
    """A hook's answer at one point; every field optional, ``None`` meaning "no change".

    A value: never changed once made (records, shadow lists and the merge share its parts).
    Not ``frozen=True`` only because a frozen dataclass sets each field through
    ``object.__setattr__``, which made a Change cost five times as much to build; one is
    built per hook per evaluation."""

    block: str | None = None
    """Refuse: the reason shown to the user or the model. The first block ends the chain."""
    messages: list[dict[str, Any]] | None = None
    """before_user_message: messages to inject (add up). before_call: the whole list (replace)."""
    notice: list[str] = field(default_factory=list)
    """Short notes for the UI (add up). A single string is taken as a list of one."""
    answer: str | None = None
    """before_user_message: the turn's answer (LLM skipped).
    before_assistant_message: the new answer."""
    question: str | None = None
    """Rewrite the user's message."""
    sections: list[str] = field(default_factory=list)
    """Sections added to the instruction (add up)."""
    instruction: str | None = None
    """Replace the instruction."""
    tools: list[Any] | None = None
    """The tools the LLM may use: a subset of the event's tools."""
    settings: dict[str, Any] | None = None
    """LLM settings to merge (a later key wins)."""
    input: dict[str, Any] | None = None
    """Replace the tool's input."""
    result: Any = None
    """Replace the tool's result (e.g. redaction)."""
    append: list[str] = field(default_factory=list)
    """Text appended to the answer (add up)."""

    def is_empty(self) -> bool:
        return self is EMPTY or self == EMPTY

    def as_data(self) -> dict[str, Any]:
        """The change as JSON data with only the fields it sets."""
        return {name: value for name, value in self.given().items() if value != []}

    def given(self) -> dict[str, Any]:
        """The fields that change something: not None, and for those that add up, not
        empty (an empty ``tools`` or ``result`` still replaces). ``merge`` and ``apply``
        read only these."""
        values = _values(self)
        truthy = dict(filter(_second, zip(FIELDS, values, strict=True)))
        empty = (self.notice == []) + (self.sections == []) + (self.append == [])
        unset = values.count(None) + empty
        if len(truthy) + unset == len(FIELDS):  # no falsy value that changes something
            return truthy
        return {
            name: value
            for name, value in zip(FIELDS, values, strict=True)
            if value is not None and (value or name not in ADD_UP)
        }


EMPTY = Change()
FIELDS = tuple(f.name for f in fields(Change))
_values = operator.attrgetter(*FIELDS)
"""All of a change's fields as a tuple, in FIELDS order (one C call)."""
_second = operator.itemgetter(1)


_FIELD_TYPES: dict[str, Any] = {
    "block": str,
    "messages": list[dict[str, Any]],
    "notice": list[str],
    "answer": str,
    "question": str,
    "sections": list[str],
    "instruction": str,
    "tools": list[Any],
    "settings": dict[str, Any],
    "input": dict[str, Any],
    "result": Any,
    "append": list[str],
}
# one strict validator per field: a change is checked field by field, only the fields it sets
_CHECKS = {
    name: TypeAdapter(tp, config=ConfigDict(strict=True)).validate_python
    for name, tp in _FIELD_TYPES.items()
}


def _validate(data: dict[str, Any], hook: str, point: Point, terms: str) -> Change:
    checked = {}
    for name, value in data.items():
        try:
            checked[name] = _CHECKS[name](value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in (name, *err["loc"]))
            raise PluginError(
                f"hook {hook!r} at {point}: {where}: {phrase(err, terms)}",
                hook=hook,
                point=point,
                field=name,
            ) from exc
    return Change(**checked)


def parse_change(
    point: Point,
    data: Any,
    *,
    hook: str,
    event: dict[str, Any] | None = None,
    terms: str = "yaml",
) -> Change:
    """Check a hook's answer for ``point`` and return it as a Change.

    Raises:
        PluginError: the answer is not a mapping, names a field the point does not take,
            or has a value of the wrong type (e.g. a tool the event does not offer); values
            are named in ``terms`` (``python``, ``javascript``: a script's language).
    """
    if data is None:
        return EMPTY
    if type(data) is dict:
        fast = _plain_change(point, data)
        if fast is not None:
            return fast
    if isinstance(data, Change):
        return data
    if not isinstance(data, dict):
        raise PluginError(
            f"hook {hook!r} at {point}: a change must be a mapping or null, "
            f"got {type(data).__name__}",
            hook=hook,
            point=point,
        )
    accepted = ACCEPTED[point]
    for name in data:
        if name not in accepted:
            takes = ", ".join(sorted(accepted)) or "nothing (it only hears)"
            raise PluginError(
                f"hook {hook!r} at {point}: field {name!r} is not accepted here; "
                f"{point} takes {takes}",
                hook=hook,
                point=point,
                field=str(name),
            )
    data = {k: [v] if k in ADD_UP and isinstance(v, str) else v for k, v in data.items()}
    for name, value in data.items():
        data[name] = _checked_value(name, value, hook, point)
    if point is Point.BEFORE_USER_MESSAGE and "messages" in data:
        data["messages"] = (
            [_message(m, hook, point) for m in data["messages"]]
            if isinstance(data["messages"], list)
            else data["messages"]
        )
    change = _validate(data, hook, point, terms)
    if change.tools is not None and event is not None:
        _check_subset(change.tools, event.get("tools", []), hook, point)
    return change


_TEXT = frozenset({"block", "answer", "question", "instruction"})
_TEXTS = frozenset(ADD_UP)
_ROLES = frozenset({"system", "user", "assistant"})
_PLAIN_CHARS = 300_000
"""Up to this many characters of text in one change, no text can meet the size cap of
``normalize_value`` (6 bytes per escaped character at most, 2 MB): the walk would change
nothing but lone surrogates, so the common answer is checked without it."""


def _plain_change(point: Point, data: dict[str, Any]) -> Change | None:
    """The Change of a plain answer (texts, lists of texts, injected messages), checked by
    direct type tests: the result ``parse_change``'s full walk would give. None for anything
    else (other fields or types, a blank text, a big answer): the full check then decides and
    names the problem."""
    if not data:
        return EMPTY
    accepted, size = ACCEPTED[point], 0
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name not in accepted:
            return None
        if name in _TEXT:
            if type(value) is not str or (name in NON_BLANK and not value.strip()):
                return None
            size += len(value)
            out[name] = _plain_text(value)
        elif name in _TEXTS:
            texts = [value] if type(value) is str else value
            if type(texts) is not list or any(type(t) is not str for t in texts):
                return None
            size += sum(map(len, texts))
            out[name] = [_plain_text(t) for t in texts]
        elif name == "messages" and point is Point.BEFORE_USER_MESSAGE:
            messages = _plain_messages(value)
            if messages is None:
                return None
            size += sum(len(m["content"]) for m in messages)
            out[name] = messages
        else:
            return None
    return Change(**out) if size <= _PLAIN_CHARS else None


def _plain_text(text: str) -> str:
    return text if text.isascii() else no_lone_surrogates(text)


def _plain_messages(value: Any) -> list[dict[str, Any]] | None:
    """Injected messages as ``Message`` dumps them, or None when one needs the full check."""
    if type(value) is not list:
        return None
    out = []
    for m in value:
        if type(m) is not dict or len(m) != 2:
            return None
        role, content = m.get("role"), m.get("content")
        if type(role) is not str or role not in _ROLES or type(content) is not str:
            return None
        out.append({"role": role, "content": _plain_text(content)})
    return out


NON_BLANK = ("block", "answer", "question")
"""Fields whose text must say something: an empty reason or answer tells nobody anything."""


def _checked_value(name: str, value: Any, hook: str, point: Point) -> Any:
    """A field's value under the rules every change follows, whoever made it.

    ``null`` is refused (leave a field out to change nothing: a guard answering
    ``{block: null}`` must not let the tool run by accident); ``block``, ``answer`` and
    ``question`` must be non-blank text; every value is normalised like the event
    (engine/boundary.py), so no later hook, record or printer meets NaN or a lone surrogate.
    """
    problem = None
    if value is None:
        problem = "null is not a change (leave the field out to change nothing)"
    elif name in NON_BLANK and isinstance(value, str) and not value.strip():
        problem = "must be a non-empty text"
    else:
        value, problems = normalize_value(value, name)
        problem = problems[0].removeprefix(f"{name}: ") if problems else None
    if problem is not None:
        raise PluginError(
            f"hook {hook!r} at {point}: invalid result: {name}: {problem}",
            hook=hook,
            point=point,
            field=name,
        )
    return value


def _message(value: Any, hook: str, point: Point) -> Any:
    if isinstance(value, dict):
        try:
            return Message.model_validate(value).model_dump()
        except ValidationError as exc:
            raise PluginError(
                f"hook {hook!r} at {point}: messages: {exc.errors()[0]['msg']} "
                "(a message is {role: system|user|assistant, content: text})",
                hook=hook,
                point=point,
                field="messages",
            ) from exc
    return value


def _tool_name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, dict) else tool


def _check_subset(tools: list[Any], offered: list[Any], hook: str, point: Point) -> None:
    """Each tool must be one the event offers, whole: same name, description and schema."""
    whole = {_canonical(t) for t in offered}
    names = {_tool_name(t) for t in offered}
    for tool in tools:
        if _canonical(tool) in whole:
            continue
        what = (
            "changes the definition of the event's tool of that name (name, description and "
            "schema must stay as offered)"
            if _tool_name(tool) in names
            else "is not one of the event's tools"
        )
        raise PluginError(
            f"hook {hook!r} at {point}: tools: {_tool_name(tool)!r} {what} "
            "(a change may only narrow the tools)",
            hook=hook,
            point=point,
            field="tools",
        )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def merge(point: Point, first: Change, second: Change) -> Change:
    """Combine two changes at ``point`` as if ``second`` came after ``first``."""
    if first.block is not None or second is EMPTY:
        return first
    if first is EMPTY:
        return second
    out: dict[str, Any] = {}
    for name in FIELDS:  # only the fields either change sets: most set one or two
        earlier, later = getattr(first, name), getattr(second, name)
        if later is None or (not later and name in ADD_UP):  # unset: None, or no texts
            if earlier is not None and (earlier or name not in ADD_UP):
                out[name] = earlier
        elif earlier is None or name in _REPLACED:
            out[name] = later
        elif name in ADD_UP:
            out[name] = [*earlier, *later]
        elif name == "settings":
            out[name] = {**earlier, **later}
        else:  # messages: add up at before_user_message, replaced at before_call
            out[name] = _merge_messages(point, earlier, later)
    if second.answer is not None:
        out.pop("append", None)
        if second.append:
            out["append"] = list(second.append)
    return Change(**out) if out else EMPTY


class Merger:
    """The fold of a point's changes by ``merge``, kept in one place: each change adds its
    set fields, and lists that add up grow in place instead of being rebuilt per hook.
    ``result()`` is ``merge(...merge(merge(EMPTY, c1), c2)..., cn)``."""

    __slots__ = ("adds_messages", "owned", "point", "values")

    def __init__(self, point: Point) -> None:
        self.point = point
        self.adds_messages = point is Point.BEFORE_USER_MESSAGE
        """``messages`` add up (at before_user_message) rather than replace."""
        self.values: dict[str, Any] = {}
        self.owned: set[str] = set()
        """Fields whose list or dict is the merger's own (safe to grow in place)."""

    @property
    def block(self) -> str | None:
        return self.values.get("block")

    def add(self, change: Change, given: dict[str, Any] | None = None) -> None:
        """Merge ``change`` after the ones before it (nothing after a block). ``given``:
        ``change.given()``, when the caller has it already."""
        values = self.values
        if "block" in values or change is EMPTY:
            return
        for name, value in (change.given() if given is None else given).items():
            earlier = values.get(name)
            if earlier is None or name in _REPLACED:
                values[name] = value
                self.owned.discard(name)
            elif name in ADD_UP or (name == "messages" and self.adds_messages):
                self._own(name, earlier).extend(value)
            elif name == "settings":
                self._own(name, earlier).update(value)
            else:  # messages at before_call: replaced
                values[name] = value
                self.owned.discard(name)
        if change.answer is not None:  # a replaced answer restarts the appends
            values.pop("append", None)
            self.owned.discard("append")
            if change.append:
                values["append"] = change.append

    def _own(self, name: str, value: Any) -> Any:
        if name not in self.owned:
            value = self.values[name] = value.copy()
            self.owned.add(name)
        return value

    def result(self) -> Change:
        """The merged change (its lists are not grown by later ``add`` calls)."""
        self.owned.clear()
        return Change(**self.values) if self.values else EMPTY


def _merge_messages(point: Point, first: Any, second: Any) -> Any:
    if point is Point.BEFORE_USER_MESSAGE and first is not None and second is not None:
        return [*first, *second]
    return second if second is not None else first


def apply(
    point: Point, event: dict[str, Any], change: Change, given: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The event as a later hook sees it once ``change`` is applied (a new dict).

    The copy is shallow: hooks get the event read-only (scripts get a JSON copy in their
    worker), and replaced values are copied from the change. ``given``: ``change.given()``,
    when the caller has it already.
    """
    if change is EMPTY:
        return event
    if given is None:
        given = change.given()
    updates: dict[str, Any] = {}
    for name, value in given.items():
        if name in _VIEW and name in event:
            updates[name] = {**event[name], **value} if name == "settings" else _copied(value)
    if point is _BEFORE_CALL and change.messages is not None:
        updates["messages"] = _copied(change.messages)
    if point is _BEFORE_ASSISTANT_MESSAGE and (change.answer is not None or change.append):
        base = change.answer if change.answer is not None else event["answer"]
        updates["answer"] = join_answer(base, change.append)
    return {**event, **updates} if updates else event


def _copied(value: Any) -> Any:
    """A copy of JSON data (a change's values are normalised to it): a later hook or the host
    changing the event's value does not change the change. Several times as fast as
    ``copy.deepcopy``, which keeps a memo for shared and cyclic objects JSON data cannot have."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    return value


# enum members as module constants (a look-up through the enum's metaclass, per change)
_BEFORE_CALL, _BEFORE_ASSISTANT_MESSAGE = Point.BEFORE_CALL, Point.BEFORE_ASSISTANT_MESSAGE

VIEW_FIELDS = ("question", "instruction", "tools", "input", "result", "settings")
_VIEW = frozenset(VIEW_FIELDS)


def join_answer(answer: str, appended: list[str]) -> str:
    """The answer with appended texts, one paragraph each."""
    return "\n\n".join([answer, *appended]) if appended else answer
