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
from engine.cli.earlypool import pool_for
from engine.cli.hook_tool import load_engine
from engine.cli.oneshot import OneShotEngine
from engine.config.loader import ProjectConfig
from engine.config.models import EngineSettings, ScriptSettings
from engine.errors import ConfigError, ScriptLimitError
from engine.runtime import Engine
from engine.store import RecordQuery, open_store
from engine.store.lazy import LazyStore
from tests.conftest import REPO

DEMO = REPO / "config" / "agents" / "demo" / "hooks"
HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "httpx", "watchfiles", "asyncio")


def imported_after(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of ``modules`` (the HEAVY ones) a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
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


ONE_SHOT_UNUSED = (
    "snowballstemmer",  # stems: FAQ and memory kinds only
    "engine.tools.delegate",  # the delegate check: only an agent with tools has one
    "engine.providers",  # LLM judges and memorizers
    "engine.cli.render",  # imported by the verb that prints, not by a usage error
)


def test_a_one_shot_run_imports_no_stemmer_delegate_check_or_provider(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    assert imported_after(one_shot(db), ONE_SHOT_UNUSED[:3]) == []


def test_a_one_shot_run_skips_the_plugin_lookup_when_no_plugin_is_installed(
    tmp_path: Path,
) -> None:
    declared = "from engine.cli.plugins import plugins_declared\nprint(plugins_declared())"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", declared], capture_output=True, text=True, env=env, timeout=60
    )
    if done.stdout.strip() != "False":  # asked of a fresh interpreter, as the one-shot's
        pytest.skip(f"pydantic plugins declared: {done.stdout.strip()} {done.stderr}")
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    assert imported_after(one_shot(db), ("importlib.metadata",)) == []


def test_a_usage_error_imports_neither_the_engine_nor_pydantic() -> None:
    code = (
        "from engine.cli import hook_tool\n"
        "assert hook_tool.main(['no/such/hook.yaml', 'tool', 'x', '{}']) == 2"
    )
    modules = ("pydantic", "engine.runtime", "engine.config", *ONE_SHOT_UNUSED)
    assert imported_after(code, modules) == []


def test_the_one_shot_pool_is_the_one_the_engine_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, **options: Any) -> None:
            made.append(options)

        def close(self) -> None:
            pass

    monkeypatch.setattr("engine.sandbox.WorkerPool", Recorder)
    scripts = ScriptSettings(timeout_ms=77, memory_mb=33, workers=3, max_contexts=40)
    settings = EngineSettings(scripts=scripts, process="p")
    project = ProjectConfig(tmp_path, tmp_path, settings, (), {})
    with Engine(project, db=str(tmp_path / "s.db")) as full:
        full.sandbox()
    pool_for(settings)
    assert len(made) == 2 and made[0] == made[1]


def _pools_made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The pools one-shot engines start from now on (each a real one)."""
    made: list[Any] = []

    def recording(settings: EngineSettings, prestarted: Any = None) -> Any:
        made.append(pool_for(settings, prestarted))
        return made[-1]

    monkeypatch.setattr("engine.cli.earlypool.pool_for", recording)
    return made


def test_a_one_shot_engine_starts_its_worker_as_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _pools_made(monkeypatch)
    with load_engine(
        DEMO / "no_deletes.yaml", agent="a", db=str(tmp_path / "s.db"), live=False, one_shot=True
    ) as engine:
        assert len(made) == 1 and engine.sandbox() is made[0]
        assert engine.agent("a").tool_call("delete_file", {}).blocked
    assert made[0].health()["workers"] == 0  # closed with the engine


def test_a_one_shot_engine_without_script_hooks_starts_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _pools_made(monkeypatch)
    with load_engine(
        DEMO / "escalate.yaml", agent="a", db=str(tmp_path / "s.db"), live=False, one_shot=True
    ) as engine:
        engine.agent("a").before_user_message("hello")
    assert made == []


def test_a_one_shot_engine_that_fails_to_build_stops_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _pools_made(monkeypatch)
    (tmp_path / "bad.js").write_text("function on_tool_call(event, host) { return {\n")
    hook = tmp_path / "bad.yaml"
    hook.write_text("kind: script_hook\nname: bad\nscript: bad.js\n")
    with pytest.raises(ConfigError, match=r"bad\.js"):
        load_engine(hook, agent="a", db=str(tmp_path / "s.db"), live=False, one_shot=True)
    assert len(made) == 1 and made[0].health()["workers"] == 0


def test_the_console_script_flushes_its_answer_and_record_and_exits_with_its_code(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    run = [sys.executable, "-m", "engine.cli.hook_tool", str(DEMO / "no_deletes.yaml"), "tool"]
    # buffered output, as a program reading the answer through a pipe gets it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [*run, "delete_file", '{"path": "a.txt"}', "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"]["blocked"] is True
    store = open_store(str(db))
    try:
        assert len(store.query_records(RecordQuery())) == 1
    finally:
        store.close()
    bad = subprocess.run([*run, "x", "{"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "the tool input is not valid JSON" in bad.stderr


def test_a_one_shot_engine_whose_worker_cannot_start_raises_as_the_engine_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(settings: EngineSettings, prestarted: Any = None) -> Any:
        raise ScriptLimitError("sandbox workers did not start: test", cause="crashed")

    monkeypatch.setattr("engine.cli.earlypool.pool_for", failing)
    with pytest.raises(ScriptLimitError, match="did not start: test"):  # as Engine.sandbox's
        load_engine(
            DEMO / "no_deletes.yaml",
            agent="a",
            db=str(tmp_path / "s.db"),
            live=False,
            one_shot=True,
        )


def _prestarts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int]]:
    """The workers one-shot engines start before their configuration, with their pids."""
    from engine.cli import earlypool

    real = earlypool.prestart
    made: list[tuple[Any, int]] = []

    def recording(path: Path) -> Any:
        found = real(path)
        if found is not None:
            made.append((found, found._worker.proc.pid))
        return found

    monkeypatch.setattr("engine.cli.earlypool.prestart", recording)
    return made


def _gone(prestarted: Any, pid: int) -> bool:
    """Whether a started worker's process was reaped and its folder removed."""
    return not Path(f"/proc/{pid}").exists() and not Path(prestarted.folder.name).exists()


def test_a_one_shot_engine_takes_the_worker_it_started_before_its_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script hook's worker starts before the configuration models are imported (its
    boot overlaps theirs), and the pool takes it: no second worker starts."""
    started = _prestarts(monkeypatch)
    made = _pools_made(monkeypatch)
    with load_engine(
        DEMO / "no_deletes.yaml", agent="a", db=str(tmp_path / "s.db"), live=False, one_shot=True
    ) as engine:
        assert engine.agent("a").tool_call("delete_file", {}).blocked
        ((prestarted, pid),) = started
        assert [w.proc.pid for w in made[0]._workers._all] == [pid]
        assert made[0].health()["spawned_total"] == 1
    assert _gone(prestarted, pid)  # the pool stopped it, and removed its folder


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # the text says script_hook, the hook is not one: its worker is not wanted
        ("inject.yaml", "kind: inject\nname: note\nnotice: hi  # not a script_hook\n"),
        # the file does not load at all
        ("broken.yaml", "kind: script_hook\nname: [broken\n"),
    ],
)
def test_a_worker_started_before_the_configuration_and_not_wanted_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    started = _prestarts(monkeypatch)
    hook = tmp_path / name
    hook.write_text(text)
    try:
        with load_engine(
            hook, agent="a", db=str(tmp_path / "s.db"), live=False, one_shot=True
        ) as engine:
            engine.agent("a").before_user_message("hello")
    except ConfigError:
        assert name == "broken.yaml"
    ((prestarted, pid),) = started
    assert _gone(prestarted, pid)
