"""One gateway call in process, against a scripted upstream: what the gateway checks and what
it skips when nothing would look (no hook at ``tool_result``, a structure the client checked)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from engine import Engine
from engine.integrations.mcp import Gateway, GatewayOptions

GUARD = """kind: script_hook
name: guard
language: python
points: [tool_call]
source: |
  def on_tool_call(event, host):
      if event["input"].get("path") == "rewrite":
          return {"input": {"path": 42}}
      return None
"""

STAMP = """kind: script_hook
name: stamp
language: python
points: [tool_result]
source: |
  def on_tool_result(event, host):
      result = dict(event["result"])
      result["content"] = [{"type": "text", "text": "stamped"}]
      result["isError"] = False
      return {"result": result}
"""

TOOL = types.Tool(
    name="read",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    output_schema={
        "type": "object",
        "properties": {"content": {"type": "string"}},
        "required": ["content"],
    },
)


@dataclass
class Upstream:
    """A scripted upstream client: lists ``tools``, answers every call with ``answer``."""

    answer: types.CallToolResult
    tools: list[types.Tool] = field(default_factory=lambda: [TOOL])
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def call_tool(self, name: str, arguments: dict[str, Any], **_: Any) -> Any:
        self.calls.append(arguments)
        return self.answer

    async def list_tools(self, **_: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)


class Session:
    async def report_progress(self, *args: Any) -> None:
        """The client's progress channel (no call here reports progress)."""


@dataclass
class Request:
    """The request context the lowlevel server hands to ``call_tool``."""

    request_id: int = 1
    request: Any = None
    session: Session = field(default_factory=Session)


def load(tmp_path: Path, *hooks: str, records: bool = False) -> Engine:
    config = tmp_path / "config"
    (config / "agents" / "fs" / "hooks").mkdir(parents=True)
    enabled = "true" if records else "false"
    (config / "engine.yaml").write_text(f"records:\n  enabled: {enabled}\n", encoding="utf-8")
    names = [f"hooks/{i}.yaml" for i in range(len(hooks))]
    (config / "agents" / "fs" / "agent.yaml").write_text(f"hook_files: {names}\n", "utf-8")
    for name, text in zip(names, hooks, strict=True):
        (config / "agents" / "fs" / name).write_text(text, encoding="utf-8")
    return Engine.load(config, db=str(tmp_path / "store.db"))


@pytest.fixture
def engine_factory(tmp_path: Path) -> Iterator[Any]:
    opened: list[Engine] = []

    def make(*hooks: str, records: bool = False) -> Engine:
        opened.append(load(tmp_path, *hooks, records=records))
        return opened[-1]

    yield make
    for engine in opened:
        engine.close()


def gateway(engine: Engine, upstream: Upstream) -> Gateway:
    gate = Gateway(engine, GatewayOptions(agent="fs", command=("upstream",)))
    gate._upstream = upstream  # type: ignore[assignment]  # the scripted client
    gate.tools = {tool.name: tool for tool in upstream.tools}
    return gate


def call(gate: Gateway, arguments: dict[str, Any]) -> types.CallToolResult:
    params = types.CallToolRequestParams(name="read", arguments=arguments)
    return anyio.run(gate.call_tool, Request(), params)  # type: ignore[arg-type]


def text_result(text: str, *, is_error: bool = False, structured: Any = None) -> Any:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def test_without_a_tool_result_hook_or_records_the_result_passes_unevaluated(
    engine_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_factory(GUARD)
    answer = text_result("as sent", structured={"content": "as sent"})
    gate = gateway(engine, Upstream(answer))

    async def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("tool_result was evaluated")

    monkeypatch.setattr(engine.agent("fs"), "atool_result", never)
    assert call(gate, {"path": "notes"}) is answer


def test_with_records_on_the_result_is_evaluated_and_recorded(engine_factory: Any) -> None:
    engine = engine_factory(GUARD, records=True)
    gate = gateway(engine, Upstream(text_result("as sent", structured={"content": "as sent"})))
    assert call(gate, {"path": "notes"}).content[0].text == "as sent"
    assert engine.flush()
    assert sorted(record.point for record in engine.records()) == ["tool_call", "tool_result"]


def test_a_tool_result_hook_is_still_asked_without_records(engine_factory: Any) -> None:
    engine = engine_factory(GUARD, STAMP)
    gate = gateway(engine, Upstream(text_result("as sent", structured={"content": "as sent"})))
    result = call(gate, {"path": "notes"})
    assert result.content[0].text == "stamped"
    assert result.structured_content == {"content": "as sent"}


def test_an_error_turned_into_a_success_has_its_structured_content_checked(
    engine_factory: Any,
) -> None:
    # the client checks only a result that is no error: this one's structure was never checked
    engine = engine_factory(GUARD, STAMP)
    answer = text_result("failed", is_error=True, structured={"content": 5})
    result = call(gateway(engine, Upstream(answer)), {"path": "notes"})
    assert result.is_error
    assert (
        "structuredContent does not fit the outputSchema: it breaks the schema's "
        "properties/content/type rule" in result.content[0].text
    )


def test_a_rewrite_is_checked_against_the_schema_of_the_tool_as_last_listed(
    engine_factory: Any,
) -> None:
    engine = engine_factory(GUARD)
    upstream = Upstream(text_result("read", structured={"content": "read"}))
    gate = gateway(engine, upstream)
    blocked = call(gate, {"path": "rewrite"})
    assert blocked.is_error and "properties/path/type rule" in blocked.content[0].text
    assert "42" not in blocked.content[0].text
    assert upstream.calls == []
    numbered = {"type": "object", "properties": {"path": {"type": "integer"}}}
    relisted = TOOL.model_copy(update={"input_schema": numbered})
    gate.tools["read"] = relisted  # as tools/list leaves it after the server changed the tool
    assert not call(gate, {"path": "rewrite"}).is_error
    assert upstream.calls == [{"path": 42}]
