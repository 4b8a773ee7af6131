"""Hook tests in YAML: inline and sibling files, expectations, pytest-like output, exit codes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from engine.cli.hook_tool import main as hook_tool
from engine.cli.hookengine import main as hookengine
from engine.config import load_hook_file
from tests.conftest import REPO, console, copy_demo

ESCALATE = """\
kind: escalate
name: esc
message: call us
off_topic_keywords: [iphone]
suppress_on_off_topic: true
tests:
  - name: off-topic gets the contact
    point: before_user_message
    event: {question: "my iphone broke"}
    expect: {answer: call us, notices_contain: off-topic}
  - name: on-topic passes
    point: before_user_message
    event: {question: "where is my parcel"}
    expect: {no_change: true}
"""


def test_the_demo_config_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert hookengine(["test", str(REPO / "config")]) == 0
    out = capsys.readouterr().out
    assert "escalate.yaml ...." in out and " passed in " in out and "failed" not in out


def test_a_broken_demo_test_fails_with_file_line_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_demo(tmp_path)
    hook = root / "agents/demo/hooks/escalate.yaml"
    hook.write_text(
        hook.read_text().replace(
            "answer_contains: help@example.com", "answer_contains: nobody@example.com"
        )
    )
    assert hookengine(["test", str(root)]) == 1
    out = capsys.readouterr().out
    assert "FAILURES" in out and re.search(r"1 failed, \d+ passed", out)
    assert "escalate.yaml:" in out and "expected to contain 'nobody@example.com'" in out


def test_hook_tool_runs_one_files_tests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text(ESCALATE)
    assert hook_tool([str(path), "test"]) == 0
    assert "2 passed" in capsys.readouterr().out
    path.write_text(ESCALATE.replace("expect: {answer: call us", "expect: {answer: call me"))
    assert hook_tool([str(path), "test"]) == 1
    out = capsys.readouterr().out
    assert f"{path.name}:7" in out or "esc.yaml:7" in out
    assert 'answer: expected "call me", got "call us"' in out


def test_a_sibling_test_file_is_run_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "esc.yaml").write_text(ESCALATE.split("tests:")[0])
    (tmp_path / "esc.test.yaml").write_text(
        "tests:\n  - point: before_user_message\n    event: {question: iphone}\n"
        "    expect: {blocked: true}\n"
    )
    assert hook_tool([str(tmp_path / "esc.yaml"), "test"]) == 1
    out = capsys.readouterr().out
    assert "esc.test.yaml F" in out and "blocked: expected true, got false" in out


def test_a_test_whose_event_does_not_fit_its_point_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text(
        ESCALATE.replace('event: {question: "my iphone broke"}', 'event: {name: "shell"}')
    )
    spec, problems = load_hook_file(path)
    assert spec is None and problems[0].line == 9  # the test's event: line
    assert problems[0].field == "tests[0].event.question"
    assert problems[0].message == "required field is missing (in a before_user_message event)"


def test_a_test_at_a_point_the_hook_does_not_handle_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text(
        ESCALATE + "  - point: tool_call\n    event: {name: shell}\n    expect: {blocked: false}\n"
    )
    assert hook_tool([str(path), "test"]) == 1
    assert "the hook does not run at tool_call" in capsys.readouterr().out


def test_given_steps_share_the_scope_and_memos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ctx.yaml"
    path.write_text(
        "kind: inject\nname: ctx\nfirst_n: 1\nmessages: [{role: system, content: hi}]\n"
        "tests:\n"
        "  - point: before_user_message\n    event: {question: a}\n"
        "    expect: {messages: [{role: system, content: hi}]}\n"
        "  - point: before_user_message\n    given: [{point: before_user_message, "
        "event: {question: a}}]\n    event: {question: b}\n    expect: {messages: []}\n"
    )
    assert hook_tool([str(path), "test"]) == 0, capsys.readouterr().out


def test_shadow_hooks_are_tested_as_if_enforced(tmp_path: Path) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text(
        ESCALATE.replace("suppress_on_off_topic: true", "suppress_on_off_topic: true\nmode: shadow")
    )
    assert hook_tool([str(path), "test"]) == 0


@pytest.mark.parametrize(
    ("expect", "failure"),
    [
        ("{reason_contains: x}", "reason: expected to contain 'x'"),
        ("{answer_contains: nope}", "answer: expected to contain 'nope'"),
        ("{messages_contain: nope}", "messages: expected one to contain 'nope'"),
        ("{question: other}", 'question: expected "other"'),
        ("{notices_contain: nope}", "notices: expected one to contain 'nope'"),
        ("{no_change: true}", "expected no change"),
    ],
)
def test_each_expectation_reports_what_it_saw(
    tmp_path: Path, expect: str, failure: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text(
        ESCALATE.split("tests:")[0] + "tests:\n  - point: before_user_message\n"
        f"    event: {{question: iphone}}\n    expect: {expect}\n"
    )
    assert hook_tool([str(path), "test"]) == 1
    assert failure in capsys.readouterr().out


def test_the_console_script_runs() -> None:
    done = subprocess.run(
        [str(console("hookengine")), "test", str(REPO / "config")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert " passed in " in done.stdout and "failed" not in done.stdout


OTHER = {".js": ".py", ".py": ".js"}


@pytest.mark.parametrize("guard", ["no_deletes", "redact_secrets", "allow_commands"])
def test_the_demo_guards_pass_their_yaml_tests_in_the_other_language_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], guard: str
) -> None:
    """The demo wires one language per guard; the same YAML tests must pass with the other."""
    root = copy_demo(tmp_path)
    hook = root / "agents" / "demo" / "hooks" / f"{guard}.yaml"
    text = hook.read_text()
    suffix = ".js" if f"{guard}.js" in text else ".py"
    hook.write_text(text.replace(f"{guard}{suffix}", f"{guard}{OTHER[suffix]}"))
    assert f"{guard}{OTHER[suffix]}" in hook.read_text()
    spec, problems = load_hook_file(hook)
    assert not problems and spec is not None and spec.script_path is not None
    assert spec.script_path.suffix == OTHER[suffix]
    assert hook_tool([str(hook), "test"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    passed = int(re.search(r"(\d+) passed", out).group(1))  # type: ignore[union-attr]
    assert passed >= 20 and "failed" not in out
