"""The hot-reload watcher under file-system faults, with real file watching: symlink loops, NULs,
undecodable names, FIFOs, directories and devices in a file's place, permission denied, files
deleted mid-read, a stuck read, a crashing watch loop. After each fault the error shows in
``status()``, the last good version stays live, a repaired file goes live, the error clears,
and ``engine.close()`` returns promptly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import engine.reload as reload_module
import engine.reload_reads as reads_module
from engine import Engine
from tests.conftest import REPO
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture

GUARD = "kind: test_guard\nname: guard\nforbidden: {forbidden}\n"
FILES = {
    "agents/a/agent.yaml": "hooks: [guard]\n",
    "agents/a/hooks/guard.yaml": GUARD.format(forbidden="[]"),
    "agents/b/agent.yaml": "hooks: [guard]\n",
    "agents/b/hooks/guard.yaml": GUARD.format(forbidden="[shell]"),
}
WAIT_S = 15.0
"""Bound on a reload going live or an error showing (debounce 0.4 s, a loaded 2-core box)."""
CLOSE_S = 5.0
"""Bound on ``engine.close()``."""


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.02)


def blocked(engine: Engine, agent: str = "a") -> bool:
    return engine.agent(agent).tool_call("shell", {"command": "ls"}).blocked


def error_text(engine: Engine, agent: str = "a") -> str | None:
    error = engine.status()["agents"][agent]["error"]
    return None if error is None else json.dumps(error)


def remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or path.is_fifo():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def closes_promptly(engine: Engine) -> None:
    started = time.monotonic()
    engine.close()
    assert time.monotonic() - started < CLOSE_S


@pytest.fixture
def root(project: Callable[[dict[str, str]], Path]) -> Path:
    return project(FILES)


@pytest.fixture
def watched(
    root: Path,
    load: Callable[..., Engine],
    guard_kind: None,  # noqa: F811 - the fixture
) -> Engine:
    engine = load(root, watch=True)
    assert engine.status()["watcher"]["alive"] and not blocked(engine)
    return engine


# -- faults in a file the agent uses ---------------------------------------------------------


def loop_at(path: Path) -> None:
    remove(path)
    other = path.with_name(f"{path.stem}.loop.yaml")
    path.symlink_to(other.name)
    other.symlink_to(path.name)


def fifo_at(path: Path) -> None:
    remove(path)
    os.mkfifo(path)


def dir_at(path: Path) -> None:
    remove(path)
    path.mkdir()


def link_at(path: Path, target: str = "/dev/zero") -> None:
    remove(path)
    path.symlink_to(target)


def list_hook(root: Path, make: Callable[[Path], None], name: str = "extra") -> None:
    make(root / f"agents/a/hooks/{name}.yaml")
    (root / "agents/a/agent.yaml").write_text(f"hooks: [guard, {name}]\n")


A = "agents/a"
FAULTS: dict[str, tuple[Callable[[Path], None], str]] = {
    # the fault, and what the agent's error names
    "hook symlink loop": (lambda r: loop_at(r / A / "hooks/guard.yaml"), "guard"),
    "agent.yaml symlink loop": (lambda r: loop_at(r / A / "agent.yaml"), "agent.yaml"),
    "listed hook is a symlink loop": (lambda r: list_hook(r, loop_at), "extra"),
    "NUL in hooks:": (
        lambda r: (r / A / "agent.yaml").write_text('hooks: [guard, "x\\0y"]\n'),
        "a",
    ),
    "NUL in hook_files:": (
        lambda r: (r / A / "agent.yaml").write_text('hook_files: ["hooks/guard.yaml\\0"]\n'),
        "guard.yaml",
    ),
    "listed hook is a FIFO": (lambda r: list_hook(r, fifo_at), "FIFO"),
    "hook replaced by a FIFO": (lambda r: fifo_at(r / A / "hooks/guard.yaml"), "FIFO"),
    "agent.yaml replaced by a FIFO": (lambda r: fifo_at(r / A / "agent.yaml"), "FIFO"),
    "test file is a FIFO": (lambda r: fifo_at(r / A / "hooks/guard.test.yaml"), "FIFO"),
    "listed hook is a directory": (lambda r: list_hook(r, dir_at), "extra.yaml"),
    "hook replaced by a directory": (lambda r: dir_at(r / A / "hooks/guard.yaml"), "guard.yaml"),
    "hook is a symlink to /dev/zero": (
        lambda r: (
            remove(r / A / "hooks/guard.yaml"),
            (r / A / "hooks/guard.yaml").symlink_to("/dev/zero"),
        ),
        "device",
    ),
    "hook deleted": (lambda r: remove(r / A / "hooks/guard.yaml"), "guard.yaml"),
}


def repair(root: Path, forbidden: str = "[shell]") -> None:
    """Back to a valid agent whose guard now blocks shell (a change that must go live)."""
    hooks = root / A / "hooks"
    for path in hooks.iterdir():
        if path.name != "guard.yaml" or not path.is_file() or path.is_symlink():
            remove(path)
    remove(root / A / "agent.yaml")
    (root / A / "agent.yaml").write_text("hooks: [guard]\n")
    (hooks / "guard.yaml").write_text(GUARD.format(forbidden=forbidden))


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_is_reported_per_agent_and_a_repair_goes_live(
    fault: str, root: Path, watched: Engine
) -> None:
    make, named = FAULTS[fault]
    make(root)
    wait_until(lambda: error_text(watched) is not None, f"{fault}: error in status")
    assert named in str(error_text(watched))
    status = watched.status()
    assert status["watching"] and status["watcher"]["alive"] and not status["watcher"]["stalled"]
    assert status["agents"]["b"]["error"] is None  # the other agent is not touched
    assert not blocked(watched)  # the last good version stays live
    assert blocked(watched, "b")
    repair(root)
    wait_until(lambda: blocked(watched) and error_text(watched) is None, f"{fault}: repair live")
    last = watched.status()["agents"]["a"]["last_error"]
    assert last is not None and named in json.dumps(last)
    closes_promptly(watched)


# -- junk that no agent uses ------------------------------------------------------------------


def undecodable(folder: Path, suffix: str) -> None:
    name = os.fsencode(folder) + b"/\xff\xfe" + suffix.encode()
    with open(name, "wb") as file:
        file.write(b"kind: [\n")


JUNK: dict[str, Callable[[Path], None]] = {
    "FIFO dropped into hooks/": lambda r: os.mkfifo(r / A / "hooks/junk.yaml"),
    "FIFO script dropped into hooks/": lambda r: os.mkfifo(r / A / "hooks/junk.py"),
    "undecodable YAML name": lambda r: undecodable(r / A / "hooks", ".yaml"),
    "undecodable script name": lambda r: undecodable(r / A, ".js"),
    "directory named like a hook file": lambda r: (r / A / "hooks/junk.yaml").mkdir(),
    "symlink loop dropped into hooks/": lambda r: loop_at(r / A / "hooks/junk.yaml"),
}


@pytest.mark.parametrize("junk", list(JUNK))
def test_junk_nobody_uses_leaves_the_watcher_working(
    junk: str, root: Path, watched: Engine
) -> None:
    JUNK[junk](root)
    time.sleep(0.6)  # let the watcher see it (debounce 0.4 s)
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(watched), f"{junk}: edit live")
    status = watched.status()
    assert status["watcher"]["alive"] and status["watcher"]["error"] is None
    assert status["agents"]["a"]["error"] is None
    closes_promptly(watched)


# -- scripts, in both languages ---------------------------------------------------------------

SCRIPTS = {
    "py": "def on_tool_call(event, host):\n"
    "    if event['name'] in host.config.get('forbidden', []):\n"
    "        return {'block': 'not allowed'}\n"
    "    return None\n",
    "js": "function on_tool_call(event, host) {\n"
    "  if ((host.config.forbidden || []).indexOf(event.name) >= 0) {\n"
    "    return {block: 'not allowed'};\n  }\n  return null;\n}\n",
}


def script_hook(lang: str, script: str, forbidden: str = "[]") -> str:
    return f"kind: script_hook\nname: guard\nscript: {script}\nconfig: {{forbidden: {forbidden}}}\n"


@pytest.fixture(params=["py", "js"])
def lang(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def script_engine(
    lang: str, project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> Iterator[tuple[Engine, Path]]:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": script_hook(lang, f"guard.{lang}"),
            f"agents/a/hooks/guard.{lang}": SCRIPTS[lang],
        }
    )
    engine = load(root, watch=True)
    assert not blocked(engine)
    yield engine, root


SCRIPT_FAULTS: dict[str, tuple[Callable[[Path, str], None], str]] = {
    "script replaced by a FIFO": (lambda r, lang: fifo_at(r / A / f"hooks/guard.{lang}"), "FIFO"),
    "script is a symlink loop": (lambda r, lang: loop_at(r / A / f"hooks/guard.{lang}"), "guard"),
    "script replaced by a directory": (
        lambda r, lang: dir_at(r / A / f"hooks/guard.{lang}"),
        "directory",
    ),
    "NUL in script:": (
        lambda r, lang: (r / A / "hooks/guard.yaml").write_text(
            f'kind: script_hook\nname: guard\nscript: "guard\\0.{lang}"\n'
        ),
        "guard.yaml",
    ),
    "script deleted": (lambda r, lang: remove(r / A / f"hooks/guard.{lang}"), "guard"),
}


def repair_script(root: Path, lang: str) -> None:
    remove(root / A / f"hooks/guard.{lang}")
    for path in (root / A / "hooks").glob("guard.loop*"):
        remove(path)
    (root / A / f"hooks/guard.{lang}").write_text(SCRIPTS[lang])
    (root / A / "hooks/guard.yaml").write_text(script_hook(lang, f"guard.{lang}", "[shell]"))


@pytest.mark.parametrize("fault", list(SCRIPT_FAULTS))
def test_a_script_fault_is_reported_and_a_repair_goes_live(
    fault: str, lang: str, script_engine: tuple[Engine, Path]
) -> None:
    engine, root = script_engine
    make, named = SCRIPT_FAULTS[fault]
    make(root, lang)
    wait_until(lambda: error_text(engine) is not None, f"{fault} ({lang}): error in status")
    assert named in str(error_text(engine))
    assert engine.status()["watcher"]["alive"] and not blocked(engine)
    repair_script(root, lang)
    wait_until(lambda: blocked(engine) and error_text(engine) is None, f"{fault}: repair live")
    closes_promptly(engine)


def test_a_script_deleted_mid_read_is_reported_then_recovers(
    lang: str, script_engine: tuple[Engine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, root = script_engine
    script = root / A / f"hooks/guard.{lang}"
    real = reload_module.load_agent
    calls: list[int] = []

    def deleting(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        spec = real(*args, **kw)
        if len(calls) == 1:  # the first read succeeds, then the script vanishes before the check
            script.unlink()
        return spec

    monkeypatch.setattr(reload_module, "load_agent", deleting)
    (root / A / "hooks/guard.yaml").write_text(script_hook(lang, f"guard.{lang}", "[shell]"))
    wait_until(lambda: error_text(engine) is not None, "missing script reported")
    assert f"guard.{lang}" in str(error_text(engine)) and len(calls) >= 2
    assert not blocked(engine)
    script.write_text(SCRIPTS[lang])
    wait_until(lambda: blocked(engine) and error_text(engine) is None, "repair live")
    closes_promptly(engine)


# -- a stuck read, a held lock, a crashing loop ----------------------------------------------


def test_a_read_that_blocks_is_refused_in_time_and_close_returns(
    root: Path, watched: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = reload_module.load_agent

    def stuck(*args: Any, **kw: Any) -> Any:
        release.wait(60)  # a FIFO swapped in after the regular-file check
        return real(*args, **kw)

    monkeypatch.setattr(reads_module, "READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(reload_module, "load_agent", stuck)
    try:
        (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
        wait_until(lambda: "took over" in str(error_text(watched)), "stuck read reported")
        assert watched.status()["watching"] and not blocked(watched)
        assert blocked(watched, "b")  # evaluations never waited for the read
        closes_promptly(watched)
    finally:
        release.set()


def test_close_returns_while_a_reload_holds_the_lock(
    watched: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reload_module, "CLOSE_WAIT_S", 0.3)
    assert watched.reloader is not None
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with watched.reloader._lock:  # type: ignore[union-attr]
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(5)
    try:
        closes_promptly(watched)
        assert not watched.status()["watcher"]["alive"]
    finally:
        release.set()
        holder.join(5)


def test_the_watch_loop_restarts_after_an_unexpected_error(root: Path, watched: Engine) -> None:
    assert watched.reloader is not None
    watcher = watched.reloader.watcher
    real, failures = watcher.dirs, [0]

    def flaky() -> set[Path]:
        if failures[0] < 3:
            failures[0] += 1
            raise OSError("watch backend failed")
        return real()

    watcher.dirs = flaky  # type: ignore[method-assign]
    wait_until(lambda: watched.status()["watcher"]["restarts"] == 3, "three restarts")
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(watched), "edit live after the restarts")
    health = watched.status()["watcher"]
    assert health["restarts"] == 3 and health["alive"]
    assert "OSError: watch backend failed" in str(health["last_error"])
    wait_until(lambda: watched.status()["watcher"]["error"] is None, "error cleared")
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[]"))
    wait_until(lambda: not blocked(watched), "a later edit live too")
    assert watched.status()["watcher"]["last_event_at"] is not None
    closes_promptly(watched)


def test_an_error_handling_one_batch_is_reported_and_the_next_goes_live(
    root: Path, watched: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert watched.reloader is not None
    real, failed = watched.reloader.handle, []

    def failing_once(paths: set[Path]) -> Any:
        if not failed:
            failed.append(1)
            raise RuntimeError("symlink loop from resolve")
        return real(paths)

    monkeypatch.setattr(watched.reloader, "handle", failing_once)
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: watched.status()["watcher"]["error"] is not None, "error shown")
    assert "RuntimeError" in watched.status()["watcher"]["error"]
    assert watched.status()["watching"]
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell, rm]"))
    wait_until(lambda: blocked(watched), "next edit live")
    wait_until(lambda: watched.status()["watcher"]["error"] is None, "error cleared")
    closes_promptly(watched)


def test_an_engine_without_watching_reports_an_idle_watcher(
    root: Path,
    load: Callable[..., Engine],
    guard_kind: None,  # noqa: F811 - the fixture
) -> None:
    engine = load(root)
    health = engine.status()["watcher"]
    assert health["alive"] is False and health["restarts"] == 0 and health["error"] is None
    assert engine.status()["watching"] is False
    closes_promptly(engine)


# -- permission denied, as a user the permission applies to -----------------------------------

PERMISSION_SCRIPT = r"""
import json, os, sys, time
from pathlib import Path
from engine import Engine
root = Path(sys.argv[1])
hook = root / "agents/a/hooks/esc.yaml"
hook.write_text("kind: escalate\nname: esc\nmessage: call us\n")
(root / "agents/a/agent.yaml").write_text("hooks: [esc]\n")
def wait(cond):
    deadline = time.monotonic() + 15
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
engine = Engine.load(root, watch=True, db=":memory:")
if os.geteuid() == 0:  # root reads every file: act as nobody, who owns the hook file
    os.chown(hook, 65534, 65534)
    os.seteuid(65534)
out = {}
hook.chmod(0)
os.utime(hook)
wait(lambda: engine.status()["agents"]["a"]["error"] is not None)
out["error"] = engine.status()["agents"]["a"]["error"]
out["alive"] = engine.status()["watcher"]["alive"]
hook.chmod(0o644)
hook.write_text("kind: escalate\nname: esc\nmessage: call us now\n")
wait(lambda: engine.status()["agents"]["a"]["error"] is None)
out["generation"] = engine.status()["agents"]["a"]["generation"]
started = time.monotonic()
engine.close()
out["close_s"] = time.monotonic() - started
print(json.dumps(out))
"""


def test_permission_denied_on_a_hook_is_reported_and_a_repair_goes_live() -> None:
    folder = Path(tempfile.mkdtemp(prefix="hookengine-perm-"))
    try:
        (folder / "agents/a/hooks").mkdir(parents=True)
        for path in (folder, folder / "agents", folder / "agents/a", folder / "agents/a/hooks"):
            path.chmod(0o777)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", PERMISSION_SCRIPT, str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=folder,
        )
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert "esc.yaml" in json.dumps(out["error"]) and "ermission" in json.dumps(out["error"])
        assert out["alive"] and out["generation"] >= 1 and out["close_s"] < CLOSE_S
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the host layer, and the status lines -----------------------------------------------------

HOST_FAULTS: dict[str, Callable[[Path], None]] = {
    "host hook replaced by a FIFO": lambda r: fifo_at(r / "hooks/rules.yaml"),
    "engine.yaml replaced by a FIFO": lambda r: fifo_at(r / "engine.yaml"),
    "host hook is a symlink to /dev/zero": lambda r: link_at(r / "hooks/rules.yaml"),
}


@pytest.mark.parametrize("fault", list(HOST_FAULTS))
def test_a_host_layer_fault_is_every_agents_error_until_repaired(
    fault: str,
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Engine],
    guard_kind: None,  # noqa: F811 - the fixture
) -> None:
    rules = "kind: inject\nname: rules\nmessages: [{role: system, content: be nice}]\n"
    root = project({**FILES, "engine.yaml": "hooks: [rules]\n", "hooks/rules.yaml": rules})
    engine = load(root, watch=True)
    HOST_FAULTS[fault](root)
    wait_until(
        lambda: error_text(engine) is not None and error_text(engine, "b") is not None, fault
    )
    assert "not a regular file" in str(error_text(engine, "b"))
    assert engine.status()["watching"] and blocked(engine, "b") and not blocked(engine)
    remove(root / "engine.yaml")
    remove(root / "hooks/rules.yaml")
    (root / "engine.yaml").write_text("hooks: [rules]\n")
    (root / "hooks/rules.yaml").write_text(rules)
    (root / A / "hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    wait_until(
        lambda: blocked(engine) and error_text(engine) is None and error_text(engine, "b") is None,
        f"{fault}: repair live",
    )
    closes_promptly(engine)


def test_status_lines_show_the_watchers_state_and_errors() -> None:
    from engine.cli.cmd_ops import status_lines

    watcher = {
        "alive": True,
        "stalled": False,
        "error": "OSError: watch backend failed",
        "last_error": "OSError: watch backend failed",
        "last_error_at": "2026-12-01T05:00:00.000+00:00",
        "last_event_at": None,
        "restarts": 2,
    }
    data: dict[str, Any] = {"watching": True, "watcher": watcher, "agents": {}}
    lines = status_lines(data)
    assert "watcher: alive, 2 restarts, last event -" in lines
    assert any(line.strip().startswith("error at 2026") for line in lines)
    data["watcher"] = {**watcher, "error": None, "stalled": True}
    assert any(line.startswith("watcher: STALLED") for line in status_lines(data))
    assert any("last error at" in line for line in status_lines(data))
    idle = {**watcher, "alive": False, "restarts": 0, "last_error": None, "error": None}
    assert not any(line.startswith("watcher") for line in status_lines({**data, "watcher": idle}))
