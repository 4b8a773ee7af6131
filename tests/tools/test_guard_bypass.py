"""Paths by which a tool could run on an input its ``tool_call`` hooks did not decide on, or
hand back what its ``tool_result`` hooks did not see: each test is one such path, with real
toolkit and plugin files and the engine's one call path."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from engine import Engine
from engine.integrations.tool_server import ToolServer
from tests.conftest import write

GUARD = """
kind: script_hook
name: guard
language: javascript
source: |
  function on_tool_call(event, host) {
    if (event.input.database === "prod") { return {block: "no queries on prod"}; }
    if (event.input.sql === "rewrite") { return {input: {sql: "select 1"}}; }
    if (event.input.sql === "rewrite whole") {
      return {input: Object.assign({}, event.input, {sql: "select 1", database: "test"})};
    }
    return null;
  }
  function on_tool_result(event, host) {
    return {result: host.redact(event.result, ["sk-[a-z0-9]+"])};
  }
"""

TOOLKIT = '''"""
title: Probe
"""
from enum import Enum


class Mode(Enum):
    FAST = "fast"
    SAFE = "safe"


class Tools:
    def __init__(self):
        self.citation = True

    def query(self, sql: str, database: str = "prod", limit: int = 10) -> str:
        """
        Run SQL on a database.
        :param sql: the statement
        :param database: which database
        :param limit: most rows
        """
        return f"ran {sql} on {database} (limit {limit}) with key sk-abc123"

    def lookup(self, key: str) -> dict:
        """Look a key up."""
        return {"key": key, "value": "sk-zzz999"}

    def moded(self, text: str, mode: Mode = Mode.SAFE, tags: tuple = ("a",)) -> str:
        """Echo with a mode."""
        return f"{text} {type(mode).__name__}.{mode.name} {type(tags).__name__}"
'''

PLUGIN_YAML = """
name: tw_query
description: Run SQL on one of the databases.
parameters:
  - name: sql
    type: str
    required: true
    description: the statement to run
  - name: database
    type: str
    description: the database to run it on
    default: prod
returns:
  - name: description
    type: str
    description: what was run, and where
"""

PLUGIN = """
from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Query(Plugin):
    def __call__(self, sql, database="never"):
        return f"tw ran {sql} on {database}"
"""


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [guard]\ntools: [probe, tw_query]\n",
            "agents/a/hooks/guard.yaml": GUARD,
            "agents/a/tools/probe.yaml": "kind: openwebui_tools\nfile: probe.py\n",
            "agents/a/tools/probe.py": TOOLKIT,
            "agents/a/tools/tw_query.yaml": PLUGIN_YAML,
            "agents/a/tools/tw_query.py": PLUGIN,
        },
    )
    loaded = Engine.load(root, db=str(tmp_path / "store.db"), records=False)
    yield loaded
    loaded.close()


Caller = Callable[..., Any]


def sync_call(engine: Engine, name: str, input: dict[str, Any], **kw: Any) -> Any:
    return engine.agent("a").call_tool(name, input, session_id="s", **kw)


def async_call(engine: Engine, name: str, input: dict[str, Any], **kw: Any) -> Any:
    return asyncio.run(engine.agent("a").acall_tool(name, input, session_id="s", **kw))


CALLERS = pytest.mark.parametrize("call", [sync_call, async_call], ids=["sync", "async"])


# -- defaults the tool fills in ------------------------------------------------------------


@CALLERS
@pytest.mark.parametrize("tool", ["query", "tw_query"])
def test_a_guard_sees_the_default_the_tool_would_run_with(
    engine: Engine, call: Caller, tool: str
) -> None:
    """``database`` left out: the method (Python default) and the plugin (``default:``)
    would run on ``prod``; the guard that refuses ``prod`` must see it."""
    result = call(engine, tool, {"sql": "drop table users"})
    assert result.is_error, result.content
    assert "no queries on prod" in result.content


@CALLERS
@pytest.mark.parametrize("tool", ["query", "tw_query"])
def test_an_argument_the_call_gives_is_not_replaced_by_its_default(
    engine: Engine, call: Caller, tool: str
) -> None:
    seen: list[dict[str, Any]] = []
    result = call(engine, tool, {"sql": "select 2", "database": "test"}, emit=seen.append)
    assert not result.is_error, result.content
    assert "on test" in result.content


@CALLERS
@pytest.mark.parametrize("tool", ["query", "tw_query"])
def test_a_rewrite_leaving_out_a_defaulted_argument_is_refused(
    engine: Engine, call: Caller, tool: str
) -> None:
    """The rewriting hook returns ``{sql}``; the tool would fill in ``database: prod`` that no
    hook after the rewrite saw: refused, naming the argument."""
    result = call(engine, tool, {"sql": "rewrite", "database": "test"})
    assert result.is_error
    assert "database" in result.content and "'prod'" in result.content
    assert "ran" not in result.content


@CALLERS
@pytest.mark.parametrize("tool", ["query", "tw_query"])
def test_a_rewrite_naming_every_argument_runs(engine: Engine, call: Caller, tool: str) -> None:
    result = call(engine, tool, {"sql": "rewrite whole", "database": "test"})
    assert not result.is_error, result.content
    assert "ran select 1 on test" in result.content


def test_a_default_that_is_not_plain_json_is_left_to_python(engine: Engine) -> None:
    """An Enum or tuple default is not put in the guard's input as its JSON form (the method
    would get a str or a list instead): the method keeps getting the value it declared."""
    result = sync_call(engine, "moded", {"text": "hi"})
    assert not result.is_error, result.content
    assert result.content == "hi Mode.SAFE tuple"


# -- what reaches the caller besides content -----------------------------------------------


@CALLERS
def test_the_citation_carries_the_redacted_content(engine: Engine, call: Caller) -> None:
    """``self.citation = True``: the citation event holds the result's text; it must be the
    text the tool_result hooks left, in ``events`` and in what ``emit`` got."""
    emitted: list[dict[str, Any]] = []
    result = call(engine, "query", {"sql": "select 3", "database": "test"}, emit=emitted.append)
    assert "sk-abc123" not in result.content
    assert "sk-abc123" not in json.dumps(result.events)
    assert "sk-abc123" not in json.dumps(emitted)
    citations = [e for e in result.events if e["type"] == "citation"]
    assert [c["data"]["document"] for c in citations] == [[result.content]]
    assert citations[0]["data"]["metadata"][0]["parameters"] == {
        "sql": "select 3",
        "database": "test",
        "limit": 10,
    }


def test_a_blocked_call_has_no_citation(engine: Engine) -> None:
    result = sync_call(engine, "query", {"sql": "x", "database": "prod"})
    assert result.is_error and result.events == []


def test_mcp_serve_sends_no_structured_content_a_redaction_did_not_see(
    engine: Engine,
) -> None:
    """A dict result is JSON in ``content`` and the dict in ``data``; MCP clients read
    ``structuredContent`` as the result too, so a redacted content must not travel with the
    unredacted dict."""
    server = ToolServer(engine, "a", session_id="s")
    params = types.CallToolRequestParams(name="lookup", arguments={"key": "k"})
    answer = asyncio.run(server.call_tool(None, params))
    assert "sk-zzz999" not in json.dumps(answer.model_dump(mode="json"))
    block = answer.content[0]
    assert isinstance(block, types.TextContent) and "[REDACTED]" in block.text
    assert answer.structured_content is None


def test_mcp_serve_keeps_structured_content_no_hook_changed(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [probe]\n",
            "agents/a/tools/probe.yaml": "kind: openwebui_tools\nfile: probe.py\n",
            "agents/a/tools/probe.py": TOOLKIT,
        },
    )
    engine = Engine.load(root, db=str(tmp_path / "store.db"), records=False)
    try:
        server = ToolServer(engine, "a", session_id="s")
        params = types.CallToolRequestParams(name="lookup", arguments={"key": "k"})
        answer = asyncio.run(server.call_tool(None, params))
        assert answer.structured_content == {"key": "k", "value": "sk-zzz999"}
    finally:
        engine.close()


# -- a call that timed out -----------------------------------------------------------------

LATE_TOOLKIT = '''"""
title: Late
"""
import time


class Tools:
    def late(self, text: str, __event_emitter__=None) -> str:
        """Answer after the time limit."""
        time.sleep(0.6)
        import asyncio

        asyncio.run(__event_emitter__({"type": "message", "data": {"content": "late " + text}}))
        return text
'''

LATE_PLUGIN_YAML = """
name: late_plugin
description: Keeps a file after the time limit.
parameters:
  - name: text
    type: str
    required: true
    description: the text to keep as a file
returns:
  - name: description
    type: str
    description: what was kept, for the model
"""

LATE_PLUGIN = """
import time

from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Late(Plugin):
    def __call__(self, text):
        time.sleep(0.6)
        self.ctx.add_artifact(name="late", file_name="late.txt", type="txt", val=text)
        return "kept"
"""


def test_a_timed_out_call_hands_the_host_nothing_afterwards(tmp_path: Path) -> None:
    """The call was answered "timed out" (what the tool_result hooks saw); the tool's thread
    runs on, but what it emits or keeps then reaches neither the host's ``emit`` nor the
    session's artifacts."""
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [late, late_plugin]\n",
            "agents/a/tools/late.yaml": "kind: openwebui_tools\nfile: late.py\ntimeout_ms: 200\n",
            "agents/a/tools/late.py": LATE_TOOLKIT,
            "agents/a/tools/late_plugin.yaml": LATE_PLUGIN_YAML,
            "agents/a/tools/late_plugin.py": LATE_PLUGIN,
        },
    )
    (root / "engine.yaml").write_text("tools:\n  timeout_ms: 200\n")
    engine = Engine.load(root, db=str(tmp_path / "store.db"), records=False)
    try:
        emitted: list[dict[str, Any]] = []
        agent = engine.agent("a")
        first = agent.call_tool("late", {"text": "x"}, session_id="s", emit=emitted.append)
        second = agent.call_tool("late_plugin", {"text": "x"}, session_id="s")
        assert first.is_error and "timed out" in first.content
        assert second.is_error and "timed out" in second.content
        time.sleep(1.2)  # both threads have finished by now
        assert emitted == []
        assert engine.artifacts("s") == []
    finally:
        engine.close()
