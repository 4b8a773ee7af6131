"""Host mistakes in the point methods and ``evaluate`` raise EventError naming the field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from engine import Agent, Engine, EngineError, EventError

FILES = {
    "agents/a/agent.yaml": "hooks: [guard]\n",
    "agents/a/hooks/guard.yaml": "kind: script_hook\nname: guard\nlanguage: python\n"
    "source: |\n  def on_tool_call(event, host):\n      return None\n",
}

Call = Callable[[Agent], Any]

MISTAKES: list[tuple[str, Call, list[Any]]] = [
    ("fields a list", lambda a: a.evaluate("tool_call", [1, 2]), ["fields"]),  # type: ignore[arg-type]
    ("fields a string", lambda a: a.evaluate("tool_call", "name=x"), ["fields"]),  # type: ignore[arg-type]
    ("a key not text", lambda a: a.evaluate("tool_call", {1: "x"}), ["fields"]),  # type: ignore[dict-item]
    ("unknown point", lambda a: a.evaluate("tool_cal", {"name": "x"}), ["point"]),
    ("point not text", lambda a: a.evaluate(7, {}), ["point"]),  # type: ignore[arg-type]
    ("unknown field", lambda a: a.evaluate("tool_call", {"name": "x", "nme": 1}), ["nme"]),
    ("missing field", lambda a: a.evaluate("tool_call", {}), ["name"]),
    ("a field set by the engine", lambda a: a.evaluate("after_loop", {"agent": "b"}), ["agent"]),
    ("tool name a number", lambda a: a.tool_call(5, {}), ["name"]),  # type: ignore[arg-type]
    ("tool input a list", lambda a: a.tool_call("shell", ["ls"]), ["input"]),  # type: ignore[arg-type]
    ("question bytes", lambda a: a.before_user_message(b"hi"), ["question"]),  # type: ignore[arg-type]
    (
        "question None",
        lambda a: a.evaluate("before_user_message", {"question": None}),
        ["question"],
    ),
    ("answer a number", lambda a: a.before_assistant_message("q", 3), ["answer"]),  # type: ignore[arg-type]
    ("rating not like/dislike", lambda a: a.feedback("t1", "meh"), ["rating"]),
    ("user_id a number", lambda a: a.tool_call("shell", {}, user_id=42), ["user_id"]),
    ("session_id a list", lambda a: a.before_user_message("q", session_id=["s"]), ["session_id"]),
    ("template bytes", lambda a: a.after_loop("done", template=b"t"), ["template"]),
    ("process a dict", lambda a: a.after_loop("done", process={"p": 1}), ["process"]),
    ("time not ISO-8601", lambda a: a.after_loop("done", time="yesterday"), ["time"]),
    ("time a number", lambda a: a.after_loop("done", time=1700000000), ["time"]),
    ("turn_id a number", lambda a: a.feedback(5, "like"), ["turn_id"]),  # type: ignore[arg-type]
    (
        "user_id too long",
        lambda a: a.tool_call("shell", {}, user_id="u" * 300),
        ["scope", "user_id"],
    ),
    ("call_id too long", lambda a: a.tool_call("shell", {}, call_id="c" * 300), ["call_id"]),
    ("messages not mappings", lambda a: a.before_call("i", messages=[1]), ["messages", 0]),
    ("settings a list", lambda a: a.evaluate("before_call", {"settings": [1]}), ["settings"]),
    ("tool_calls a dict", lambda a: a.after_turn("q", "a", tool_calls={"x": 1}), ["tool_calls"]),  # type: ignore[arg-type]
    ("unknown host", lambda a: a.tool_call("shell", {}, host="claud"), ["host"]),
    ("host not text", lambda a: a.evaluate("tool_call", {"name": "x"}, host=1), ["host"]),  # type: ignore[arg-type]
    ("bytes in input", lambda a: a.tool_call("shell", {"b": b"x"}), ["input", "b"]),
    ("a set in a result", lambda a: a.tool_result("t", {}, [{1}]), ["result", 0]),
    (
        "NaN in settings",
        lambda a: a.before_call("i", settings={"t": float("nan")}),
        ["settings", "t"],
    ),
    ("an object as a tool", lambda a: a.before_call("i", tools=[object()]), ["tools", 0]),
    ("a key not text, deep", lambda a: a.tool_call("t", {"a": [{(1, 2): 3}]}), ["input", "a", 0]),
]


@pytest.fixture
def agent(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Agent:
    return load(project(FILES)).agent("a")


@pytest.mark.parametrize(("case", "call", "loc"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_a_host_mistake_raises_event_error_naming_the_field(
    agent: Agent, case: str, call: Call, loc: list[Any]
) -> None:
    with pytest.raises(EngineError) as info:
        call(agent)
    error = info.value
    assert isinstance(error, EventError), f"{case}: {type(error).__name__}"
    assert not isinstance(error, (TypeError, ValueError, ValidationError))
    assert loc in [e["loc"] for e in error.errors], error.errors
    assert ".".join(str(p) for p in loc) in str(error)


def test_event_errors_are_raised_before_any_hook_runs_or_anything_is_recorded(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(FILES))
    with pytest.raises(EventError):
        engine.agent("a").evaluate("tool_call", [1, 2])  # type: ignore[arg-type]
    assert engine.records(agent="a") == []
    assert not engine.agent("a").tool_call("shell", {"command": "ls"}).blocked


def test_the_async_forms_raise_the_same_event_error(agent: Agent) -> None:
    with pytest.raises(EventError) as info:
        asyncio.run(agent.aevaluate("tool_call", [1, 2]))  # type: ignore[arg-type]
    assert info.value.errors == [{"loc": ["fields"], "msg": "must be a mapping, not list"}]


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.binary(max_size=3)
    | st.sets(st.integers(), max_size=2)
    | st.builds(object),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=JSONISH, where=st.sampled_from(["input", "result", "call_id", "name"]))
def test_any_value_anywhere_gives_an_outcome_or_an_event_error(
    agent: Agent, value: Any, where: str
) -> None:
    fields = {"name": "t", "input": {}, "result": None, where: value}
    try:
        out = agent.evaluate("tool_result", fields)
    except EventError as exc:
        assert exc.errors and all(e["loc"] and e["msg"] for e in exc.errors)
        return
    json.dumps(out.to_dict()["result"], allow_nan=False)  # what a host gets back is JSON
