"""An approval in a LangChain run: the tool call pauses the run with an interrupt shaped
like HumanInTheLoopMiddleware's; resuming with approve runs the tool, with reject refuses it
(naming who); the answer is recorded in the engine's store. Sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from engine import Engine
from engine.integrations.langchain import HookMiddleware
from engine.integrations.langchain_approval import decision_of
from tests.conftest import write
from tests.integrations.langchain_agent import MODES, TOOLS, call, ran, scripted

FILES = {
    "agents/ops/agent.yaml": "hooks: [confirm]\n",
    "agents/ops/hooks/confirm.yaml": (
        'kind: approval\nname: confirm\ntools: ["delete_*"]\nmessage: "Delete {{input.path}}?"\n'
    ),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root: Path = tmp_path_factory.mktemp("lc-approval")
    with Engine.load(write(root / "config", FILES), db=str(root / "s.db")) as loaded:
        yield loaded


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    ran.clear()


def drive(engine: Engine, mode: str, thread: str, resume: Any) -> tuple[Any, Any]:
    """One run that asks, then its resumption with ``resume``: both results."""
    model = scripted(call("delete_file", {"path": "a.txt"}), "Done.")
    agent = create_agent(
        model,
        TOOLS,
        middleware=[HookMiddleware(engine.agent("ops"))],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": thread}}
    state = {"messages": [HumanMessage("delete a.txt", id="q1")]}
    if mode == "invoke":
        first = agent.invoke(state, config=config)
        return first, agent.invoke(Command(resume=resume), config=config)

    async def both() -> tuple[Any, Any]:
        first = await agent.ainvoke(state, config=config)
        return first, await agent.ainvoke(Command(resume=resume), config=config)

    return asyncio.run(both())


@pytest.mark.parametrize("mode", MODES)
def test_the_run_pauses_and_approve_runs_the_tool(engine: Engine, mode: str) -> None:
    first, done = drive(engine, mode, f"approve-{mode}", {"decisions": [{"type": "approve"}]})
    (paused,) = first["__interrupt__"]
    request = paused.value
    assert request["action_requests"] == [
        {"name": "delete_file", "args": {"path": "a.txt"}, "description": "Delete a.txt?"}
    ]
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    assert ran == [("delete_file", {"path": "a.txt"})]
    assert "__interrupt__" not in done
    resolved = engine.store.approval_get(request["approval_id"])  # type: ignore[attr-defined]
    assert resolved.status == "approved" and resolved.resolved_by == "langchain"


@pytest.mark.parametrize("mode", MODES)
def test_reject_refuses_the_tool_naming_who_and_why(engine: Engine, mode: str) -> None:
    answer = {"decisions": [{"type": "reject", "message": "keep it", "by": "alice"}]}
    _, done = drive(engine, mode, f"reject-{mode}", answer)
    assert ran == []
    refused = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in refused] == ["denied by alice: keep it"]
    assert refused[0].status == "error"


def test_an_edit_decision_blocks_the_tool_saying_why(engine: Engine) -> None:
    _, done = drive(engine, "invoke", "edit", {"decisions": [{"type": "edit"}]})
    assert ran == []
    (refused,) = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert "approve or reject" in str(refused.content)


def test_decisions_are_read_in_every_shape() -> None:
    assert decision_of(True) == (True, "langchain", None)
    assert decision_of({"type": "reject", "message": "no"}) == (False, "langchain", "no")
    with pytest.raises(ValueError, match="one decision"):
        decision_of({"decisions": []})
