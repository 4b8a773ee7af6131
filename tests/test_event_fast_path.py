"""The common event's fast path (engine/boundary.py ``plain_copy``, engine/points.py
``make_event``) gives exactly what the full walk and the event model give, or steps aside."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import points
from engine.boundary import MAX_DEPTH, _Walk, normalize_host_value, plain_copy
from engine.errors import EventError, InputError
from engine.points import ID_CAP, Point, Scope, make_event

# values the rule keeps, changes or refuses: the fast path must copy the first and step aside
# for the others
_ODD_TEXT = st.sampled_from(["", "ascii", "Где", "\ud800", "a\udfffb", "\ud83d\ude00", '\x00"'])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    _ODD_TEXT,
    st.just(b"bytes"),
)
_KEYS = st.one_of(st.text(max_size=6), _ODD_TEXT, st.integers(0, 3))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_KEYS, inner, max_size=4),
    ),
    max_leaves=12,
)


def _walked(value: dict[str, Any], budget: int) -> tuple[Any, list[Any]]:
    walk = _Walk(budget, finite_only=True)
    return walk.value(value, "event", 0), walk.refused


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_plain_copy_is_the_walk_or_steps_aside(value: dict[Any, Any]) -> None:
    copied = plain_copy(value)
    if copied is None:
        return
    out, refused = _walked(value, 2_000_000)
    assert refused == []
    assert copied == out
    assert list(copied) == list(out)  # the same key order


def test_plain_copy_takes_plain_data_as_a_new_copy() -> None:
    host = {"a": [1, 2.5, True, None, "Где"], "b": {"c": {"d": []}}}
    copied = plain_copy(host)
    assert copied == host
    assert copied is not host and copied["a"] is not host["a"]
    assert copied["b"]["c"] is not host["b"]["c"]


@pytest.mark.parametrize(
    "value",
    [
        {"a": (1, 2)},
        {"a": 2**53},
        {"a": float("nan")},
        {"a": "x\ud800"},
        {1: "a"},
        {"a": b"x"},
        {"a": {"b": {1, 2}}},
    ],
)
def test_plain_copy_steps_aside_for_what_the_rule_changes_or_refuses(value: Any) -> None:
    assert plain_copy(value) is None


def test_plain_copy_steps_aside_at_the_depth_cap_and_near_the_budget() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert plain_copy({"x": deep}) is not None  # exactly MAX_DEPTH below the event: kept
    assert plain_copy({"x": [deep]}) is None  # one more: the walk puts its marker
    big = {"x": "a" * 1000}
    assert plain_copy(big, budget=100_000) is not None
    assert plain_copy(big, budget=4096 + 1000) is None  # might not fit: the walk decides


def _slow(monkeypatch: pytest.MonkeyPatch, point: Point, fields: dict[str, Any]) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(points, "_plain_event", lambda point, fields: None)
        return _made(point, fields)


def _made(point: Point, fields: dict[str, Any]) -> Any:
    try:
        return make_event(point, **dict(fields))
    except (EventError, InputError) as exc:
        return type(exc), str(exc), getattr(exc, "errors", None)


_IDS = st.one_of(st.none(), st.text(max_size=4), st.just("x" * (ID_CAP + 1)), st.just(3))
_SCOPES = st.one_of(
    st.none(),
    st.just(Scope(user_id="u1")),
    st.fixed_dictionaries(
        {},
        optional={
            "user_id": _IDS,
            "session_id": _IDS,
            "template": _IDS,
            "process": _IDS,
            "other": _IDS,
        },
    ),
)
_TEXTS = st.one_of(st.text(max_size=6), _ODD_TEXT, st.just("q" * 100_001), st.just(7))
_ANY = st.one_of(_VALUES, st.just({"k": [1, {"j": "Где"}]}))
_FIELDS = {
    Point.TOOL_CALL: {"name": _TEXTS, "input": _ANY, "call_id": _IDS},
    Point.TOOL_RESULT: {"name": _TEXTS, "input": _ANY, "result": _ANY, "call_id": _IDS},
    Point.BEFORE_USER_MESSAGE: {"question": _TEXTS},
    Point.BEFORE_CALL: {"instruction": _TEXTS, "messages": _ANY, "tools": _ANY, "settings": _ANY},
    Point.AFTER_TURN: {"question": _TEXTS, "answer": _TEXTS, "tool_calls": _ANY},
    Point.FEEDBACK: {"rating": st.sampled_from(["like", "dislike", "meh", 1])},
}


@st.composite
def _calls(draw: st.DrawFn) -> tuple[Point, dict[str, Any]]:
    point = draw(st.sampled_from(sorted(_FIELDS)))
    fields = draw(st.fixed_dictionaries({}, optional=_FIELDS[point]))
    fields["agent"] = "a"
    fields["time"] = draw(st.sampled_from(["2026-01-01T00:00:00+00:00", "t" * (ID_CAP + 1)]))
    fields.update(draw(st.fixed_dictionaries({}, optional={"turn_id": _IDS, "scope": _SCOPES})))
    if draw(st.booleans()):
        fields["unknown"] = 1
    return point, fields


@settings(max_examples=500, deadline=None)
@given(_calls())
def test_make_event_is_what_the_model_makes(call: tuple[Point, dict[str, Any]]) -> None:
    point, fields = call
    with pytest.MonkeyPatch.context() as patch:
        slow = _slow(patch, point, fields)
    fast = _made(point, fields)
    assert fast == slow
    if isinstance(fast, dict):
        assert list(fast) == list(slow)  # the model's field order


def test_make_event_copies_the_hosts_values() -> None:
    given_input = {"path": ["a", {"b": 1}]}
    event = make_event(Point.TOOL_CALL, agent="a", time="t", name="x", input=given_input)
    assert event["input"] == given_input and event["input"] is not given_input
    assert event["input"]["path"] is not given_input["path"]
    assert normalize_host_value({"k": given_input})[0] == {"k": given_input}
