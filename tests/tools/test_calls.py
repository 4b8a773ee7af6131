"""The one call path: hooks block, rewrite and redact; bad input, a raising tool and a timeout
are is_error results and the host stays up; artifacts keep their caps and names."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine

SCRIPT_TOOLS = ["echo_py", "echo_js"]
ALL_TOOLS = [*SCRIPT_TOOLS, "fake_echo"]


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_a_tool_call_hook_blocks_the_tool_with_its_reason(
    tool_engine: Callable[..., Engine], tool: str
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool(tool, {"text": "bad"}, session_id="s")
    assert result.is_error and "no bad words" in result.content
    assert result.artifacts == []


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_a_rewritten_input_is_the_one_the_tool_runs_with(
    tool_engine: Callable[..., Engine], tool: str
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool(tool, {"text": "rewrite me"}, session_id="s")
    assert not result.is_error
    assert result.content == "echo: rewritten"


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_a_tool_result_hook_redacts_the_content(
    tool_engine: Callable[..., Engine], tool: str
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool(tool, {"text": "key secret123"}, session_id="s")
    assert result.content == "echo: key [REDACTED]"


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_the_async_path_blocks_rewrites_and_redacts_too(
    tool_engine: Callable[..., Engine], tool: str
) -> None:
    agent = tool_engine().agent("a")

    async def calls() -> list[str]:
        texts = ["bad", "rewrite me", "secret7"]
        results = [await agent.acall_tool(tool, {"text": t}, session_id="s") for t in texts]
        return [r.content for r in results]

    blocked, rewritten, redacted = asyncio.run(calls())
    assert "no bad words" in blocked
    assert rewritten == "echo: rewritten"
    assert redacted == "echo: [REDACTED]"


def test_bad_input_is_an_error_listing_each_field(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_py", {"txt": 1})
    assert result.is_error
    assert "'text' is a required property" in result.content
    assert "'txt' was unexpected" in result.content
    wrong_type = agent.call_tool("echo_js", {"text": 5})
    assert wrong_type.is_error and "text: 5 is not of type 'string'" in wrong_type.content


def test_input_that_is_not_an_object_is_an_error(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_py", ["text"])  # type: ignore[arg-type]
    assert result.is_error and "must be an object, not list" in result.content


def test_an_unknown_tool_is_an_error_with_a_suggestion(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_pi", {"text": "x"})
    assert result.is_error and "did you mean 'echo_py'?" in result.content


def test_a_raising_tool_is_an_error_and_the_host_stays_up(
    tool_engine: Callable[..., Engine],
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("fake_raising", {})
    assert result.is_error and "RuntimeError: the tool broke" in result.content
    assert "secret42" not in result.content  # tool_result hooks see failures too
    script = agent.call_tool("echo_js", {"text": "throw"})
    assert script.is_error and "broken" in script.content
    assert agent.call_tool("echo_js", {"text": "fine"}).content == "echo: fine"


def test_a_script_tool_past_its_time_limit_is_an_error(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_js", {"text": "loop"})
    assert result.is_error and "time limit" in result.content
    assert agent.call_tool("echo_js", {"text": "after"}).content == "echo: after"


def test_a_script_tool_past_its_memory_limit_is_an_error(
    tool_engine: Callable[..., Engine],
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_js", {"text": "memory"})
    assert result.is_error and "memory" in result.content
    assert agent.call_tool("echo_js", {"text": "after"}).content == "echo: after"


def test_a_thread_tool_past_its_time_limit_is_an_error(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("fake_sleepy", {"seconds": 2})
    assert result.is_error and "timed out after 300 ms" in result.content


def test_a_process_tool_past_its_time_limit_is_killed(
    tool_engine: Callable[..., Engine],
) -> None:
    extra = {
        "agents/a/tools/fake_sleepy.yaml": (
            "kind: test_python\nname: fake_sleepy\nfunction: sleepy\ntimeout_ms: 300\n"
            "isolation: process\n"
        ),
        "agents/a/tools/fake_echo.yaml": (
            "kind: test_python\nname: fake_echo\nfunction: echo\nisolation: process\n"
        ),
    }
    agent = tool_engine(extra).agent("a")
    result = agent.call_tool("fake_sleepy", {"seconds": 30})
    assert result.is_error and "timed out after 300 ms" in result.content
    assert multiprocessing.active_children() == []  # the worker was killed and reaped
    echoed = agent.call_tool("fake_echo", {"text": "hi"})
    assert echoed.content == "echo: hi"
    assert echoed.data["pid"] != os.getpid()  # it ran in a worker process


def test_events_a_tool_emits_reach_the_host_in_order(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    seen: list[dict] = []
    result = agent.call_tool("fake_emitting", {}, emit=seen.append)
    assert seen == [{"type": "status", "data": {"description": "working"}}]
    assert result.events == seen


def test_a_script_tool_adds_a_text_artifact_to_the_session(
    tool_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    engine = tool_engine()
    result = engine.agent("a").call_tool("echo_py", {"text": "hello"}, session_id="s1")
    (made,) = result.artifacts
    assert made["name"] == "echo.txt" and made["bytes"] == 5 and made["mime"] == "text/plain"
    (row,) = engine.artifacts("s1")
    assert row["tool"] == "echo_py" and row["sha256"] == made["sha256"]
    path = tmp_path / "data" / "artifacts" / "a" / "s1" / made["id"] / "echo.txt"
    assert path.read_text() == "hello"


def test_an_artifact_over_the_script_cap_is_an_error(tool_engine: Callable[..., Engine]) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("echo_js", {"text": "big"}, session_id="s")
    assert result.is_error and "larger than 65536 bytes" in result.content


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "a/b.txt", "..", "c:x"])
def test_artifact_names_with_a_path_are_refused(
    tool_engine: Callable[..., Engine], tmp_path: Path, name: str
) -> None:
    agent = tool_engine().agent("a")
    result = agent.call_tool("fake_artifact", {"name": name}, session_id="s")
    assert result.is_error and "plain file name" in result.content
    assert not (tmp_path / "data" / "escape.txt").exists()
    assert agent.engine.artifacts("s") == []


def test_a_session_id_with_a_path_stays_inside_the_artifacts_folder(
    tool_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    engine = tool_engine()
    result = engine.agent("a").call_tool(
        "fake_artifact", {"name": "x.txt"}, session_id="../../outside"
    )
    assert not result.is_error
    files = [p for p in tmp_path.rglob("x.txt")]
    assert len(files) == 1
    assert files[0].is_relative_to(tmp_path / "data" / "artifacts" / "a")


def test_the_session_caps_hold(tool_engine: Callable[..., Engine]) -> None:
    caps = {"engine.yaml": "tools:\n  max_session_artifacts: 2\n  max_session_bytes: 100\n"}
    agent = tool_engine(caps).agent("a")
    for _ in range(2):
        assert not agent.call_tool("fake_artifact", {"name": "a.txt"}, session_id="s").is_error
    third = agent.call_tool("fake_artifact", {"name": "a.txt"}, session_id="s")
    assert third.is_error and "max_session_artifacts" in third.content
    big = agent.call_tool("fake_artifact", {"name": "b.txt", "text": "y" * 101}, session_id="t")
    assert big.is_error and "max_session_bytes" in big.content


def test_artifacts_go_with_the_session(tool_engine: Callable[..., Engine], tmp_path: Path) -> None:
    engine = tool_engine()
    engine.agent("a").call_tool("echo_py", {"text": "x"}, session_id="gone")
    engine.agent("a").call_tool("echo_py", {"text": "x"}, session_id="kept")
    assert engine.forget_artifacts("gone") == 1
    assert engine.artifacts("gone") == []
    assert not (tmp_path / "data" / "artifacts" / "a" / "gone").exists()
    assert len(engine.artifacts("kept")) == 1


def test_artifacts_need_a_session(tool_engine: Callable[..., Engine]) -> None:
    result = tool_engine().agent("a").call_tool("echo_py", {"text": "x"})
    assert result.is_error and "session_id" in result.content


def test_concurrent_calls_each_get_their_own_answer(tool_engine: Callable[..., Engine]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    agent = tool_engine().agent("a")
    texts = [f"t{i}" for i in range(24)]
    tools = ["echo_js", "echo_py", "fake_echo"]

    def one(i: int) -> str:
        return agent.call_tool(tools[i % 3], {"text": texts[i]}, session_id=f"s{i}").content

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(24))) == [f"echo: {t}" for t in texts]


def test_a_replaced_tool_set_closes_only_after_its_last_call(
    tool_engine: Callable[..., Engine],
) -> None:
    engine = tool_engine()
    agent = engine.agent("a")
    old = agent.tools
    fake = old.tools["fake_echo"]
    old.enter()  # a call in flight on the old set
    (engine.project.agents["a"].folder / "tools" / "fake_echo.yaml").write_text(
        "kind: test_python\nname: fake_echo\nfunction: echo\ntimeout_ms: 999\n"
    )
    assert engine.reload_agent("a")
    assert agent.tools is not old and agent.tools.tools["fake_echo"].timeout_ms == 999
    assert not fake.closed  # type: ignore[attr-defined]
    old.leave()
    assert fake.closed  # type: ignore[attr-defined]


def test_a_tool_writes_an_artifact_to_the_path_it_asked_for_and_reads_one_by_name(
    tool_engine: Callable[..., Engine],
) -> None:
    engine = tool_engine()
    agent = engine.agent("a")
    agent.call_tool("fake_artifact", {"name": "notes.txt", "text": "first"}, session_id="p")
    result = agent.call_tool("fake_written", {"read": "notes.txt"}, session_id="p")
    assert not result.is_error and "read 'first'" in result.content
    (made,) = result.artifacts
    assert (made["name"], made["type"], made["mime"], made["bytes"]) == (
        "chart",
        "svg",
        "image/svg+xml",
        6,
    )
    rows = {r["id"]: r for r in engine.artifacts("p")}
    assert rows[made["id"]]["description"] == "a chart"
    missing = agent.call_tool("fake_written", {"read": "nope.csv"}, session_id="p")
    assert missing.is_error and "no artifact 'nope.csv'" in missing.content
    assert len(engine.artifacts("p")) == 2  # the failed call's path went with it
    folder = engine.artifact_store.root / "a" / "p"
    assert len(list(folder.iterdir())) == 2
