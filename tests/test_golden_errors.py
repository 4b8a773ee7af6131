"""The golden table of broken inputs: for each, the exact messages ``hookengine check`` prints.

Each case is one small config with one mistake an author makes; the table in
tests/golden/errors/table.md holds its input and its messages. Every message must name the
file, the line and the field, and say how to fix it. ``pytest --update-golden`` rewrites the
table; review the diff.
"""

# ruff: noqa: E501 - a table of inputs reads best one per line

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine.checking import check_project
from engine.errors import Problem
from tests.test_golden import check

AGENT = "config/agents/a/agent.yaml"
HOOK = "config/agents/a/hooks/g.yaml"
ONE_HOOK = {AGENT: "hooks: [g]\n"}


def js(source: str, extra: str = "") -> dict[str, str]:
    return {**ONE_HOOK, HOOK: _inline("javascript", source, extra)}


def py(source: str, extra: str = "") -> dict[str, str]:
    return {**ONE_HOOK, HOOK: _inline("python", source, extra)}


def _inline(language: str, source: str, extra: str) -> str:
    body = textwrap.indent(source, "  ")
    return f"kind: script_hook\nname: g\nlanguage: {language}\n{extra}source: |\n{body}"


def yaml_hook(text: str) -> dict[str, str]:
    return {**ONE_HOOK, HOOK: text}


GUARD_JS = "function on_tool_call(event, host) {\n  return null;\n}\n"
GUARD_PY = "def on_tool_call(event, host):\n    return None\n"
TEST = "tests:\n  - point: tool_call\n    event:\n{event}    expect: {{blocked: false}}\n"

CASES: dict[str, dict[str, str]] = {
    # YAML the parser refuses
    "a tab in the indentation": yaml_hook(
        "kind: inject\nname: g\nmessages:\n\t- {role: system, content: hi}\n"
    ),
    "a line indented under a key with a value": yaml_hook(
        "kind: inject\nname: g\n  description: x\n"
    ),
    "a quote never closed": yaml_hook("kind: inject\nname: 'g\ndescription: x\n"),
    "a second ': ' on a line": yaml_hook("kind: inject\nname: g\ndescription: note: this\n"),
    "a value starting with @": yaml_hook("kind: inject\nname: @g\n"),
    "keys not aligned": yaml_hook("kind: inject\nname: g\nconfig:\n    a: 1\n  b: 2\n"),
    "a bracket never closed": yaml_hook(
        "kind: inject\nname: g\nmessages: [{role: system, content: hi}\n"
    ),
    "a duplicate key": yaml_hook(
        "kind: inject\nname: g\nname: h\nmessages: [{role: system, content: hi}]\n"
    ),
    # fields
    "an unknown field": yaml_hook(
        "kind: inject\nname: g\nmessages: [{role: system, content: hi}]\nnme: x\n"
    ),
    "an unknown field in agent.yaml": {
        AGENT: "hook_file: [hooks/g.yaml]\nhooks: [g]\n",
        HOOK: _inline("javascript", GUARD_JS, ""),
    },
    "an unknown kind": yaml_hook("kind: injct\nname: g\n"),
    "a missing kind": yaml_hook("name: g\n"),
    "a number written as text": js(GUARD_JS, "timeout_ms: fast\n"),
    "a zero timeout": js(GUARD_JS, "timeout_ms: 0\n"),
    "a timeout above the ceiling": js(GUARD_JS, "timeout_ms: 5000\n"),
    "an unknown language": yaml_hook(
        "kind: script_hook\nname: g\nlanguage: ruby\nsource: |\n  def on_tool_call(e, h): pass\n"
    ),
    "an unknown on_error": js(GUARD_JS, "on_error: explode\n"),
    "a script with a bad suffix": yaml_hook(
        "kind: script_hook\nname: g\ndescription: x\nscript: guard.txt\n"
    ),
    "a script file that is not there": yaml_hook("kind: script_hook\nname: g\nscript: guard.js\n"),
    "language next to script": {
        **yaml_hook("kind: script_hook\nname: g\nscript: guard.js\nlanguage: javascript\n"),
        "config/agents/a/hooks/guard.js": GUARD_JS,
    },
    "an inline source without language": yaml_hook(
        "kind: script_hook\nname: g\nsource: |\n  function on_tool_call(e, h) {}\n"
    ),
    "a hook file that is not there": {AGENT: "hook_files: [hooks/gaurd.yaml]\n"},
    "an agent without hooks": {AGENT: "description: nothing yet\n"},
    "two hooks with one name": {
        AGENT: "hooks: [g, h]\n",
        HOOK: _inline("javascript", GUARD_JS, ""),
        "config/agents/a/hooks/h.yaml": _inline("javascript", GUARD_JS, ""),
    },
    "engine.yaml: a number written as text": {
        "config/engine.yaml": "retention: lots\n",
        **js(GUARD_JS),
    },
    # scripts that compile and fail at run time
    "JS: require": js("const fs = require('fs');\n" + GUARD_JS),
    "JS: process.env": js(
        "function on_tool_call(event, host) {\n  return {block: process.env.BLOCK};\n}\n"
    ),
    "JS: fetch": js("function on_tool_call(event, host) {\n  fetch('https://example.com');\n}\n"),
    "JS: setTimeout": js(
        "function on_tool_call(event, host) {\n  setTimeout(function () {}, 10);\n}\n"
    ),
    "JS: Math.random": js(
        "function on_tool_call(event, host) {\n  return {block: Math.random() < 0.5};\n}\n"
    ),
    "JS: a misspelt global": js(
        "function on_tool_call(event, host) {\n  return {notice: JSOn.stringify(event.input)};\n}\n"
    ),
    "JS: a handler that is not a point": js(
        "function on_tool_cal(event, host) {\n  return null;\n}\n" + GUARD_JS
    ),
    "JS: event.args": js(
        "function on_tool_call(event, host) {\n  var cmd = event.args.cmd;\n  return {block: cmd === 'rm'};\n}\n"
    ),
    "JS: a field of another point": js(
        "function on_tool_call(event, host) {\n  return {block: event.question === ''};\n}\n"
    ),
    "Python: event['args']": py(
        "def on_tool_call(event, host):\n    return {'block': event['args']['cmd'] == 'rm'}\n"
    ),
    "Python: event.get with a misspelt field": py(
        "def on_tool_call(event, host):\n    return {'block': event.get('nmae') == 'shell'}\n"
    ),
    "Python: event.input on a dict": py(
        "def on_tool_call(event, host):\n    return {'block': event.input['cmd'] == 'rm'}\n"
    ),
    "Python: a handler that is not a point": py(
        "def on_after_trun(event, host):\n    return None\n\n\n" + GUARD_PY
    ),
    # hook tests
    "a test event with args": js(
        GUARD_JS, TEST.format(event="      name: shell\n      args: {cmd: ls}\n")
    ),
    "a test event with text as input": js(
        GUARD_JS, TEST.format(event="      name: shell\n      input: rm -rf /\n")
    ),
    "a test at an unknown point": js(
        GUARD_JS,
        "tests:\n  - point: tool_cal\n    event: {name: shell}\n    expect: {blocked: false}\n",
    ),
}


def problems_of(
    tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> list[Problem]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)  # paths in messages relative to the project, as authors see them
    return check_project(tmp_path / "config").problems


def test_there_are_at_least_30_broken_inputs() -> None:
    assert len(CASES) >= 30


def test_every_broken_input_has_its_exact_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    sections = []
    for i, (case, files) in enumerate(CASES.items()):
        found = problems_of(tmp_path / str(i), files, monkeypatch)
        assert found, f"{case}: check found nothing"
        for problem in found:
            assert problem.path.startswith("config/") and problem.line is not None, (case, problem)
            assert problem.field, (case, problem)
            assert problem.hint or "(" in problem.message, f"{case}: no fix in {problem}"
        inputs = "\n".join(
            f"`{name.removeprefix('config/')}`:\n\n```yaml\n{text.rstrip()}\n```\n"
            for name, text in files.items()
        )
        messages = "\n".join(str(p) for p in found)
        sections.append(f"## {case}\n\n{inputs}\n```text\n{messages}\n```\n")
    text = "# Broken inputs and what `hookengine check` says\n\n" + "\n".join(sections)
    check("errors/table.md", text, request)
