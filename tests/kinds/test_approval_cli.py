"""Approvals from the command line: hook_tool lists, approves and denies what waits in a
store (--db), and dev's :approvals, :approve and :deny do it within a session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from engine.cli.dev import DevSession
from engine.cli.hook_tool import main
from engine.runtime import Engine
from tests.conftest import REPO

ASK = 'kind: approval\nname: ask\ntools: [pay]\nmessage: "Pay {{input.amount}}?"\n'


@pytest.fixture
def hook(project: Callable[[dict[str, str]], Path]) -> Path:
    root = project({"agents/x/agent.yaml": "hooks: [ask]\n", "agents/x/hooks/ask.yaml": ASK})
    return root / "agents/x/hooks/ask.yaml"


def conforms(data: object) -> None:
    schema = json.loads((REPO / "docs/schemas/approvals.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_hook_tool_asks_lists_approves_and_the_call_then_runs(
    hook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    code, out, _ = run(capsys, str(hook), "tool", "pay", '{"amount": 5}', "--db", db)
    assert code == 0 and "=> BLOCKED: approval required: Pay 5?" in out
    assert "=> ASK a person: approval " in out
    code, out, _ = run(capsys, str(hook), "approvals", "--db", db, "--json")
    conforms(json.loads(out))
    (waiting,) = json.loads(out)["approvals"]
    assert code == 0 and waiting["message"] == "Pay 5?" and waiting["input"] == {"amount": 5}
    code, out, _ = run(capsys, str(hook), "approvals", "--db", db)
    assert out.split()[0] == waiting["id"]
    argv = ["approve", waiting["id"], "--db", db, "--by", "alice", "--note", "ok"]
    code, out, _ = run(capsys, str(hook), *argv)
    assert code == 0 and out.strip() == 'approved by alice: pay {"amount": 5}'
    code, out, _ = run(capsys, str(hook), "tool", "pay", '{"amount": 5}', "--db", db)
    assert code == 0 and '=> run the tool with input {"amount": 5}' in out
    code, out, _ = run(capsys, str(hook), "approvals", "--db", db)
    assert out.strip() == "no approvals waiting"


def test_hook_tool_deny_and_a_second_decision_refused(
    hook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    argv = [str(hook), "tool", "pay", '{"amount": 7}', "--db", db, "--call-id", "c1"]
    run(capsys, *argv)
    waiting = json.loads(run(capsys, str(hook), "approvals", "--db", db, "--json")[1])
    approval_id = waiting["approvals"][0]["id"]
    decided = run(capsys, str(hook), "deny", approval_id, "--db", db, "--json", "--note", "no")
    conforms(json.loads(decided[1]))
    assert json.loads(decided[1])["approval"]["status"] == "denied"
    code, out, _ = run(capsys, *argv)
    assert "=> BLOCKED: denied by hook_tool: no" in out
    code, _, err = run(capsys, str(hook), "approve", approval_id, "--db", db)
    assert code == 2 and f"approval {approval_id} was already denied" in err


def test_hook_tool_approvals_need_a_db_and_a_known_id(
    hook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, str(hook), "approvals")
    assert code == 2 and "give the same --db" in err
    code, _, err = run(capsys, str(hook), "approve", "nope", "--db", str(tmp_path / "s.db"))
    assert code == 2 and "no approval with id 'nope'" in err


def test_dev_lists_approves_and_denies_in_its_session(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    root = project({"agents/x/agent.yaml": "hooks: [ask]\n", "agents/x/hooks/ask.yaml": ASK})
    lines: list[str] = []
    dev = DevSession(load(root, watch=True), "x", lines.append)
    try:
        dev.handle('tool pay {"amount": 5}')
        assert "=> ASK a person: approval " in lines[-1]
        dev.handle(":approvals")
        approval_id = lines[-1].split()[0]
        assert "Pay 5?" in lines[-1]
        dev.handle(f":approve {approval_id} looks fine")
        assert lines[-1] == 'approved: pay {"amount": 5} (run the tool call again)'
        dev.handle('tool pay {"amount": 5}')
        assert '=> run the tool with input {"amount": 5}' in lines[-1]
        dev.handle('tool pay {"amount": 9}')
        dev.handle(":approvals")
        other = lines[-1].split()[0]
        dev.handle(f":deny {other}")
        dev.handle(f":deny {other}")
        assert lines[-1].startswith(f"error: approval {other} was already denied by dev")
        dev.handle(":approve")
        assert lines[-1] == "usage: :approve ID [note] (:approvals lists the ids)"
        dev.handle(":approvals")
        assert lines[-1] == "no approvals waiting"
    finally:
        dev.close()
