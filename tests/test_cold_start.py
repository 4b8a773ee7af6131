"""Cold start: ``import engine`` loads nothing heavy, and a one-shot ``hook_tool`` evaluation
decides and records as the full engine does while importing only what its hook needs.

What is imported is checked in a fresh interpreter (``sys.modules``), never by timing.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import hook_tool
from engine.cli.hook_tool import OneShotEngine, load_engine
from engine.store import RecordQuery, open_store
from engine.store.lazy import LazyStore
from tests.conftest import REPO

DEMO = REPO / "config" / "agents" / "demo" / "hooks"
HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "httpx", "watchfiles", "asyncio")


def imported_after(code: str) -> list[str]:
    """The HEAVY modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def test_import_engine_loads_no_heavy_dependency() -> None:
    assert imported_after("import engine") == []


def test_the_engine_class_loads_no_store_http_or_watcher_dependency() -> None:
    assert imported_after("from engine import Engine, Outcome, Record, RecordQuery") == []


def test_an_offline_engine_loads_no_http_client_server_or_watcher(tmp_path: Path) -> None:
    code = (
        "from engine import Engine\n"
        f"Engine.load({str(REPO / 'config')!r}, db={str(tmp_path / 's.db')!r}).close()"
    )
    assert set(imported_after(code)) <= {"sqlalchemy", "asyncio"}  # the store's, and its own


def test_every_public_name_is_its_modules_own() -> None:
    import engine
    import engine.errors
    import engine.runtime
    import engine.store

    assert engine.Engine is engine.runtime.Engine
    assert engine.ScriptLimitError is engine.errors.ScriptLimitError
    assert engine.RecordQuery is engine.store.RecordQuery
    assert all(getattr(engine, name) is not None for name in engine.__all__)
    assert set(engine.__all__) <= set(dir(engine))
    with pytest.raises(AttributeError, match="no attribute 'Engin'"):
        _ = engine.Engin  # type: ignore[attr-defined]


def one_shot(db: Path, hook: str = "no_deletes.yaml") -> str:
    return (
        "from engine.cli import hook_tool\n"
        f"hook_tool.main([{str(DEMO / hook)!r}, 'tool', 'delete_file', '{{}}', "
        f"'--db', {str(db)!r}])"
    )


def test_a_one_shot_run_on_a_current_store_writes_its_record_without_sqlalchemy(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    assert imported_after(one_shot(db)) == []
    store = open_store(str(db))
    try:
        (record,) = store.query_records(RecordQuery())
    finally:
        store.close()
    assert record.point == "tool_call" and record.outcome["blocked"] is True


def test_a_one_shot_run_on_a_new_store_creates_it(tmp_path: Path) -> None:
    db = tmp_path / "new" / "s.db"
    assert "sqlalchemy" in imported_after(one_shot(db))
    store = open_store(str(db))
    try:
        assert len(store.query_records(RecordQuery())) == 1
    finally:
        store.close()


def test_a_hook_keeping_state_has_its_store_open_before_it_runs(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    code = (
        "from pathlib import Path\n"
        "from engine.cli.hook_tool import load_engine\n"
        f"e = load_engine(Path({str(DEMO / 'rate_limit.yaml')!r}), agent='a', db={str(db)!r}, "
        "live=False, one_shot=True)\n"
        "import sys\n"
        "assert 'sqlalchemy' in sys.modules\n"
        "e.close()"
    )
    imported_after(code)


def test_a_one_shot_engine_runs_one_worker(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    with load_engine(
        DEMO / "no_deletes.yaml", agent="a", db=str(db), live=False, one_shot=True
    ) as loaded:
        assert isinstance(loaded, OneShotEngine) and isinstance(loaded.store, LazyStore)
        assert loaded.settings.scripts.workers == 1


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between any two runs: ids, times, durations."""
    event = {k: v for k, v in record["event"].items() if k != "time"}
    hooks = [{k: v for k, v in run.items() if k != "duration_ms"} for run in record["hooks"]]
    outcome = {k: v for k, v in record["outcome"].items() if k != "duration_ms"}
    kept = {k: v for k, v in record.items() if k not in ("id", "time", "event", "hooks")}
    return {**kept, "event": event, "hooks": hooks, "outcome": outcome}


@pytest.mark.parametrize(
    "args",
    [
        ["tool", "delete_file", '{"path": "a.txt"}'],
        ["tool", "shell", '{"command": "rm -rf /srv"}'],
        ["tool", "shell", '{"command": "ls"}'],
    ],
)
def test_the_one_shot_decision_and_record_are_the_full_engines(
    tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    hook = DEMO / "no_deletes.yaml"
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    assert hook_tool.main([str(hook), *args, "--db", str(db), "--user", "u1"]) == 0
    capsys.readouterr()
    with load_engine(hook, agent="hook_tool", db=str(db), live=False) as full:
        assert not isinstance(full, OneShotEngine)
        full.agent("hook_tool").tool_call(args[1], json.loads(args[2]), user_id="u1")
        full.flush()
        records = full.records(RecordQuery(oldest_first=True))
    one, other = (comparable(r.model_dump(mode="json")) for r in records)
    assert one == other
