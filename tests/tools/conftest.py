"""Tool projects: an agent with script tools (Python and JavaScript), test-kind tools and a
guard that blocks, rewrites and redacts at tool_call and tool_result."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.tools import kinds
from tests.conftest import write

GUARD = """
kind: script_hook
name: guard
language: javascript
source: |
  function on_tool_call(event, host) {
    if (event.input.text === "bad") { return {block: "no bad words"}; }
    if (event.input.text === "rewrite me") { return {input: {text: "rewritten"}}; }
    return null;
  }
  function on_tool_result(event, host) {
    return {result: host.redact(event.result, ["secret\\\\d+"])};
  }
"""

ECHO_PY = """
kind: script_tool
name: echo_py
description: Echo the text back (Python).
script: echo.py
input_schema:
  type: object
  properties:
    text: {type: string}
  required: [text]
  additionalProperties: false
"""

ECHO_JS = """
kind: script_tool
name: echo_js
description: Echo the text back (JavaScript).
language: javascript
source: |
  function run(input, host) {
    if (input.text === "loop") { while (true) {} }
    if (input.text === "memory") { var a = []; while (true) { a.push(new ArrayBuffer(4 << 20)); } }
    if (input.text === "throw") { throw new Error("broken"); }
    if (input.text === "big") { host.add_artifact("big.txt", "x".repeat(70000), "text/plain"); }
    if (input.text === "../escape") { host.add_artifact("../escape.txt", "x", "text/plain"); }
    return {content: "echo: " + input.text, data: {n: input.text.length}};
  }
parameters:
  - name: text
    type: str
    required: true
    description: the text to echo
"""

ECHO_SCRIPT = """
def run(input, host):
    host.add_artifact("echo.txt", input["text"], "text/plain")
    return "echo: " + input["text"]
"""

FAKE = {
    "fake_echo": "echo",
    "fake_sleepy": "sleepy",
    "fake_raising": "raising",
    "fake_artifact": "artifact",
    "fake_emitting": "emitting",
    "fake_written": "written",
}


def fake_yaml(name: str, function: str, **extra: Any) -> str:
    lines = ["kind: test_python", f"name: {name}", f"function: {function}"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def fake_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kind: test_python`` in the registry (trusted in-process Python tools)."""
    monkeypatch.setitem(kinds.LOADERS, "test_python", "tests.tools.fake_kind:load_fake")


def tool_files(**extra: str) -> dict[str, str]:
    names = ["echo_py", "echo_js", *FAKE]
    files = {
        "agents/a/agent.yaml": f"hooks: [guard]\ntools: [{', '.join(names)}]\n",
        "agents/a/hooks/guard.yaml": GUARD,
        "agents/a/tools/echo_py.yaml": ECHO_PY,
        "agents/a/tools/echo.py": ECHO_SCRIPT,
        "agents/a/tools/echo_js.yaml": ECHO_JS,
    }
    for name, function in FAKE.items():
        timeout = {"timeout_ms": 300} if function == "sleepy" else {}
        files[f"agents/a/tools/{name}.yaml"] = fake_yaml(name, function, **timeout)
    files.update(extra)
    return files


@pytest.fixture
def tool_engine(tmp_path: Path, fake_kind: None) -> Iterator[Callable[..., Engine]]:
    """An engine over the tool project (files may be added or replaced)."""
    engines: list[Engine] = []

    def make(extra: dict[str, str] | None = None, **options: Any) -> Engine:
        root = write(tmp_path / "config", tool_files(**(extra or {})))
        options.setdefault("db", str(tmp_path / "store.db"))
        options.setdefault("records", False)
        engine = Engine.load(root, **options)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()
