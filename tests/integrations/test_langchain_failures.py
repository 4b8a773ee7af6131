"""The LangChain middleware fails closed, takes its scope from the run, and is a leaf module."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from engine import Engine
from engine.hosts import HOSTS
from engine.integrations.langchain import HookMiddleware, default_scope
from engine.integrations.langchain_events import as_content
from tests.conftest import REPO
from tests.integrations.langchain_agent import (
    MODES,
    SECRET,
    call,
    load_guard,
    ran,
    records,
    run,
    scripted,
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with load_guard(tmp_path_factory.mktemp("langchain_failures")) as loaded:
        yield loaded


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    ran.clear()


# -- fail closed ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_result_guard_withholds_the_result(engine: Engine, mode: str) -> None:
    model = scripted(call("explode", {"path": "x"}), "Nothing to show.")
    messages, _ = run(engine, model, "explode x", mode)
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert ran == [("explode", {"path": "x"})]
    assert result.status == "error" and "withheld" in str(result.content)
    assert SECRET not in str(result.content)
    assert SECRET not in " ".join(str(m.content) for m in model.requests[1])


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_call_guard_blocks_the_model_call(engine: Engine, mode: str) -> None:
    model = scripted("never said")
    messages, _ = run(engine, model, "explode the call", mode)
    assert model.requests == []
    assert isinstance(messages[-1], AIMessage)
    assert "'guard' failed" in str(messages[-1].content)


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_answer_guard_withholds_the_answer_in_place(engine: Engine, mode: str) -> None:
    model = scripted(AIMessage("explode: the secret plan", id="answer-2"))
    messages, _ = run(engine, model, "tell me the plan", mode)
    answers = [m for m in messages if isinstance(m, AIMessage)]
    assert len(answers) == 1 and answers[0].id == "answer-2"
    assert "withheld" in str(answers[0].content)
    assert "secret plan" not in str(answers[0].content)


@pytest.mark.parametrize("mode", MODES)
def test_a_scope_callable_that_fails_refuses_the_turn_naming_the_key(
    engine: Engine, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = scripted("never said")
    with caplog.at_level(logging.WARNING, logger="engine.integrations.langchain"):
        messages, _ = run(engine, model, "hello", mode, scope=lambda runtime: {"user": "u1"})
    assert model.requests == []
    assert "scope: unknown key 'user'" in str(messages[-1].content)
    failed = [r.getMessage() for r in caplog.records]
    assert any("before_user_message" in m for m in failed)
    assert any("after_turn" in m for m in failed)  # hooks only hear: logged, nothing else


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_result_that_is_not_json_is_withheld_naming_the_path(
    engine: Engine, mode: str
) -> None:
    middleware = HookMiddleware(engine.agent("guard"))
    request = _tool_request(call("read_file", {"path": "a"}).tool_calls[0])
    reply = ToolMessage(content=[{"type": "text", "text": "x", "raw": b"\x00"}], tool_call_id="c1")
    if mode == "invoke":
        out = middleware.wrap_tool_call(request, lambda r: reply)
    else:

        async def handler(r: Any) -> ToolMessage:
            return reply

        out = asyncio.run(middleware.awrap_tool_call(request, handler))
    assert isinstance(out, ToolMessage) and out.status == "error"
    assert "result.0.raw" in str(out.content) and "bytes is not JSON" in str(out.content)
    assert out.artifact is None


def test_a_wrong_agent_or_scope_is_a_type_error_naming_the_argument(engine: Engine) -> None:
    with pytest.raises(TypeError, match=r"^agent: must be an engine agent .*not Engine"):
        HookMiddleware(engine)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^scope: must be a callable or None, not dict"):
        HookMiddleware(engine.agent("guard"), scope={"user_id": "u1"})  # type: ignore[arg-type]


def test_a_run_without_a_new_user_message_asks_nothing_and_drops_the_last_turns_context(
    engine: Engine,
) -> None:
    middleware = HookMiddleware(engine.agent("guard"))
    state: Any = {
        "messages": [AIMessage("earlier answer")],
        "hookengine_turn_id": "old-turn",
        "hookengine_context": [{"role": "system", "content": "old context"}],
    }
    update = {"hookengine_turn_id": None, "hookengine_context": []}
    assert middleware.before_agent(state, None) == update  # type: ignore[arg-type]
    assert asyncio.run(middleware.abefore_agent(state, None)) == update  # type: ignore[arg-type]


# -- scope ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_scope_is_the_contexts_user_and_the_runs_thread(engine: Engine, mode: str) -> None:
    _, thread = run(engine, scripted("Hi."), "hello", mode, context={"user_id": 42})
    found = [r for r in engine.records(scope="user:42") if r.scope["session_id"] == thread]
    assert {r.point for r in found} >= {"before_user_message", "before_call", "after_turn"}


@pytest.mark.parametrize("mode", MODES)
def test_a_scope_callable_gives_the_scope(engine: Engine, mode: str) -> None:
    seen: list[Any] = []

    def scope(runtime: Any) -> dict[str, str]:
        seen.append(runtime)
        return {"user_id": "u-callable", "template": "support"}

    run(engine, scripted(call("shell", {"command": "pwd"}), "Here."), "where?", mode, scope=scope)
    found = engine.records(scope="u-callable")
    assert {r.point for r in found} >= {"before_user_message", "tool_call", "after_turn"}
    assert {r.scope["template"] for r in found} == {"support"}
    assert all(hasattr(runtime, "context") for runtime in seen)


def test_the_default_scope_reads_a_context_object_and_leaves_out_what_is_missing() -> None:
    class Context:
        user_id = "u7"

    class Runtime:
        context = Context()
        execution_info = None

    assert default_scope(Runtime()) == {"user_id": "u7", "session_id": None}
    assert default_scope(object()) == {"user_id": None, "session_id": None}


# -- what LangChain can apply -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_notice_langchain_cannot_show_is_listed_and_the_tool_runs(
    engine: Engine, mode: str
) -> None:
    _, thread = run(engine, scripted(call("notify", {"text": "hi"}), "Sent."), "notify", mode)
    assert ran == [("notify", {"text": "hi"})]
    [record] = records(engine, thread, "tool_call")
    assert [u["field"] for u in record.outcome["unsupported"]] == ["notice"]


def test_the_langchain_profile_applies_all_but_notices() -> None:
    langchain = HOSTS["langchain"]
    assert langchain.supports("tool_call", "input") and langchain.supports("tool_result", "result")
    assert langchain.supports("before_call", "tools") and langchain.supports("before_call", "block")
    assert not any(langchain.supports(point, "notice") for point in langchain.applies)


def test_every_hook_has_a_sync_and_an_async_form() -> None:
    # a sync-only hook raises under ainvoke, an async-only one under invoke
    for sync, async_ in [
        ("before_agent", "abefore_agent"),
        ("wrap_model_call", "awrap_model_call"),
        ("wrap_tool_call", "awrap_tool_call"),
        ("after_model", "aafter_model"),
        ("after_agent", "aafter_agent"),
    ]:
        assert getattr(HookMiddleware, sync) is not getattr(AgentMiddleware, sync), sync
        assert getattr(HookMiddleware, async_) is not getattr(AgentMiddleware, async_), async_
    for name in ("before_agent", "abefore_agent"):
        assert getattr(HookMiddleware, name).__can_jump_to__ == ["end"]


def test_a_replacement_result_becomes_message_content() -> None:
    assert as_content("text") == "text"
    assert as_content([{"type": "text", "text": "x"}]) == [{"type": "text", "text": "x"}]
    assert as_content({"rows": 2}) == '{"rows": 2}'
    assert as_content([1, 2]) == "[1, 2]"


def test_importing_the_engine_imports_no_langchain() -> None:
    code = (
        "import sys, engine, engine.integrations\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph'))\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def _tool_request(tool_call: Any) -> Any:
    from langgraph.prebuilt.tool_node import ToolCallRequest

    return ToolCallRequest(tool_call=tool_call, tool=None, state={"messages": []}, runtime=None)
