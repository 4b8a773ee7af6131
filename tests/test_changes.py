"""Change fields per point, and the merge laws."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.changes import ADD_UP, EMPTY, FIELDS, Change, Merger, apply, merge, parse_change
from engine.errors import PluginError
from engine.points import ACCEPTED, Point

SAMPLE: dict[str, Any] = {
    "block": "no",
    "messages": [{"role": "system", "content": "x"}],
    "notice": "n",
    "answer": "a",
    "question": "q",
    "sections": ["s"],
    "instruction": "i",
    "tools": ["t"],
    "settings": {"temperature": 0},
    "input": {"path": "a"},
    "result": "r",
    "append": "more",
}
EVENT_TOOLS = {"tools": ["t", "u"]}


@pytest.mark.parametrize("point", list(Point))
@pytest.mark.parametrize("field", sorted(SAMPLE))
def test_each_point_accepts_its_fields_and_refuses_the_rest(point: Point, field: str) -> None:
    data = {field: SAMPLE[field]}
    if field in ACCEPTED[point]:
        change = parse_change(point, data, hook="h", event=EVENT_TOOLS)
        assert not change.is_empty()
    else:
        with pytest.raises(PluginError) as err:
            parse_change(point, data, hook="h", event=EVENT_TOOLS)
        assert err.value.hook == "h"
        assert err.value.point == point
        assert err.value.field == field
        assert "h" in str(err.value) and field in str(err.value) and point.value in str(err.value)


def test_hearing_points_accept_no_field() -> None:
    for point in (Point.AFTER_TURN, Point.AFTER_LOOP, Point.FEEDBACK):
        assert ACCEPTED[point] == frozenset()
        assert parse_change(point, None, hook="h") is EMPTY
        assert parse_change(point, {}, hook="h").is_empty()


def test_a_change_of_the_wrong_shape_is_a_plugin_error() -> None:
    with pytest.raises(PluginError, match="mapping"):
        parse_change(Point.TOOL_CALL, ["block"], hook="h")
    with pytest.raises(PluginError, match="input"):
        parse_change(Point.TOOL_CALL, {"input": "not a dict"}, hook="h")
    with pytest.raises(PluginError, match="block"):
        parse_change(Point.TOOL_CALL, {"block": 3}, hook="h")


def test_injected_messages_need_a_known_role() -> None:
    with pytest.raises(PluginError, match="messages"):
        parse_change(
            Point.BEFORE_USER_MESSAGE, {"messages": [{"role": "tool", "content": "x"}]}, hook="h"
        )


def test_tools_may_only_narrow_the_events_tools() -> None:
    parse_change(Point.BEFORE_CALL, {"tools": ["t"]}, hook="h", event=EVENT_TOOLS)
    with pytest.raises(PluginError, match="not one of the event's tools"):
        parse_change(Point.BEFORE_CALL, {"tools": ["rm"]}, hook="h", event=EVENT_TOOLS)


@pytest.mark.parametrize(
    ("point", "data", "message"),
    [
        (Point.TOOL_CALL, {"block": None}, "block: null is not a change"),
        (Point.TOOL_CALL, {"block": ""}, "block: must be a non-empty text"),
        (Point.TOOL_CALL, {"block": "  \n\t"}, "block: must be a non-empty text"),
        (Point.TOOL_CALL, {"input": None}, "input: null is not a change"),
        (Point.TOOL_CALL, {"notice": None}, "notice: null is not a change"),
        (Point.TOOL_CALL, {"block": 0}, "block"),
        (
            Point.TOOL_CALL,
            {"input": {"x": b"raw"}},
            "input: invalid result: input.x: bytes is not JSON",
        ),
        (Point.BEFORE_USER_MESSAGE, {"question": None}, "question: null is not a change"),
        (Point.BEFORE_USER_MESSAGE, {"question": " "}, "question: must be a non-empty text"),
        (Point.BEFORE_USER_MESSAGE, {"answer": ""}, "answer: must be a non-empty text"),
        (Point.BEFORE_ASSISTANT_MESSAGE, {"answer": ""}, "answer: must be a non-empty text"),
        (Point.BEFORE_ASSISTANT_MESSAGE, {"answer": None}, "answer: null is not a change"),
        (Point.TOOL_RESULT, {"result": None}, "result: null is not a change"),
        (Point.TOOL_RESULT, {"result": {1, 2}}, "result: set is not JSON"),
        (Point.BEFORE_CALL, {"settings": {"t": object()}}, "settings.t: object is not JSON"),
    ],
)
def test_invalid_results_are_refused_by_one_rule(
    point: Point, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(PluginError) as info:
        parse_change(point, data, hook="g")
    assert info.value.field == next(iter(data))
    assert message.split(": invalid result: ")[-1] in str(info.value)


def test_values_a_hook_hands_back_are_normalised_like_the_event() -> None:
    change = parse_change(
        Point.TOOL_RESULT,
        {"result": {"n": float("nan"), "big": 2**60, "t": "a\ud800"}, "notice": "x\udfff"},
        hook="g",
    )
    assert change.result == {"n": None, "big": str(2**60), "t": "a\ufffd"}
    assert change.notice == ["x\ufffd"]


OFFERED = [
    {"name": "shell", "description": "ls only", "parameters": {"type": "object", "properties": {}}},
    {"name": "read", "description": "reads", "parameters": {"type": "object"}},
]


@pytest.mark.parametrize(
    "changed",
    [
        {**OFFERED[0], "description": "runs anything"},
        {**OFFERED[0], "parameters": {"type": "object", "properties": {"cmd": {}}}},
        {"name": "shell"},
        {**OFFERED[0], "extra": True},
    ],
)
def test_a_tool_with_an_offered_name_but_another_definition_is_refused(
    changed: dict[str, Any],
) -> None:
    with pytest.raises(PluginError, match="'shell' changes the definition"):
        parse_change(Point.BEFORE_CALL, {"tools": [changed]}, hook="h", event={"tools": OFFERED})
    same = {k: OFFERED[0][k] for k in reversed(list(OFFERED[0]))}  # key order does not matter
    kept = parse_change(Point.BEFORE_CALL, {"tools": [same]}, hook="h", event={"tools": OFFERED})
    assert kept.tools == [same]


def test_notice_string_is_a_list_of_one() -> None:
    assert parse_change(Point.TOOL_CALL, {"notice": "x"}, hook="h").notice == ["x"]


def test_first_block_ends_the_chain() -> None:
    a = Change(block="first")
    b = Change(block="second", input={"x": 1})
    assert merge(Point.TOOL_CALL, a, b).block == "first"
    assert merge(Point.TOOL_CALL, a, b).input is None


def test_add_up_replace_and_merge_rules() -> None:
    p = Point.BEFORE_CALL
    a = Change(sections=["a"], instruction="i1", settings={"t": 1, "m": "x"}, notice=["n1"])
    b = Change(sections=["b"], instruction="i2", settings={"t": 2}, notice=["n2"])
    m = merge(p, a, b)
    assert m.sections == ["a", "b"]
    assert m.instruction == "i2"
    assert m.settings == {"t": 2, "m": "x"}
    assert m.notice == ["n1", "n2"]


def test_messages_add_up_before_user_message_and_replace_before_call() -> None:
    one = [{"role": "system", "content": "1"}]
    two = [{"role": "system", "content": "2"}]
    a = parse_change(Point.BEFORE_USER_MESSAGE, {"messages": one}, hook="a")
    b = parse_change(Point.BEFORE_USER_MESSAGE, {"messages": two}, hook="b")
    assert [m["content"] for m in merge(Point.BEFORE_USER_MESSAGE, a, b).messages] == ["1", "2"]
    c, d = Change(messages=one), Change(messages=two)
    assert merge(Point.BEFORE_CALL, c, d).messages == two


def test_a_replaced_answer_restarts_the_appends_it_already_saw() -> None:
    p = Point.BEFORE_ASSISTANT_MESSAGE
    appended = Change(append=["contact us"])
    event = {"answer": "hello"}
    seen = apply(p, event, appended)
    assert seen["answer"] == "hello\n\ncontact us"
    redacted = Change(answer=seen["answer"].replace("hello", "h***"))
    m = merge(p, appended, redacted)
    assert apply(p, event, m)["answer"] == "h***\n\ncontact us"


def test_apply_does_not_mutate_the_event() -> None:
    event = {"input": {"path": "a"}, "name": "t"}
    seen = apply(Point.TOOL_CALL, event, Change(input={"path": "b"}))
    assert event == {"input": {"path": "a"}, "name": "t"}
    assert seen["input"] == {"path": "b"}


# -- merge laws (Hypothesis) --------------------------------------------------------------

texts = st.text(max_size=5)
changes_at_call = st.builds(
    Change,
    block=st.none() | texts,
    sections=st.lists(texts, max_size=2),
    instruction=st.none() | texts,
    settings=st.none() | st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2),
    notice=st.lists(texts, max_size=2),
    messages=st.none()
    | st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": texts}), max_size=2),
)
changes_at_answer = st.builds(
    Change,
    answer=st.none() | texts,
    append=st.lists(texts, max_size=2),
    notice=st.lists(texts, max_size=2),
)


def same(a: Change, b: Change) -> bool:
    return a.as_data() == b.as_data()


@settings(max_examples=300)
@given(changes_at_call, changes_at_call, changes_at_call)
def test_merge_is_associative_before_call(a: Change, b: Change, c: Change) -> None:
    p = Point.BEFORE_CALL
    assert same(merge(p, merge(p, a, b), c), merge(p, a, merge(p, b, c)))


@settings(max_examples=300)
@given(changes_at_answer, changes_at_answer, changes_at_answer)
def test_merge_is_associative_before_assistant_message(a: Change, b: Change, c: Change) -> None:
    p = Point.BEFORE_ASSISTANT_MESSAGE
    assert same(merge(p, merge(p, a, b), c), merge(p, a, merge(p, b, c)))


@given(changes_at_call)
def test_the_empty_change_is_the_identity(a: Change) -> None:
    p = Point.BEFORE_CALL
    assert same(merge(p, EMPTY, a), a)
    assert same(merge(p, a, EMPTY), a)


@given(changes_at_call, changes_at_call)
def test_a_block_absorbs_everything_after_it(a: Change, b: Change) -> None:
    blocked = Change(block="stop")
    assert same(merge(Point.BEFORE_CALL, merge(Point.BEFORE_CALL, blocked, a), b), blocked)


@given(st.lists(changes_at_answer, max_size=4), st.text(max_size=5))
def test_applying_changes_one_by_one_equals_applying_their_merge(
    chain: list[Change], answer: str
) -> None:
    p = Point.BEFORE_ASSISTANT_MESSAGE
    event = {"answer": answer}
    merged, seen = EMPTY, event
    for change in chain:
        merged, seen = merge(p, merged, change), apply(p, seen, change)
    assert apply(p, event, merged)["answer"] == seen["answer"]


changes_at_user_message = st.builds(
    Change,
    block=st.none() | texts,
    question=st.none() | texts,
    answer=st.none() | texts,
    notice=st.lists(texts, max_size=2),
    messages=st.none()
    | st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": texts}), max_size=2),
)


@settings(max_examples=300)
@given(
    st.sampled_from([Point.BEFORE_CALL, Point.BEFORE_ASSISTANT_MESSAGE, Point.BEFORE_USER_MESSAGE]),
    st.data(),
)
def test_the_merger_equals_the_fold_of_merge(point: Point, data: st.DataObject) -> None:
    strategy = {
        Point.BEFORE_CALL: changes_at_call,
        Point.BEFORE_ASSISTANT_MESSAGE: changes_at_answer,
        Point.BEFORE_USER_MESSAGE: changes_at_user_message,
    }[point]
    chain = data.draw(st.lists(strategy, max_size=5))
    before = [c.as_data() for c in chain]
    merger, folded = Merger(point), EMPTY
    for change in chain:
        merger.add(change)
        folded = merge(point, folded, change)
    assert merger.result() == folded
    assert [c.as_data() for c in chain] == before, "the changes are not changed"


def test_the_merger_keeps_an_empty_replacement() -> None:
    merger = Merger(Point.BEFORE_CALL)
    merger.add(Change(tools=["a"], messages=[{"role": "user", "content": "x"}]))
    merger.add(Change(tools=[], messages=[]))
    assert merger.result() == Change(tools=[], messages=[])


plain_texts = st.text(max_size=6) | st.sampled_from(["", " ", "a\ud800", "é", "\n"])
plain_answers = st.dictionaries(
    st.sampled_from(["block", "answer", "question", "notice", "messages"]),
    plain_texts
    | st.lists(plain_texts, max_size=2)
    | st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "user", "tool"]), "content": plain_texts}
        ),
        max_size=2,
    ),
    max_size=3,
)


def _checked_in_full(point: Point, data: dict[str, Any]) -> Change | str:
    from engine import changes

    try:
        return changes.parse_change(point, dict(data), hook="h")
    except PluginError as exc:
        return str(exc)


@settings(max_examples=400)
@given(plain_answers)
def test_the_plain_answer_check_agrees_with_the_full_check(data: dict[str, Any]) -> None:
    from engine import changes

    point = Point.BEFORE_USER_MESSAGE
    fast = changes._plain_change(point, data)
    if fast is None:
        return  # the full check decides
    original = changes._plain_change
    try:
        changes._plain_change = lambda p, d: None  # type: ignore[assignment]
        full = _checked_in_full(point, data)
    finally:
        changes._plain_change = original
    assert fast == full


@settings(max_examples=300)
@given(changes_at_call | changes_at_answer | changes_at_user_message)
def test_given_holds_exactly_the_fields_that_change_something(change: Change) -> None:
    expected = {
        name: getattr(change, name)
        for name in FIELDS
        if getattr(change, name) is not None and (getattr(change, name) or name not in ADD_UP)
    }
    assert change.given() == expected
    assert Change(tools=[], result=0, instruction="", settings={}).given() == {
        "tools": [],
        "result": 0,
        "instruction": "",
        "settings": {},
    }
