"""hookengine dev: a conversation through an agent that reloads on save, driven by stdin."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.cli.dev import DevSession
from tests.conftest import console
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture
from tests.test_reload import FILES, GUARD, guard_file, wait_until


@pytest.fixture
def session(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Any:
    engine = load(project(FILES), watch=True)
    lines: list[str] = []
    dev = DevSession(engine, "a", lines.append)
    dev.lines = lines  # type: ignore[attr-defined]
    yield dev
    dev.close()


def said(session: Any) -> str:
    return "\n".join(session.lines)


@pytest.mark.usefixtures("guard_kind")
def test_a_saved_edit_is_reported_and_used_by_the_next_line(session: Any) -> None:
    session.handle('tool shell {"command": "ls"}')
    assert 'run the tool with input {"command": "ls"}' in said(session)
    guard_file(session.engine.project.root).write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: "[reload] reloaded a: generation 1" in said(session))
    assert "forbidden: [] -> ['shell']" in said(session)
    session.handle('tool shell {"command": "ls"}')
    assert "=> BLOCKED: shell is forbidden" in said(session)


@pytest.mark.usefixtures("guard_kind")
def test_a_refused_reload_is_printed_with_file_and_line(session: Any) -> None:
    guard_file(session.engine.project.root).write_text(
        GUARD.format(forbidden="[shell]") + "oops: 1\n"
    )
    wait_until(lambda: "[reload] reload of a refused" in said(session))
    assert "guard.yaml:4: oops: unknown field" in said(session)


@pytest.mark.usefixtures("guard_kind")
def test_a_message_runs_a_whole_turn_and_commands_work(session: Any) -> None:
    session.handle("my iphone is broken")
    assert "assistant: call us" in said(session)
    session.handle("where is my parcel?")
    assert "assistant: Let me check that for you." in said(session)
    assert session.handle(":status") and "generation 0" in said(session)
    assert session.handle(":explain") and "tool_call:" in said(session)
    session.handle("tool shell [1]")
    assert "error: the tool input must be a JSON object" in said(session)
    assert session.handle(":quit") is False


def test_the_console_script_reloads_while_reading_stdin(
    project: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = project({key: value for key, value in FILES.items() if "/a/" not in key})
    hook = root / "agents/b/hooks/esc.yaml"
    proc = subprocess.Popen(
        [
            str(console("hookengine")),
            "dev",
            "--config",
            str(root),
            "--agent",
            "b",
            "--db",
            str(tmp_path / "dev.db"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [out.put(line) for line in proc.stdout or []])
    reader.start()
    seen: list[str] = []

    def expect(text: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in seen):
            seen.append(out.get(timeout=max(0.01, deadline - time.monotonic())))

    try:
        assert proc.stdin is not None
        expect("dev: agent b")
        proc.stdin.write("iphone?\n")
        proc.stdin.flush()
        expect("assistant: call b")
        hook.write_text(hook.read_text().replace("call b", "call the b team"))
        expect("[reload] reloaded b")
        proc.stdin.write("iphone?\n:quit\n")
        proc.stdin.flush()
        expect("assistant: call the b team")
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
