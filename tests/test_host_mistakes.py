"""Host mistakes in the point methods and ``evaluate`` raise EventError naming the field."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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
