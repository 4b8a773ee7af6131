"""docs/tools-taskweaver.md tells the truth: its example runs as shown, every field is there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.tools.taskweaver import run_plugin_tests
from engine.tools.taskweaver_schema import JSON_TYPES, PluginItem, PluginSchema
from tests.conftest import REPO
from tests.tools.taskweaver_support import FolderContext, load

DOC = REPO / "docs" / "tools-taskweaver.md"


def _block(language: str, first_line: str) -> str:
    for body in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S):
        if body.startswith(first_line):
            return body
    raise AssertionError(f"no {language} block starting {first_line!r}")


def test_the_first_plugin_example_runs_as_shown(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "word_stats.yaml").write_text(_block("yaml", "name: word_stats"))
    (tools / "word_stats.py").write_text(_block("python", "from collections import Counter"))
    tool = load(tools / "word_stats.yaml")
    result = tool.invoke({"text": "The cat saw the dog"}, FolderContext(tmp_path))
    shown = json.loads(_block("json", "{"))
    assert (result.content, result.data, result.is_error) == (
        shown["content"],
        shown["data"],
        shown["is_error"],
    )
    rows = [{k: row[k] for k in shown["artifacts"][0]} for row in result.artifacts]
    assert rows == shown["artifacts"]
    assert [(r.name, r.passed) for r in run_plugin_tests(tool)] == [("counts_words", True)]


@pytest.mark.parametrize("model", [PluginSchema, PluginItem])
def test_every_field_is_documented(model: type[PluginSchema] | type[PluginItem]) -> None:
    text = DOC.read_text()
    for field in model.model_fields:
        assert f"| `{field}` |" in text, field


def test_every_type_and_artifact_type_is_documented() -> None:
    text = DOC.read_text()
    for name in [*JSON_TYPES, "DataFrame"]:
        assert f"`{name}`" in text, name
    assert "`chart image df file txt svg html`" in text
