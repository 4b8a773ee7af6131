"""docs/builtins-approval.md tells the truth: its YAML files make an agent, its Python
example prints what the page says, its conditions ask as described."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from engine.runtime import Engine
from tests.conftest import REPO

PAGE = (REPO / "docs" / "builtins-approval.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.S)


def write_files(root: Path) -> None:
    """Each YAML block whose first line is ``# <path>`` is written there."""
    for block in blocks("yaml"):
        first = block.partition("\n")[0]
        if first.startswith("# config/"):
            path = root / first.removeprefix("# ")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block)
    shop = root / "config" / "agents" / "shop" / "agent.yaml"
    shop.write_text("hooks: [confirm_pay, confirm_pay_js]\n")


def test_the_python_example_prints_what_the_page_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    (example,) = blocks("python")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, "builtins-approval.md", "exec"), {})
    (expected,) = blocks("text")
    assert printed.getvalue() == expected


@pytest.mark.parametrize("hook", ["confirm_pay", "confirm_pay_js"])
def test_the_conditions_ask_only_over_100(tmp_path: Path, hook: str) -> None:
    write_files(tmp_path)
    (tmp_path / "config/agents/shop/agent.yaml").write_text(f"hooks: [{hook}]\n")
    with Engine.load(tmp_path / "config", db=str(tmp_path / "s.db")) as engine:
        agent = engine.agent("shop")
        small = agent.tool_call("pay", {"amount": 50, "to": "bob"}, call_id="1", session_id="s")
        big = agent.tool_call("pay", {"amount": 500, "to": "bob"}, call_id="2", session_id="s")
    assert not small.blocked and small.approval is None
    assert big.approval is not None and big.approval["message"] == "Pay 500 to bob?"
