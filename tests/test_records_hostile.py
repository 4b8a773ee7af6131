"""Records under hostile input (issue 8, class 3): nothing an event or a hook writes can make
another record disappear, and every loss is counted and shown (Python, CLI, HTTP, log).

Every test loads a real config with ``Engine.load`` and calls agents as a host would, on
SQLite and on PostgreSQL (see tests/backends.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.cli.hookengine import main
from engine.errors import StoreError
from engine.outcome import Outcome
from engine.runtime import Engine
from engine.store import Record
from tests.backends import db_url
from tests.conftest import write
from tests.http.test_http import run_server

__all__ = ["db_url"]

TEN_MB = 10 * 1024 * 1024
BAD = "hide\ud800me"
"""A lone surrogate: valid in Python (json.loads gives it), refused by UTF-8 and PostgreSQL."""
SHOWN = "hide\\ud800me"
"""How a record shows it: the escape, as text."""

SCRIPTS = {
    "py": """
def on_tool_call(event, host):
    mode = event["input"].get("mode")
    if mode == "hostile":
        bad = "hide" + chr(0xd800) + "me"
        nul = "nul" + chr(0) + "here"
        deep = "leaf"
        for i in range(30):
            deep = [deep]
        host.log("log " + bad)
        host.log(nul)
        host.emit({"type": "status", "data": {"bad": bad, "deep": deep, "nul": nul}})
        host.state.set("k", {"bad": bad, "deep": deep})
        return {"notice": "notice " + bad}
    if mode == "raise":
        raise ValueError("err " + chr(0xd800) + chr(0))
    if mode == "nan":
        return {"input": {"x": float("nan")}}
    host.log("ok " + str(event["input"].get("n")))
    return None
""",
    "js": """
function on_tool_call(event, host) {
  var mode = event.input.mode;
  if (mode === "hostile") {
    var bad = "hide\\ud800me", nul = "nul\\u0000here", deep = "leaf";
    for (var i = 0; i < 30; i++) { deep = [deep]; }
    host.log("log " + bad);
    host.log(nul);
    host.emit({type: "status", data: {bad: bad, deep: deep, nul: nul}});
    host.state.set("k", {bad: bad, deep: deep});
    return {notice: "notice " + bad};
  }
  if (mode === "raise") { throw new Error("err \\ud800\\u0000"); }
  if (mode === "nan") { return {input: {x: NaN, y: Infinity}}; }
  host.log("ok " + event.input.n);
  return null;
}
""",
}


def script_hook(lang: str) -> str:
    language = "python" if lang == "py" else "javascript"
    indented = "".join(f"  {line}\n" for line in SCRIPTS[lang].strip("\n").splitlines())
    return f"kind: script_hook\nname: {lang}\nlanguage: {language}\nsource: |\n{indented}"


def config(root: Path) -> Path:
    return write(
        root,
        {
            "engine.yaml": "process: proc\nscripts: {workers: 2}\n",
            "agents/py/agent.yaml": "hooks: [py]\n",
            "agents/py/hooks/py.yaml": script_hook("py"),
            "agents/js/agent.yaml": "hooks: [js]\n",
            "agents/js/hooks/js.yaml": script_hook("js"),
            "agents/plain/agent.yaml": "hooks: [ctx]\n",
            "agents/plain/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
        },
    )


@pytest.fixture
def engine(tmp_path: Path, db_url: str) -> Iterator[Engine]:
    eng = Engine.load(config(tmp_path / "config"), db=db_url)
    yield eng
    eng.close()


class Gate:
    """Holds the writer inside its first ``add_records`` until released, so that everything
    submitted meanwhile reaches the store as one batch; remembers each batch's ids."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.write = engine.store.add_records
        self.batches: list[list[str]] = []
        self.entered, self.released = threading.Event(), threading.Event()
        monkeypatch.setattr(engine.store, "add_records", self)

    def __call__(self, records: list[Record], *, again: bool = False) -> None:
        self.batches.append([r.id for r in records])
        if len(self.batches) == 1:
            self.entered.set()
            self.released.wait(30)
        self.write(records, again=again)

    def hold(self, engine: Engine) -> None:
        engine.agent("plain").tool_call("warm", {}, user_id="warm")
        assert self.entered.wait(10), "the writer never wrote the warm-up record"


def good_calls(engine: Engine, n: int) -> list[Outcome]:
    """``n`` ordinary calls from three users through every agent."""
    agents = [engine.agent(a) for a in ("py", "js", "plain")]
    return [
        agents[i % 3].tool_call("read", {"n": i}, user_id=f"u{i % 3}", session_id=f"s{i}")
        for i in range(n)
    ]


def deep_event(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": BAD}
    for _ in range(depth):
        value = {"d": value}
    return value


def by_id(engine: Engine) -> dict[str, Record]:
    return {r.id: r for r in engine.records(limit=10_000)}


def exact_health(engine: Engine, written: int, dropped: dict[str, int]) -> None:
    assert engine.writer is not None
    health = engine.writer.health()
    assert health["queued"] == 0
    assert health["written"] == written
    assert health["dropped"] == dropped
    assert (health["last_error"] is None) == (not dropped)


# -- hostile events --------------------------------------------------------------------------


def hostile_events(engine: Engine) -> dict[str, Outcome]:
    py, js, plain = (engine.agent(a) for a in ("py", "js", "plain"))
    return {
        "surrogate_py": py.tool_call("t", {"note": BAD}, user_id="attacker"),
        "surrogate_js": js.tool_call("t", {"note": BAD}, user_id="attacker"),
        "surrogate_key": plain.tool_call("t", {BAD: 1}, user_id="attacker"),
        "surrogate_scope": plain.tool_call("t", {}, user_id="att\ud800cker"),
        "nul": plain.tool_call("t", {"note": "a\x00b"}, user_id="attacker"),
        "deep_300": plain.tool_call("t", {"deep": deep_event(300)}, user_id="attacker"),
        "deep_py": py.tool_call("t", {"deep": deep_event(300)}, user_id="attacker"),
        "ten_mb": plain.tool_call("t", {"blob": "x" * TEN_MB}, user_id="attacker"),
        "huge_int": plain.tool_call("t", {"n": 1 << 100_000}, user_id="attacker"),
        "long_scope": plain.tool_call("t", {}, user_id="u" * 256),  # the cap: ID_CAP
    }


def test_hostile_events_in_a_batch_of_good_records_lose_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(engine, monkeypatch)
    gate.hold(engine)
    before = good_calls(engine, 6)
    bad = hostile_events(engine)
    after = good_calls(engine, 6)
    gate.released.set()
    engine.flush()
    mixed = [o.id for o in before] + [o.id for o in bad.values()] + [o.id for o in after]
    assert gate.batches[1] == mixed  # one batch: good records of three users around the bad
    stored = by_id(engine)
    assert set(mixed) <= set(stored)
    exact_health(engine, written=len(mixed) + 1, dropped={})
    for o in before + after:
        assert not stored[o.id].outcome["blocked"]
        assert all(h.status == "decided" for h in stored[o.id].hooks)


def test_each_hostile_value_is_stored_with_its_marker(engine: Engine) -> None:
    """Events pass the boundary rule first (engine/boundary.py: surrogates to U+FFFD, cut at
    2 MB and 64 levels; NaN is the host's mistake, raised); the record encoding then handles
    what is left (NUL, 64 levels within the record, 65 536 characters per string)."""
    bad = hostile_events(engine)
    stored = by_id(engine)

    def event(name: str) -> Any:
        return stored[bad[name].id].event

    assert event("surrogate_py")["input"]["note"] == "hide\ufffdme"
    assert event("surrogate_js")["input"]["note"] == "hide\ufffdme"
    assert event("surrogate_key")["input"] == {"hide\ufffdme": 1}
    assert stored[bad["surrogate_scope"].id].scope_key == "user:att\ufffdcker"
    assert event("nul")["input"]["note"] == "a\\u0000b"
    for name in ("deep_300", "deep_py"):
        assert "nested deeper than 64]" in json.dumps(event(name))
    blob = event("ten_mb")["input"]["blob"]
    assert blob.endswith(" characters]") and "[truncated: " in blob and len(blob) < 70_000
    assert "an integer of 100001 bits" in event("huge_int")["input"]["n"]
    # the longest scope value the host may pass (a longer one is an EventError) fits whole
    assert stored[bad["long_scope"].id].scope_key == "user:" + "u" * 256
    exact_health(engine, written=len(bad), dropped={})


@pytest.mark.parametrize("lang", ["py", "js"])
def test_a_script_writing_hostile_text_cannot_hide_its_decision(engine: Engine, lang: str) -> None:
    agent = engine.agent(lang)
    hostile = agent.tool_call("t", {"mode": "hostile"}, user_id="attacker")
    raised = agent.tool_call("t", {"mode": "raise"}, user_id="attacker")
    good = good_calls(engine, 3)
    stored = by_id(engine)
    run = stored[hostile.id].hooks[0]
    assert run.status == "decided" and run.logs == [f"log {SHOWN}", "nul\\u0000here"]
    assert run.change == {"notice": ["notice hide\ufffdme"]}  # changes pass the boundary
    # state and emits are made whole before they are kept (half a character becomes U+FFFD)
    writes = run.extras["state_writes"]["k"]
    assert writes["bad"] == "hide\ufffdme" and json.dumps(writes["deep"]).count("[") == 30
    emitted = stored[hostile.id].outcome["events"][0]["data"]
    assert emitted["bad"] == "hide\ufffdme" and emitted["nul"] == "nul\\u0000here"
    assert stored[hostile.id].outcome["notices"] == ["notice hide\ufffdme"]
    failed = stored[raised.id]
    assert failed.outcome["blocked"] and failed.hooks[0].status == "failed"
    assert "err \\ud800\\u0000" in (failed.hooks[0].error or "")
    assert {o.id for o in good} <= set(stored)
    exact_health(engine, written=5, dropped={})


@pytest.mark.parametrize("lang", ["py", "js"])
def test_non_json_numbers_from_a_script_are_refused_and_the_record_kept(
    engine: Engine, lang: str
) -> None:
    out = engine.agent(lang).tool_call("t", {"mode": "nan"}, user_id="u1")
    stored = by_id(engine)[out.id]
    # both sandboxes refuse NaN and Infinity in a result: no script can put one in a record
    assert out.blocked and "numbers must be finite" in (stored.hooks[0].error or "")
    assert stored.outcome["blocked"] and stored.hooks[0].status == "failed"
    exact_health(engine, written=1, dropped={})


# -- store failures --------------------------------------------------------------------------


class Refuse:
    """Makes the store refuse every write that holds a record of user ``victim``."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
        self.write, self.exc, self.calls = engine.store.add_records, exc, 0
        monkeypatch.setattr(engine.store, "add_records", self)

    def __call__(self, records: list[Record], *, again: bool = False) -> None:
        self.calls += 1
        if any(r.scope_key == "user:victim" for r in records):
            raise self.exc
        self.write(records, again=again)

    def refuse_all(self, *args: object, **options: object) -> None:
        """A store that is down: ``Refuse(...)`` on every record."""
        self.calls += 1
        raise self.exc


def test_a_store_failure_for_one_record_loses_only_that_record(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gate = Gate(engine, monkeypatch)
    gate.hold(engine)
    refuse = Refuse(engine, monkeypatch, StoreError("store: write failed: value too long"))
    good = good_calls(engine, 5)
    lost = engine.agent("plain").tool_call("t", {"n": 1}, user_id="victim")
    good += good_calls(engine, 5)
    with caplog.at_level(logging.ERROR, logger="engine.records"):
        gate.released.set()
        engine.flush()
    stored = by_id(engine)
    assert {o.id for o in good} <= set(stored) and lost.id not in stored
    assert refuse.calls == 1 + len(good) + 1  # the batch, then each record alone
    exact_health(engine, written=len(good) + 1, dropped={"store": 1})
    health = engine.writer.health()  # type: ignore[union-attr]
    assert "value too long" in health["last_error"] and health["last_error_at"]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and lost.id in errors[0].getMessage()


def test_a_real_constraint_failure_loses_one_record_and_shows_no_content(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(engine, monkeypatch)
    gate.hold(engine)
    good = good_calls(engine, 3)
    twice = Record.model_construct(
        id="same-id",
        time="2026-01-01T00:00:00+00:00",
        agent="plain",
        point="after_loop",
        scope={},
        scope_key="process:proc",
        event={"secret_note": "content that must not reach status"},
        hooks=[],
        outcome={},
        generation=0,
    )
    assert engine.writer is not None
    engine.writer.submit(twice)
    engine.writer.submit(twice)  # the store's unique id refuses the second
    good += good_calls(engine, 3)
    gate.released.set()
    engine.flush()
    stored = by_id(engine)
    assert {o.id for o in good} | {"same-id"} <= set(stored)
    exact_health(engine, written=1 + len(good) + 1, dropped={"store": 1})
    error = engine.status()["records"]["last_error"]
    assert error.startswith("StoreError: store ") and "content that must not" not in error


def test_a_burst_of_failures_logs_once_and_counts_each(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    Refuse(engine, monkeypatch, StoreError("store: write failed: disk full"))
    plain = engine.agent("plain")
    with caplog.at_level(logging.WARNING, logger="engine.records"):
        for i in range(20):
            plain.tool_call("t", {"n": i}, user_id="victim")
            if i % 5 == 0:
                engine.flush()  # several batches, one burst
        engine.flush()
        good = good_calls(engine, 3)
        engine.flush()
    assert {o.id for o in good} <= set(by_id(engine))
    exact_health(engine, written=3, dropped={"store": 20})
    levels = [r.levelno for r in caplog.records]
    assert levels.count(logging.ERROR) == 1 and levels.count(logging.WARNING) == 1
    assert "20 were dropped" in caplog.records[-1].getMessage()


def test_a_serialisation_failure_counts_as_encode(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    Refuse(engine, monkeypatch, ValueError("surrogates not allowed"))
    lost = engine.agent("py").tool_call("t", {"n": 1}, user_id="victim")
    good = good_calls(engine, 3)
    stored = by_id(engine)
    assert lost.id not in stored and {o.id for o in good} <= set(stored)
    exact_health(engine, written=3, dropped={"encode": 1})


# -- where losses show -----------------------------------------------------------------------


def lose_one(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    Refuse(engine, monkeypatch, StoreError("store: write failed: refused for the test"))
    engine.agent("plain").tool_call("t", {}, user_id="victim")
    good_calls(engine, 2)
    engine.flush()


def test_engine_status_shows_the_counters_beside_the_agents(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert engine.status()["records"] == {
        "queued": 0,
        "buffered": 0,
        "written": 0,
        "dropped": {},
        "last_error": None,
        "last_error_at": None,
        "store_reachable": True,
        "down_since": None,
        "retries": 0,
        "buffer_max": 50_000,
        "retry_s": 120.0,
        "file_replaced": 0,
        "file_notice": None,
    }
    lose_one(engine, monkeypatch)
    status = engine.status()
    assert set(status["agents"]) == {"js", "plain", "py"} and status["watching"] is False
    records = status["records"]
    assert records["written"] == 2 and records["dropped"] == {"store": 1}
    assert "refused for the test" in records["last_error"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().out


def test_hookengine_status_shows_the_losses_kept_in_the_store(
    engine: Engine,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = str(engine.project.root)
    code, out = run_cli(["status", root, "--db", db_url, "--json"], capsys)
    assert code == 0 and json.loads(out)["records"]["dropped"] == {}
    lose_one(engine, monkeypatch)
    code, out = run_cli(["status", root, "--db", db_url, "--json"], capsys)
    records = json.loads(out)["records"]
    assert code == 0 and records["dropped"] == {"store": 1}
    assert "refused for the test" in records["last_error"] and records["last_error_at"]
    code, out = run_cli(["status", root, "--db", db_url], capsys)
    assert "records: 1 dropped (store 1)" in out
    assert "refused for the test" in out


def test_hookengine_status_without_a_store_reports_no_losses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = config(tmp_path / "config")
    code, out = run_cli(["status", str(root), "--json"], capsys)
    assert code == 0
    assert json.loads(out)["records"] == {
        "store": str(tmp_path / "data" / "hookengine.db"),
        "dropped": {},
        "last_error": None,
        "last_error_at": None,
    }
    assert not (tmp_path / "data" / "hookengine.db").exists()  # status creates no store
    code, out = run_cli(["status", str(root)], capsys)
    assert "records: 0 dropped" in out


def test_http_status_shows_the_counters(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKENGINE_ADMIN_TOKEN", "t0ken-for-status")
    lose_one(engine, monkeypatch)
    auth = {"Authorization": "Bearer t0ken-for-status"}
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(contextlib.contextmanager(run_server)(engine))
        client = stack.enter_context(httpx.Client(base_url=base, timeout=10))
        body = client.get("/v1/status", headers=auth).json()
    assert body["records"]["dropped"] == {"store": 1} and body["records"]["written"] == 2
    assert "a" not in body["agents"] and set(body["agents"]) == {"js", "plain", "py"}
