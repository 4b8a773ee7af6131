"""``hookengine explain <record-id>`` and ``records --id``: why a record decided what it did."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine import Engine
from engine.cli.hookengine import main as hookengine
from engine.store.records import HookRun, Record
from engine.why import deciding_hooks
from tests.conftest import REPO, copy_demo


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """The demo config, its store, and the ids of a blocked and an allowed tool call."""
    root = copy_demo(tmp_path)
    db = str(tmp_path / "r.db")
    with Engine.load(root, db=db) as engine:
        agent = engine.agent("demo")
        blocked = agent.tool_call("delete_file", {"path": "a.txt"}, user_id="u1")
        allowed = agent.tool_call("read_file", {"path": "a.txt"}, user_id="u1")
    return root, db, {"blocked": blocked.id, "allowed": allowed.id}


def test_explain_names_the_hook_that_blocked(
    recorded: tuple[Path, str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db, ids = recorded
    assert hookengine(["explain", ids["blocked"][:8], "--config", str(root), "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"record {ids['blocked']}\n")
    assert "  name: delete_file" in out and '  input: {"path": "a.txt"}' in out
    assert "1. no_deletes (script_hook " in out and "<- decided" in out
    assert "2. rate_limit (script_hook " in out and " skipped in " in out
    assert "=> blocked by no_deletes: the tool delete_file deletes data" in out


def test_explain_json_has_the_event_each_hook_and_who_decided(
    recorded: tuple[Path, str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db, ids = recorded
    argv = ["explain", ids["allowed"], "--config", str(root), "--db", db, "--json"]
    assert hookengine(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["event"]["input"] == {"path": "a.txt"} and data["decided_by"] == []
    assert [h["name"] for h in data["hooks"]] == ["no_deletes", "rate_limit"]
    assert all(len(h["version"]) == 12 and h["duration_ms"] >= 0 for h in data["hooks"])
    assert data["summary"] == "no hook changed anything: allowed as asked"


def test_records_id_prints_one_record_in_full(
    recorded: tuple[Path, str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _root, db, ids = recorded
    assert hookengine(["records", "--db", db, "--id", ids["blocked"][:6], "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["id"] == ids["blocked"] and record["outcome"]["blocked"] is True


@pytest.mark.parametrize(
    ("record_id", "message"),
    [
        ("ab", "record id 'ab': give at least 4 characters"),
        ("ffffffffff", "no record 'ffffffffff' in "),
    ],
)
def test_an_unknown_record_id_is_an_error(
    recorded: tuple[Path, str, dict[str, str]],
    capsys: pytest.CaptureFixture[str],
    record_id: str,
    message: str,
) -> None:
    _root, db, _ids = recorded
    assert hookengine(["explain", record_id, "--db", db]) == 2
    assert f"hookengine: error: {message}" in capsys.readouterr().err
    assert hookengine(["records", "--id", record_id, "--db", db]) == 2


def test_a_failed_hook_decides_a_fail_closed_block() -> None:
    record = Record(
        id="r1",
        time="2026-01-01T00:00:00+00:00",
        agent="a",
        point="tool_call",
        scope={},
        scope_key="",
        event={},
        hooks=[
            HookRun("quiet", "inject", "v1"),
            HookRun("guard", "script_hook", "v2", status="failed", error="boom", cause="error"),
        ],
        outcome={"blocked": True, "reason": "a required check failed"},
    )
    assert deciding_hooks(record) == (
        ["guard"],
        "blocked because guard failed: a required check failed",
    )


def test_records_with_an_unknown_agent_is_an_error_but_a_known_one_with_none_is_not(
    recorded: tuple[Path, str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db, _ids = recorded
    assert hookengine(["records", "--config", str(root), "--db", db, "--agent", "dmo"]) == 2
    assert "did you mean 'demo'?" in capsys.readouterr().err
    assert hookengine(["records", "--config", str(root), "--db", db, "--point", "feedback"]) == 0
    assert "no records match" in capsys.readouterr().out


VOLATILE = [
    (re.compile(r"\b[0-9a-f]{32}\b"), "<id>"),
    (re.compile(r"\b[0-9a-f]{8}\b"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00"), "<time>"),
    (re.compile(r"\d+\.\d\d ms"), "<ms>"),
]


def normalized(text: str) -> str:
    for pattern, stand_in in VOLATILE:
        text = pattern.sub(stand_in, text)
    return text


def test_the_explain_example_in_the_docs_is_the_real_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = (REPO / "docs/cli.md").read_text()
    example = docs.split("$ hookengine explain 9030dc02\n", 1)[1].split("```", 1)[0]
    root, db = copy_demo(tmp_path), str(tmp_path / "demo.db")
    assert hookengine(["demo", "--config", str(root), "--db", db]) == 0
    records = json.loads(_out(capsys, ["records", "--db", db, "--point", "tool_call", "--json"]))
    (blocked,) = [r for r in records if r["event"]["name"] == "delete_file"]
    assert normalized(_out(capsys, ["explain", blocked["id"][:8], "--db", db])) == normalized(
        example
    )


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert hookengine(argv) == 0
    return capsys.readouterr().out
