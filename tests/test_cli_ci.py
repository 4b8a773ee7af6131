"""The command line in CI: test selection, JUnit, hooks without tests, one way to name the
config, versions, and hook_tool's scratch store and call verb."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

from engine import Engine
from engine.cli.hook_tool import main as hook_tool
from engine.cli.hookengine import main as hookengine
from tests.conftest import REPO, console, copy_demo

DEMO = REPO / "config"
HOOKS = DEMO / "agents/demo/hooks"


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> dict:
    capsys.readouterr()
    assert hookengine(argv) == code
    return dict(json.loads(capsys.readouterr().out))


def test_a_hook_without_tests_is_reported_and_fails_require_tests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = run_json(capsys, ["test", "--config", str(DEMO), "--json"])
    assert {u["hook"] for u in data["untested"]} == {"faq_cache", "user_memory"}
    assert hookengine(["test", str(DEMO)]) == 0
    assert "no tests: faq_cache (" in capsys.readouterr().out
    assert hookengine(["test", str(DEMO), "--require-tests"]) == 1


def test_k_selects_tests_by_hook_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, ["test", str(DEMO), "-k", "CITY_HINT: later", "--json"])
    assert [(r["hook"], r["name"]) for r in data["results"]] == [
        ("city_hint", "later messages in the same scope get nothing")
    ]


def test_agent_and_hook_filters(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, ["test", str(DEMO), "--hook", "escalate", "--json"])
    assert {r["hook"] for r in data["results"]} == {"escalate"} and data["passed"] == 4
    data = run_json(capsys, ["test", str(DEMO), "--agent", "demo", "--json"])
    assert "house_rules" in {r["hook"] for r in data["results"]}
    assert hookengine(["test", str(DEMO), "--agent", "dmo"]) == 2
    assert "--agent 'dmo': no such agent in the config (did you mean 'demo'?)" in (
        capsys.readouterr().err
    )
    assert hookengine(["test", str(DEMO), "--hook", "escalte"]) == 2
    assert "(did you mean 'escalate'?)" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["city_hint.yaml", "no_deletes.test.yaml"])
def test_test_runs_one_hook_files_tests(capsys: pytest.CaptureFixture[str], name: str) -> None:
    data = run_json(capsys, ["test", str(HOOKS / name), "--json"])
    hook = name.split(".")[0]
    assert data["passed"] > 1 and {r["hook"] for r in data["results"]} == {hook}


def test_junit_lists_every_test_and_each_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_demo(tmp_path)
    hook = root / "agents/demo/hooks/escalate.yaml"
    hook.write_text(hook.read_text().replace("help@example.com", "nobody@example.com", 1))
    junit = tmp_path / "out/junit.xml"
    junit.parent.mkdir()
    assert hookengine(["test", str(root), "--junit", str(junit)]) == 1
    suite = ElementTree.parse(junit).getroot()
    cases = suite.findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert suite.get("tests") == str(len(cases)) and len(cases) > 100
    assert suite.get("failures") == str(len(failed)) and len(failed) >= 1
    assert {c.get("classname") for c in failed} == {"escalate"}
    assert "escalate.yaml:" in (failed[0].find("failure").text or "")


def test_hook_tool_test_takes_the_same_options(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert hook_tool([str(HOOKS / "faq_cache.yaml"), "test", "--require-tests"]) == 1
    assert "no tests: faq_cache" in capsys.readouterr().out
    assert hook_tool([str(HOOKS / "no_deletes.yaml"), "test", "-k", "rm -rf", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] >= 1 and all("rm -rf" in r["name"] for r in data["results"])


def test_config_is_named_the_same_way_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("check", "test", "status"):
        assert hookengine([command, "--config", str(DEMO)]) in (0, 1), command
        assert hookengine([command, str(DEMO)]) in (0, 1), command
    assert hookengine(["check", str(DEMO), "--config", str(REPO / "tests")]) == 2
    assert "two config folders given" in capsys.readouterr().err


def test_a_bad_filter_is_an_error_in_records_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.db")
    with Engine.load(DEMO, db=db) as engine:
        engine.agent("demo").tool_call("read_file", {"path": "a"})
    for flag, value, message in [
        ("--point", "toolcall", "(did you mean 'tool_call'?)"),
        ("--since", "last week", "--since 'last week': not a time"),
        ("--until", "2026-13-01", "--until '2026-13-01': not a time"),
        ("--host", "claud-code", "(did you mean 'claude-code'?)"),
    ]:
        assert hookengine(["records", "--config", str(DEMO), "--db", db, flag, value]) == 2
        assert message in capsys.readouterr().err
    assert hookengine(["records", "--db", db, "--since", "1h"]) == 0
    assert "tool_call" in capsys.readouterr().out


def test_hook_tool_writes_to_a_scratch_store_unless_db_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_demo(tmp_path)
    hook = str(root / "agents/demo/hooks/no_deletes.yaml")
    assert hook_tool([hook, "tool", "delete_file", '{"path": "a"}']) == 0
    assert not (tmp_path / "data").exists()  # the project's store was never opened
    db = tmp_path / "try.db"
    assert hook_tool([hook, "tool", "delete_file", '{"path": "a"}', "--db", str(db)]) == 0
    with Engine.load(root, db=str(db), records=False) as engine:
        assert [r.point for r in engine.records()] == ["tool_call"]


def test_hook_tool_call_runs_before_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = tmp_path / "section.yaml"
    hook.write_text(
        "kind: script_hook\nname: section\nlanguage: javascript\nsource: |\n"
        "  function on_before_call(event) {\n"
        "    return {sections: ['Answer in ' + event.instruction.length + ' chars']};\n"
        "  }\n"
    )
    argv = [str(hook), "call", '{"instruction": "Be brief."}', "--json"]
    assert hook_tool(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outcome"]["point"] == "before_call"
    assert data["outcome"]["sections"] == ["Answer in 9 chars"]
    assert hook_tool([str(hook), "call", '{"instructions": "x"}']) == 2
    assert "unknown field 'instructions' (fields: instruction, messages" in (
        capsys.readouterr().err
    )


def test_both_commands_print_their_version() -> None:
    for name in ("hookengine", "hook_tool"):
        done = subprocess.run(
            [str(console(name)), "--version"], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and done.stdout.strip() == f"{name} 0.1.0"
