"""OpenAI Agents SDK (engine/integrations/openai_agents.py), run against the real ``agents``
package with its ``ScriptedModel``: what each guard does to the run, and what the model sees."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    Runner,
    WebSearchTool,
    function_tool,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from engine.errors import EngineError, EventError
from engine.integrations import openai_agents as oa
from engine.outcome import Outcome
from engine.runtime import Agent as EngineAgent
from engine.runtime import Engine
from tests.conftest import REPO
from tests.integrations.oai_policy import SECRET, policy_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    """The SDK would export traces to OpenAI: no key, no network here."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
def engine(tmp_path: Path, load: Callable[..., Engine]) -> Engine:
    return load(policy_config(tmp_path / "config"))


@pytest.fixture
def ops(engine: Engine) -> EngineAgent:
    return engine.agent("ops")


@dataclass
class Ran:
    """What the tools of a test saw: each call's input."""

    calls: list[tuple[str, dict[str, Any]]]


@pytest.fixture
def ran() -> Ran:
    return Ran([])


def tools(ran: Ran, **guards: Any) -> list[Any]:
    """fetch, delete_file, crash and crash_result, recording their calls in ``ran``."""

    @function_tool(**guards)
    def fetch(url: str) -> str:
        """Fetch a URL."""
        ran.calls.append(("fetch", {"url": url}))
        return f"body of {url}, key {SECRET}"

    @function_tool(**guards)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.calls.append(("delete_file", {"path": path}))
        return "deleted"

    @function_tool(**guards)
    async def crash(path: str) -> str:
        """A tool whose guard fails."""
        ran.calls.append(("crash", {"path": path}))
        return "ran"

    @function_tool(**guards)
    def crash_result(path: str) -> str:
        """A tool whose redactor fails."""
        ran.calls.append(("crash_result", {"path": path}))
        return f"secret {SECRET}"

    return [fetch, delete_file, crash, crash_result]


def outputs(model: ScriptedModel, call: int) -> dict[str, str]:
    """The tool outputs the model got in its ``call``-th request, by call id."""
    items = model.calls[call].input
    return {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}


def user_text(model: ScriptedModel, call: int) -> list[str]:
    items = model.calls[call].input
    if isinstance(items, str):
        return [items]
    return [i["content"] for i in items if i.get("role") in ("user", "system")]


def one_tool_call(name: str, args: Any, answer: str = "done") -> ScriptedModel:
    return ScriptedModel([[function_call(name, args, call_id="c1")], [assistant_message(answer)]])


# -- tool guardrails -------------------------------------------------------------------------------


async def test_a_blocked_tool_does_not_run_and_the_model_gets_the_reason(
    ops: EngineAgent, ran: Ran
) -> None:
    guards = oa.tool_guardrails(ops)
    model = one_tool_call("delete_file", {"path": "notes.txt"})
    agent = Agent(name="a", model=model, tools=tools(ran, **_guarded(guards)))
    result = await Runner.run(agent, "clean up")
    assert ran.calls == []
    assert outputs(model, 1) == {"c1": "deleting files is not allowed here"}
    assert result.final_output == "done"
    info = result.tool_input_guardrail_results[0].output.output_info
    assert isinstance(info, Outcome) and info.blocked


async def test_a_secret_in_a_tool_result_is_redacted_before_the_model_sees_it(
    ops: EngineAgent, ran: Ran
) -> None:
    guards = oa.tool_guardrails(ops)
    model = one_tool_call("fetch", {"url": "https://example.org"})
    agent = Agent(name="a", model=model, tools=tools(ran, **_guarded(guards)))
    await Runner.run(agent, "fetch it")
    assert ran.calls == [("fetch", {"url": "https://example.org"})]
    assert outputs(model, 1) == {"c1": "body of https://example.org, key [REDACTED]"}
    assert SECRET not in json.dumps(model.calls[1].input)


async def test_a_rewritten_input_blocks_a_tool_that_guard_tools_did_not_wrap(
    ops: EngineAgent, ran: Ran
) -> None:
    guards = oa.tool_guardrails(ops)
    model = one_tool_call("fetch", {"url": "http://example.org"})
    agent = Agent(name="a", model=model, tools=tools(ran, **_guarded(guards)))
    await Runner.run(agent, "fetch it")
    assert ran.calls == []
    assert "rewrote this call's input" in outputs(model, 1)["c1"]
    assert "guard_tools" in outputs(model, 1)["c1"]


@pytest.mark.parametrize(
    "arguments", ["{not json", "[1, 2]", '"text"', '{"path": "/etc", "path": "a"}']
)
async def test_malformed_tool_arguments_block_the_call(
    ops: EngineAgent, ran: Ran, arguments: str
) -> None:
    model = one_tool_call("fetch", arguments)
    agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops))
    await Runner.run(agent, "fetch it")
    assert ran.calls == []
    said = outputs(model, 1)["c1"]
    assert said.startswith("hookengine: the tool's arguments are not valid")
    assert said.endswith("the tool was not run")


async def test_a_crashing_guard_blocks_the_tool_and_names_the_hook(
    ops: EngineAgent, ran: Ran
) -> None:
    model = one_tool_call("crash", {"path": "a"})
    agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops))
    await Runner.run(agent, "go")
    assert ran.calls == []
    assert outputs(model, 1) == {
        "c1": "a required check failed: hook 'policy' (error); the tool was not run"
    }


async def test_a_crashing_redactor_withholds_the_output(ops: EngineAgent, ran: Ran) -> None:
    model = one_tool_call("crash_result", {"path": "a"})
    agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops))
    await Runner.run(agent, "go")
    assert ran.calls == [("crash_result", {"path": "a"})]
    assert outputs(model, 1) == {
        "c1": "[result withheld: refused: the check 'policy' failed (error)]"
    }


async def test_an_engine_failure_blocks_the_tool_naming_the_cause(
    ops: EngineAgent, ran: Ran
) -> None:
    def broken(context: Any) -> dict[str, Any]:
        return {"user_id": 42}  # not text: the engine refuses the call

    model = one_tool_call("fetch", {"url": "https://example.org"})
    agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops, scope=broken))
    await Runner.run(agent, "go")
    assert ran.calls == []
    said = outputs(model, 1)["c1"]
    assert said.startswith("hookengine: the policy check could not run: user_id: must be text")
    assert said.endswith("the tool was not run")


# -- guard_tools -------------------------------------------------------------------------------


async def test_guard_tools_runs_the_tool_with_the_rewritten_input(
    engine: Engine, ops: EngineAgent, ran: Ran
) -> None:
    model = one_tool_call("fetch", {"url": "http://example.org"})
    agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops))
    await Runner.run(agent, "fetch it")
    assert ran.calls == [("fetch", {"url": "https://example.org"})]
    # tool_result saw the input the tool ran with, and redacted the output
    assert outputs(model, 1) == {"c1": "body of https://example.org, key [REDACTED]"}
    result = engine.records(point="tool_result")[0]
    assert result.event["input"] == {"url": "https://example.org"}
    assert result.host == "openai-agents"


async def test_guard_tools_decides_when_the_tool_is_invoked_without_its_guardrail(
    ops: EngineAgent, ran: Ran
) -> None:
    from agents.tool_context import ToolContext

    fetch, delete_file = oa.guard_tools(tools(ran)[:2], ops)
    args = json.dumps({"url": "http://example.org"})
    ctx = ToolContext(None, tool_name="fetch", tool_call_id="c9", tool_arguments=args)
    assert await fetch.on_invoke_tool(ctx, args) == "body of https://example.org, key " + SECRET
    args = json.dumps({"path": "x"})
    ctx = ToolContext(None, tool_name="delete_file", tool_call_id="c8", tool_arguments=args)
    assert await delete_file.on_invoke_tool(ctx, args) == "deleting files is not allowed here"
    other = ToolContext(None, tool_name="fetch", tool_call_id="c7", tool_arguments="{}")
    said = await fetch.on_invoke_tool(other, json.dumps({"url": "https://example.org"}))
    assert said.startswith("hookengine: this call is not the one the policy checked")
    assert ran.calls == [("fetch", {"url": "https://example.org"})]


async def test_a_rewrite_applies_to_a_tool_run_after_an_approval(ops: EngineAgent) -> None:
    seen: list[str] = []

    @function_tool(needs_approval=True)
    def fetch(url: str) -> str:
        """Fetch a URL."""
        seen.append(url)
        return "body"

    model = one_tool_call("fetch", {"url": "http://example.org"})
    agent = Agent(name="a", model=model, tools=oa.guard_tools([fetch], ops))
    paused = await Runner.run(agent, "fetch it")
    assert seen == [] and len(paused.interruptions) == 1
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    await Runner.run(agent, state)
    assert seen == ["https://example.org"]
    assert outputs(model, 1) == {"c1": "body"}


def test_guard_tools_keeps_a_guarded_tool_and_refuses_a_hosted_one(
    ops: EngineAgent, ran: Ran
) -> None:
    once = oa.guard_tools(tools(ran), ops)
    twice = oa.guard_tools(once, ops)
    assert [t is u for t, u in zip(once, twice, strict=True)] == [True] * 4
    assert all(len(t.tool_input_guardrails or []) == 1 for t in twice)
    with pytest.raises(EngineError, match=r"tools\[1\] \(web_search\): a WebSearchTool cannot"):
        oa.guard_tools([once[0], WebSearchTool()], ops)


def test_a_scope_with_an_unknown_key_or_a_wrong_agent_is_refused_at_once(ops: EngineAgent) -> None:
    with pytest.raises(EventError) as info:
        oa.tool_guardrails(ops, scope={"user": "u1"})
    assert info.value.errors[0]["loc"] == ["scope", "user"]
    with pytest.raises(TypeError, match="agent: must be an engine agent"):
        oa.tool_guardrails(Agent(name="sdk"))  # type: ignore[arg-type]


async def test_the_scope_comes_from_the_run_context_or_a_callable(
    engine: Engine, ops: EngineAgent, ran: Ran
) -> None:
    @dataclass
    class Who:
        user_id: str
        session_id: str

    for scope, context, user in [
        (None, Who("u-attr", "s1"), "u-attr"),
        (None, {"user_id": "u-key"}, "u-key"),
        (lambda c: {"user_id": c.user_id.upper()}, Who("u-call", "s2"), "U-CALL"),
        ({"user_id": "fixed"}, None, "fixed"),
    ]:
        model = one_tool_call("delete_file", {"path": "x"})
        agent = Agent(name="a", model=model, tools=oa.guard_tools(tools(ran), ops, scope=scope))
        await Runner.run(agent, "go", context=context)
        assert engine.records(point="tool_call")[0].scope["user_id"] == user


def test_tool_guardrails_work_under_run_sync(ops: EngineAgent, ran: Ran) -> None:
    model = one_tool_call("delete_file", {"path": "notes.txt"})
    agent = Agent(name="a", model=model, tools=tools(ran, **_guarded(oa.tool_guardrails(ops))))
    try:
        assert Runner.run_sync(agent, "go").final_output == "done"
    finally:
        # run_sync leaves the thread's default loop open on purpose (for its session helpers):
        # close it, or its sockets surface later as an unraisable ResourceWarning
        policy = asyncio.get_event_loop_policy()
        policy.get_event_loop().close()
        policy.set_event_loop(None)
    assert ran.calls == [] and outputs(model, 1) == {"c1": "deleting files is not allowed here"}


# -- input and output guardrails, the model-input filter -----------------------------------------


async def test_a_blocked_question_trips_the_input_guardrail_with_no_model_call(
    ops: EngineAgent,
) -> None:
    model = ScriptedModel([[assistant_message("never")]])
    agent = Agent(name="a", model=model, input_guardrails=[oa.input_guardrail(ops)])
    with pytest.raises(InputGuardrailTripwireTriggered) as info:
        await Runner.run(agent, "my password is hunter2")
    assert model.calls == ()
    out = info.value.guardrail_result.output.output_info
    assert isinstance(out, Outcome) and out.reason == "please do not share passwords"


@pytest.mark.parametrize(("question", "trips"), [("ping", True), ("a@b.org", True), ("hi", False)])
async def test_the_input_guardrail_trips_on_an_answer_and_a_rewrite(
    ops: EngineAgent, question: str, trips: bool
) -> None:
    model = ScriptedModel([[assistant_message("hello")]])
    agent = Agent(name="a", model=model, input_guardrails=[oa.input_guardrail(ops)])
    if not trips:
        assert (await Runner.run(agent, question)).final_output == "hello"
        return
    with pytest.raises(InputGuardrailTripwireTriggered):
        await Runner.run(agent, question)
    assert model.calls == ()


async def test_a_changed_answer_trips_the_output_guardrail(ops: EngineAgent) -> None:
    model = ScriptedModel([[assistant_message("the internal price list")]])
    agent = Agent(name="a", model=model, output_guardrails=[oa.output_guardrail(ops)])
    with pytest.raises(OutputGuardrailTripwireTriggered) as info:
        await Runner.run(agent, "prices?")
    out = info.value.guardrail_result.output.output_info
    assert isinstance(out, Outcome) and out.answer == "I cannot share that."
    fine = Agent(name="b", model=ScriptedModel([[assistant_message("ok")]]))
    fine.output_guardrails = [oa.output_guardrail(ops)]
    assert (await Runner.run(fine, "prices?")).final_output == "ok"


async def test_the_model_input_filter_adds_sections_and_a_block_stops_the_model_call(
    ops: EngineAgent,
) -> None:
    config = RunConfig(call_model_input_filter=oa.call_model_input_filter(ops))
    model = ScriptedModel([[assistant_message("hi")]])
    agent = Agent(name="a", model=model, instructions="Be brief.")
    await Runner.run(agent, "hello", run_config=config)
    assert model.calls[0].system_instructions == "Be brief.\n\nAnswer in English."
    blocked = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(oa.ModelCallBlocked) as info:
        await Runner.run(agent.clone(model=blocked), "the forbidden topic", run_config=config)
    assert blocked.calls == ()
    assert info.value.reason == "this topic is not discussed here"


async def test_the_model_input_filter_sends_the_messages_a_hook_rewrote(ops: EngineAgent) -> None:
    config = RunConfig(call_model_input_filter=oa.call_model_input_filter(ops))
    model = ScriptedModel([[assistant_message("noted")]])
    await Runner.run(Agent(name="a", model=model), f"my key is {SECRET}", run_config=config)
    assert model.calls[0].input == [{"role": "user", "content": "my key is [REDACTED]"}]


async def test_a_tools_change_the_filter_cannot_apply_is_reported(
    ops: EngineAgent, ran: Ran, caplog: pytest.LogCaptureFixture
) -> None:
    config = RunConfig(call_model_input_filter=oa.call_model_input_filter(ops))
    model = ScriptedModel([[assistant_message("hi")]])
    agent = Agent(name="a", model=model, tools=tools(ran))
    with caplog.at_level(logging.WARNING, logger="engine.integrations.openai_agents"):
        await Runner.run(agent, "narrow it", run_config=config)
    assert len(model.calls[0].tools) == 4  # the filter cannot take a tool away
    assert "changed 'tools', which openai-agents cannot apply at before_call" in caplog.text


# -- run -----------------------------------------------------------------------------------------


async def test_run_refuses_a_blocked_turn_with_no_model_call(
    engine: Engine, ops: EngineAgent
) -> None:
    model = ScriptedModel([[assistant_message("never")]])
    turn = await oa.run(Agent(name="a", model=model), "password: hunter2", engine_agent=ops)
    assert model.calls == ()
    assert turn.blocked and turn.final_output == "please do not share passwords"
    assert turn.result is None
    assert engine.records(point="after_turn") == []


async def test_run_answers_from_a_hook_and_tells_after_turn(
    engine: Engine, ops: EngineAgent
) -> None:
    model = ScriptedModel([[assistant_message("never")]])
    turn = await oa.run(Agent(name="a", model=model), "ping", engine_agent=ops)
    assert model.calls == ()
    assert (turn.final_output, turn.answered, turn.notices) == (
        "pong",
        True,
        ["answered from the policy"],
    )
    after = engine.records(point="after_turn")[0]
    assert after.event["answer"] == "pong" and after.event["turn_id"] == turn.turn_id


async def test_run_rewrites_the_question_and_injects_messages(ops: EngineAgent) -> None:
    model = ScriptedModel([[assistant_message("ok")], [assistant_message("ok")]])
    agent = Agent(name="a", model=model)
    await oa.run(agent, "write to me@example.org", engine_agent=ops)
    assert user_text(model, 0) == ["write to [email]"]
    await oa.run(agent, [{"role": "user", "content": "which city?"}], engine_agent=ops)
    assert user_text(model, 1) == ["The user's city is Moscow.", "which city?"]


async def test_run_guards_tools_replaces_the_answer_and_keeps_one_turn_id(
    engine: Engine, ops: EngineAgent, ran: Ran
) -> None:
    model = ScriptedModel(
        [
            [function_call("delete_file", {"path": "a"}, call_id="c1")],
            [function_call("fetch", {"url": "http://x.org"}, call_id="c2")],
            [assistant_message("done, with internal notes")],
        ]
    )
    agent = Agent(name="a", model=model, tools=tools(ran), instructions="Be brief.")
    turn = await oa.run(agent, "tidy up", engine_agent=ops, context={"user_id": "u1"})
    assert ran.calls == [("fetch", {"url": "https://x.org"})]
    assert outputs(model, 1) == {"c1": "deleting files is not allowed here"}
    assert outputs(model, 2)["c2"] == "body of https://x.org, key [REDACTED]"
    assert all(c.system_instructions == "Be brief.\n\nAnswer in English." for c in model.calls)
    assert turn.final_output == "I cannot share that." and not turn.blocked
    assert turn.result is not None and turn.result.final_output == "done, with internal notes"
    records = engine.records(limit=100)
    assert {r.event["turn_id"] for r in records} == {turn.turn_id}
    assert {r.scope["user_id"] for r in records} == {"u1"}
    after = engine.records(point="after_turn")[0]
    assert [c["name"] for c in after.event["tool_calls"]] == ["delete_file", "fetch"]
    assert after.event["answer"] == "I cannot share that."


async def test_run_turns_a_blocked_model_call_into_a_refused_turn(
    engine: Engine, ops: EngineAgent
) -> None:
    model = ScriptedModel([[assistant_message("never")]])
    turn = await oa.run(Agent(name="a", model=model), "the forbidden topic", engine_agent=ops)
    assert model.calls == ()
    assert (turn.blocked, turn.reason) == (True, "this topic is not discussed here")
    assert engine.records(point="after_turn") == []


async def test_run_withholds_an_answer_its_check_failed_on(
    engine: Engine, ops: EngineAgent
) -> None:
    model = ScriptedModel([[assistant_message("this will explode")]])
    turn = await oa.run(Agent(name="a", model=model), "hi", engine_agent=ops)
    assert turn.blocked
    assert turn.final_output == "Sorry, this answer was withheld because a required check failed."
    assert turn.reason == "refused: the check 'policy' failed (error)"
    assert turn.result is not None and turn.result.final_output == "this will explode"
    assert engine.records(point="after_turn") == []


async def test_a_check_that_cannot_run_refuses_the_model_call_and_trips_the_guardrails(
    ops: EngineAgent,
) -> None:
    def broken(context: Any) -> dict[str, Any]:
        raise RuntimeError("no user here")

    config = RunConfig(call_model_input_filter=oa.call_model_input_filter(ops, scope=broken))
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(oa.ModelCallBlocked) as info:
        await Runner.run(Agent(name="a", model=model), "hi", run_config=config)
    assert model.calls == ()
    assert info.value.reason == ("hookengine: the policy check failed (RuntimeError: no user here)")
    guarded = Agent(name="a", model=model, input_guardrails=[oa.input_guardrail(ops, scope=broken)])
    with pytest.raises(InputGuardrailTripwireTriggered) as tripped:
        await Runner.run(guarded, "hi")
    assert model.calls == ()
    assert "RuntimeError: no user here" in tripped.value.guardrail_result.output.output_info


async def test_run_chains_the_callers_model_input_filter_before_its_own(ops: EngineAgent) -> None:
    from agents.run_config import CallModelData, ModelInputData

    def theirs(data: CallModelData[Any]) -> ModelInputData:
        return ModelInputData(input=data.model_data.input, instructions="Theirs.")

    model = ScriptedModel([[assistant_message("ok")]])
    config = RunConfig(call_model_input_filter=theirs)
    await oa.run(Agent(name="a", model=model), "hi", engine_agent=ops, run_config=config)
    assert model.calls[0].system_instructions == "Theirs.\n\nAnswer in English."


async def test_run_raises_for_input_that_is_not_text_or_items(ops: EngineAgent) -> None:
    model = ScriptedModel([])
    with pytest.raises(EventError) as info:
        await oa.run(Agent(name="a", model=model), 42, engine_agent=ops)  # type: ignore[arg-type]
    assert info.value.errors[0]["loc"] == ["input"]
    with pytest.raises(TypeError, match="run_config: must be a RunConfig, not dict"):
        await oa.run(Agent(name="a", model=model), "hi", engine_agent=ops, run_config={})  # type: ignore[arg-type]


# -- rendering and imports -------------------------------------------------------------------------


def test_mcp_content_reaches_hooks_as_text() -> None:
    text = {"type": "text", "text": "line one"}
    image = {"type": "image", "image_url": "data:image/png;base64,AAAA"}
    assert oa.hook_result(text) == "line one"
    assert oa.hook_result([text, image, {"type": "text", "text": "two"}]) == (
        "line one\n[image: image/png]\ntwo"
    )
    assert oa.hook_result({"rows": [1, 2]}) == {"rows": [1, 2]}
    assert oa.hook_result(float("nan")) == "nan"


def test_import_engine_does_not_import_the_sdk() -> None:
    program = (
        "import sys, engine\n"
        "engine.Engine, engine.Outcome\n"
        "print(sorted(m for m in ('agents', 'openai', 'mcp', 'langchain') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    assert done.stdout.strip() == "[]"


def _guarded(guards: oa.ToolGuardrails) -> dict[str, Any]:
    return {"tool_input_guardrails": guards.input, "tool_output_guardrails": guards.output}
