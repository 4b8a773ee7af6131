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
    session.handle('tool shell {"command": "rm -rf /", "command": "ls"}')
    assert "error: key 'command' appears twice in one object" in said(session)
    session.handle("tool shell " + '{"a":' * 1000 + "1" + "}" * 1000)
    assert "error: nested deeper than 64 levels" in said(session)
    session.handle('result shell {} {"a": 1, "a": 2}')
    assert "error: key 'a' appears twice in one object" in said(session)
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


def event(ok: bool, generation: int, *, swapped: bool = False, problem: str = "") -> Any:
    from engine.errors import Problem
    from engine.reload import ReloadEvent

    problems = (Problem("agents/a/hooks/guard.yaml", 4, "oops", problem),) if problem else ()
    return ReloadEvent(
        "a",
        ok,
        generation,
        "2026-01-01T00:00:00+00:00",
        swapped=swapped,
        changes=("guard: changed",) if swapped else (),
        problems=problems,
        files=("agents/a/hooks/guard.yaml",),
    )


@pytest.mark.usefixtures("guard_kind")
def test_each_reload_is_printed_once_and_a_fixed_file_is_announced(session: Any) -> None:
    redraws: list[int] = []
    session._redraw = lambda: redraws.append(1)
    session._on_reload(event(True, 1, swapped=True))
    session._on_reload(event(True, 1, swapped=True))  # the same save, heard twice
    session._on_reload(event(False, 1, problem="unknown field"))
    session._on_reload(event(False, 1, problem="unknown field"))
    session._on_reload(event(True, 1))  # the file is back as it was: fixed, nothing swapped
    text = said(session)
    assert text.count("reloaded a: generation 1") == 1
    assert text.count("reload of a refused") == 1
    assert text.endswith(
        "[reload] fixed: agents/a/hooks/guard.yaml loads again; generation 1 is live"
    )
    assert len(redraws) == 3  # the prompt is drawn again after each message printed
    assert all(line.startswith("\r") for line in session.lines if "[reload]" in line)


@pytest.mark.usefixtures("guard_kind")
def test_a_broken_file_fixed_on_disk_is_announced(session: Any) -> None:
    guard = guard_file(session.engine.project.root)
    guard.write_text(GUARD.format(forbidden="[shell]") + "oops: 1\n")
    wait_until(lambda: "[reload] reload of a refused" in said(session))
    guard.write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: "[reload] fixed: " in said(session))
    assert "generation 1 is live" in said(session)


@pytest.mark.usefixtures("guard_kind")
def test_every_shown_outcome_names_the_deciding_hook(session: Any) -> None:
    guard_file(session.engine.project.root).write_text(GUARD.format(forbidden="[shell]"))
    session.engine.reload_agent("a")
    session.handle('tool shell {"command": "ls"}')
    assert "  => blocked by guard: shell is forbidden" in said(session)
    session.handle('tool read_file {"path": "a"}')
    assert "  => no hook changed anything: allowed as asked" in said(session)
    session.handle("my iphone is broken")
    assert "  => changed by esc" in said(session)


@pytest.mark.usefixtures("guard_kind")
def test_an_unknown_command_is_refused_with_the_list_of_commands(session: Any) -> None:
    assert session.handle(":stauts")
    assert said(session) == (
        "unknown command :stauts (did you mean ':status'?); "
        "commands: :status, :explain, :reload, :approvals, :approve, :deny, :help, :quit"
    )
    session.handle(":help")
    assert "type a message to run a turn" in said(session)
