"""Replay: recorded events through the current hooks report exactly the decisions that changed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from engine.cli.hookengine import main as hookengine
from engine.replay import classify, load_records, replay
from tests.conftest import copy_demo
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("guard_kind")

GUARD = "kind: test_guard\nname: guard\nsay_version: false\nforbidden: {forbidden}\n"
TOOLS = ("delete_file", "shell", "read_file")
QUESTIONS = (
    "How long does shipping to Berlin take?",
    "Где моя доставка iPhone?",
    "Can you clean up my old order exports?",
    "Где я живу?",
)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The demo config with a guard in the demo agent (the demo's own hooks kept)."""
    root = copy_demo(tmp_path)
    (root / "agents/demo/agent.yaml").write_text(
        "hook_files: [hooks/guard.yaml, hooks/city_hint.yaml, hooks/escalate.yaml]\n"
    )
    (root / "agents/demo/hooks/guard.yaml").write_text(GUARD.format(forbidden="[delete_file]"))
    return root


def record_traffic(engine: Engine, turns: int) -> None:
    """Play ``turns`` demo-like turns (about 5 evaluations each) through the demo agent."""
    agent = engine.agent("demo")
    for n in range(turns):
        scope = {"user_id": f"u{n % 17}", "session_id": f"s{n % 17}"}
        question = QUESTIONS[n % len(QUESTIONS)]
        first = agent.before_user_message(question, **scope)
        if first.answer is None:
            for tool in TOOLS[: 1 + n % 3]:
                agent.tool_call(tool, {"path": f"f{n}.txt"}, **scope)
            agent.before_assistant_message(
                question,
                "I could not find"
                if n % 5 == 0
                else "Shipping takes 3 to 5 working days, express 1-2.",
                **scope,
            )
        agent.after_turn(question, first.answer or "ok", **scope)
    engine.flush()


def test_replay_after_changing_a_guard_reports_exactly_the_changed_decisions(
    demo: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        record_traffic(engine, 260)
    (demo / "agents/demo/hooks/guard.yaml").write_text(
        GUARD.format(forbidden="[delete_file, shell]")
    )
    with Engine.load(demo, db=db, records=False) as engine:
        records = load_records(engine, agent="demo")
        report = replay(engine, records)
    shell_calls = {r.id for r in records if r.point == "tool_call" and r.event["name"] == "shell"}
    assert report.total == len(records) >= 1000
    assert {d.record.id for d in report.differences} == shell_calls
    assert dict(report.kinds) == {"allowed → blocked": len(shell_calls)}
    assert report.same == report.total - len(shell_calls) and report.skipped == 0
    assert all(d.fields == ("blocked", "reason") for d in report.differences)


def test_replay_writes_nothing(demo: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        record_traffic(engine, 10)
        before = len(engine.records(limit=10_000))
        replay(engine, load_records(engine))
        assert len(engine.records(limit=10_000)) == before


def test_replay_uses_the_recorded_time(demo: Path, tmp_path: Path) -> None:
    with Engine.load(demo, db=str(tmp_path / "t.db")) as engine:
        out = engine.agent("demo").tool_call("shell", {}, time="2020-01-01T00:00:00+00:00")
        engine.flush()
        record = load_records(engine, point="tool_call")[0]
        assert record.id == out.id and record.event["time"].startswith("2020-01-01")


def test_the_cli_prints_differences_counts_and_progress(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        record_traffic(engine, 30)
    (demo / "agents/demo/hooks/guard.yaml").write_text(GUARD.format(forbidden="[]"))
    code = hookengine(
        [
            "replay",
            "--config",
            str(demo),
            "--db",
            db,
            "--agent",
            "demo",
            "--point",
            "tool_call",
            "--progress",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert "blocked → allowed" in out and "event: delete_file" in out
    assert "blocked: true -> false" in out
    assert "differ, 0 skipped" in out and "replay:" in err and "100%" in err


def test_without_a_tty_replay_draws_no_progress(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        record_traffic(engine, 3)
    assert hookengine(["replay", "--config", str(demo), "--db", db]) == 0
    assert capsys.readouterr().err == ""


def test_fail_on_diff_exits_1_when_a_decision_changed_and_0_when_none_did(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {})
    argv = ["replay", "--config", str(demo), "--db", db, "--fail-on-diff"]
    assert hookengine(argv) == 0
    assert "1 same, 0 differ" in capsys.readouterr().out
    (demo / "agents/demo/hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    assert hookengine(argv) == 1
    assert "allowed → blocked" in capsys.readouterr().out
    assert hookengine(argv[:-1]) == 0  # without the flag a difference is a finding, not a failure


def test_skipped_records_say_why(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {})
    shutil.move(demo / "agents/demo", demo / "agents/other")
    assert hookengine(["replay", "--config", str(demo), "--db", db]) == 0
    out = capsys.readouterr().out
    assert "1 skipped" in out
    assert "1  skipped: agent 'demo' is not in the config (agents: other)" in out
    assert hookengine(["replay", "--config", str(demo), "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["skips"][0]["reason"] == "agent 'demo' is not in the config (agents: other)"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--point", "tool_cal", "--point 'tool_cal': no such point (did you mean 'tool_call'?)"),
        ("--agent", "dmo", "--agent 'dmo': no such agent in the config (did you mean 'demo'?)"),
        ("--since", "yesterday", "--since 'yesterday': not a time; write an ISO time"),
    ],
)
def test_a_bad_filter_is_an_error_with_a_suggestion(
    demo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    value: str,
    message: str,
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {})
    assert hookengine(["replay", "--config", str(demo), "--db", db, flag, value]) == 2
    assert f"hookengine: error: {message}" in capsys.readouterr().err


def test_since_takes_a_duration(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {}, time="2020-01-01T00:00:00+00:00")
        engine.agent("demo").tool_call("shell", {})
    assert hookengine(["replay", "--config", str(demo), "--db", db, "--since", "2h"]) == 0
    assert "replayed 1:" in capsys.readouterr().out
    assert hookengine(["replay", "--config", str(demo), "--db", db, "--since", "2019-12-31"]) == 0
    assert "replayed 2:" in capsys.readouterr().out


def test_replay_json_lists_differences(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {})
    (demo / "agents/demo/hooks/guard.yaml").write_text(GUARD.format(forbidden="[shell]"))
    assert hookengine(["replay", "--config", str(demo), "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kinds"] == {"allowed → blocked": 1}
    assert data["differences"][0]["after"]["blocked"] is True


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ({"blocked": True}, {"blocked": False}, "blocked → allowed"),
        ({"input": {"a": 1}}, {"input": {"a": 2}}, "changed input"),
        ({"answer": "x"}, {"answer": "y"}, "different answer"),
        ({"sections": ["a"]}, {"sections": []}, "different sections"),
    ],
)
def test_differences_are_named_as_a_reviewer_reads_them(
    before: dict[str, object], after: dict[str, object], kind: str
) -> None:
    assert classify(before, after)[0] == kind


def test_records_of_unknown_agents_are_skipped(
    demo: Path, tmp_path: Path, load: Callable[..., Engine]
) -> None:
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        engine.agent("demo").tool_call("shell", {})
    shutil.move(demo / "agents/demo", demo / "agents/other")
    engine = load(demo, db=db, records=False)
    report = replay(engine, load_records(engine))
    assert report.skipped == report.total == 1


def test_on_a_terminal_replay_draws_a_progress_bar(tmp_path: Path) -> None:
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    from tests.conftest import REPO, console

    demo = copy_demo(tmp_path / "plain")  # the demo's own hooks: the process knows their kinds
    db = str(tmp_path / "traffic.db")
    with Engine.load(demo, db=db) as engine:
        record_traffic(engine, 3)
    leader, follower = pty.openpty()
    # a new pty is 0 columns wide, where tqdm draws nothing; a terminal has a width
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        done = subprocess.run(
            [str(console("hookengine")), "replay", "--config", str(demo), "--db", db],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        os.close(follower)
        drawn = b""
        while chunk := _read(leader):
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0 and b"replayed" in done.stdout
    assert b"replay: 100%" in drawn and b"records" in drawn


def _read(fd: int) -> bytes:
    import os

    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal closed: everything was read
        return b""
