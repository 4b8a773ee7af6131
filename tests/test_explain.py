"""hookengine explain: effective order per point, versions and modes, static warnings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from engine.cli.hookengine import main as hookengine
from engine.explain import always_blocks, explain, replaced_fields
from engine.kinds.base import Mode, OnError
from engine.pipeline import Pipeline, Slot
from engine.points import Point
from tests.conftest import REPO


@dataclass
class ScriptLike:
    """Just enough of a script hook for static analysis."""

    name: str
    source_text: str
    script: str = "guard.js"
    points: frozenset[Point] = frozenset({Point.TOOL_CALL})
    kind: str = "script_hook"
    version: str = "v1"
    mode: Mode = Mode.ENFORCE
    on_error: OnError = OnError.FAIL
    source: Path = Path("guard.yaml")

    @property
    def spec(self) -> Any:
        return SimpleNamespace(script_text=self.source_text)

    @property
    def config(self) -> Any:
        return SimpleNamespace(script=self.script, language=None, source=None)

    def run(self, *args: Any) -> Any:
        return None

    def close(self) -> None:
        return None


JS_ALWAYS = 'function on_tool_call(event, host) {\n  return { block: "never" };\n}\n'
JS_SOMETIMES = (
    'function on_tool_call(event, host) {\n  if (event.name === "rm") '
    'return { block: "no" };\n  return { input: {} };\n}\n'
)
PY_ALWAYS = 'def on_tool_call(event, host):\n    """Refuse all."""\n    return {"block": "no"}\n'


def test_the_demo_order_puts_the_host_layer_last(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        hookengine(
            [
                "explain",
                "--config",
                str(REPO / "config"),
                "--agent",
                "demo",
                "--point",
                "before_user_message",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    entries = data["points"]["before_user_message"]
    assert entries[-1]["name"] == "house_rules" and entries[-1]["layer"] == "host"
    assert {e["layer"] for e in entries[:-1]} == {"agent"}
    assert all(len(e["version"]) == 12 and e["mode"] == "enforce" for e in entries)


def test_the_text_form_lists_every_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert hookengine(["explain", "--config", str(REPO / "config"), "--agent", "demo"]) == 0
    out = capsys.readouterr().out
    assert all(f"{p.value}:" in out for p in Point) and "escalate" in out


@pytest.mark.parametrize(
    ("source", "script", "expected"),
    [
        (JS_ALWAYS, "g.js", True),
        (JS_SOMETIMES, "g.js", False),
        (PY_ALWAYS, "g.py", True),
        (
            'def on_tool_call(event, host):\n    if event["name"] == "rm":\n'
            '        return {"block": "no"}\n',
            "g.py",
            False,
        ),
    ],
)
def test_unconditional_blocks_are_found_in_scripts(
    source: str, script: str, expected: bool
) -> None:
    assert always_blocks(ScriptLike("g", source, script), Point.TOOL_CALL) is expected


def test_hooks_after_an_unconditional_block_are_reported() -> None:
    first, second = ScriptLike("wall", JS_ALWAYS), ScriptLike("later", JS_SOMETIMES)
    ex = explain(Pipeline("a", (Slot(first), Slot(second, "host"))), Point.TOOL_CALL)  # type: ignore[arg-type]
    assert ex.warnings == ["tool_call: wall blocks unconditionally, so later never run"]


def test_a_shadow_wall_blocks_nothing() -> None:
    wall = ScriptLike("wall", JS_ALWAYS, mode=Mode.SHADOW)
    ex = explain(
        Pipeline("a", (Slot(wall), Slot(ScriptLike("later", JS_SOMETIMES)))),  # type: ignore[arg-type]
        Point.TOOL_CALL,
    )
    assert not ex.warnings


def test_two_hooks_replacing_the_same_field_are_reported(
    tmp_path: Path, load: Any, project: Any
) -> None:
    esc = (
        "kind: escalate\nname: {n}\nmessage: m\noff_topic_keywords: [x]\n"
        "suppress_on_off_topic: true\n"
    )
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [one, two, quiet]\n",
            "agents/a/hooks/one.yaml": esc.format(n="one"),
            "agents/a/hooks/two.yaml": esc.format(n="two"),
            "agents/a/hooks/quiet.yaml": "kind: inject\nname: quiet\n",
        }
    )
    ex = explain(load(root).agent("a").pipeline)
    assert (
        "before_user_message: one and two both replace 'answer'; when both fire, two's wins"
        in ex.warnings
    )
    assert any(w.startswith("quiet: inject has no messages") for w in ex.warnings)


def test_replaced_fields_of_a_script_come_from_its_handler() -> None:
    hook = ScriptLike("g", JS_SOMETIMES)
    assert replaced_fields(hook, Point.TOOL_CALL) == {"input"}  # type: ignore[arg-type]


def _script(name: str, lang: str, point: str, extra: str = "") -> str:
    body = (
        f"def on_{point}(event, host):\n    return None\n"
        if lang == "py"
        else f"function on_{point}(event, host) {{ return null; }}\n"
    )
    language = "python" if lang == "py" else "javascript"
    indented = "".join(f"  {line}\n" for line in body.splitlines())
    return f"kind: script_hook\nname: {name}\nlanguage: {language}\n{extra}source: |\n{indented}"


@pytest.mark.parametrize("lang", ["py", "js"])
def test_a_redactor_with_on_error_ignore_is_warned_about_with_file_and_line(
    load: Any, project: Any, lang: str
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": (
                "hooks: [result_ignore, answer_ignore, fails, shadowed, guard]\n"
            ),
            "agents/a/hooks/result_ignore.yaml": _script(
                "result_ignore", lang, "tool_result", "on_error: ignore\n"
            ),
            "agents/a/hooks/answer_ignore.yaml": _script(
                "answer_ignore", lang, "before_assistant_message", "on_error: ignore\n"
            ),
            "agents/a/hooks/fails.yaml": _script("fails", lang, "tool_result", "on_error: fail\n"),
            "agents/a/hooks/shadowed.yaml": _script(
                "shadowed", lang, "tool_result", "on_error: ignore\nmode: shadow\n"
            ),
            "agents/a/hooks/guard.yaml": _script("guard", lang, "tool_call", "on_error: ignore\n"),
        }
    )
    ex = explain(load(root).agent("a").pipeline)
    found = [w for w in ex.warnings if "on_error: ignore" in w]
    assert len(found) == 2, found
    result, answer = sorted(found, key=lambda w: "answer" in w)
    assert "agents/a/hooks/result_ignore.yaml:4: result_ignore changes the result" in result
    assert "reaches the model" in result
    assert "agents/a/hooks/answer_ignore.yaml:4: answer_ignore changes the answer" in answer
    assert "reaches the user" in answer
    only = explain(load(root).agent("a").pipeline, Point.TOOL_RESULT)
    assert [w for w in only.warnings if "on_error" in w] == [result]


def test_the_explain_command_prints_the_on_error_warning(
    load: Any, project: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [r]\n",
            "agents/a/hooks/r.yaml": _script("r", "js", "tool_result", "on_error: ignore\n"),
        }
    )
    assert hookengine(["explain", "--config", str(root), "--agent", "a"]) == 0
    out = capsys.readouterr().out
    assert "warning: " in out and "r.yaml:4: r changes the result at tool_result" in out
    assert hookengine(["explain", "--config", str(root), "--agent", "a", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("on_error: ignore" in w for w in data["warnings"])
