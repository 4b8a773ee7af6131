"""docs/tools-openwebui.md tells the truth: its toolkit loads, gives the spec shown, runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from engine.tools.openwebui import load_openwebui
from tests.conftest import REPO
from tests.tools.context import FakeLoadContext, FakeToolContext
from tests.tools.openwebui_support import spec_dict

DOC = (REPO / "docs" / "tools-openwebui.md").read_text()


def block(language: str, index: int = 0) -> str:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)[index]


def load_example(tmp_path: Path) -> dict:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "greeter.py").write_text(block("python"))
    path = folder / "greeter.yaml"
    path.write_text(block("yaml"))
    tools = load_openwebui(path, yaml.safe_load(block("yaml")), FakeLoadContext(tmp_path))
    return {tool.spec.name: tool for tool in tools}


def test_the_documented_toolkit_gives_the_documented_spec(tmp_path: Path) -> None:
    tools = load_example(tmp_path)
    assert list(tools) == ["greet"]
    assert spec_dict(tools["greet"]) == json.loads(block("json"))


def test_the_documented_call_gives_the_documented_results(tmp_path: Path) -> None:
    greet = load_example(tmp_path)["greet"]
    names = {"names": ["Ann", "Bob", "Cy"]}
    result = greet.invoke(names, FakeToolContext(tmp_path, user_id="bob"))
    assert result.content == "Hello Ann, Bob."
    assert [e["data"]["done"] for e in result.events] == [False, True]
    shouted = greet.invoke(names, FakeToolContext(tmp_path, user_id="alice"))
    assert shouted.content == "HELLO ANN, BOB."
