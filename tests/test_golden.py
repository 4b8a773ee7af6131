"""Golden files for records and replay: the demo conversation's every decision, and what a
replay reports after a guard changes. ``pytest --update-golden`` rewrites them; the change
then shows in git as a diff to review."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.demo import play
from engine.replay import load_records, replay, report_lines
from engine.store import Record
from tests.conftest import copy_demo

GOLDEN = Path(__file__).parent / "golden"
VOLATILE_EVENT = ("time", "turn_id")
VOLATILE_SUBJECT = re.compile(r"^\S+T\S+  (.*)  [0-9a-f]{8}:")


def normalized(record: Record) -> dict[str, Any]:
    """A record without what differs from run to run (ids, times, durations, versions)."""
    event = {k: v for k, v in record.event.items() if k not in VOLATILE_EVENT}
    hooks = [
        {
            "name": h.name,
            "kind": h.kind,
            "mode": h.mode,
            "layer": h.layer,
            "status": h.status,
            "change": h.change,
            "cause": h.cause,
            "logs": h.logs,
        }
        for h in record.hooks
    ]
    outcome = {k: v for k, v in record.outcome.items() if k != "duration_ms"}
    return {
        "point": record.point,
        "host": record.host,
        "scope": record.scope_key,
        "event": event,
        "hooks": hooks,
        "outcome": outcome,
    }


def check(name: str, text: str, request: pytest.FixtureRequest) -> None:
    path = GOLDEN / name
    if request.config.getoption("--update-golden") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{path} differs: run pytest --update-golden and review the diff"
    )


@pytest.fixture
def demo_run(tmp_path: Path) -> tuple[Path, str]:
    """The demo conversation played once into a fresh store; (config copy, store path)."""
    root, db = copy_demo(tmp_path), str(tmp_path / "demo.db")
    with Engine.load(root, db=db) as engine:
        play(engine.agent("demo"), say=lambda _: None)
    return root, db


def test_the_demo_conversations_records(
    demo_run: tuple[Path, str], request: pytest.FixtureRequest
) -> None:
    root, db = demo_run
    with Engine.load(root, db=db, records=False) as engine:
        records = engine.records(agent="demo", limit=1000, oldest_first=True)
    data = [normalized(r) for r in records]
    check("demo/records.json", json.dumps(data, ensure_ascii=False, indent=1) + "\n", request)


def test_replay_after_allowing_deletes(
    demo_run: tuple[Path, str], request: pytest.FixtureRequest
) -> None:
    root, db = demo_run
    guard = root / "agents/demo/hooks/no_deletes.yaml"
    text = guard.read_text().replace("delete_file", "archive_file")
    guard.write_text(text.replace("by_name: true", "by_name: false"))
    with Engine.load(root, db=db, records=False) as engine:
        report = replay(engine, load_records(engine, agent="demo"))
    # the subject line leads with the record's time and id: different every run
    lines = [VOLATILE_SUBJECT.sub("<time>  \\1  <id>:", line) for line in report_lines(report)]
    check("demo/replay_allow_deletes.txt", "\n".join(lines) + "\n", request)
    assert report.kinds == {"blocked → allowed": 1}
