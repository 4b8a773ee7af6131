"""An approval in an OpenAI Agents run: ``guard_tools``' ``needs_approval`` interrupts the
run when tool_call asks a person; ``resolve_approval`` answers in the engine and in the run's
state; approved runs the tool, rejected does not; approving in the state alone is not
enough (the engine still asks, and the tool is rejected saying so)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from engine.integrations import openai_agents as oa
from engine.runtime import Agent as EngineAgent
from engine.runtime import Engine

pytestmark = pytest.mark.anyio
ASK = 'kind: approval\nname: confirm\ntools: ["delete_*"]\nmessage: "Delete {{input.path}}?"\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
def ops(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> EngineAgent:
    root = project(
        {"agents/ops/agent.yaml": "hooks: [confirm]\n", "agents/ops/hooks/confirm.yaml": ASK}
    )
    return load(root).agent("ops")


def setup(ops: EngineAgent) -> tuple[Agent[Any], ScriptedModel, list[str]]:
    deleted: list[str] = []

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return "deleted"

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "text"

    model = ScriptedModel(
        [[function_call("delete_file", {"path": "a.txt"}, call_id="c1")], [assistant_message("ok")]]
    )
    agent = Agent(name="a", model=model, tools=oa.guard_tools([delete_file, read_file], ops))
    return agent, model, deleted


def outputs(model: ScriptedModel, call: int) -> dict[str, str]:
    items = model.calls[call].input
    return {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}


async def test_the_run_pauses_and_an_approval_runs_the_tool(ops: EngineAgent) -> None:
    agent, model, deleted = setup(ops)
    paused = await Runner.run(agent, "delete a.txt", context={"session_id": "s1"})
    (item,) = paused.interruptions
    assert deleted == [] and item.name == "delete_file"
    (waiting,) = ops.approvals(session_id="s1")
    assert waiting.message == "Delete a.txt?"
    state = paused.to_state()
    await oa.resolve_approval(state, item, ops, True, by="alice", note="fine")
    await Runner.run(agent, state)
    assert deleted == ["a.txt"] and outputs(model, 1) == {"c1": "deleted"}
    decided = ops.engine.store.approval_get(waiting.id)  # type: ignore[attr-defined]
    assert decided.status == "approved" and decided.resolved_by == "alice"


async def test_a_rejection_is_recorded_and_the_tool_does_not_run(ops: EngineAgent) -> None:
    agent, model, deleted = setup(ops)
    paused = await Runner.run(agent, "delete a.txt", context={"session_id": "s2"})
    state = paused.to_state()
    await oa.resolve_approval(state, paused.interruptions[0], ops, False, by="bob", note="no")
    await Runner.run(agent, state)
    assert deleted == [] and outputs(model, 1) == {"c1": "denied by bob: no"}
    assert ops.approvals(session_id="s2") == []


async def test_approving_only_in_the_run_state_still_blocks_the_tool(ops: EngineAgent) -> None:
    agent, model, deleted = setup(ops)
    paused = await Runner.run(agent, "delete a.txt", context={"session_id": "s3"})
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    await Runner.run(agent, state)
    assert deleted == []
    assert outputs(model, 1)["c1"] == "approval required: Delete a.txt?"


async def test_a_call_id_two_runs_share_resolves_the_call_the_person_saw(ops: EngineAgent) -> None:
    # models behind some servers number their calls (call_0, call_1...): two runs may wait
    # on calls with one id; approving one run's item must not approve the other's input
    deleted: list[str] = []

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return "deleted"

    def run_agent(path: str) -> Agent[Any]:
        model = ScriptedModel(
            [
                [function_call("delete_file", {"path": path}, call_id="c1")],
                [assistant_message("ok")],
            ]
        )
        return Agent(name="a", model=model, tools=oa.guard_tools([delete_file], ops))

    safe, danger = run_agent("notes.txt"), run_agent("/")
    first = await Runner.run(safe, "delete notes", context={"session_id": "s1"})
    await Runner.run(danger, "delete root", context={"session_id": "s2"})
    (seen,) = first.interruptions
    state = first.to_state()
    await oa.resolve_approval(state, seen, ops, True, by="alice")
    (root,) = ops.approvals(session_id="s2")
    assert root.input == {"path": "/"}  # still waiting: alice saw notes.txt
    await Runner.run(safe, state)
    assert deleted == ["notes.txt"]
