"""A tool's structured ``data`` reaches a client only as the ``tool_result`` hooks left it.

``data`` goes on beside ``content``: over ``mcp-serve`` as ``structuredContent`` (which MCP
clients hand to the model), over HTTP and in the Python result. The hooks see it as the event's
``data``; a result a hook changed (or withheld) goes on without it. Real TaskWeaver plugin and
script tool files, the shipped ``redact_secrets`` hook, the real ``mcp`` client in process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from engine import Engine
from engine.integrations.tool_server import ToolServer
from tests.conftest import REPO, write

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx"

REDACT = """
kind: script_hook
name: redact_secrets
script: redact_secrets.{suffix}
points: [tool_result]
"""

SEEN = """
kind: script_hook
name: seen
language: javascript
source: |
  function on_tool_result(event, host) {
    host.emit({type: "status", data: {description: "data: " + JSON.stringify(event.data)}});
    return null;
  }
"""

PLUGIN_YAML = """
name: lookup
description: Look a key up.
parameters:
  - name: key
    type: str
    required: true
    description: the key to look up
returns:
  - name: description
    type: str
    description: what was looked up
  - name: value
    type: str
    description: the value found
"""

PLUGIN = f"""
from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Lookup(Plugin):
    def __call__(self, key):
        value = "{SECRET}" if key == "api" else "blue"
        return f"looked up {{key}}", value
"""

TYPED_YAML = """
kind: script_tool
name: typed
description: Answer a key and its value.
language: python
source: |
  def run(input, host):
      value = "SECRET" if input["key"] == "api" else "blue"
      return {"content": "looked up " + input["key"], "data": {"key": input["key"], "value": value}}
input_schema:
  type: object
  properties: {key: {type: string}}
  required: [key]
output_schema:
  type: object
  properties: {key: {type: string}, value: {type: string}}
  required: [key, value]
""".replace("SECRET", SECRET)


def project(root: Path, hooks: list[str], suffix: str = "py") -> Path:
    shipped = REPO / f"config/scripts/redact_secrets.{suffix}"
    files = {
        "agents/a/agent.yaml": f"hooks: {json.dumps(hooks)}\ntools: [lookup, typed]\n",
        "agents/a/hooks/redact_secrets.yaml": REDACT.format(suffix=suffix),
        f"agents/a/hooks/redact_secrets.{suffix}": shipped.read_text(),
        "agents/a/hooks/seen.yaml": SEEN,
        "agents/a/tools/lookup.yaml": PLUGIN_YAML,
        "agents/a/tools/lookup.py": PLUGIN,
        "agents/a/tools/typed.yaml": TYPED_YAML,
    }
    return write(root, files)


@pytest.fixture(params=["py", "js"])
def engine(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Engine]:
    root = project(tmp_path / "config", ["redact_secrets"], request.param)
    loaded = Engine.load(root, db=str(tmp_path / "store.db"), records=False)
    yield loaded
    loaded.close()


def mcp_call(engine: Engine, name: str, arguments: dict[str, Any]) -> Any:
    """One ``tools/call`` through the real MCP client (which checks ``outputSchema``)."""
    server = ToolServer(engine, "a", session_id="s").server()

    async def call() -> Any:
        async with Client(server) as client:
            await client.list_tools()
            return await client.call_tool(name, arguments)

    return anyio.run(call)


@pytest.mark.parametrize("tool", ["lookup", "typed"])
def test_a_secret_in_data_does_not_reach_the_mcp_client(engine: Engine, tool: str) -> None:
    """The content holds no secret, so a redaction of ``result`` alone changed nothing, and
    ``data`` went out as ``structuredContent`` whole."""
    answer = mcp_call(engine, tool, {"key": "api"})
    assert SECRET not in json.dumps(answer.model_dump(mode="json"))
    assert answer.structured_content is None
    assert answer.content[0].text.startswith("looked up api\n[structured data withheld")
    # a tool with an outputSchema cannot answer a success without a fitting structured part
    assert answer.is_error is (tool == "typed")


@pytest.mark.parametrize("tool", ["lookup", "typed"])
def test_a_secret_in_data_does_not_reach_the_host(engine: Engine, tool: str) -> None:
    result = engine.agent("a").call_tool(tool, {"key": "api"}, session_id="s")
    assert not result.is_error, result.content
    assert SECRET not in json.dumps(result.data)
    assert result.content.startswith("looked up api\n") and result.replaced


def test_the_hooks_see_data(tmp_path: Path) -> None:
    root = project(tmp_path / "config", ["seen"])
    with Engine.load(root, db=str(tmp_path / "store.db"), records=False) as engine:
        result = engine.agent("a").call_tool("lookup", {"key": "k"}, session_id="s")
    said = [e["data"]["description"] for e in result.events if e["type"] == "status"]
    assert said == ['data: {"value":"blue"}']


def test_clean_data_goes_on_as_structured_content(engine: Engine) -> None:
    answer = mcp_call(engine, "typed", {"key": "k"})
    assert not answer.is_error
    assert answer.structured_content == {"key": "k", "value": "blue"}
    assert answer.content[0].text == "looked up k"
    plain = mcp_call(engine, "lookup", {"key": "k"})
    assert plain.structured_content == {"value": "blue"}
