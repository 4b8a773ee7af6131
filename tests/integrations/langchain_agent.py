"""Shared parts of the LangChain middleware tests: the guard agent's project, a scripted chat
model that records what it is asked, tools that record their runs, and one agent run."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command
from pydantic import Field

from engine import Engine
from engine.integrations.langchain import HookMiddleware
from engine.store import Record
from tests.conftest import write

GUARD_SCRIPT = """
def on_before_user_message(event, host):
    q = event["question"]
    if "password" in q:
        return {"block": "please do not share passwords"}
    if q == "opening hours?":
        return {"answer": "We are open 9 to 5."}
    if q.startswith("rewrite:"):
        return {"question": q[8:].strip()}
    if q == "where am I?":
        return {"messages": [
            {"role": "system", "content": "The user's city is Moscow."},
            {"role": "user", "content": "(from memory) I like tea."},
        ]}
    return None


def on_before_call(event, host):
    text = " ".join(str(m["content"]) for m in event["messages"])
    if "explode the call" in text:
        raise RuntimeError("the call guard broke")
    if "no model" in text:
        return {"block": "the model may not be asked about this"}
    change = {"sections": ["Answer in English."]}
    if "narrow" in text:
        change["tools"] = [t for t in event["tools"] if t["name"] != "delete_file"]
        change["settings"] = {"temperature": 0}
    if "scrub" in text:
        change["messages"] = [
            {**m, "content": host.redact(m["content"], ["\\\\d{4}-\\\\d{4}"], "[card]")}
            if m["role"] == "user" else m
            for m in event["messages"]
        ]
    return change


def on_tool_call(event, host):
    if event["name"] == "delete_file":
        return {"block": "deleting files is not allowed here"}
    if event["name"] == "shell" and event["input"]["command"].startswith("ls"):
        return {"input": {"command": event["input"]["command"] + " --color=never"}}
    if event["name"] == "crash":
        raise RuntimeError("the guard broke")
    if event["name"] == "notify":
        return {"notice": "a notice LangChain cannot show"}
    return None


def on_tool_result(event, host):
    result = event["result"]
    if "explode" in str(result):
        raise RuntimeError("the result guard broke")
    if isinstance(result, str) and "sk-" in result:
        return {"result": host.redact(result, ["sk-[A-Za-z0-9]{20,}"], "[REDACTED]")}
    return None


def on_before_assistant_message(event, host):
    if "explode" in event["answer"]:
        raise RuntimeError("the answer guard broke")
    if "internal" in event["answer"]:
        return {"answer": "I cannot share that."}
    return None


def on_after_turn(event, host):
    host.log("turn: " + event["question"] + " -> " + event["answer"])
"""

GUARD_FILES = {
    "engine.yaml": "scripts:\n  workers: 1\n  timeout_ms: 1000\n",
    "agents/guard/agent.yaml": "hook_files: [hooks/guard.yaml]\n",
    "agents/guard/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.py\n",
    "agents/guard/hooks/guard.py": GUARD_SCRIPT,
}
"""Agent ``guard`` blocks, answers, rewrites, injects, narrows, redacts and replaces."""

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
MODES = ["invoke", "ainvoke"]
_threads = itertools.count()


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers from a script and records every request it gets;
    ``bind_tools`` records the tools and settings and returns the model itself."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[tuple[list[str], dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.bound.append(([t.name for t in tools], kwargs))
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted(*replies: AIMessage | str) -> ScriptedModel:
    return ScriptedModel(messages=iter(replies))


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> AIMessage:
    """A model reply that calls one tool."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


ran: list[tuple[str, dict[str, Any]]] = []
"""Every tool run: (name, arguments)."""


@tool
def read_file(path: str) -> str:
    """Read a text file."""
    ran.append(("read_file", {"path": path}))
    return f"API_KEY={SECRET}\n"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(("delete_file", {"path": path}))
    return "deleted"


@tool
def shell(command: str) -> str:
    """Run a shell command."""
    ran.append(("shell", {"command": command}))
    return "a.txt b.txt"


@tool
def crash(path: str) -> str:
    """A tool whose guard fails."""
    ran.append(("crash", {"path": path}))
    return "ran"


@tool
def remember(note: str) -> Command[Any]:
    """Store a note (answers with a Command)."""
    ran.append(("remember", {"note": note}))
    reply = ToolMessage(f"stored {note} with {SECRET}", tool_call_id="c1", name="remember")
    return Command(update={"messages": [reply]})


@tool
def remember_dict(note: str) -> Command[Any]:
    """Store a note (answers with a Command whose tool message is a dict)."""
    ran.append(("remember_dict", {"note": note}))
    reply = {"role": "tool", "content": f"kept {note} with {SECRET}", "tool_call_id": "c1"}
    return Command(update={"messages": [reply]})


@tool
def notify(text: str) -> str:
    """Send a notification; its guard adds a notice."""
    ran.append(("notify", {"text": text}))
    return "sent"


@tool
def explode(path: str) -> str:
    """A tool whose result guard fails."""
    ran.append(("explode", {"path": path}))
    return f"explode {SECRET}"


TOOLS = [read_file, delete_file, shell, crash, remember, remember_dict, notify, explode]


def load_guard(folder: Path) -> Engine:
    """The guard project written under ``folder``, loaded (close it when done)."""
    config = write(folder / "config", GUARD_FILES)
    return Engine.load(config, db=str(folder / "store.db"))


def run(
    engine: Engine,
    model: ScriptedModel,
    text: str,
    mode: str,
    *,
    scope: Any = None,
    context: Any = None,
    thread: str | None = None,
    question_id: str = "q1",
    **options: Any,
) -> tuple[list[BaseMessage], str]:
    """Run the guard agent on ``text`` (``options`` go to ``create_agent``); the final
    messages and the run's thread id."""
    middleware = HookMiddleware(engine.agent("guard"), scope=scope)
    agent = create_agent(
        model, TOOLS, system_prompt="You help.", middleware=[middleware], **options
    )
    thread = thread or f"t{next(_threads)}"
    state = {"messages": [HumanMessage(text, id=question_id)]}
    config = {"configurable": {"thread_id": thread}}
    if mode == "invoke":
        out = agent.invoke(state, config=config, context=context)
    else:
        out = asyncio.run(agent.ainvoke(state, config=config, context=context))
    return out["messages"], thread


def records(engine: Engine, thread: str, point: str | None = None) -> list[Record]:
    """The run's records, oldest first."""
    return list(reversed(engine.records(scope=thread, point=point)))
