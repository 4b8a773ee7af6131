"""A tool kind for tests: trusted in-process Python, a function named in the YAML.

Registered by the ``fake_kind`` fixture under ``kind: test_python`` (the registry imports it
lazily, like the real kinds)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.tools.base import LoadContext, Tool, ToolResult, ToolSpec


def echo(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    return ToolResult(content=f"echo: {input.get('text', '')}", data={"pid": os.getpid()})


def sleepy(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    time.sleep(float(input.get("seconds", 5)))
    return ToolResult(content="woke up")


def raising(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    raise RuntimeError("the tool broke: secret42")


def artifact(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    artifact_id = ctx.add_artifact(input["name"], input["name"], "txt", input.get("text", "x"))
    return ToolResult(content=f"made {artifact_id}")


def written(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    """Writes an artifact to a path it asks for, then reads back an earlier one by name."""
    artifact_id, path = ctx.create_artifact_path("chart", "chart.svg", "svg", "a chart")
    path.write_text("<svg/>")
    earlier = ctx.artifact_path(input["read"]).read_text() if input.get("read") else ""
    return ToolResult(content=f"wrote {artifact_id}; read {earlier!r}")


def emitting(input: Mapping[str, Any], ctx: Any) -> ToolResult:
    ctx.record_event({"type": "status", "data": {"description": "working"}})
    return ToolResult(content="done")


FUNCTIONS = {f.__name__: f for f in (echo, sleepy, raising, artifact, written, emitting)}


@dataclass
class PythonTool:
    spec: ToolSpec
    path: Path
    function: str
    enabled: bool = True
    timeout_ms: int | None = None
    isolation: Literal["thread", "process"] = "thread"
    kind: str = "test_python"
    closed: bool = False

    def invoke(self, input: Mapping[str, Any], ctx: Any) -> ToolResult:
        return FUNCTIONS[self.function](input, ctx)

    def close(self) -> None:
        self.closed = True


def load_fake(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    schema = data.get("input_schema") or {"type": "object"}
    spec = ToolSpec(data["name"], data.get("description", "a test tool"), schema)
    tool = PythonTool(
        spec,
        path,
        data["function"],
        enabled=data.get("enabled", True),
        timeout_ms=data.get("timeout_ms"),
        isolation=data.get("isolation", "thread"),
    )
    return [tool]
