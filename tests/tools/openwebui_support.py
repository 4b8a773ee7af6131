"""Loading a toolkit the way an agent's config would, for the Open WebUI tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from engine.tools.base import Tool
from engine.tools.openwebui import load_openwebui
from tests.tools.context import FakeLoadContext

TOOLKITS = Path(__file__).parent / "openwebui_toolkits"


def write_toolkit(folder: Path, name: str, source: str | None = None, **fields: Any) -> Path:
    """``folder/tools/<name>.yaml`` next to ``<name>.py`` (``source``, or the toolkit of
    that name in openwebui_toolkits/); the YAML's path."""
    tools = folder / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    if source is None:
        shutil.copy(TOOLKITS / f"{name}.py", tools / f"{name}.py")
    else:
        (tools / f"{name}.py").write_text(source)
    config = {"kind": "openwebui_tools", "file": f"{name}.py", **fields}
    path = tools / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def load(folder: Path, name: str, source: str | None = None, **fields: Any) -> dict[str, Tool]:
    """The tools of a toolkit, by name."""
    path = write_toolkit(folder, name, source, **fields)
    data = yaml.safe_load(path.read_text())
    return {tool.spec.name: tool for tool in load_openwebui(path, data, FakeLoadContext(folder))}


def spec_dict(tool: Tool) -> dict[str, Any]:
    """A tool's spec in the goldens' shape."""
    return {
        "name": tool.spec.name,
        "description": tool.spec.description,
        "parameters": tool.spec.input_schema,
    }
