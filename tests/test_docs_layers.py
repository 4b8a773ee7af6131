"""docs/builtins-layers.md tells the truth: its files load, its examples print what it shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from engine.cli.hookengine import main as hookengine
from engine.errors import ConfigError
from engine.runtime import Engine
from tests.conftest import REPO

PAGE = (REPO / "docs" / "builtins-layers.md").read_text()
FENCE = re.compile(r"```(\w+)\n(.*?)```", flags=re.S)


def fenced(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(PAGE) if lang == language]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page's files, written where their first line says, in a folder made current."""
    written = 0
    for _, body in FENCE.findall(PAGE):
        first = body.splitlines()[0]
        named = re.fullmatch(r"(?:#|//) (config/\S+)", first)
        if named:
            path = tmp_path / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
            written += 1
    assert written == 8
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_host_example_prints_what_the_page_shows(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (program,) = [b for b in fenced("python") if b.startswith("from engine import")]
    exec(compile(program, "builtins-layers.md", "exec"), {})
    shown = next(b for b in fenced("text") if b.startswith("['Be brief."))
    assert capsys.readouterr().out == shown


def test_explain_prints_what_the_page_shows(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (console,) = fenced("console")
    command, *expected = console.splitlines()
    argv = shlex.split(command.removeprefix("$ hookengine "))
    assert hookengine(argv) == 0
    assert capsys.readouterr().out.splitlines() == expected


def test_the_order_rules_the_page_states_hold(folder: Path) -> None:
    with Engine.load("config", db=str(folder / "store.db")) as engine:
        assistant = engine.agent("assistant")
        with assistant.session("chat-42", ["house_style", "modes"]) as chat:
            hooks = [(h.name, h.layer) for h in chat.before_call("x").hooks]
        assert hooks == [("house_style", "session"), ("modes", "session"), ("policy", "host")]
        with assistant.session("chat-43", ["no_deletes"], drop_agent_hooks=True) as chat:
            ran = [h.name for h in chat.before_call("x").hooks + chat.tool_call("ls").hooks]
        assert ran == ["policy", "no_deletes"]
        with pytest.raises(ConfigError) as err:
            assistant.session("s", ["mdoes"])
    (problem,) = err.value.problems
    said = f"{problem.path}: {problem.field}: {problem.message}"
    assert f"`ConfigError`, one problem per name: `{said}`" in PAGE
    assert f"with `{problem.hint}`" in PAGE
