"""A tool's spec as each model API takes it: openai-chat, openai-responses, anthropic, mcp."""

from __future__ import annotations

from typing import Any

from engine.tools.base import ToolSpec
from engine.tools.schemas import strict_ok

FORMATS = ("openai-chat", "openai-responses", "anthropic", "mcp")


def render(spec: ToolSpec, format: str) -> dict[str, Any]:
    """``spec`` in ``format``; the schema as declared (``strict: true`` only when it already
    qualifies, see ``strict_ok``).

    Raises:
        ValueError: an unknown format, naming the known ones.
    """
    schema = spec.input_schema
    if format == "openai-chat":
        function: dict[str, Any] = {
            "name": spec.name,
            "description": spec.description,
            "parameters": schema,
        }
        if strict_ok(schema):
            function["strict"] = True
        return {"type": "function", "function": function}
    if format == "openai-responses":
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": schema,
            "strict": strict_ok(schema),
        }
    if format == "anthropic":
        return {"name": spec.name, "description": spec.description, "input_schema": schema}
    if format == "mcp":
        tool: dict[str, Any] = {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": schema,
        }
        if spec.output_schema is not None:
            tool["outputSchema"] = spec.output_schema
        if spec.annotations:
            tool["annotations"] = dict(spec.annotations)
        return tool
    raise ValueError(f"unknown tool spec format {format!r} (one of: {', '.join(FORMATS)})")
