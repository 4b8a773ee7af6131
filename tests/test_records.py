"""Records: written for every evaluation, masked, optional per agent, bounded, not lost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.masking import masked_values, prepare
from engine.runtime import Engine
from engine.store import RecordQuery, open_store
from engine.store.records import HookRun, Record
from tests.backends import db_url
from tests.conftest import REPO, write

__all__ = ["db_url"]

AGENT = {
    "agents/a/agent.yaml": """
        hooks: [ctx, esc]
        records:
          enabled: true
          mask: [event.input.password, event.question]
    """,
    "agents/a/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: [{role: system, content: x}]\n",
    "agents/a/hooks/esc.yaml": "kind: escalate\nname: esc\nmessage: call us\nmin_answer_chars: 5\n",
    "agents/quiet/agent.yaml": "hooks: [ctx]\nrecords: {enabled: false}\n",
    "agents/quiet/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
}


def test_every_evaluation_writes_a_record(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(AGENT))
    agent = engine.agent("a")
    outs = [
        agent.before_user_message("hi", user_id="u1"),
        agent.tool_call("t", {"x": 1}, user_id="u1"),
        agent.before_assistant_message("q", "no", user_id="u2"),
        agent.after_loop("job_done"),
    ]
    records = engine.records(agent="a", limit=10)
    assert {r.id for r in records} == {o.id for o in outs}
    by_id = {r.id: r for r in records}
    first = by_id[outs[0].id]
    assert first.point == "before_user_message" and first.scope_key == "user:u1"
    assert [h.name for h in first.hooks] == ["ctx", "esc"]
    assert all(len(h.version) == 12 for h in first.hooks)
    assert by_id[outs[2].id].outcome["appended"] == ["call us"]


def test_the_writer_builds_the_record_the_evaluation_decided(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    """The caller hands raw parts to the writer; what the host does to its outcome after the
    call does not reach the record the writer builds later."""
    engine = load(project(AGENT))
    agent = engine.agent("a")
    out = agent.before_user_message("hi", user_id="u1")
    decided = {k: v for k, v in out.decision().items() if k != "question"}  # masked
    out.messages.append({"role": "user", "content": "added by the host"})
    out.notices.append("added by the host")
    (record,) = engine.records(agent="a", limit=10)
    assert {k: record.outcome[k] for k in decided} == decided
    assert record.outcome["events"] == [] and record.outcome["failed"] == []
    assert record.scope == {
        "user_id": "u1",
        "session_id": None,
        "template": None,
        "process": record.scope["process"],
    }
    assert record.id == out.id and record.generation == out.generation


def test_masked_fields_never_reach_the_store(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(AGENT))
    agent = engine.agent("a")
    agent.tool_call("login", {"user": "bob", "password": "hunter2"}, user_id="u1")
    agent.before_user_message("my secret question", user_id="u1")
    engine.flush()
    text = Path(engine.store.url.removeprefix("sqlite:///")).read_bytes()
    assert b"hunter2" not in text and b"my secret question" not in text
    tool = engine.records(point="tool_call")[0]
    assert tool.event["input"] == {"user": "bob", "password": "***"}


def test_records_can_be_turned_off_per_agent(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(AGENT))
    engine.agent("quiet").before_user_message("hi")
    engine.agent("a").before_user_message("hi")
    assert engine.records(agent="quiet") == []
    assert len(engine.records(agent="a")) == 1


def test_records_are_queryable_by_point_scope_time_and_limit(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(AGENT))
    agent = engine.agent("a")
    for i in range(5):
        agent.before_user_message(f"q{i}", user_id="u1", time=f"2026-01-0{i + 1}T00:00:00+00:00")
    agent.after_loop("done", user_id="u2", time="2026-02-01T00:00:00+00:00")
    assert len(engine.records(point="before_user_message")) == 5
    assert [r.point for r in engine.records(scope="u2")] == ["after_loop"]
    assert len(engine.records(since="2026-01-03", until="2026-01-05")) == 2
    assert len(engine.records(limit=2)) == 2
    assert engine.records(limit=1)[0].point == "after_loop"


def test_retention_keeps_the_newest(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "r.db"))
    try:
        for i in range(30):
            store.add_records(
                [
                    Record(
                        id=f"r{i}",
                        time=f"t{i:02}",
                        agent="a",
                        point="feedback",
                        scope={},
                        scope_key="process:x",
                        event={},
                        hooks=[],
                        outcome={},
                    )
                ]
            )
        assert store.prune_records(10) == 20
        kept = store.query_records(RecordQuery(limit=100))
        assert [r.id for r in kept] == [f"r{i}" for i in range(29, 19, -1)]
    finally:
        store.close()


def test_queued_records_are_written_at_a_normal_exit(tmp_path: Path) -> None:
    db = tmp_path / "exit.db"
    script = textwrap.dedent(f"""
        from engine import Engine
        engine = Engine.load({str(REPO / "config")!r}, db={str(db)!r})
        agent = engine.agent("demo")
        for i in range(500):
            agent.tool_call("read_file", {{"path": str(i)}}, user_id="u1")
        # no close(): the exit handler must flush
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, cwd=tmp_path)
    store = open_store(str(db))
    try:
        assert len(store.query_records(RecordQuery(point="tool_call", limit=1000))) == 500
    finally:
        store.close()


# -- masking by value: what hooks derived from a masked field -------------------------------

COPYING = {
    "py": """
def on_tool_call(event, host):
    pw = event["input"]["password"]
    pin = event["input"]["pin"]
    host.log("password is " + pw + ", pin " + str(pin))
    host.emit({"type": "status", "data": {"copy": pw, "pin": pin, "upper": "x" + pw + "x"}})
    host.state.set("seen", {"pw": pw, "pin": pin})
    if event["name"] == "fail":
        raise ValueError("bad password " + pw)
    return {"notice": "you typed " + pw, "input": {"user": "bob", "note": "was " + pw}}
""",
    "js": """
function on_tool_call(event, host) {
  var pw = event.input.password, pin = event.input.pin;
  host.log("password is " + pw + ", pin " + pin);
  host.emit({type: "status", data: {copy: pw, pin: pin, upper: "x" + pw + "x"}});
  host.state.set("seen", {pw: pw, pin: pin});
  if (event.name === "fail") { throw new Error("bad password " + pw); }
  return {notice: "you typed " + pw, input: {user: "bob", note: "was " + pw}};
}
""",
}


def copying_agent(lang: str) -> dict[str, str]:
    language = "python" if lang == "py" else "javascript"
    source = "".join(f"  {line}\n" for line in COPYING[lang].strip("\n").splitlines())
    return {
        "engine.yaml": "process: p\n",
        f"agents/{lang}/agent.yaml": (
            "hooks: [copy]\nrecords: {mask: [event.input.password, event.input.pin]}\n"
        ),
        f"agents/{lang}/hooks/copy.yaml": (
            f"kind: script_hook\nname: copy\nlanguage: {language}\nsource: |\n{source}"
        ),
    }


@pytest.mark.parametrize("lang", ["py", "js"])
def test_values_a_hook_copied_from_a_masked_field_are_masked_too(
    tmp_path: Path, db_url: str, lang: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = write(tmp_path / "config", copying_agent(lang))
    with Engine.load(root, db=db_url) as engine:
        agent = engine.agent(lang)
        ok = agent.tool_call("login", {"user": "bob", "password": "s3cr3t-pw", "pin": 987654})
        failed = agent.tool_call("fail", {"password": "s3cr3t-pw", "pin": 987654})
        assert ok.notices == ["you typed s3cr3t-pw"]  # the host still sees what the hook did
        assert failed.blocked
        records = {r.id: r for r in engine.records(limit=10)}
        text = json.dumps([r.model_dump(mode="json") for r in records.values()])
    assert "s3cr3t" not in text and "987654" not in text
    ok_record, failed_record = records[ok.id], records[failed.id]
    run = ok_record.hooks[0]
    assert ok_record.event["input"] == {"user": "bob", "password": "***", "pin": "***"}
    assert run.logs == ["password is ***, pin ***"]
    assert run.extras["state_writes"] == {"seen": {"pw": "***", "pin": "***"}}
    assert run.change == {"notice": ["you typed ***"], "input": {"user": "bob", "note": "was ***"}}
    assert ok_record.outcome["events"][0]["data"] == {"copy": "***", "pin": "***", "upper": "x***x"}
    assert ok_record.outcome["notices"] == ["you typed ***"]
    assert ok_record.outcome["input"]["note"] == "was ***"
    assert "bad password ***" in (failed_record.hooks[0].error or "")
    # the failure's line in the process log is masked as the record is
    assert "hook copy failed at tool_call" in caplog.text and "bad password ***" in caplog.text
    assert "s3cr3t" not in caplog.text and "987654" not in caplog.text


def test_masking_by_value_covers_every_string_under_a_masked_path(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    files = dict(AGENT)
    files["agents/a/agent.yaml"] = "hooks: [ctx]\nrecords: {mask: [event.input.card]}\n"
    engine = load(project(files))
    card = {"number": "4111-1111-1111-1111", "cvv": "123", "holder": {"name": "Ada Lovelace"}}
    out = engine.agent("a").tool_result(
        "pay", {"card": card}, "charged 4111-1111-1111-1111 for Ada Lovelace (cvv 123)"
    )
    record = engine.records()[0]
    assert record.id == out.id and record.event["input"] == {"card": "***"}
    # 123 is shorter than 4 characters: masked at its path only, not wherever "123" appears
    assert record.event["result"] == "charged *** for *** (cvv 123)"


def test_masked_values_are_collected_only_from_the_event_and_only_when_long_enough() -> None:
    event = {"input": {"pw": "hunter2", "pin": 1234, "short": "ab", "list": [{"pw": "zzzzzz"}]}}
    paths = ["event.input.pw", "event.input.pin", "event.input.short", "event.input.list.pw"]
    assert masked_values(event, [*paths, "outcome.input.pw"]) == {"hunter2", "1234", "zzzzzz"}
    assert masked_values(event, ["event.nothing.here"]) == set()


def make_record(event: dict[str, Any], *runs: HookRun) -> Record:
    return Record.model_construct(
        id="r1",
        time="2026-01-01T00:00:00+00:00",
        agent="a",
        point="tool_call",
        scope={"user_id": "u1"},
        scope_key="user:u1",
        event=event,
        hooks=list(runs),
        outcome={"blocked": False},
        generation=3,
    )


def test_a_clean_record_is_handed_on_as_it_is() -> None:
    record = make_record({"input": {"q": "hello"}}, HookRun("h", "inject", "v1", logs=["ok"]))
    assert prepare(record, []) is record
    masked = prepare(record, ["event.input.q"])
    assert masked is not record and masked.event["input"] == {"q": "***"}
    assert record.event["input"] == {"q": "hello"}  # the caller's event is never changed


def test_each_part_of_a_record_has_its_own_budget() -> None:
    flood = HookRun("flood", "script_hook", "v1", logs=["y" * 60_000] * 40)
    quiet = HookRun("quiet", "script_hook", "v1", logs=["decided: block", "bad \ud800"])
    record = make_record({"blob": "x" * 3_000_000}, flood, quiet)
    out = prepare(record, [])
    assert out.event["blob"].endswith("[truncated: 3000000 characters]")
    assert out.hooks[0].logs[-1].startswith("[truncated: ")
    assert out.hooks[1].logs == ["decided: block", "bad \\ud800"]
    assert out.outcome == {"blocked": False} and out.generation == 3
    assert len(out.model_dump_json()) < 2_500_000


def test_a_record_part_may_nest_as_deep_as_the_boundary_lets_an_event() -> None:
    deep: Any = "leaf"
    for _ in range(64):
        deep = [deep]
    kept = prepare(make_record({"input": deep, "x": "\ud800"}), [])
    assert kept.event["input"] == deep and kept.event["x"] == "\\ud800"
    cut = prepare(make_record({"input": [deep], "x": "\ud800"}), [])
    marker = '"[truncated: nested deeper than 64]"'
    text = json.dumps(cut.event["input"])
    assert marker in text and text.replace(marker, "").count("[") == 64


def test_an_in_memory_store_is_shared_by_the_record_writer_thread(
    project: Callable[[dict[str, str]], Path],
) -> None:
    # ":memory:" used to give each thread its own empty database: the writer found no tables,
    # and a close() waited on the retry buffer for a store that could never come back.
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [note]\n",
            "agents/a/hooks/note.yaml": "kind: inject\nname: note\nnotice: hi\n",
        }
    )
    started = time.monotonic()
    with Engine.load(root, db=":memory:") as engine:
        engine.agent("a").tool_call("t", {}, user_id="u1")
        engine.flush()
        assert [r.point for r in engine.records()] == ["tool_call"]
        assert engine.status()["records"]["dropped"] == {}
    assert time.monotonic() - started < 10


class _Arriving:
    """A store whose first write sees ``during`` more records submitted to the writer, as a
    busy host's decisions go on while a batch is written; it counts the batches."""

    def __init__(self, store: Any, during: int) -> None:
        self.store, self.during = store, during
        self.batches: list[int] = []
        self.writer: Any = None

    def add_records(self, records: list[Record], *, again: bool = False) -> None:
        self.store.add_records(records, again=again)
        self.batches.append(len(records))
        if len(self.batches) == 1:
            for i in range(self.during):
                self.writer.submit(numbered(f"late{i}"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def numbered(record_id: str) -> Record:
    return make_record({"input": {"q": "hello"}}).model_copy(update={"id": record_id})


@pytest.mark.parametrize(
    ("during", "batches_before_next_round"),
    # 600: a full batch goes in the same drain, and it woke the writer for the rest too
    [(10, [1]), (600, [1, 500, 100])],
)
def test_records_that_arrive_during_a_write_wait_for_the_next_round_unless_a_batch_is_full(
    tmp_path: Path, during: int, batches_before_next_round: list[int]
) -> None:
    """A writer that chased every record submitted while it wrote would write a handful per
    transaction while the host is busy; a full batch still goes at once."""
    from engine.records import RecordWriter

    store = _Arriving(open_store(str(tmp_path / "s.db")), during)
    writer = RecordWriter(store, batch=500, interval=3600.0)  # type: ignore[arg-type]
    store.writer = writer
    try:
        writer.submit(numbered("first"))
        writer._wake.set()  # what flush() does, without waiting for everything
        deadline = time.monotonic() + 10
        while writer.health()["written"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # a writer that went on draining would have written the rest by now
        assert store.batches == batches_before_next_round
        assert writer.health()["queued"] == 1 + during - sum(batches_before_next_round)
        assert writer.flush(timeout=10)
        assert sum(store.batches) == 1 + during
        assert sorted(r.id for r in store.store.query_records(RecordQuery(limit=1000))) == sorted(
            ["first", *(f"late{i}" for i in range(during))]
        )
    finally:
        writer.close()
