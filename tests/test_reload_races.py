"""Hot reload against a writer that pauses mid-save, with the real watcher: a guard that
existed keeps guarding until its new version is whole; an edit that takes a guard away is
applied once the files have stayed as they are."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import Engine
from tests.conftest import write

GUARD_YAML = """
kind: script_hook
name: guard
script: guard.js
"""

GUARD_JS = """function on_tool_result(event, host) { return null; }
function on_tool_call(event, host) {
  if (event.name === "delete_file") { return {block: "no deletes"}; }
  return null;
}
"""
HALF = GUARD_JS.split("function on_tool_call")[0]
"""The file cut after its first function: valid JavaScript that no longer guards tool_call."""

OTHER = """
kind: inject
name: other
messages:
  - role: system
    content: be brief
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks:\n  - guard\n  - other\n",
            "agents/a/hooks/guard.yaml": GUARD_YAML,
            "agents/a/hooks/guard.js": GUARD_JS,
            "agents/a/hooks/other.yaml": OTHER,
        },
    )


@pytest.fixture
def engine(root: Path, tmp_path: Path) -> Iterator[Engine]:
    loaded = Engine.load(root, db=str(tmp_path / "store.db"), records=False, watch=True)
    yield loaded
    loaded.close()


def watch_decisions(engine: Engine, stop: threading.Event) -> list[tuple[float, bool]]:
    """Decide ``delete_file`` every few ms until ``stop``; (time, blocked) each."""
    seen: list[tuple[float, bool]] = []

    def loop() -> None:
        agent = engine.agent("a")
        while not stop.is_set():
            seen.append((time.monotonic(), agent.tool_call("delete_file", {}).blocked))
            time.sleep(0.005)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    stop.wait()
    thread.join(5)
    return seen


def paused_write(path: Path, first: str, rest: str, pause_s: float) -> None:
    """Truncate, write ``first``, pause, write ``rest``: a slow or interrupted save."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, first.encode())
        time.sleep(pause_s)
        os.write(fd, rest.encode())
    finally:
        os.close(fd)


def wait_for(condition: object, timeout_s: float = 8.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("timed out")


def run_save(engine: Engine, save: object, settle_s: float = 2.5) -> list[tuple[float, bool]]:
    stop = threading.Event()
    box: dict[str, list[tuple[float, bool]]] = {}
    thread = threading.Thread(target=lambda: box.setdefault("seen", watch_decisions(engine, stop)))
    thread.start()
    try:
        time.sleep(0.1)
        save()  # type: ignore[operator]
        time.sleep(settle_s)
    finally:
        stop.set()
        thread.join(5)
    return box["seen"]


def test_a_script_written_in_two_parts_never_lets_the_tool_through(
    root: Path, engine: Engine
) -> None:
    """The first part alone is valid JavaScript without ``on_tool_call``: read in the pause,
    it would switch the guard off until the second part lands."""
    path = root / "agents/a/hooks/guard.js"
    seen = run_save(engine, lambda: paused_write(path, HALF, GUARD_JS[len(HALF) :], 0.9))
    assert seen and all(blocked for _, blocked in seen), [b for _, b in seen].count(False)
    assert engine.status()["agents"]["a"]["error"] is None


def test_agent_yaml_written_in_two_parts_never_drops_the_guard(root: Path, engine: Engine) -> None:
    """``hooks:`` cut after ``other``: a valid agent without the guard, for the pause."""
    path = root / "agents/a/agent.yaml"
    first, rest = "hooks:\n  - other\n", "  - guard\n"
    seen = run_save(engine, lambda: paused_write(path, first, rest, 0.9))
    assert seen and all(blocked for _, blocked in seen), [b for _, b in seen].count(False)
    names = [s.hook.name for s in engine.agent("a").pipeline.slots]
    assert names == ["other", "guard"]


def test_an_edit_that_removes_a_guard_is_applied_once_it_stays(root: Path, engine: Engine) -> None:
    """Taking the guard away on purpose works: it goes live a little later, not never."""
    (root / "agents/a/agent.yaml").write_text("hooks:\n  - other\n")
    wait_for(lambda: not engine.agent("a").tool_call("delete_file", {}).blocked)
    assert [s.hook.name for s in engine.agent("a").pipeline.slots] == ["other"]


def test_an_edit_that_adds_a_guard_is_applied_at_once(root: Path, engine: Engine) -> None:
    (root / "agents/a/agent.yaml").write_text("hooks:\n  - other\n")
    wait_for(lambda: not engine.agent("a").tool_call("delete_file", {}).blocked)
    started = time.monotonic()
    (root / "agents/a/agent.yaml").write_text("hooks:\n  - other\n  - guard\n")
    wait_for(lambda: engine.agent("a").tool_call("delete_file", {}).blocked)
    assert time.monotonic() - started < 1.5


# -- the host layer (engine.yaml, config/hooks/) ---------------------------------------------


@pytest.fixture
def host_root(tmp_path: Path) -> Path:
    return write(
        tmp_path / "host_config",
        {
            "engine.yaml": "hooks:\n  - other\n  - guard\n",
            "hooks/guard.yaml": GUARD_YAML,
            "hooks/guard.js": GUARD_JS,
            "hooks/other.yaml": OTHER,
            "agents/a/agent.yaml": "hooks: [note]\n",
            "agents/a/hooks/note.yaml": OTHER.replace("name: other", "name: note"),
        },
    )


@pytest.fixture
def host_engine(host_root: Path, tmp_path: Path) -> Iterator[Engine]:
    loaded = Engine.load(host_root, db=str(tmp_path / "host.db"), records=False, watch=True)
    yield loaded
    loaded.close()


def test_a_host_script_written_in_two_parts_never_lets_the_tool_through(
    host_root: Path, host_engine: Engine
) -> None:
    path = host_root / "hooks/guard.js"
    seen = run_save(host_engine, lambda: paused_write(path, HALF, GUARD_JS[len(HALF) :], 0.9))
    assert seen and all(blocked for _, blocked in seen), [b for _, b in seen].count(False)
    assert host_engine.status()["agents"]["a"]["error"] is None


def test_engine_yaml_written_in_two_parts_never_drops_the_host_guard(
    host_root: Path, host_engine: Engine
) -> None:
    path = host_root / "engine.yaml"
    first, rest = "hooks:\n  - other\n", "  - guard\n"
    seen = run_save(host_engine, lambda: paused_write(path, first, rest, 0.9))
    assert seen and all(blocked for _, blocked in seen), [b for _, b in seen].count(False)
    assert [s.hook.name for s in host_engine.host_slots] == ["other", "guard"]


def test_an_edit_that_removes_a_host_guard_is_applied_once_it_stays(
    host_root: Path, host_engine: Engine
) -> None:
    started = time.monotonic()
    (host_root / "engine.yaml").write_text("hooks:\n  - other\n")
    wait_for(lambda: not host_engine.agent("a").tool_call("delete_file", {}).blocked)
    assert time.monotonic() - started >= 1.0  # CONFIRM_S
    assert [s.hook.name for s in host_engine.host_slots] == ["other"]


def test_an_agent_file_cut_while_the_host_layer_reloads_keeps_its_guard(tmp_path: Path) -> None:
    """A host-layer change reloads every agent: their reads get the same confirm wait."""
    root = write(
        tmp_path / "both",
        {
            "engine.yaml": "hooks: [note]\n",
            "hooks/note.yaml": OTHER.replace("name: other", "name: note"),
            "agents/a/agent.yaml": "hooks:\n  - other\n  - guard\n",
            "agents/a/hooks/guard.yaml": GUARD_YAML,
            "agents/a/hooks/guard.js": GUARD_JS,
            "agents/a/hooks/other.yaml": OTHER,
        },
    )
    path = root / "agents/a/agent.yaml"

    def save() -> None:  # both in one batch of the watcher's: the host layer's reload
        (root / "engine.yaml").write_text("hooks: [note]\nprocess: other\n")
        paused_write(path, "hooks:\n  - other\n", "  - guard\n", 0.9)

    with Engine.load(root, db=str(tmp_path / "both.db"), records=False, watch=True) as engine:
        seen = run_save(engine, save)
        assert seen and all(blocked for _, blocked in seen), [b for _, b in seen].count(False)
        assert [s.hook.name for s in engine.agent("a").pipeline.slots] == ["other", "guard", "note"]
