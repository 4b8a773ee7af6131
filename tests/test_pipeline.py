"""The pipeline: order, the host layer's last word, error policy, shadow mode, records."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import ScriptLimitError
from engine.kinds.base import Mode, OnError
from engine.pipeline import WITHHELD_ANSWER, Services, evaluate
from engine.points import Point, make_event
from tests.conftest import FakeHook, pipeline, raising, returning


def event(point: Point, **fields: Any) -> dict[str, Any]:
    return make_event(
        point, agent="test", time="2026-01-01T00:00:00+00:00", scope={"user_id": "u1"}, **fields
    )


TOOL = event(Point.TOOL_CALL, name="delete_file", input={"path": "a.txt"})


def test_hooks_run_in_declared_order_then_the_host_layer(services: Services) -> None:
    order: list[str] = []

    def note(name: str) -> FakeHook:
        return FakeHook(name, lambda p, e, c: order.append(name))

    pipe = pipeline(note("a"), note("b"), host=(note("h"),))
    evaluate(pipe, Point.TOOL_CALL, TOOL, services)
    assert order == ["a", "b", "h"]


def test_each_hook_sees_the_event_as_changed_before_it(services: Services) -> None:
    first = returning("first", {"input": {"path": "b.txt"}})
    second = FakeHook("second", lambda p, e, c: {"input": {"path": e["input"]["path"] + "!"}})
    out = evaluate(pipeline(first, second), Point.TOOL_CALL, TOOL, services)
    assert second.calls[0]["input"] == {"path": "b.txt"}
    assert out.input == {"path": "b.txt!"}


def test_the_host_layer_has_the_last_word(services: Services) -> None:
    agent = returning("agent", {"answer": "agent says"})
    host = returning("host", {"answer": "host says"})
    ev = event(Point.BEFORE_ASSISTANT_MESSAGE, question="q", answer="llm")
    out = evaluate(pipeline(agent, host=(host,)), Point.BEFORE_ASSISTANT_MESSAGE, ev, services)
    assert out.answer == "host says"


def test_the_first_block_ends_the_chain_and_later_hooks_are_skipped(services: Services) -> None:
    later = returning("later", {"input": {"path": "x"}})
    pipe = pipeline(returning("guard", {"block": "no deletes"}), later)
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services)
    assert out.blocked and out.reason == "no deletes"
    assert later.calls == []
    assert [r.status for r in out.hooks] == ["decided", "skipped"]


def test_a_hook_that_raises_at_tool_call_blocks_the_tool_naming_the_hook(
    services: Services,
) -> None:
    pipe = pipeline(raising("guard", RuntimeError("boom"), on_error=OnError.IGNORE))
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services)
    assert out.blocked
    assert "guard" in out.reason and "check failed" in out.reason
    assert out.failed == ["guard"]
    assert out.hooks[0].status == "failed" and "boom" in out.hooks[0].error


def test_a_timeout_at_tool_call_blocks_whatever_on_error_says(services: Services) -> None:
    slow = raising("slow", ScriptLimitError("too slow", cause="timeout"), on_error=OnError.IGNORE)
    out = evaluate(pipeline(slow), Point.TOOL_CALL, TOOL, services)
    assert out.blocked and "timeout" in out.reason
    assert out.hooks[0].cause == "timeout"


def test_a_plugin_error_is_a_failure_naming_the_field(services: Services) -> None:
    bad = returning("bad", {"answer": "x"}, on_error=OnError.IGNORE)
    out = evaluate(pipeline(bad), Point.TOOL_CALL, TOOL, services)
    assert out.blocked
    assert out.hooks[0].cause == "plugin" and "'answer'" in out.hooks[0].error


def test_on_error_ignore_makes_a_failing_hook_neutral(services: Services) -> None:
    ev = event(Point.BEFORE_USER_MESSAGE, question="hi")
    inject = returning("inject", {"messages": [{"role": "system", "content": "ctx"}]})
    pipe = pipeline(raising("broken", ValueError("x"), on_error=OnError.IGNORE), inject)
    out = evaluate(pipe, Point.BEFORE_USER_MESSAGE, ev, services)
    assert not out.blocked
    assert out.messages == [{"role": "system", "content": "ctx"}]
    assert out.failed == ["broken"]


@pytest.mark.parametrize(
    "point,fields",
    [
        (Point.BEFORE_USER_MESSAGE, {"question": "hi"}),
        (Point.BEFORE_CALL, {"instruction": "be nice"}),
    ],
)
def test_on_error_fail_refuses_cleanly(
    services: Services, point: Point, fields: dict[str, Any]
) -> None:
    pipe = pipeline(raising("strict", ValueError("x"), on_error=OnError.FAIL))
    out = evaluate(pipe, point, event(point, **fields), services)
    assert out.blocked and "strict" in out.reason


def test_a_failing_redaction_withholds_the_answer(services: Services) -> None:
    ev = event(Point.BEFORE_ASSISTANT_MESSAGE, question="q", answer="key=sk-123")
    pipe = pipeline(raising("redact", ValueError("x"), on_error=OnError.FAIL))
    out = evaluate(pipe, Point.BEFORE_ASSISTANT_MESSAGE, ev, services)
    assert out.blocked and out.answer == WITHHELD_ANSWER
    assert "sk-123" not in out.answer


def test_a_failing_result_hook_withholds_the_result(services: Services) -> None:
    ev = event(Point.TOOL_RESULT, name="read", input={}, result="secret")
    pipe = pipeline(raising("redact", ValueError("x"), on_error=OnError.FAIL))
    out = evaluate(pipe, Point.TOOL_RESULT, ev, services)
    assert out.blocked and "withheld" in out.result and "secret" not in out.result


@pytest.mark.parametrize(
    "point,fields",
    [
        (Point.AFTER_TURN, {"question": "q", "answer": "a"}),
        (Point.AFTER_LOOP, {"status": "job_done"}),
        (Point.FEEDBACK, {"rating": "like"}),
    ],
)
def test_after_points_only_report_failures(
    services: Services, point: Point, fields: dict[str, Any]
) -> None:
    after = FakeHook("after", lambda p, e, c: None)
    pipe = pipeline(raising("listener", ValueError("x"), on_error=OnError.FAIL), after)
    out = evaluate(pipe, point, event(point, **fields), services)
    assert not out.blocked and out.failed == ["listener"]
    assert len(after.calls) == 1


def test_base_exceptions_from_a_hook_never_reach_the_host(services: Services) -> None:
    out = evaluate(pipeline(raising("exit", SystemExit(3))), Point.TOOL_CALL, TOOL, services)
    assert out.blocked and out.hooks[0].status == "failed"


def test_a_shadow_hook_is_recorded_but_not_applied(services: Services) -> None:
    shadow = returning("new_guard", {"block": "would block"}, mode=Mode.SHADOW)
    out = evaluate(pipeline(shadow), Point.TOOL_CALL, TOOL, services)
    assert not out.blocked
    assert out.shadow == [{"hook": "new_guard", "change": {"block": "would block"}}]


def test_a_failing_shadow_hook_does_not_block(services: Services) -> None:
    shadow = raising("new_guard", ValueError("bug"), mode=Mode.SHADOW)
    out = evaluate(pipeline(shadow), Point.TOOL_CALL, TOOL, services)
    assert not out.blocked and out.shadow[0]["hook"] == "new_guard"


def test_every_evaluation_is_recorded_with_each_hook(services: Services) -> None:
    pipe = pipeline(returning("ok", None), raising("bad", ValueError("x")))
    out = evaluate(pipe, Point.TOOL_CALL, TOOL, services)
    (record,) = services.recorded  # type: ignore[attr-defined]
    assert record.id == out.id and record.point == "tool_call" and record.scope_key == "user:u1"
    assert [(h.name, h.status, h.version) for h in record.hooks] == [
        ("ok", "decided", "v1"),
        ("bad", "failed", "v1"),
    ]
    assert record.outcome["blocked"] is True


def test_hooks_subscribe_to_their_points_only(services: Services) -> None:
    only_calls = FakeHook(
        "calls", lambda p, e, c: {"block": "x"}, points=frozenset({Point.BEFORE_CALL})
    )
    out = evaluate(pipeline(only_calls), Point.TOOL_CALL, TOOL, services)
    assert not out.blocked and only_calls.calls == []
