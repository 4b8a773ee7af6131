"""hook_tool and hookengine: verbs, flags, --json, exit codes; once through the real scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.cli import hook_tool, hookengine
from tests.conftest import REPO, console, copy_demo

DEMO = REPO / "config" / "agents" / "demo" / "hooks"


def run(
    main: Callable[[list[str]], int], args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_info_shows_the_parsed_config(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(hook_tool.main, [str(DEMO / "escalate.yaml"), "info"], capsys)
    assert code == 0
    assert "escalate 'escalate'" in out and "min_answer_chars: 30" in out
    code, out, _ = run(hook_tool.main, [str(DEMO / "escalate.yaml"), "info", "--json"], capsys)
    data = json.loads(out)
    assert data["config"]["remind_next_turn"] is True and data["config"]["on_error"] == "ignore"


def test_user_verb_runs_before_user_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        str(DEMO / "city_hint.yaml"),
        "user",
        "Привет, мир",
        "--db",
        str(tmp_path / "x.db"),
        "--user",
        "u1",
        "--session",
        "s1",
        "--template",
        "t",
        "--agent",
        "shop",
    ]
    code, out, _ = run(hook_tool.main, args, capsys)
    assert code == 0
    assert "inject user: Context reminder: Привет, мир" in out
    code, out, _ = run(hook_tool.main, [*args, "--json"], capsys)
    data = json.loads(out)
    outcome = data["outcome"]
    assert outcome["agent"] == "shop" and outcome["point"] == "before_user_message"
    assert outcome["hooks"][0]["name"] == "city_hint"
    # first_n: 1 is per process: this is a new process-equivalent (a new engine) run
    assert outcome["messages"][1]["content"] == "Context reminder: Привет, мир"


def test_turn_verb_runs_before_assistant_message_then_after_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        hook_tool.main,
        [
            str(DEMO / "escalate.yaml"),
            "turn",
            "Где заказ?",
            "нет информации",
            "--json",
            "--db",
            str(tmp_path / "x.db"),
        ],
        capsys,
    )
    data = json.loads(out)
    assert code == 0
    assert [o["point"] for o in data["outcomes"]] == ["before_assistant_message", "after_turn"]
    assert data["outcome"]["answer"].startswith("нет информации\n\nIf this is not")


def test_loop_and_tool_verbs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", str(tmp_path / "x.db")]
    code, out, _ = run(
        hook_tool.main, [str(DEMO / "escalate.yaml"), "loop", "job_done", *db, "--json"], capsys
    )
    assert code == 0 and json.loads(out)["outcome"]["point"] == "after_loop"
    code, out, _ = run(
        hook_tool.main,
        [str(DEMO / "escalate.yaml"), "tool", "delete_file", '{"path": "a.txt"}', *db, "--json"],
        capsys,
    )
    assert code == 0 and json.loads(out)["outcome"]["input"] == {"path": "a.txt"}


@pytest.mark.parametrize(
    "args,message",
    [
        (["missing.yaml", "info"], "hook file not found"),
        (["{demo}", "user"], "user takes 1 argument(s), got 0"),
        (["{demo}", "tool", "x", "{bad"], "not valid JSON"),
        (["{demo}", "tool", "x", "[1]"], "must be a JSON object"),
        (["{demo}", "tool", "x", '{"a":' * 1000 + "1" + "}" * 1000], "tool input"),
        (["{demo}", "tool", "x", '{"a":' * 65 + "1" + "}" * 65], "nested deeper than 64"),
        (["{demo}", "tool", "x", '{"n": ' + "9" * 5000 + "}"], "integer of 5000 digits"),
        (["{demo}", "tool", "x", '{"c": "rm -rf /", "c": "ls"}'], "key 'c' appears twice"),
        (["{demo}", "tool", "x", '{"x": NaN}'], "NaN is not JSON"),
        (["{demo}", "result", "x", '{"a": 1, "a": 2}', "{}"], "the tool input is not valid"),
        (["{demo}", "result", "x", "{}", '{"a":' * 1000 + "1" + "}" * 1000], "the tool result"),
        (["{demo}", "result", "x", "{}", '{"a": 1, "a": 2}'], "the tool result is not valid"),
        (["{demo}", "call", '{"instruction": "a", "instruction": "b"}'], "the call is not valid"),
        (["{demo}", "call", "[" * 2000 + "]" * 2000], "the call is not valid"),
        (["{dir}", "info"], "is a directory, not a regular file"),
        (["/dev/zero", "info"], "is a character device, not a regular file"),
        (["{dir}", "test"], "is a directory, not a regular file"),
        (["{bad}", "info"], "unknown kind 'injct'"),
    ],
)
def test_bad_usage_exits_2_with_a_one_line_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: injct\nname: x\n")
    shown = {"{demo}": str(DEMO / "escalate.yaml"), "{bad}": str(bad), "{dir}": str(tmp_path)}
    args = [shown.get(a, a) for a in args]
    code, out, err = run(hook_tool.main, [*args, "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    assert message in err and err.count("\n") == 1 and out == ""


@pytest.mark.parametrize(
    ("db", "message"),
    [
        ("mysql://x", "its database driver is not installed (No module named 'MySQLdb')"),
        ("postgresql://u:pw@h:port/d", "not a database URL"),
        ("sqlite:////proc/no/x.db", "unable to open database file"),
    ],
)
def test_a_store_that_cannot_be_opened_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], db: str, message: str
) -> None:
    args = [str(DEMO / "no_deletes.yaml"), "tool", "shell", '{"command": "ls"}', "--db", db]
    code, out, err = run(hook_tool.main, args, capsys)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1, err
    assert "sqlalche.me" not in err and "pw" not in err


def test_hookengine_commands_refuse_repeated_keys_and_bad_stores(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = str(REPO / "config")
    call = ["tools", "call", "--config", config, "--agent", "demo", "x", '{"a": 1, "a": 2}']
    code, _, err = run(hookengine.main, call, capsys)
    assert code == 2 and "key 'a' appears twice" in err and err.count("\n") == 1
    for command in (["records"], ["replay"], ["serve", "--no-auth"]):
        args = [*command, "--config", config, "--db", "mysql://x"]
        code, _, err = run(hookengine.main, args, capsys)
        assert code == 2 and "driver is not installed" in err and err.count("\n") == 1, command


def test_unknown_verb_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(hook_tool.main, [str(DEMO / "escalate.yaml"), "nope"], capsys)
    assert code == 2 and "invalid choice" in err


def test_check_validates_every_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(hookengine.main, ["check", str(REPO / "config")], capsys)
    assert code == 0 and "ok  demo" in out
    bad = copy_demo(tmp_path)
    (bad / "agents" / "demo" / "hooks" / "city_hint.yaml").write_text(
        "kind: inject\nname: x\nfirst_n: many\n"
    )
    (bad / "agents" / "demo" / "hooks" / "escalate.yaml").write_text("kind: escalate\nname: e\n")
    code, out, err = run(hookengine.main, ["check", str(bad)], capsys)
    assert code == 2
    assert "city_hint.yaml:3: first_n:" in err and "escalate.yaml:1: message:" in err


def test_demo_plays_offline_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    code, out, _ = run(
        hookengine.main, ["demo", "--config", str(REPO / "config"), "--db", str(db)], capsys
    )
    assert code == 0
    assert "answer (LLM skipped)" in out and "city_hint" in out
    said = int(re.search(r"(\d+) evaluations recorded in", out).group(1))  # type: ignore[union-attr]
    code, out, _ = run(
        hookengine.main, ["records", "--db", str(db), "--json", "--limit", "1000"], capsys
    )
    assert code == 0 and len(json.loads(out)) == said  # answers given early have two each
    code, out, _ = run(
        hookengine.main,
        ["records", "--db", str(db), "--point", "before_user_message", "--json", "--limit", "100"],
        capsys,
    )
    records = json.loads(out)
    assert code == 0 and len(records) == 7
    assert {r["scope_key"] for r in records} == {"user:alex", "user:maria"}
    code, out, _ = run(
        hookengine.main, ["records", "--db", str(db), "--scope", "maria", "--limit", "2"], capsys
    )
    assert code == 0 and out.count("user:maria") == 2
    with Engine.load(REPO / "config", db=str(db)) as engine:
        engine.agent("demo").tool_call("shell", {"cmd": "ls"}, host="codex", user_id="cli")
    code, out, _ = run(hookengine.main, ["records", "--db", str(db), "--host", "codex"], capsys)
    assert code == 0 and out.count("via codex") == 1 and "user:cli" in out
    code, out, _ = run(hookengine.main, ["records", "--db", str(db), "--host", "opa"], capsys)
    assert code == 0 and out == "no records match\n"


def test_the_real_console_scripts(tmp_path: Path) -> None:
    exe = console("hook_tool")
    assert exe.is_file(), "hook_tool is not installed: pip install -e ."
    done = subprocess.run(
        [
            str(exe),
            str(DEMO / "escalate.yaml"),
            "user",
            "iPhone?",
            "--json",
            "--db",
            str(tmp_path / "x.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"]["answer"].startswith("If this is not")
    done = subprocess.run(
        [str(exe), "nope.yaml", "user", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stderr.startswith("hook_tool: error:")
    done = subprocess.run(
        [str(console("hookengine")), "check", str(REPO / "config")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


SURROGATE_HOOKS = {
    "py.yaml": (
        "kind: script_hook\nname: sur\nlanguage: python\nsource: |\n"
        "  def on_tool_call(event, host):\n"
        '      if event["name"] == "fail":\n'
        '          raise ValueError("err \\udc00")\n'
        '      host.log("log \\ud800 " + event["input"]["q"])\n'
        '      return {"notice": "seen"}\n'
    ),
    "js.yaml": (
        "kind: script_hook\nname: surjs\nlanguage: javascript\nsource: |\n"
        "  function on_tool_call(event, host) {\n"
        '    if (event.name === "fail") { throw new Error("err \\udc00"); }\n'
        '    host.log("log \\ud800 " + event.input.q);\n'
        '    return {notice: "seen"};\n'
        "  }\n"
    ),
}


@pytest.fixture
def surrogate_hooks(tmp_path: Path) -> Path:
    for name, text in SURROGATE_HOOKS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("lang", ["py", "js"])
def test_hook_tool_prints_lone_surrogates_as_escapes(
    surrogate_hooks: Path, capsys: pytest.CaptureFixture[str], lang: str
) -> None:
    hook, db = str(surrogate_hooks / f"{lang}.yaml"), ["--db", ":memory:"]
    logged = [hook, "tool", "t", '{"q": "\\udfff"}', *db]
    code, out, err = run(hook_tool.main, logged, capsys)
    assert code == 0, err
    assert "log: log \\ud800 \ufffd" in out and "notice: seen" in out
    code, out, err = run(hook_tool.main, [*logged, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["outcome"]["hooks"][0]["logs"] == ["log \ud800 \ufffd"]
    failing = [hook, "tool", "fail", "{}", *db]
    code, out, err = run(hook_tool.main, failing, capsys)
    assert code == 0, err
    assert "err \\udc00" in out and "BLOCKED" in out
    code, out, err = run(hook_tool.main, [*failing, "--json"], capsys)
    assert code == 0, err
    assert "err \udc00" in json.loads(out)["outcome"]["hooks"][0]["error"]  # same value back


def test_every_command_prints_through_the_surrogate_escape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.cli.common import escape_surrogates, print_json, say

    assert escape_surrogates("a\ud800b\udfff") == "a\\ud800b\\udfff"
    assert escape_surrogates("plain é") == "plain é"
    say("x\udc80")
    print_json({"k\ud800": ["\udbff"]})
    out, _ = capsys.readouterr()
    assert out.startswith("x\\udc80\n")
    assert json.loads(out.split("\n", 1)[1]) == {"k\ud800": ["\udbff"]}
    for module in ("cmd_core", "cmd_ops", "hook_tool", "dev"):
        source = (REPO / "engine" / "cli" / f"{module}.py").read_text()
        assert "print(" not in source, f"engine/cli/{module}.py prints without the escape"


def test_hook_tool_console_script_with_a_lone_surrogate(surrogate_hooks: Path) -> None:
    done = subprocess.run(
        [
            str(console("hook_tool")),
            str(surrogate_hooks / "js.yaml"),
            "tool",
            "t",
            '{"q": "\\ud800"}',
        ],
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert "log: log \\ud800 \ufffd" in text and "Traceback" not in done.stderr.decode("utf-8")


REDACTOR_IGNORE = (
    "kind: script_hook\nname: redactor\nlanguage: javascript\non_error: ignore\nsource: |\n"
    "  function on_tool_result(event, host) { return null; }\n"
)


def test_check_warns_about_a_redactor_with_on_error_ignore_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    (config / "agents" / "a" / "hooks").mkdir(parents=True)
    (config / "agents" / "a" / "agent.yaml").write_text("hooks: [redactor]\n")
    (config / "agents" / "a" / "hooks" / "redactor.yaml").write_text(REDACTOR_IGNORE)
    code, out, _ = run(hookengine.main, ["check", str(config)], capsys)
    assert code == 0
    (warning,) = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert "agents/a/hooks/redactor.yaml:4: redactor changes the result at tool_result" in warning
    assert "reaches the model" in warning
    code, out, _ = run(hookengine.main, ["check", str(REPO / "config")], capsys)
    assert code == 0 and "warning" not in out


HOST_HOOKS = {
    "agent.yaml": "hooks: [sanitize, context, opaque]\n",
    "hooks/sanitize.yaml": (
        "kind: script_hook\nname: sanitize\nlanguage: python\nsource: |\n"
        "  def on_tool_call(event, host):\n"
        "      return {'input': dict(event['input'], dry_run=True)}\n"
    ),
    "hooks/context.yaml": (
        "kind: inject\nname: context\nmessages:\n  - role: system\n    content: be brief\n"
    ),
    "hooks/opaque.yaml": (
        "kind: script_hook\nname: opaque\nlanguage: python\nsource: |\n"
        "  def on_tool_result(event, host):\n"
        "      return make_change(event)\n"
        "  def make_change(event):\n"
        "      return None\n"
    ),
}


def test_check_host_warns_ahead_of_what_the_host_cannot_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = tmp_path / "config" / "agents" / "a"
    for rel, text in HOST_HOOKS.items():
        (agent / rel).parent.mkdir(parents=True, exist_ok=True)
        (agent / rel).write_text(text)
    config = str(tmp_path / "config")

    def warnings(host: str) -> list[str]:
        code, out, _ = run(hookengine.main, ["check", config, "--host", host], capsys)
        assert code == 0
        return [line for line in out.splitlines() if line.startswith("warning: ")]

    litellm = warnings("litellm")
    assert len(litellm) == 3, litellm
    assert (
        "context (inject) may change messages, notice at before_user_message, which litellm "
        "cannot apply; listed as unsupported when it does"
    ) in litellm[0]
    assert (
        "sanitize (script_hook) returns input at tool_call, which litellm cannot apply; "
        "the tool would be blocked"
    ) in litellm[1]
    assert "opaque (script_hook) handles tool_result, where litellm asks nothing" in litellm[2]
    codex = warnings("codex")
    assert len(codex) == 1
    assert (
        "opaque (script_hook) handles tool_result: what it changes is known only when it runs; "
        "codex cannot apply result there"
    ) in codex[0]
    assert warnings("claude-code") == [] and warnings("opa") == []
    code, out, _ = run(hookengine.main, ["check", config], capsys)
    assert code == 0 and "warning" not in out
    code, _, err = run(hookengine.main, ["check", config, "--host", "claude"], capsys)
    assert code == 2 and "invalid choice: 'claude'" in err


def test_the_check_host_example_in_the_docs_is_the_real_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    block = text.split("  $ hookengine check config --host codex\n", 1)[1].split("  ```", 1)[0]
    shown = [line.removeprefix("  ") for line in block.splitlines()]
    code, out, _ = run(hookengine.main, ["check", str(REPO / "config"), "--host", "codex"], capsys)
    assert code == 0 and out.splitlines() == shown


def test_a_command_whose_optional_package_is_missing_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """hookengine serve without the http extra: exit 2 and the pip command, no traceback."""
    import builtins

    from engine.cli.common import run_main

    real_import = builtins.__import__

    def without_fastapi(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.partition(".")[0] == "fastapi":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    def body() -> int:
        import fastapi  # noqa: F401

        return 0

    monkeypatch.setattr(builtins, "__import__", without_fastapi)
    assert run_main("hookengine", body) == 2
    err = capsys.readouterr().err
    assert "pip install 'hookengine[http]'" in err and "Traceback" not in err

    def other() -> int:
        raise ModuleNotFoundError("No module named 'nothing_optional'", name="nothing_optional")

    with pytest.raises(ModuleNotFoundError):  # a module no extra installs is a real bug
        run_main("hookengine", other)
