"""The entries and compaction pages tell the truth: each YAML hook loads into an agent, and
the host examples run against them and pass their own asserts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from tests.conftest import REPO

DOCS = REPO / "docs"


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def chat(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], hook: str
) -> Engine:
    name = re.search(r"^name: (\S+)$", hook, flags=re.M)
    assert name is not None
    files = {
        "engine.yaml": "process: test\n",
        "agents/chat/agent.yaml": f"hooks: [{name.group(1)}]\n",
        f"agents/chat/hooks/{name.group(1)}.yaml": hook,
    }
    return load(project(files))


@pytest.mark.parametrize("n", [0, 1])
def test_the_entries_page_example_runs_in_both_languages(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], n: int
) -> None:
    hooks, (host,) = blocks("builtins-entries.md", "yaml"), blocks("builtins-entries.md", "python")
    assert len(hooks) == 2 and ("javascript" if n == 0 else "python") in hooks[n]
    engine = chat(project, load, hooks[n])
    exec(host, {"agent": engine.agent("chat")})


def test_the_compaction_page_host_example_runs(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    hooks, (host,) = (
        blocks("builtins-compaction.md", "yaml"),
        blocks("builtins-compaction.md", "python"),
    )
    engine = chat(project, load, hooks[0])
    exec(host, {"agent": engine.agent("chat")})


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_each_compaction_page_hook_loads_and_keeps_a_conversation_short(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], n: int
) -> None:
    hook = blocks("builtins-compaction.md", "yaml")[n]
    agent = chat(project, load, hook).agent("chat")
    for t in range(1, 32):
        agent.after_turn(f"question {t}", f"answer {t}", session_id="s1")
    out = agent.before_call(instruction="Help.", session_id="s1")
    assert len(out.sections) == 1 and "question 1" in out.sections[0]
    assert "question 31" not in out.sections[0]
