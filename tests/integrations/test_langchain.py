"""LangChain v1 middleware (engine/integrations/langchain.py), driven by real ``create_agent``
runs on a scripted chat model, each through ``invoke`` and ``ainvoke``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from engine import Engine
from tests.integrations.langchain_agent import (
    MODES,
    SECRET,
    TOOLS,
    call,
    load_guard,
    ran,
    records,
    run,
    scripted,
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with load_guard(tmp_path_factory.mktemp("langchain")) as loaded:
        yield loaded


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    ran.clear()


# -- tool_call and tool_result ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_blocked_tool_never_runs_and_the_model_reads_an_error_tool_message(
    engine: Engine, mode: str
) -> None:
    model = scripted(call("delete_file", {"path": "a.txt"}), "I could not delete it.")
    messages, _ = run(engine, model, "delete a.txt", mode)
    refused = [m for m in messages if isinstance(m, ToolMessage)]
    assert ran == []
    assert len(refused) == 1
    assert refused[0].content == "deleting files is not allowed here"
    assert (refused[0].status, refused[0].tool_call_id, refused[0].name) == (
        "error",
        "c1",
        "delete_file",
    )
    assert model.requests[1][-1].content == "deleting files is not allowed here"


@pytest.mark.parametrize("mode", MODES)
def test_a_rewritten_tool_input_is_what_the_tool_runs_with(engine: Engine, mode: str) -> None:
    model = scripted(call("shell", {"command": "ls -la"}), "Two files.")
    run(engine, model, "list the files", mode)
    assert ran == [("shell", {"command": "ls -la --color=never"})]


@pytest.mark.parametrize("mode", MODES)
def test_a_secret_in_a_tool_result_is_redacted_before_the_model_reads_it(
    engine: Engine, mode: str
) -> None:
    model = scripted(call("read_file", {"path": ".env"}), "The key is hidden.")
    messages, thread = run(engine, model, "show .env", mode)
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert ran == [("read_file", {"path": ".env"})]
    assert result.content == "API_KEY=[REDACTED]\n"
    assert result.status == "success"
    seen = " ".join(str(m.content) for m in model.requests[1])
    assert "[REDACTED]" in seen and SECRET not in seen
    [checked] = records(engine, thread, "tool_result")
    assert checked.host == "langchain" and checked.event["result"] == f"API_KEY={SECRET}\n"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "answer"),
    [
        ("remember", "stored n1 with [REDACTED]"),
        # LangGraph makes a ToolMessage of {"role": "tool", ...}: the model reads it all the same
        ("remember_dict", "kept n1 with [REDACTED]"),
    ],
)
def test_a_secret_in_a_commands_tool_message_is_redacted(
    engine: Engine, mode: str, tool: str, answer: str
) -> None:
    model = scripted(call(tool, {"note": "n1"}), "Stored.")
    messages, _ = run(engine, model, "remember n1", mode)
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert ran == [(tool, {"note": "n1"})]
    assert result.content == answer


def test_tool_messages_are_found_in_every_form_a_command_update_takes() -> None:
    from langgraph.types import Command

    from engine.integrations.langchain_events import tool_messages, with_messages

    as_dict = {"role": "tool", "content": "a", "tool_call_id": "c1"}
    typed = ToolMessage("b", tool_call_id="c2")
    other = {"role": "user", "content": "not a tool's"}
    for update in (
        {"messages": [as_dict, other, typed]},
        [("messages", [as_dict, other]), ("count", 1), ("messages", typed)],
    ):
        found = tool_messages(Command(update=update))
        assert [m.content for m in found] == ["a", "b"]
        checked = [ToolMessage(f"checked {m.content}", tool_call_id=m.tool_call_id) for m in found]
        again = tool_messages(with_messages(Command(update=update), checked))
        assert [m.content for m in again] == ["checked a", "checked b"]


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_tool_guard_blocks_the_tool_naming_the_hook(engine: Engine, mode: str) -> None:
    model = scripted(call("crash", {"path": "x"}), "It failed.")
    messages, _ = run(engine, model, "crash it", mode)
    refused = next(m for m in messages if isinstance(m, ToolMessage))
    assert ran == []
    assert refused.status == "error"
    assert "hook 'guard'" in str(refused.content) and "not run" in str(refused.content)


@pytest.mark.parametrize("mode", MODES)
def test_tool_input_that_is_not_json_blocks_the_tool_naming_the_path(
    engine: Engine, mode: str
) -> None:
    model = scripted(call("read_file", {"path": b"\x00.env"}), "No.")
    messages, _ = run(engine, model, "read it", mode)
    refused = next(m for m in messages if isinstance(m, ToolMessage))
    assert ran == []
    assert refused.status == "error"
    assert "input.path" in str(refused.content) and "bytes is not JSON" in str(refused.content)


# -- before_user_message ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_refused_turn_ends_before_the_model_is_called(engine: Engine, mode: str) -> None:
    model = scripted("never said")
    messages, thread = run(engine, model, "my password is hunter2", mode)
    assert model.requests == []
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].content == "please do not share passwords"
    points = [r.point for r in records(engine, thread)]
    assert points == ["before_user_message", "after_turn"]


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_at_before_user_message_is_the_turns_answer(engine: Engine, mode: str) -> None:
    model = scripted("never said")
    messages, _ = run(engine, model, "opening hours?", mode)
    assert model.requests == []
    assert [type(m) for m in messages] == [HumanMessage, AIMessage]
    assert messages[-1].content == "We are open 9 to 5."


@pytest.mark.parametrize("mode", MODES)
def test_a_rewritten_question_replaces_the_users_message_in_place(
    engine: Engine, mode: str
) -> None:
    model = scripted("Hello.")
    messages, _ = run(engine, model, "rewrite: hello there", mode)
    assert messages[0].id == "q1" and messages[0].content == "hello there"
    assert [m.content for m in model.requests[0] if isinstance(m, HumanMessage)] == ["hello there"]


@pytest.mark.parametrize("mode", MODES)
def test_injected_messages_join_each_model_request_but_not_the_conversation(
    engine: Engine, mode: str
) -> None:
    model = scripted(call("shell", {"command": "pwd"}), "Moscow.")
    messages, _ = run(engine, model, "where am I?", mode)
    for request in model.requests:
        assert request[0].content == "You help.\n\nThe user's city is Moscow.\n\nAnswer in English."
        assert [m.content for m in request[1:3]] == ["(from memory) I like tea.", "where am I?"]
    assert len(model.requests) == 2
    assert not any("I like tea" in str(m.content) for m in messages)


# -- before_call --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_before_call_section_is_appended_to_the_system_message(engine: Engine, mode: str) -> None:
    model = scripted("Fine.")
    _, thread = run(engine, model, "how are you?", mode)
    assert model.requests[0][0].content == "You help.\n\nAnswer in English."
    [event] = [r.event for r in records(engine, thread, "before_call")]
    assert event["instruction"] == "You help."
    assert {t["name"] for t in event["tools"]} == {t.name for t in TOOLS}
    assert event["messages"] == [{"role": "user", "content": "how are you?", "id": "q1"}]


@pytest.mark.parametrize("mode", MODES)
def test_a_blocked_model_call_is_answered_without_the_model(engine: Engine, mode: str) -> None:
    model = scripted("never said")
    messages, _ = run(engine, model, "no model please", mode)
    assert model.requests == []
    assert messages[-1].content == "the model may not be asked about this"


@pytest.mark.parametrize("mode", MODES)
def test_before_call_narrows_the_tools_and_changes_the_settings(engine: Engine, mode: str) -> None:
    model = scripted("Done.")
    run(engine, model, "narrow the tools", mode)
    [(names, settings)] = model.bound
    assert "delete_file" not in names and set(names) == {t.name for t in TOOLS} - {"delete_file"}
    assert settings["temperature"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_before_call_replaced_messages_reach_the_model(engine: Engine, mode: str) -> None:
    model = scripted("Noted.")
    messages, _ = run(engine, model, "scrub my card 1234-5678", mode)
    assert model.requests[0][1].content == "scrub my card [card]"
    assert model.requests[0][1].id == "q1"
    assert messages[0].content == "scrub my card 1234-5678"  # the conversation keeps its own


# -- before_assistant_message and after_turn ----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_replaced_final_answer_keeps_the_messages_id(engine: Engine, mode: str) -> None:
    model = scripted(AIMessage("the internal codename is X", id="answer-1"))
    messages, thread = run(engine, model, "what is the codename?", mode)
    answers = [m for m in messages if isinstance(m, AIMessage)]
    assert len(answers) == 1
    assert (answers[0].id, answers[0].content) == ("answer-1", "I cannot share that.")
    [event] = [r.event for r in records(engine, thread, "after_turn")]
    assert event["answer"] == "I cannot share that."


@pytest.mark.parametrize("mode", MODES)
def test_a_runs_points_share_the_turn_and_the_thread_is_the_session(
    engine: Engine, mode: str
) -> None:
    model = scripted(call("read_file", {"path": "a"}), "Read.")
    _, thread = run(engine, model, "read a", mode)
    found = records(engine, thread)
    assert [r.point for r in found] == [
        "before_user_message",
        "before_call",
        "tool_call",
        "tool_result",
        "before_call",
        "before_assistant_message",
        "after_turn",
    ]
    turn = found[0].event["turn_id"]
    assert turn and {r.event["turn_id"] for r in found} == {turn}
    assert {r.scope["session_id"] for r in found} == {thread}
    assert found[-1].event["tool_calls"] == [
        {"name": "read_file", "input": {"path": "a"}, "call_id": "c1"}
    ]
    assert found[-1].event["question"] == "read a" and found[-1].event["answer"] == "Read."


@pytest.mark.parametrize("mode", MODES)
def test_a_second_turn_on_a_thread_gets_its_own_turn_and_no_earlier_injection(
    engine: Engine, mode: str
) -> None:
    saver = InMemorySaver()
    first = scripted("Moscow.")
    _, thread = run(engine, first, "where am I?", mode, checkpointer=saver)
    second = scripted("Fine.")
    messages, _ = run(
        engine, second, "how are you?", mode, checkpointer=saver, thread=thread, question_id="q2"
    )
    assert [m.content for m in messages] == ["where am I?", "Moscow.", "how are you?", "Fine."]
    sent = second.requests[0]
    assert sent[0].content == "You help.\n\nAnswer in English."
    assert [m.content for m in sent[1:]] == ["where am I?", "Moscow.", "how are you?"]
    turns = [r for r in records(engine, thread, "after_turn")]
    assert [t.event["question"] for t in turns] == ["where am I?", "how are you?"]
    assert turns[0].event["turn_id"] != turns[1].event["turn_id"]
