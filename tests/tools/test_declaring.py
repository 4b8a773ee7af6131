"""Declaring tools: agent.yaml tools/tool_files, names, duplicates, enabled: false, the kind
registry, script tool fields, reload."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from engine.errors import ConfigError
from engine.tools import kinds
from tests.conftest import write
from tests.tools.conftest import ECHO_PY, ECHO_SCRIPT


def script_tool(name: str, **fields: str) -> str:
    text = ECHO_PY.replace("name: echo_py", f"name: {name}")
    for key, value in fields.items():
        text += f"{key}: {value}\n"
    return text


def problems(root: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        Engine.load(root, records=False, db=":memory:")
    return [str(p) for p in info.value.problems]


def test_an_agent_with_tools_and_no_hooks_loads(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tool_files: [more/echo.yaml]\n",
            "agents/a/more/echo.yaml": ECHO_PY,
            "agents/a/more/echo.py": ECHO_SCRIPT,
        },
    )
    with Engine.load(root, records=False, db=":memory:") as engine:
        agent = engine.agent("a")
        assert [s["function"]["name"] for s in agent.tool_specs()] == ["echo_py"]
        assert agent.call_tool("echo_py", {"text": "x"}, session_id="s").content == "echo: x"


def test_an_agent_with_neither_hooks_nor_tools_is_an_error(tmp_path: Path) -> None:
    root = write(tmp_path / "config", {"agents/a/agent.yaml": "description: empty\n"})
    assert any("lists no hooks and no tools" in p for p in problems(root))


def test_a_duplicate_tool_name_is_an_error_naming_both_files(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [one, two]\n",
            "agents/a/tools/one.yaml": script_tool("same"),
            "agents/a/tools/two.yaml": script_tool("same"),
            "agents/a/tools/echo.py": ECHO_SCRIPT,
        },
    )
    (found,) = problems(root)
    assert "two.yaml:2: name: duplicate tool name 'same'" in found
    assert "one.yaml" in found


def test_a_tool_name_outside_the_pattern_is_an_error_with_its_line(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [bad]\n",
            "agents/a/tools/bad.yaml": script_tool("has space"),
            "agents/a/tools/echo.py": ECHO_SCRIPT,
        },
    )
    (found,) = problems(root)
    assert "bad.yaml:2: name:" in found


def test_a_disabled_tool_is_validated_but_not_offered(tmp_path: Path) -> None:
    files = {
        "agents/a/agent.yaml": "tools: [idle, busy]\n",
        "agents/a/tools/idle.yaml": script_tool("idle", enabled="false"),
        "agents/a/tools/busy.yaml": script_tool("busy"),
        "agents/a/tools/echo.py": ECHO_SCRIPT,
    }
    root = write(tmp_path / "config", files)
    with Engine.load(root, records=False, db=":memory:") as engine:
        agent = engine.agent("a")
        assert [s["name"] for s in agent.tool_specs("anthropic")] == ["busy"]
        assert agent.call_tool("idle", {"text": "x"}).is_error
    write(root, {"agents/a/tools/idle.yaml": script_tool("idle", enabled="false", nope="1")})
    assert any("idle.yaml:" in p and "nope" in p for p in problems(root))


def test_a_missing_tool_file_is_an_error_at_its_line(tmp_path: Path) -> None:
    root = write(tmp_path / "config", {"agents/a/agent.yaml": "hooks: []\ntools: [ghost]\n"})
    (found,) = problems(root)
    assert "agent.yaml:2: tools: tool file not found" in found


def test_an_unknown_kind_is_an_error_naming_the_kinds(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {"agents/a/agent.yaml": "tools: [t]\n", "agents/a/tools/t.yaml": "kind: scrpt_tool\n"},
    )
    (found,) = problems(root)
    assert "t.yaml:1: kind: unknown tool kind 'scrpt_tool'" in found and "script_tool" in found


def test_a_kind_whose_module_is_missing_is_a_clear_load_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(kinds.LOADERS, None, "engine.tools.not_there:load")
    root = write(
        tmp_path / "config",
        {"agents/a/agent.yaml": "tools: [t]\n", "agents/a/tools/t.yaml": "name: t\n"},
    )
    (found,) = problems(root)
    assert "t.yaml" in found and "the taskweaver tool kind is not available" in found


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"colour": "red"}, "colour: unknown field"),
        ({"timeout_ms": "0"}, "timeout_ms:"),
        ({"timeout_ms": "99999"}, "above the operator's ceiling"),
        ({"source": "x"}, "exactly one of script: (a file) or source:"),
        ({"config": "{since: 2024-01-31}"}, "config.since: must be JSON data"),
    ],
)
def test_bad_script_tool_fields_are_errors_naming_the_field(
    tmp_path: Path, fields: dict[str, str], expected: str
) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [t]\n",
            "agents/a/tools/t.yaml": script_tool("t", **fields),
            "agents/a/tools/echo.py": ECHO_SCRIPT,
        },
    )
    found = problems(root)
    assert any("t.yaml:" in p and expected in p for p in found), found


def test_a_parameter_type_taskweaver_lacks_is_an_error_at_its_line(tmp_path: Path) -> None:
    from tests.tools.conftest import ECHO_JS

    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [t]\n",
            "agents/a/tools/t.yaml": ECHO_JS.replace("type: str", "type: DataFrame"),
        },
    )
    (found,) = problems(root)
    assert "t.yaml:16: parameters.0.type:" in found and "'str'" in found


def test_an_input_schema_that_is_not_one_is_an_error(tmp_path: Path) -> None:
    yaml = ECHO_PY.replace("type: object\n  properties", "type: objekt\n  properties")
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [t]\n",
            "agents/a/tools/t.yaml": yaml,
            "agents/a/tools/echo.py": ECHO_SCRIPT,
        },
    )
    (found,) = problems(root)
    assert "t.yaml:5: input_schema: must be an object schema" in found


def test_a_script_without_run_or_with_a_syntax_error_is_an_error_with_its_line(
    tmp_path: Path,
) -> None:
    files = {
        "agents/a/agent.yaml": "tools: [t]\n",
        "agents/a/tools/t.yaml": script_tool("t"),
        "agents/a/tools/echo.py": "def walk(input, host):\n    return 'x'\n",
    }
    root = write(tmp_path / "config", files)
    assert any("defines no run function" in p for p in problems(root))
    write(root, {"agents/a/tools/echo.py": "def run(input, host):\n    return (\n"})
    assert any("echo.py:2" in p for p in problems(root))


def test_a_hook_script_cannot_add_artifacts(tool_engine: Callable[..., Engine]) -> None:
    guard = """
    kind: script_hook
    name: guard
    language: python
    source: |
      def on_tool_call(event, host):
          host.add_artifact("x.txt", "x")
    """
    agent = tool_engine({"agents/a/hooks/guard.yaml": guard}).agent("a")
    result = agent.call_tool("fake_echo", {"text": "x"}, session_id="s")
    assert result.is_error  # the failing required hook blocks the tool
    assert agent.engine.artifacts("s") == []


def test_tool_files_are_watched_and_versioned(tool_engine: Callable[..., Engine]) -> None:
    engine = tool_engine()
    spec = engine.project.agents["a"]
    names = {p.name for p in spec.files}
    assert {"echo_py.yaml", "echo.py", "echo_js.yaml"} <= names
    before = spec.tools_version
    script = spec.folder / "tools" / "echo.py"
    script.write_text(ECHO_SCRIPT.replace('"echo: "', '"echo2: "'))
    specs_before = engine.agent("a").tool_specs()
    assert engine.reload_agent("a")
    after = engine.project.agents["a"].tools_version
    assert after != before
    assert engine.agent("a").call_tool("echo_py", {"text": "x"}, session_id="s").content == (
        "echo2: x"
    )
    assert engine.agent("a").tool_specs() is not specs_before


def test_a_broken_tool_file_on_reload_keeps_the_last_good_tools(
    tool_engine: Callable[..., Engine],
) -> None:
    engine = tool_engine()
    tools_yaml = engine.project.agents["a"].folder / "tools" / "echo_py.yaml"
    tools_yaml.write_text(ECHO_PY + "colour: red\n")
    assert not engine.reload_agent("a")
    status = engine.status()["agents"]["a"]
    assert "colour" in str(status)
    assert engine.agent("a").call_tool("echo_py", {"text": "x"}, session_id="s").content == (
        "echo: x"
    )


def test_check_reports_a_tool_file_problem_with_the_others(tmp_path: Path) -> None:
    from engine.checking import check_project

    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [t]\n",
            "agents/a/tools/t.yaml": script_tool("t", colour="red"),
            "agents/a/tools/echo.py": ECHO_SCRIPT,
            "agents/b/agent.yaml": "tools: [t]\n",
            "agents/b/tools/t.yaml": script_tool("t"),
            "agents/b/tools/echo.py": ECHO_SCRIPT,
        },
    )
    report = check_project(root)
    assert [str(p) for p in report.problems if "colour" in str(p)]
    assert [a.name for a in report.agents] == ["b"]


def test_saving_a_tool_script_reloads_the_tool_when_watching(
    tool_engine: Callable[..., Engine],
) -> None:
    engine = tool_engine(watch=True)
    agent = engine.agent("a")

    def answer() -> str:
        return agent.call_tool("echo_py", {"text": "x"}, session_id="w").content

    assert answer() == "echo: x"
    script = engine.project.agents["a"].folder / "tools" / "echo.py"
    script.write_text(ECHO_SCRIPT.replace('"echo: "', '"saved: "'))
    deadline = time.monotonic() + 5.0
    while answer() != "saved: x":
        assert time.monotonic() < deadline, "the tool was not reloaded within 5 s"
        time.sleep(0.02)
