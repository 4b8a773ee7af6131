"""Delegate tools: another agent answers in a conversation of its own, through its hooks, by
the built-in runner (offline) or the host's turn runner (sync and async); depth at most 3;
cycles and unknown agents refused at load and on reload."""

from __future__ import annotations

import asyncio
import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.errors import ConfigError
from engine.tools.delegate import MAX_DEPTH
from tests import llm_server
from tests.conftest import REPO, write
from tests.llm_server import ScriptedLLM

NOTES = """
kind: inject
name: notes
messages:
  - role: system
    content: "The notes say: the launch is on Friday."
"""

llm = llm_server.llm

GATE = """
kind: script_hook
name: gate
language: python
source: |
  def on_before_user_message(event, host):
      if "secret" in event["question"]:
          return {"block": "the researcher does not discuss secrets"}
      if event["question"] == "ping":
          return {"answer": "pong from the researcher's hook"}
      return None
"""


def delegate(name: str, agent: str, **fields: str) -> str:
    extra = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"kind: delegate\nname: {name}\nagent: {agent}\ndescription: Ask {agent}.\n{extra}"


def research_project(tmp_path: Path) -> Path:
    return write(
        tmp_path / "config",
        {
            "agents/assistant/agent.yaml": "tools: [research]\n",
            "agents/assistant/tools/research.yaml": delegate(
                "research", "researcher", instruction="Answer from the notes."
            ),
            "agents/researcher/agent.yaml": "hooks: [notes, gate]\n",
            "agents/researcher/hooks/notes.yaml": NOTES,
            "agents/researcher/hooks/gate.yaml": GATE,
        },
    )


def chain_project(tmp_path: Path, names: str = "abcde") -> Path:
    """Agents a -> b -> c -> d -> e, each delegating to the next through its tool ``next``."""
    files: dict[str, str] = {}
    for here, there in pairwise(names):
        files[f"agents/{here}/agent.yaml"] = "tools: [next]\n"
        files[f"agents/{here}/tools/next.yaml"] = delegate("next", there)
    files[f"agents/{names[-1]}/agent.yaml"] = "hooks: [notes]\n"
    files[f"agents/{names[-1]}/hooks/notes.yaml"] = NOTES
    return write(tmp_path / "config", files)


def load(root: Path, tmp_path: Path) -> Engine:
    return Engine.load(root, db=str(tmp_path / "store.db"))


def test_a_delegate_answers_offline_through_the_sub_agents_hooks(tmp_path: Path) -> None:
    with load(research_project(tmp_path), tmp_path) as engine:
        assistant = engine.agent("assistant")
        spec = assistant.tool_specs()[0]["function"]
        assert spec["name"] == "research"
        assert spec["parameters"]["required"] == ["request"]
        result = assistant.call_tool(
            "research", {"request": "When is the launch?"}, session_id="s1", user_id="u1"
        )
        assert not result.is_error, result.content
        assert result.content.startswith("researcher (offline) was asked: When is the launch?")
        assert "the launch is on Friday" in result.content  # the sub-agent's inject hook ran
        assert "Answer from the notes." in result.content  # the tool's instruction
        assert result.data == {
            "agent": "researcher",
            "session_id": "s1.research",
            "chain": ["assistant", "researcher"],
            "depth": 1,
        }
        records = engine.records(agent="researcher", oldest_first=True)
        assert {r.point for r in records} >= {"before_user_message", "after_turn"}
        assert all("s1.research" in str(r.scope) for r in records)
        assert records[0].agent == "researcher"
        assert assistant.last_prompt("s1.research") is None  # the sub-conversation is its own
        assert engine.agent("researcher").last_prompt("s1.research") == "When is the launch?"


def test_a_refusal_or_an_answer_from_the_sub_agents_hooks_is_the_answer(tmp_path: Path) -> None:
    with load(research_project(tmp_path), tmp_path) as engine:
        assistant = engine.agent("assistant")
        refused = assistant.call_tool("research", {"request": "the secret plan"}, session_id="s")
        assert refused.content == "the researcher does not discuss secrets"
        answered = assistant.call_tool("research", {"request": "ping"}, session_id="s")
        assert answered.content == "pong from the researcher's hook"


def test_a_delegate_call_needs_a_session_and_a_request(tmp_path: Path) -> None:
    with load(research_project(tmp_path), tmp_path) as engine:
        assistant = engine.agent("assistant")
        no_session = assistant.call_tool("research", {"request": "x"})
        assert no_session.is_error and "needs a session_id" in no_session.content
        empty = assistant.call_tool("research", {"request": ""}, session_id="s")
        assert empty.is_error and "invalid input" in empty.content
        extra = assistant.call_tool("research", {"request": "x", "more": 1}, session_id="s")
        assert extra.is_error and "more" in extra.content


def test_the_async_call_runs_the_built_in_runner_on_the_loop(tmp_path: Path) -> None:
    with load(research_project(tmp_path), tmp_path) as engine:
        assistant = engine.agent("assistant")
        result = asyncio.run(
            assistant.acall_tool("research", {"request": "When?"}, session_id="s2")
        )
        assert result.content.startswith("researcher (offline) was asked: When?")
        assert result.data["session_id"] == "s2.research"


class ChainRunner:
    """A host's turn runner standing in for a model that always calls its ``next`` tool."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def __call__(self, agent: Any, request: str, *, session_id: str, user_id: str | None) -> str:
        if "next" not in agent.tools.tools:
            return f"{agent.name} answered {request!r}"
        result = agent.call_tool("next", {"request": request}, session_id=session_id)
        self.calls.append((agent.name, session_id, result))
        return result.content

    async def arun(self, agent: Any, request: str, *, session_id: str, user_id: str | None) -> str:
        if "next" not in agent.tools.tools:
            return f"{agent.name} answered {request!r} (async)"
        result = await agent.acall_tool("next", {"request": request}, session_id=session_id)
        self.calls.append((agent.name, session_id, result))
        return result.content


def test_the_host_turn_runner_answers_and_depth_stops_at_three(tmp_path: Path) -> None:
    with load(chain_project(tmp_path, "abcd"), tmp_path) as engine:
        runner = ChainRunner()
        engine.set_turn_runner(runner)
        result = engine.agent("a").call_tool("next", {"request": "hi"}, session_id="s")
        assert result.content == "d answered 'hi'"
        assert result.data["chain"] == ["a", "b"] and result.data["depth"] == 1
        assert [(name, session) for name, session, _ in runner.calls] == [
            ("c", "s.next.next"),
            ("b", "s.next"),
        ]
        deepest = runner.calls[0][2]
        assert deepest.data["chain"] == ["a", "b", "c", "d"]
        assert deepest.data["depth"] == MAX_DEPTH
    with load(chain_project(tmp_path / "deeper"), tmp_path / "deeper") as engine:
        runner = ChainRunner()
        engine.set_turn_runner(runner)
        result = engine.agent("a").call_tool("next", {"request": "hi"}, session_id="s")
        name, session, deepest = runner.calls[0]
        assert (name, session) == ("d", "s.next.next.next")
        assert deepest.is_error
        assert "delegation too deep: a -> b -> c -> d -> e is 4 levels (at most 3)" in (
            deepest.content
        )
        assert result.content == deepest.content  # each runner passed the answer up
        assert not engine.records(agent="e")  # the fourth level never ran


def test_the_async_host_turn_runner_is_awaited_and_depth_holds(tmp_path: Path) -> None:
    with load(chain_project(tmp_path), tmp_path) as engine:
        runner = ChainRunner()
        engine.set_aturn_runner(runner.arun)
        result = asyncio.run(
            engine.agent("b").acall_tool("next", {"request": "yo"}, session_id="t")
        )
        assert result.content == "e answered 'yo' (async)"
        assert result.data["chain"] == ["b", "c"]
        assert runner.calls[0][2].data["chain"] == ["b", "c", "d", "e"]
        deep = asyncio.run(engine.agent("a").acall_tool("next", {"request": "yo"}, session_id="u"))
        assert "delegation too deep: a -> b -> c -> d -> e" in deep.content


def test_a_sync_call_runs_an_async_runner_to_completion(tmp_path: Path) -> None:
    with load(chain_project(tmp_path, "cde"), tmp_path) as engine:
        runner = ChainRunner()
        engine.set_aturn_runner(runner.arun)
        result = engine.agent("c").call_tool("next", {"request": "q"}, session_id="s")
        assert result.content == "e answered 'q' (async)"


def test_a_runner_that_fails_or_answers_no_text_is_an_error_result(tmp_path: Path) -> None:
    with load(research_project(tmp_path), tmp_path) as engine:
        assistant = engine.agent("assistant")

        def broken(agent: Any, request: str, **scope: Any) -> str:
            raise RuntimeError("the model is down")

        engine.set_turn_runner(broken)
        failed = assistant.call_tool("research", {"request": "x"}, session_id="s")
        assert failed.is_error and "RuntimeError: the model is down" in failed.content
        engine.set_turn_runner(lambda agent, request, **scope: 42)
        wrong = assistant.call_tool("research", {"request": "x"}, session_id="s")
        assert wrong.is_error and "answered a int, not text" in wrong.content
        engine.set_turn_runner(None)
        assert not assistant.call_tool("research", {"request": "x"}, session_id="s").is_error


def problems_of(root: Path) -> str:
    with pytest.raises(ConfigError) as info:
        Engine.load(root, records=False, db=":memory:")
    return "\n".join(str(p) for p in info.value.problems)


def test_a_cycle_between_agents_is_a_load_error_naming_the_chain(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [to_b]\n",
            "agents/a/tools/to_b.yaml": delegate("to_b", "b"),
            "agents/b/agent.yaml": "tools: [to_c]\n",
            "agents/b/tools/to_c.yaml": delegate("to_c", "c"),
            "agents/c/agent.yaml": "tools: [to_a]\n",
            "agents/c/tools/to_a.yaml": delegate("to_a", "a"),
        },
    )
    shown = problems_of(root)
    assert "delegation cycle a -> b -> c -> a" in shown
    assert "agents/a/tools/to_b.yaml:3: agent:" in shown
    assert shown.count("delegation cycle") == 1  # one cycle, reported once


def test_an_agent_delegating_to_itself_or_to_no_agent_is_a_load_error(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [me, ghost]\n",
            "agents/a/tools/me.yaml": delegate("me", "a"),
            "agents/a/tools/ghost.yaml": delegate("ghost", "nobody"),
        },
    )
    shown = problems_of(root)
    assert "delegation cycle a -> a" in shown
    assert "ghost.yaml:3: agent: no agent 'nobody'" in shown


def test_a_disabled_delegate_closes_no_cycle(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [to_b]\n",
            "agents/a/tools/to_b.yaml": delegate("to_b", "b"),
            "agents/b/agent.yaml": "tools: [to_a]\n",
            "agents/b/tools/to_a.yaml": delegate("to_a", "a", enabled="false"),
        },
    )
    with Engine.load(root, records=False, db=":memory:") as engine:
        assert engine.agent("b").tool_specs() == []


def test_bad_delegate_fields_name_the_file_line_and_field(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [bad]\n",
            "agents/a/tools/bad.yaml": "kind: delegate\nname: bad\nagent: a\ndescrption: x\n",
        },
    )
    shown = problems_of(root)
    assert "bad.yaml:4: descrption: unknown field 'descrption'" in shown
    assert "did you mean 'description'?" in shown


def test_a_reload_that_would_close_a_cycle_keeps_the_last_good_tools(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [to_b]\n",
            "agents/a/tools/to_b.yaml": delegate("to_b", "b"),
            "agents/b/agent.yaml": "hooks: [notes]\n",
            "agents/b/hooks/notes.yaml": NOTES,
        },
    )
    with Engine.load(root, records=False, db=str(tmp_path / "s.db")) as engine:
        write(
            root,
            {
                "agents/b/agent.yaml": "hooks: [notes]\ntools: [to_a]\n",
                "agents/b/tools/to_a.yaml": delegate("to_a", "a"),
            },
        )
        assert engine.reload_agent("b") is False
        assert "delegation cycle" in str(engine.status())
        assert "a -> b -> a" in str(engine.status()) or "b -> a -> b" in str(engine.status())
        assert engine.agent("b").tool_specs() == []


def test_the_delegate_page_examples_run(tmp_path: Path) -> None:
    page = (REPO / "docs" / "builtins-delegate.md").read_text()
    files = {}
    for block in re.findall(r"```yaml\n(.*?)```", page, flags=re.S):
        first, _, body = block.partition("\n")
        files[first.removeprefix("# config/")] = body
    assert sorted(files) == [
        "agents/assistant/agent.yaml",
        "agents/assistant/tools/researcher.yaml",
        "agents/research/agent.yaml",
        "agents/research/hooks/no_secrets.yaml",
        "agents/research/hooks/notes.yaml",
    ]
    (host,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    with load(write(tmp_path / "config", files), tmp_path) as engine:
        exec(host, {"engine": engine})
        assert engine.agent("research").last_prompt("s1.researcher") == "the wifi password?"


def test_the_tools_page_delegate_example_loads(tmp_path: Path) -> None:
    page = (REPO / "docs" / "tools.md").read_text()
    section = page.split("\n## delegate\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    root = research_project(tmp_path)
    target = block.replace("agent: research\n", "agent: researcher\n")  # this project's name
    (root / "agents/assistant/tools/research.yaml").write_text(target)
    with load(root, tmp_path) as engine:
        (spec,) = engine.agent("assistant").tool_specs()
        assert spec["function"]["name"] == "researcher"


def test_check_reports_a_cycle_and_an_unknown_agent(tmp_path: Path) -> None:
    from engine.checking import check_project

    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [to_b, ghost]\n",
            "agents/a/tools/to_b.yaml": delegate("to_b", "b"),
            "agents/a/tools/ghost.yaml": delegate("ghost", "nobody"),
            "agents/b/agent.yaml": "tools: [to_a]\n",
            "agents/b/tools/to_a.yaml": delegate("to_a", "a"),
        },
    )
    shown = [str(p) for p in check_project(root).problems]
    assert any("delegation cycle a -> b -> a" in p for p in shown), shown
    assert any("ghost.yaml:3: agent: no agent 'nobody'" in p for p in shown), shown


def test_the_built_in_runner_asks_the_configured_provider(tmp_path: Path, llm: ScriptedLLM) -> None:
    root = research_project(tmp_path)
    provider = {"kind": "openai", "base_url": llm.url, "model": "m1", "timeout_s": 2}
    write(root, {"engine.yaml": f"provider: {json.dumps(provider)}\n"})
    llm.answer = lambda request: "live: " + request["messages"][-1]["content"]
    with load(root, tmp_path) as engine:
        assistant = engine.agent("assistant")
        result = assistant.call_tool("research", {"request": "When?"}, session_id="s")
        assert result.content == "live: When?"
        (asked,) = llm.requests
        assert asked["model"] == "m1"
        assert asked["messages"][0] == {"role": "system", "content": "Answer from the notes."}
        assert any("launch is on Friday" in m["content"] for m in asked["messages"][1:])
        llm.reply(status=500)
        fallback = assistant.call_tool("research", {"request": "Where?"}, session_id="s")
        assert fallback.content.startswith("researcher (offline) was asked: Where?")


def test_concurrent_sessions_delegate_into_their_own_sub_conversations(tmp_path: Path) -> None:
    with load(chain_project(tmp_path, "bcde"), tmp_path) as engine:
        seen: list[tuple[str, str]] = []

        async def runner(agent: Any, request: str, *, session_id: str, user_id: str | None) -> str:
            seen.append((agent.name, session_id))
            await asyncio.sleep(0.01)  # both sessions are in flight at once
            if "next" in agent.tools.tools:
                result = await agent.acall_tool("next", {"request": request}, session_id=session_id)
                return result.content
            return f"{agent.name}: {request} in {session_id}"

        engine.set_aturn_runner(runner)

        async def both() -> list[Any]:
            b = engine.agent("b")
            return list(
                await asyncio.gather(
                    b.acall_tool("next", {"request": "one"}, session_id="x"),
                    b.acall_tool("next", {"request": "two"}, session_id="y"),
                )
            )

        x, y = asyncio.run(both())
        assert x.content == "e: one in x.next.next.next"
        assert y.content == "e: two in y.next.next.next"
        assert sorted(s for _, s in seen) == sorted(
            f"{s}{'.next' * n}" for s in "xy" for n in (1, 2, 3)
        )


def test_a_delegate_loaded_outside_an_engine_refuses_clearly(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from engine.tools.delegate import load_delegate

    path = tmp_path / "ask.yaml"
    data = {"kind": "delegate", "name": "ask", "agent": "b", "description": "Ask b."}
    loading = SimpleNamespace(
        agent="a", settings=SimpleNamespace(tools=SimpleNamespace(timeout_ms=1000))
    )
    loading.line = lambda *_: None
    (tool,) = load_delegate(path, data, loading)  # type: ignore[arg-type]
    ctx = SimpleNamespace(agent="a", session_id="s", user_id=None)
    result = tool.invoke({"request": "x"}, ctx)
    assert result.is_error and "needs an engine" in result.content
