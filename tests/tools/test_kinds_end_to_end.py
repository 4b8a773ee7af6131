"""A TaskWeaver plugin and an Open WebUI toolkit declared in an agent load through the kind
registry and run through the one call path: the agent's guard blocks and redacts them like any
tool, and ``hookengine tools test`` runs the plugin's own ``@test_plugin`` tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine import Engine
from engine.cli.hookengine import main

HERE = Path(__file__).parent

TOOLKIT = '''"""
title: Greeter
"""

from pydantic import BaseModel


class Tools:
    class Valves(BaseModel):
        prefix: str = "Hello"

    def greet(self, name: str) -> str:
        """
        Greet someone.
        :param name: who to greet
        """
        return f"{self.valves.prefix}, {name}! token=sk-secret-123"
'''

GUARD = """kind: script_hook
name: guard
language: javascript
source: |
  function on_tool_call(event, host) {
    if (event.name === "greet" && event.input.name === "mallory") return {block: "not her"};
    return null;
  }
  function on_tool_result(event, host) {
    const text = JSON.stringify(event.result);
    if (text.includes("sk-")) return {result: text.replace(/sk-[a-z0-9-]+/g, "[REDACTED]")};
    return null;
  }
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    root = tmp_path / "config"
    tools = root / "agents/a/tools"
    (root / "agents/a/hooks").mkdir(parents=True)
    tools.mkdir(parents=True)
    (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text(
        "hooks: [guard]\ntools: [tell_joke, greeter]\n", encoding="utf-8"
    )
    (root / "agents/a/hooks/guard.yaml").write_text(GUARD, encoding="utf-8")
    for name in ("tell_joke.yaml", "tell_joke.py"):
        shutil.copy(HERE / "taskweaver" / name, tools / name)
    (tools / "greeter.py").write_text(TOOLKIT, encoding="utf-8")
    (tools / "greeter.yaml").write_text(
        "kind: openwebui_tools\nfile: greeter.py\nvalves:\n  prefix: Hi\n", encoding="utf-8"
    )
    return root


def test_both_kinds_run_through_the_call_path_under_the_agents_guard(
    config: Path, tmp_path: Path
) -> None:
    with Engine.load(config, db=str(tmp_path / "store.db")) as engine:
        agent = engine.agent("a")
        names = {spec["function"]["name"] for spec in agent.tool_specs("openai-chat")}
        assert names == {"tell_joke", "greet"}
        joke = agent.call_tool("tell_joke", {"lang": "en"}, session_id="s1")
        assert not joke.is_error and "plugin" in joke.content
        hi = agent.call_tool("greet", {"name": "bob"}, session_id="s1")
        assert not hi.is_error and "Hi, bob!" in hi.content
        assert "sk-secret" not in hi.content and "[REDACTED]" in hi.content
        blocked = agent.call_tool("greet", {"name": "mallory"}, session_id="s1")
        assert blocked.is_error and "not her" in blocked.content
        bad = agent.call_tool("tell_joke", {}, session_id="s1")  # lang is required
        assert bad.is_error and "lang" in bad.content


def test_tools_test_runs_a_plugins_own_tests(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tools", "test", "--agent", "a", "--config", str(config)]
    argv += ["--db", str(tmp_path / "store.db")]
    assert main(argv) == 1  # the French test fails: the plugin only knows English
    out = capsys.readouterr().out
    assert "tell_joke::test_tell_joke PASSED" in out
    assert "tell_joke::test_joke_is_french FAILED" in out
    assert "greet: no tests" in out
