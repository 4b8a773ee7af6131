"""Hot reload with real file watching: edits go live, bad edits keep the last good version."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.outcome import Outcome
from tests import guard_kind as guards
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("guard_kind")

GUARD = "kind: test_guard\nname: guard\nforbidden: {forbidden}\n"
FILES = {
    "engine.yaml": "process: t\nhooks: [rules]\n",
    "hooks/rules.yaml": "kind: inject\nname: rules\nmessages: [{role: system, content: be nice}]\n",
    "agents/a/agent.yaml": "hooks: [guard, esc]\n",
    "agents/a/hooks/guard.yaml": GUARD.format(forbidden="[]"),
    "agents/a/hooks/esc.yaml": "kind: escalate\nname: esc\nmessage: call us\n"
    "off_topic_keywords: [iphone]\nsuppress_on_off_topic: true\n",
    "agents/b/agent.yaml": "hooks: [esc]\n",
    "agents/b/hooks/esc.yaml": "kind: escalate\nname: esc\nmessage: call b\n"
    "off_topic_keywords: [iphone]\nsuppress_on_off_topic: true\n",
}


def wait_until(condition: Callable[[], bool], timeout: float = 3.0) -> float:
    """Seconds until ``condition()`` held; fails the test after ``timeout``."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.005)
    return time.perf_counter() - started


@pytest.fixture
def root(project: Callable[[dict[str, str]], Path]) -> Path:
    return project(FILES)


@pytest.fixture
def engine(root: Path, load: Callable[..., Engine]) -> Engine:
    return load(root, watch=True)


def guard_file(root: Path) -> Path:
    return root / "agents/a/hooks/guard.yaml"


def blocked(engine: Engine, tool: str = "shell") -> bool:
    return engine.agent("a").tool_call(tool, {}).blocked


def error_of(engine: Engine, agent: str = "a") -> dict[str, Any] | None:
    return engine.status()["agents"][agent]["error"]  # type: ignore[no-any-return]


# -- going live ------------------------------------------------------------------------------


def test_editing_a_hook_changes_the_next_decision_within_a_second(
    root: Path, engine: Engine
) -> None:
    assert not blocked(engine)
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    assert wait_until(lambda: blocked(engine), timeout=1.0) < 1.0
    status = engine.status()["agents"]["a"]
    assert status["generation"] >= 1 and status["reloads"] >= 1 and status["error"] is None


def test_records_carry_the_generation_and_hook_versions(root: Path, engine: Engine) -> None:
    before = engine.agent("a").tool_call("shell", {})
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(engine))
    after = engine.agent("a").tool_call("shell", {})
    records = {r.id: r for r in engine.records(agent="a", point="tool_call")}
    old, new = records[before.id], records[after.id]
    assert old.generation == 0 and new.generation == after.generation > 0
    assert old.hooks[0].version != new.hooks[0].version == after.hooks[0].version


def test_a_save_without_a_change_keeps_the_generation(root: Path, engine: Engine) -> None:
    events: list[Any] = []
    engine.reloader.subscribe(events.append)  # type: ignore[union-attr]
    guard_file(root).write_text(guard_file(root).read_text())
    wait_until(lambda: bool(events))
    assert events[0].ok and not events[0].swapped
    assert engine.agent("a").pipeline.generation == 0


def test_only_the_agent_whose_files_changed_reloads(root: Path, engine: Engine) -> None:
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(engine))
    assert engine.agent("b").pipeline.generation == 0


def test_a_host_layer_change_reloads_every_agent(root: Path, engine: Engine) -> None:
    (root / "hooks/rules.yaml").write_text(
        "kind: inject\nname: rules\nmessages: [{role: system, content: be brief}]\n"
    )

    def says_brief(agent: str) -> bool:
        out = engine.agent(agent).before_user_message("hello")
        return any(m["content"] == "be brief" for m in out.messages)

    wait_until(lambda: says_brief("a") and says_brief("b"))


# -- refusing bad versions -------------------------------------------------------------------


def test_an_invalid_edit_keeps_the_old_behaviour_and_names_file_and_line(
    root: Path, engine: Engine
) -> None:
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(engine))
    guard_file(root).write_text("kind: test_guard\nname: guard\nforbidden: [shell]\nfobidden: 1\n")
    wait_until(lambda: error_of(engine) is not None)
    error = error_of(engine)
    assert error is not None
    assert error["file"].endswith("agents/a/hooks/guard.yaml") and error["line"] == 4
    assert "did you mean 'forbidden'" in error["message"]
    assert blocked(engine)
    guard_file(root).write_text(GUARD.format(forbidden="[]"))
    wait_until(lambda: not blocked(engine))
    assert error_of(engine) is None
    assert engine.status()["agents"]["a"]["last_error"]["line"] == 4


def test_a_yaml_syntax_error_names_its_line(root: Path, engine: Engine) -> None:
    guard_file(root).write_text("kind: test_guard\nname: guard\nforbidden: [shell\n")
    wait_until(lambda: error_of(engine) is not None)
    error = error_of(engine)
    assert error is not None and "YAML syntax error" in error["message"] and error["line"]
    assert not blocked(engine)


def test_a_deleted_referenced_file_is_an_error_that_keeps_the_last_good_version(
    root: Path, engine: Engine
) -> None:
    guard_file(root).unlink()
    wait_until(lambda: error_of(engine) is not None)
    error = error_of(engine)
    assert error is not None and "hook file not found" in error["message"]
    assert error["file"].endswith("agents/a/agent.yaml") and error["line"] == 1
    assert engine.agent("a").tool_call("shell", {}).hooks[0].name == "guard"


def test_a_new_version_that_fails_its_own_tests_is_refused(root: Path, engine: Engine) -> None:
    tests = (
        "tests:\n  - name: shell is blocked\n    point: tool_call\n"
        "    event: {name: shell}\n    expect: {blocked: true}\n"
    )
    guard_file(root).write_text(GUARD.format(forbidden="[rm]") + tests)
    wait_until(lambda: error_of(engine) is not None)
    error = error_of(engine)
    assert error is not None and error["line"] == 5
    assert "test 'shell is blocked' failed" in error["message"]
    assert not blocked(engine, "rm")  # the last good version stays
    guard_file(root).write_text(GUARD.format(forbidden="[rm, shell]") + tests)
    wait_until(lambda: blocked(engine, "rm"))


def test_a_sibling_test_file_counts_too(root: Path, engine: Engine) -> None:
    (root / "agents/a/hooks/guard.test.yaml").write_text(
        "tests:\n  - point: tool_call\n    event: {name: shell}\n    expect: {blocked: true}\n"
    )
    wait_until(lambda: error_of(engine) is not None)
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    wait_until(lambda: blocked(engine))
    assert error_of(engine) is None


# -- editors' save styles --------------------------------------------------------------------


def save_by_rename(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_truncate_then_write(path: Path, text: str) -> None:
    with path.open("w") as f:
        f.flush()
        os.fsync(f.fileno())
        time.sleep(0.1)  # an empty file on disk for a moment: a reload may see it
        f.write(text)


def save_delete_recreate(path: Path, text: str) -> None:
    path.unlink()
    time.sleep(0.1)
    path.write_text(text)


def save_burst(path: Path, text: str) -> None:
    for n in range(15):
        path.write_text(GUARD.format(forbidden=f"[tool{n}]"))
        time.sleep(0.01)
    path.write_text(text)


@pytest.mark.parametrize(
    "save", [save_by_rename, save_truncate_then_write, save_delete_recreate, save_burst]
)
def test_editor_save_styles_converge(
    root: Path, engine: Engine, save: Callable[[Path, str], None]
) -> None:
    for forbidden, expected in (("[shell]", True), ("[]", False), ("[shell]", True)):
        save(guard_file(root), GUARD.format(forbidden=forbidden))
        wait_until(lambda e=expected: blocked(engine) is e and error_of(engine) is None)
    time.sleep(0.3)  # nothing late may undo it
    assert blocked(engine) and error_of(engine) is None


def test_a_hook_added_to_agent_yaml_before_its_file_exists_loads_once_created(
    root: Path, engine: Engine
) -> None:
    (root / "agents/a/agent.yaml").write_text("hooks: [guard, esc, extra]\n")
    wait_until(lambda: error_of(engine) is not None)
    (root / "agents/a/hooks/extra.yaml").write_text(
        GUARD.format(forbidden="[rm]").replace("name: guard", "name: extra")
    )
    wait_until(lambda: blocked(engine, "rm"))


# -- consistency -----------------------------------------------------------------------------


def test_a_file_changed_during_the_read_is_read_again(
    root: Path, load: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine import reload

    engine = load(root)
    real, calls = reload.load_agent, []

    def racing(*args: Any) -> Any:
        spec = real(*args)
        calls.append(1)
        if len(calls) == 1:  # another save lands right after this read
            guard_file(root).write_text(GUARD.format(forbidden="[shell, rm]"))
        return spec

    monkeypatch.setattr(reload, "load_agent", racing)
    guard_file(root).write_text(GUARD.format(forbidden="[shell]"))
    assert engine.reload_agent("a")
    assert len(calls) == 2 and blocked(engine, "rm")


def test_an_evaluation_in_flight_finishes_on_its_version_and_old_hooks_close_after(
    root: Path, load: Callable[..., Engine]
) -> None:
    guard_file(root).write_text(GUARD.format(forbidden="[shell]") + "gated: true\n")
    engine = load(root)
    results: list[Outcome] = []
    worker = threading.Thread(
        target=lambda: results.append(engine.agent("a").tool_call("shell", {}))
    )
    worker.start()
    assert guards.ENTERED.wait(5)
    old_version = engine.agent("a").pipeline.slots[0].hook.version
    guard_file(root).write_text(GUARD.format(forbidden="[]"))
    assert engine.reload_agent("a")
    assert not blocked(engine)  # the next evaluation takes the new version
    assert old_version not in guards.CLOSED  # still in use by the worker
    guards.GATE.set()
    worker.join(5)
    assert results[0].blocked and results[0].generation == 0
    engine.reloader.sweep()  # type: ignore[union-attr]
    assert [old_version] == guards.CLOSED


def test_close_stops_the_watcher(root: Path, load: Callable[..., Engine]) -> None:
    engine = load(root, watch=True)
    assert engine.status()["watching"]
    engine.close()
    assert not engine.status()["watching"]
    assert not any(t.name == "hookengine-reload" for t in threading.enumerate())


# -- under load ------------------------------------------------------------------------------


LOADED_S = 20.0


@pytest.fixture
def short_gil_slices() -> Iterator[None]:
    """Hand the GIL round every 0.5 ms instead of 5 ms while four threads evaluate flat out,
    so the watcher thread gets its turns; what the test checks does not depend on it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("short_gil_slices")
def test_flips_under_concurrent_load_never_mix_versions(
    root: Path, load: Callable[..., Engine]
) -> None:
    engine = load(root, watch=True, records=False)  # millions of records would only slow it
    versions: dict[str, bool] = {}  # guard version -> blocks shell
    stop, errors = threading.Event(), []
    seen: list[Counter[tuple[int, str, bool, str | None]]] = []

    def evaluate() -> None:
        counts: Counter[tuple[int, str, bool, str | None]] = Counter()  # a list would grow huge
        seen.append(counts)
        while not stop.is_set():
            try:
                out = engine.agent("a").tool_call("shell", {})
                counts[(out.generation, out.hooks[0].version, out.blocked, out.reason)] += 1
            except Exception as exc:  # noqa: BLE001 - any error here fails the test
                errors.append(exc)

    workers = [threading.Thread(target=evaluate) for _ in range(4)]
    for w in workers:
        w.start()
    try:
        for n in range(50):
            forbidden = "[shell]" if n % 2 == 0 else "[]"
            # Four threads evaluating flat out starve the watcher of the GIL: a reload takes
            # far longer than the 1 s it takes unloaded (tested above). This test is about
            # never mixing versions, so it waits as long as it has to.
            if n % 5 == 0:  # an invalid version in between: refused, the last good stays
                guard_file(root).write_text(GUARD.format(forbidden=forbidden) + "bad: 1\n")
                wait_until(lambda: error_of(engine) is not None, timeout=LOADED_S)
            guard_file(root).write_text(GUARD.format(forbidden=forbidden))
            wait_until(
                lambda f=forbidden: (
                    blocked(engine) is (f == "[shell]") and error_of(engine) is None
                ),
                timeout=LOADED_S,
            )
            versions[engine.agent("a").pipeline.slots[0].hook.version] = forbidden == "[shell]"
    finally:
        stop.set()
        for w in workers:
            w.join(10)
    decided = sum(seen, Counter())
    assert not errors and decided.total() > 100
    assert len({generation for generation, *_ in decided}) > 25  # many versions went live
    for _, version, was_blocked, reason in decided:
        if version in versions:
            assert was_blocked is versions[version]
        assert not was_blocked or reason.endswith(f"(version {version})")
