"""A tool's exception text: it goes to the model only through the ``tool_result`` hooks, and to
the process log masked by value the way the agent's records are (docs/operations.md). A real
Open WebUI toolkit file whose method raises with its secret input in the message."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import Engine
from tests.conftest import write

PASSWORD = "hunter2-correct-horse"
KEY = "sk-proj-abcdefghijklmnopqrstuvwx"

TOOLKIT = f'''"""
title: Login
"""


class Tools:
    def login(self, user: str, password: str) -> str:
        """
        Log a user in.
        :param user: who logs in
        :param password: their password
        """
        raise RuntimeError(f"login refused for {{user}} with password {{password}} (key {KEY})")
'''

REDACT = """
kind: script_hook
name: redact
language: javascript
source: |
  function on_tool_result(event, host) {
    return {result: host.redact(event.result, ["sk-[A-Za-z0-9-]+"], "[REDACTED]")};
  }
"""


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": (
                "hooks: [redact]\ntools: [login]\nrecords:\n  mask: [event.input.password]\n"
            ),
            "agents/a/hooks/redact.yaml": REDACT,
            "agents/a/tools/login.yaml": "kind: openwebui_tools\nfile: login.py\n",
            "agents/a/tools/login.py": TOOLKIT,
        },
    )
    loaded = Engine.load(root, db=str(tmp_path / "store.db"))
    yield loaded
    loaded.close()


def test_the_exception_text_passes_the_tool_result_hooks(engine: Engine) -> None:
    result = engine.agent("a").call_tool("login", {"user": "ann", "password": PASSWORD})
    assert result.is_error and "RuntimeError: login refused for ann" in result.content
    assert KEY not in result.content and "[REDACTED]" in result.content


def test_the_log_line_is_masked_like_the_records(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.tools"):
        engine.agent("a").call_tool("login", {"user": "ann", "password": PASSWORD})
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.tools"]
    assert any("login refused for ann with password ***" in line for line in lines), lines
    assert PASSWORD not in caplog.text
    engine.flush(timeout=30)
    (record,) = [r for r in engine.records(limit=10) if r.point == "tool_result"]
    assert PASSWORD not in str(record.event) and PASSWORD not in str(record.outcome)


def test_a_masked_result_masks_the_whole_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "tools: [login]\nrecords:\n  mask: [event.result]\n",
            "agents/a/tools/login.yaml": "kind: openwebui_tools\nfile: login.py\n",
            "agents/a/tools/login.py": TOOLKIT,
        },
    )
    with (
        Engine.load(root, db=str(tmp_path / "store.db")) as engine,
        caplog.at_level(logging.WARNING, logger="engine.tools"),
    ):
        engine.agent("a").call_tool("login", {"user": "ann", "password": PASSWORD})
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.tools"]
    assert lines == ["tool login failed: ***"]
