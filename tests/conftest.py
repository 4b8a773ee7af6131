"""Shared fixtures: config trees written into a temp folder, fake hooks, engines."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.config.loader import HookSpec
from engine.kinds.base import HookContext, Mode, OnError
from engine.pipeline import Pipeline, Services, Slot
from engine.points import Point
from engine.runtime import Engine
from engine.store import open_store

REPO = Path(__file__).resolve().parent.parent


def _escaped(text: str) -> str:
    """``text`` with lone surrogates written as escapes (what pytest-xdist can send)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Many tests feed the engine lone surrogates, and its logs and a failure's message may
    carry them: a report goes between pytest-xdist's processes as UTF-8, so they are escaped
    in the captured sections and in a failure's text (a run without xdist shows the same)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [(name, _escaped(text)) for name, text in report.sections]
    if report.failed and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        if _escaped(text) != text:
            report.longrepr = _escaped(text)


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (text dedented) and return root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write a config tree under tmp_path/config and return the config folder."""

    def make(files: dict[str, str]) -> Path:
        return write(tmp_path / "config", files)

    return make


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    """Engine.load with a temp store; every engine is closed after the test."""
    engines: list[Engine] = []

    def make(root: Path, **options: Any) -> Engine:
        options.setdefault("db", str(tmp_path / "store.db"))
        engine = Engine.load(root, **options)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


@dataclass
class FakeHook:
    """A hook wrapping a plain callable, for pipeline tests."""

    name: str
    fn: Callable[[Point, dict[str, Any], HookContext], Any]
    points: frozenset[Point] = frozenset(Point)
    kind: str = "fake"
    version: str = "v1"
    on_error: OnError = OnError.IGNORE
    mode: Mode = Mode.ENFORCE
    source: Path = Path("fake.yaml")
    calls: list[dict[str, Any]] = field(default_factory=list)

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        self.calls.append(event)
        return self.fn(point, event, ctx)

    def close(self) -> None:
        return None


def returning(name: str, change: Any, **kw: Any) -> FakeHook:
    return FakeHook(name, lambda p, e, c: change, **kw)


def raising(name: str, exc: BaseException, **kw: Any) -> FakeHook:
    def fail(p: Point, e: dict[str, Any], c: HookContext) -> Any:
        raise exc

    return FakeHook(name, fail, **kw)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    from engine.kinds.base import Memo

    store = open_store(str(tmp_path / "pipe.db"))
    memos: dict[tuple[str, str], Memo] = {}
    records: list[Any] = []
    svc = Services(
        store, lambda a, h: memos.setdefault((a, h), Memo()), lambda r, m: records.append(r)
    )
    svc.recorded = records  # type: ignore[attr-defined]
    yield svc
    store.close()


def pipeline(*hooks: Any, host: tuple[Any, ...] = ()) -> Pipeline:
    slots = tuple(Slot(h) for h in hooks) + tuple(Slot(h, "host") for h in host)
    return Pipeline("test", slots)


__all__ = ["REPO", "FakeHook", "HookSpec", "pipeline", "raising", "returning", "write"]


def copy_demo(folder: Path) -> Path:
    """A copy of the demo project (config/, with the scripts its hooks use) under ``folder``;
    returns the copied config folder."""
    import shutil

    shutil.copytree(REPO / "config", folder / "config")
    return folder / "config"


LONG_TESTS = {
    (
        "tests/test_config_fuzz.py",
        "test_mutated_configs_give_exit_0_or_2_without_a_traceback_in_bounded_time_and_memory",
    ): 200,
    (
        "tests/test_load_timeouts.py",
        "test_harmless_calls_are_never_refused_while_other_processes_burn_the_cores[js-100000]",
    ): 170,
    ("tests/test_typing.py", "test_mypy_reports_no_errors_in_engine"): 100,
    (
        "tests/test_stress.py",
        "test_attackers_for_a_minute_cross_nothing_lose_nothing_allow_nothing",
    ): 66,
    (
        "tests/test_load_timeouts.py",
        "test_harmless_calls_are_never_refused_while_other_processes_burn_the_cores[py-20000]",
    ): 36,
    (
        "tests/test_bench_recall.py",
        "test_the_memory_hook_recalls_at_least_as_well_as_bm25_over_raw_turns",
    ): 18,
    ("tests/http/test_decisions.py", "test_schemathesis_finds_no_server_error_on_any_route"): 18,
    ("tests/test_tutorial.py", "test_the_tutorial_runs_exactly_as_written[javascript]"): 12,
    ("tests/test_tutorial.py", "test_the_tutorial_runs_exactly_as_written[python]"): 12,
    (
        "tests/sandbox/test_pattern_engine.py",
        "test_the_native_expression_finds_what_the_program_finds",
    ): 12,
    (
        "tests/store/test_durability.py",
        "test_four_processes_writing_at_once_lose_nothing[postgres]",
    ): 11,
    (
        "tests/test_config_fuzz.py",
        "test_mutated_configs_through_the_console_script_under_a_memory_cap",
    ): 11,
    ("tests/sandbox/test_hostclock.py", "test_the_clock_leaves_out_collector_pauses"): 11,
    ("tests/http/test_http.py", "test_schemathesis_finds_no_server_error"): 10,
    ("tests/test_event_fast_path.py", "test_plain_copy_is_the_walk_or_steps_aside"): 10,
}
"""The longest tests (seconds on the 2-core CI machine, ``--durations``) by file and name: started
first, spread over the workers, so that none of them starts last and runs alone at the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the run for pytest-xdist's ``worksteal`` (pyproject.toml): it gives worker i the
    i-th equal slice of this list and lets an idle worker take the tail of another's. The long
    tests go to the front of the slices, the longest first and each to the slice with the
    least long work so far; the first two (the fuzz and the load test that burns two cores)
    land on different workers at once. Only the order changes: every test still runs."""
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    seconds = {f"{path}::{name}": cost for (path, name), cost in LONG_TESTS.items()}
    long_items = sorted(
        (item for item in items if item.nodeid in seconds), key=lambda item: -seconds[item.nodeid]
    )
    if not long_items:
        return
    chosen = {id(item) for item in long_items}
    rest = [item for item in items if id(item) not in chosen]
    bins: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0] * workers
    for item in long_items:
        i = load.index(min(load))
        bins[i].append(item)
        load[i] += seconds[item.nodeid]
    size, ordered = len(items) // workers, []
    for i, firsts in enumerate(bins):
        take = max(0, size * (i + 1) - len(ordered) - len(firsts)) if i < workers - 1 else None
        ordered += firsts + rest[:take]
        rest = rest[take:] if take is not None else []
    items[:] = ordered + rest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/* from the current behaviour (review the diff in git)",
    )


def console(name: str) -> Path:
    """An installed console script (``hook_tool``, ``hookengine``): the one beside this
    interpreter, else the one on PATH."""
    import shutil
    import sys

    beside = Path(sys.executable).parent / name
    return beside if beside.is_file() else Path(shutil.which(name) or name)
