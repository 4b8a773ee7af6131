"""Kind script_hook through Engine and Agent: failures per point, state, emits, logs, load errors,
the example scripts in both languages, and hook_tool on the demo guard."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConfigError
from engine.runtime import Engine
from tests.conftest import REPO, console, write

LANGS = ("py", "js")
FAILING: dict[str, dict[str, str]] = {
    "error": {"py": "raise ValueError('boom')", "js": "throw new Error('boom');"},
    "timeout": {"py": "while True:\n        pass", "js": "while (true) {}"},
    "memory": {
        "py": "x = 'a' * 10\n    while True:\n        x = x + x",
        "js": "var a = []; while (true) { a.push(new Array(10000).fill(1)); }",
    },
    "invalid_result": {"py": "return ['not', 'a', 'dict']", "js": "return ['not', 'a', 'dict'];"},
    "plugin": {
        "py": "return {'answer': 'not a tool_call field'}",
        "js": "return {answer: 'not a tool_call field'};",
    },
}
EXPECTED_CAUSE = {
    "memory": ("memory",),
    "timeout": ("timeout",),
    "plugin": ("plugin",),
    "invalid_result": ("invalid_result",),
    "error": ("error",),
}


def body(lang: str, point: str, code: str) -> str:
    if lang == "py":
        return f"def on_{point}(event, host):\n    {code}\n"
    return f"function on_{point}(event, host) {{\n  {code}\n}}\n"


def inline_hook(name: str, lang: str, source: str, extra: str = "") -> str:
    language = "python" if lang == "py" else "javascript"
    return (
        f"kind: script_hook\nname: {name}\nlanguage: {language}\n{extra}source: |\n"
        + textwrap.indent(source, "  ")
    )


def agent_files(name: str, hooks: dict[str, str]) -> dict[str, str]:
    files = {f"agents/{name}/agent.yaml": f"hooks: [{', '.join(hooks)}]\n"}
    files.update({f"agents/{name}/hooks/{h}.yaml": text for h, text in hooks.items()})
    return files


STATEFUL = {
    "py": "def on_tool_call(event, host):\n    n = (host.state.get('n') or 0) + 1\n    host.state.set('n', n)\n    if event['name'] == 'fail':\n        raise ValueError('after writing')\n    host.log('call ' + str(n))\n    host.emit({'type': 'status', 'data': {'n': n}})\n    return {'notice': 'n=' + str(n)}\n",
    "js": "function on_tool_call(event, host) {\n  var n = (host.state.get('n') || 0) + 1;\n  host.state.set('n', n);\n  if (event.name === 'fail') { throw new Error('after writing'); }\n  host.log('call ' + n);\n  host.emit({type: 'status', data: {n: n}});\n  return {notice: 'n=' + n};\n}\n",
}
ANSWER_FAILS = {
    "py": "def on_before_assistant_message(event, host):\n    raise ValueError('x')\n",
    "js": "function on_before_assistant_message(event, host) { throw new Error('x'); }\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("script_hook")
    files = {
        "engine.yaml": "process: test\nscripts: {timeout_ms: 100, memory_mb: 16, workers: 2}\n"
    }
    for cause, code in FAILING.items():
        for lang in LANGS:
            files.update(
                agent_files(
                    f"fail_{cause}_{lang}",
                    {
                        f"bad_{cause}": inline_hook(
                            f"bad_{cause}",
                            lang,
                            body(lang, "tool_call", code[lang]),
                            # the memory cases run 40 to 110 ms to their limit on a loaded
                            # machine: their own time limit leaves the memory limit to fire
                            "timeout_ms: 1000\n" if cause == "memory" else "",
                        )
                    },
                )
            )
    for lang in LANGS:
        files.update(
            agent_files(
                f"state_{lang}",
                {
                    "counter": inline_hook("counter", lang, STATEFUL[lang]),
                    "counter2": inline_hook("counter2", lang, STATEFUL[lang]),
                },
            )
        )
        for on_error in ("fail", "ignore"):
            files.update(
                agent_files(
                    f"answer_{on_error}_{lang}",
                    {
                        "redactor": inline_hook(
                            "redactor", lang, ANSWER_FAILS[lang], f"on_error: {on_error}\n"
                        )
                    },
                )
            )
        files.update(
            agent_files(
                f"examples_{lang}",
                {
                    name: f"kind: script_hook\nname: {name}\nscript: ../../../scripts/{name}.{lang}\nconfig: {json.dumps(config)}\n"
                    for name, config in EXAMPLE_CONFIG.items()
                },
            )
        )
    write(root / "config", files)
    shutil.copytree(REPO / "config" / "scripts", root / "config" / "scripts")
    with Engine.load(root / "config", db=str(root / "store.db")) as eng:
        yield eng


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("cause", sorted(FAILING))
def test_a_failing_script_at_tool_call_blocks_the_tool_naming_the_hook(
    engine: Engine, cause: str, lang: str
) -> None:
    out = engine.agent(f"fail_{cause}_{lang}").tool_call("delete_file", {"path": "a"}, user_id="u1")
    assert out.blocked
    assert f"'bad_{cause}'" in (out.reason or "") and "check failed" in (out.reason or "")
    (run,) = out.hooks
    assert run.status == "failed" and run.cause in EXPECTED_CAUSE[cause]


@pytest.mark.parametrize("lang", LANGS)
def test_a_crashed_worker_blocks_the_tool_and_the_next_call_works(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"state_{lang}")
    agent.tool_call("warm", user_id="crash")
    pool = engine.sandbox()
    for worker in list(pool._workers._all):
        os.kill(worker.proc.pid, signal.SIGKILL)
    out = agent.tool_call("x", user_id="crash")
    assert out.blocked and out.hooks[0].cause == "crashed" and "'counter'" in (out.reason or "")
    # replacements start in the background (rate-limited), not on a caller's path
    deadline = time.monotonic() + 15
    while pool.health()["respawns_pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.health()["workers"] == pool.health()["size"]
    assert not agent.tool_call("x", user_id="crash").blocked


@pytest.mark.parametrize("lang", LANGS)
def test_on_error_decides_at_before_assistant_message(engine: Engine, lang: str) -> None:
    failed = engine.agent(f"answer_fail_{lang}").before_assistant_message(
        "q", "secret answer", user_id="u1"
    )
    assert (
        failed.blocked
        and "secret" not in (failed.answer or "")
        and failed.hooks[0].cause == "error"
    )
    ignored = engine.agent(f"answer_ignore_{lang}").before_assistant_message(
        "q", "the answer", user_id="u1"
    )
    assert (
        not ignored.blocked
        and ignored.answer == "the answer"
        and ignored.hooks[0].status == "failed"
    )


@pytest.mark.parametrize("lang", LANGS)
def test_state_is_saved_only_on_success_and_kept_per_hook_and_scope(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"state_{lang}")
    scope = {"user_id": f"state-{lang}"}
    assert agent.tool_call("ok", **scope).notices == ["n=1", "n=1"]
    assert agent.tool_call("fail", **scope).blocked  # wrote n=2, then raised: not saved
    assert agent.tool_call("ok", **scope).notices == ["n=2", "n=2"]
    # other scopes start afresh, along the user -> session -> template -> process fallback
    assert agent.tool_call("ok", session_id=f"s-{lang}").notices == ["n=1", "n=1"]
    assert agent.tool_call("ok", template=f"t-{lang}").notices == ["n=1", "n=1"]
    assert agent.tool_call("ok", session_id=f"s-{lang}").notices == ["n=2", "n=2"]
    store = engine.store
    assert store.state_load(f"state_{lang}:counter", f"user:state-{lang}") == {"n": 2}
    assert store.state_load(f"state_{lang}:counter2", f"user:state-{lang}") == {"n": 2}


def one_hook(tmp_path: Path, lang: str, source: str) -> Engine:
    """An engine whose agent ``a`` has one script hook ``h`` (close it when done)."""
    files = {
        "engine.yaml": "process: test\n",
        **agent_files("a", {"h": inline_hook("h", lang, source)}),
    }
    return Engine.load(write(tmp_path / "config", files), db=str(tmp_path / "s.db"))


HALVES = {
    # half of an emoji in a state value, an emit and an entry: each kept with U+FFFD
    "py": "def on_tool_call(event, host):\n    half = '\\ud83d'\n"
    "    prev = host.state.get('v')\n    host.state.set('v', 'x' + half)\n"
    "    host.emit({'type': 'status', 'data': {'t': 'e' + half}})\n"
    "    host.entries.add('k', {'t': 'd' + half})\n"
    "    if event['name'] == 'key':\n        host.state.set('k' + half, 1)\n"
    "    return {'notice': 'prev=' + str(prev)}\n",
    "js": "function on_tool_call(event, host) {\n  var half = '\\u{1F600}'.slice(0, 1);\n"
    "  var prev = host.state.get('v');\n  host.state.set('v', 'x' + half);\n"
    "  host.emit({type: 'status', data: {t: 'e' + half}});\n"
    "  host.entries.add('k', {t: 'd' + half});\n"
    "  if (event.name === 'key') { host.state.set('k' + half, 1); }\n"
    "  return {notice: 'prev=' + prev};\n}\n",
}


@pytest.mark.parametrize("lang", LANGS)
def test_half_a_character_in_a_value_is_kept_whole_and_in_a_key_is_refused(
    tmp_path: Path, lang: str
) -> None:
    # A value with a lone surrogate made the store raise a bare UnicodeEncodeError after the
    # state was saved (a failed call that kept its writes); a key with one cannot be stored.
    with one_hook(tmp_path, lang, HALVES[lang]) as engine:
        agent, scope = engine.agent("a"), {"user_id": "u", "session_id": "s"}
        first = agent.tool_call("ls", **scope)
        assert not first.blocked and first.events == [{"type": "status", "data": {"t": "e\ufffd"}}]
        assert agent.tool_call("ls", **scope).notices == ["prev=x\ufffd"]
        refused = agent.tool_call("key", **scope)
        assert refused.blocked and refused.hooks[0].cause == "error"
        assert "host.state: key holds half of a character" in (refused.hooks[0].error or "")
        assert engine.store.state_load("a:h", "user:u") == {"v": "x\ufffd"}
        assert [e["data"] for e in engine.store.entries_list("a", "s")] == [{"t": "d\ufffd"}] * 2


BOTH = {
    "py": "def on_tool_call(event, host):\n    n = (host.state.get('n') or 0) + 1\n"
    "    host.state.set('n', n)\n    host.entries.add('k', {'n': n})\n"
    "    return {'notice': 'n=' + str(n)}\n",
    "js": "function on_tool_call(event, host) {\n  var n = (host.state.get('n') || 0) + 1;\n"
    "  host.state.set('n', n);\n  host.entries.add('k', {n: n});\n"
    "  return {notice: 'n=' + n};\n}\n",
}


@pytest.mark.parametrize("lang", LANGS)
def test_a_calls_state_and_entries_are_kept_together_or_not_at_all(
    tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The state was saved first: when storing the entries then failed, the failed call's
    # state stayed (n went 1, 3 instead of 1, 2).
    from engine.errors import StoreError

    with one_hook(tmp_path, lang, BOTH[lang]) as engine:
        agent, scope = engine.agent("a"), {"user_id": "u", "session_id": "s"}
        assert agent.tool_call("ls", **scope).notices == ["n=1"]
        real = engine.store.entries_add

        def full_disk(*args: object, **kw: object) -> None:
            real(*args, **kw)  # type: ignore[arg-type]
            raise StoreError("store: write failed: disk full")

        monkeypatch.setattr(engine.store, "entries_add", full_disk)
        failed = agent.tool_call("ls", **scope)
        assert failed.blocked and "disk full" in (failed.hooks[0].error or "")
        monkeypatch.undo()
        assert agent.tool_call("ls", **scope).notices == ["n=2"]
        assert [e["data"] for e in engine.store.entries_list("a", "s")] == [{"n": 1}, {"n": 2}]


@pytest.mark.parametrize("lang", LANGS)
def test_emits_reach_the_outcome_and_logs_the_record(engine: Engine, lang: str) -> None:
    out = engine.agent(f"state_{lang}").tool_call("ok", user_id=f"emit-{lang}")
    assert out.events == [
        {"type": "status", "data": {"n": 1}},
        {"type": "status", "data": {"n": 1}},
    ]
    (record,) = engine.records(agent=f"state_{lang}", limit=1)
    assert record.hooks[0].logs == ["call 1"]


@pytest.mark.parametrize("lang", LANGS)
def test_compile_errors_name_file_line_and_column(tmp_path: Path, lang: str) -> None:
    bad = {
        "py": "def on_tool_call(event, host):\n    import os\n    return None\n\ndef on_tool_cal(event, host):\n    return None\n",
        "js": "function on_tool_call(event, host) {\n  return null;\n}\nfunction on_tool_cal(event, host) {\n  return null;\n}\nvar x = ;\n",
    }
    write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [guard, inline]\n",
            f"agents/a/hooks/guard.{lang}": bad[lang],
            "agents/a/hooks/guard.yaml": f"kind: script_hook\nname: guard\nscript: guard.{lang}\n",
            "agents/a/hooks/inline.yaml": inline_hook(
                "inline",
                lang,
                "function on_tool_call(e, h) {\n  return (;\n}\n"
                if lang == "js"
                else "def on_tool_call(e, h):\n    return (\n",
                "points: [tool_call, after_turn]\n",
            ),
        },
    )
    with pytest.raises(ConfigError) as info:
        Engine.load(tmp_path / "config", db=str(tmp_path / "s.db"))
    text = str(info.value)
    if lang == "py":
        assert f"guard.{lang}:2:5:" in text
    else:
        assert f"guard.{lang}:7:" in text
    assert "inline.yaml:" in text
    # the script's own line 2 is line 7 of the YAML (source: is on line 5)
    assert any(p.path.endswith("inline.yaml") and p.line == 7 for p in info.value.problems), text
    done = subprocess.run(
        [str(console("hookengine")), "check", str(tmp_path / "config")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and f"guard.{lang}:" in done.stderr + done.stdout


def test_a_points_entry_the_script_does_not_define_names_its_yaml_line(tmp_path: Path) -> None:
    write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [g]\n",
            "agents/a/hooks/g.yaml": inline_hook(
                "g",
                "js",
                "function on_tool_call(e, h) { return null; }\n",
                "points:\n  - tool_call\n  - tool_result\n",
            ),
        },
    )
    with pytest.raises(ConfigError) as info:
        Engine.load(tmp_path / "config", db=str(tmp_path / "s.db"))
    (problem,) = info.value.problems
    assert problem.path.endswith("g.yaml") and problem.line == 6 and problem.field == "points"
    assert "on_tool_result" in problem.message


EXAMPLE_CONFIG: dict[str, dict[str, Any]] = {
    "no_deletes": {"forbidden": ["delete_file"], "shell_tools": ["shell"]},
    "rate_limit": {"tools": ["shell"], "max_calls": 2},
    "inject_context": {"title": "Policy", "lines": ["Be kind."]},
    "redact_secrets": {},
}
KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
LONG_PROSE = "The deploy finished at 10:30 after 1234 retries; ticket 4711 follows. " * 600
EXAMPLE_TABLE: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "delete by name",
        "tool_call",
        {"name": "delete_file", "input": {"path": "a"}},
        {"blocked": True},
    ),
    (
        "rm -rf in shell",
        "tool_call",
        {"name": "shell", "input": {"command": "cd /tmp && rm -rf exports/"}},
        {"blocked": True},
    ),
    (
        "rm -r -f in shell",
        "tool_call",
        {"name": "shell", "input": {"command": "rm -r -f x"}},
        {"blocked": True},
    ),
    (
        "drop table",
        "tool_call",
        {"name": "shell", "input": {"command": "psql -c 'DROP TABLE users'"}},
        {"blocked": True},
    ),
    (
        "harmless shell",
        "tool_call",
        {"name": "shell", "input": {"command": "ls -la"}},
        {"blocked": False},
    ),
    ("read file", "tool_call", {"name": "read_file", "input": {"path": "a"}}, {"blocked": False}),
    (
        "key in result",
        "tool_result",
        {"name": "read_file", "input": {}, "result": f"API_KEY={KEY}\nregion=eu"},
        {"result": "API_KEY=[REDACTED]\nregion=eu"},
    ),
    (
        "nested result",
        "tool_result",
        {
            "name": "http",
            "input": {},
            "result": {"headers": ["Authorization: Bearer abcdefghijklmnop1234"], "n": 1},
        },
        {"result": {"headers": ["Authorization: [REDACTED]"], "n": 1}},
    ),
    (
        "card in answer",
        "before_assistant_message",
        {"question": "q", "answer": "Card 4111-1111-1111-1111 ok"},
        {"answer": "Card [REDACTED] ok"},
    ),
    (
        "clean answer",
        "before_assistant_message",
        {"question": "q", "answer": "Hello"},
        {"answer": "Hello"},
    ),
    *[
        (
            f"destructive: {command}",
            "tool_call",
            {"name": "shell", "input": {"command": command}},
            {"blocked": True},
        )
        for command in [
            "rm --recursive --force /srv",
            '"r""m" -rf /',
            "\\rm -rf /",
            "$(echo rm) -rf x",
            "\uff52\uff4d -rf /",
            "r\u200bm -rf /",
            "python -c 'import shutil; shutil.rmtree(\"d\")'",
            "git reset --hard",
            "> data.db",
            "FOO=1 /bin/rm x",
            # one per DESTRUCTIVE pattern, none caught before it (no ">", no rm-like word)
            "rsync -a --delete src/ dst/",
            "find . -name '*.tmp' -delete",
            "dd if=/dev/zero of=/dev/sda",
            "git clean -fdx",
            "mv data.db /dev/null",
            "cp /dev/null data.db ",
            "node -e 'require(`fs`).rmSync(`d`)'",
            "python -c 'import os; os.remove(`x`)'",
            "node -e 'p.unlink (`x`)'",
            "psql -c 'drop database prod'",
            "sqlite3 a.db 'DELETE FROM users'",
        ]
    ],
    *[
        (
            f"benign: {command}",
            "tool_call",
            {"name": "shell", "input": {"command": command}},
            {"blocked": False},
        )
        for command in ["git status", "cat README.md", "grep -r remove .", "docker run --rm img"]
    ],
    ("tool named remove", "tool_call", {"name": "remove", "input": {}}, {"blocked": True}),
    ("tool named DropTable", "tool_call", {"name": "DropTable", "input": {}}, {"blocked": True}),
    *[
        (
            f"secret: {text!r}",
            "before_assistant_message",
            {"question": "q", "answer": f"x {text} y"},
            {"answer": "x [REDACTED] y"},
        )
        for text in [
            "sk_live_51H8abcdEFGHijklMNOP",
            "sk-proj-abcd\u200befgh1234ijkl5678",
            "4111.1111.1111.1111",
            "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijklmnop",
        ]
    ],
    (
        "JSON-escaped hyphen in a result",
        "tool_result",
        {"name": "read_file", "input": {}, "result": '{"k": "sk\\u002dproj-abcdefgh12345678"}'},
        {"result": '{"k": "[REDACTED]"}'},
    ),
    (
        # 43 KB of prose with numbers in it: every digit pattern runs on all of it, and the
        # whole redaction fits the 100 ms time limit (the engine skips to where a match can
        # start; bench/bench_patterns.py times it)
        "a long answer",
        "before_assistant_message",
        {"question": "q", "answer": LONG_PROSE + f"key {KEY}"},
        {"answer": LONG_PROSE + "key [REDACTED]"},
    ),
    (
        "order number",
        "before_assistant_message",
        {"question": "q", "answer": "Order ORD-2024-000123, 12345678"},
        {"answer": "Order ORD-2024-000123, 12345678"},
    ),
    (
        "section",
        "before_call",
        {"instruction": "i", "tools": ["read_file"]},
        {"sections": ["## Policy\n- Be kind.\n- Tools offered: read_file"]},
    ),
]


def outcome_of(
    engine: Engine, lang: str, point: str, event: dict[str, Any], session: str
) -> dict[str, Any]:
    out = engine.agent(f"examples_{lang}").evaluate(point, event, session_id=session)
    return {
        "blocked": out.blocked,
        "result": out.result,
        "answer": out.answer,
        "sections": out.sections,
    }


@pytest.mark.parametrize(
    ("case", "point", "event", "expected"), EXAMPLE_TABLE, ids=[c[0] for c in EXAMPLE_TABLE]
)
def test_each_example_behaves_the_same_in_both_languages(
    engine: Engine, case: str, point: str, event: dict[str, Any], expected: dict[str, Any]
) -> None:
    outcomes = {lang: outcome_of(engine, lang, point, event, f"ex-{case}") for lang in LANGS}
    assert outcomes["py"] == outcomes["js"]
    for key, value in expected.items():
        assert outcomes["py"][key] == value, outcomes


def test_rate_limit_blocks_the_call_over_the_limit_in_both_languages(engine: Engine) -> None:
    for lang in LANGS:
        agent = engine.agent(f"examples_{lang}")
        seen = [
            agent.tool_call("shell", {"command": "ls"}, session_id="rl", user_id=None).blocked
            for _ in range(3)
        ]
        assert seen == [False, False, True], lang
        assert not agent.tool_call("shell", {"command": "ls"}, session_id="rl-other").blocked


def test_hook_tool_shows_the_demo_guard_blocking(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(console("hook_tool")),
            "config/agents/demo/hooks/no_deletes.yaml",
            "tool",
            "delete_file",
            '{"path": "a.txt"}',
            "--json",
            "--db",
            str(tmp_path / "x.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["outcome"]["blocked"] is True
    assert "delete_file" in data["outcome"]["reason"]


@pytest.mark.parametrize("lang", LANGS)
def test_a_runtime_error_in_an_inline_source_names_the_yaml_line(tmp_path: Path, lang: str) -> None:
    source = {
        "py": "def on_tool_call(event, host):\n    return {'block': missing_name}\n",
        "js": "function on_tool_call(event, host) {\n  return {block: missing_name};\n}\n",
    }
    root = write(
        tmp_path / "config",
        agent_files("a", {"inline": inline_hook("inline", lang, source[lang])}),
    )
    with Engine.load(root, db=str(tmp_path / "s.db")) as engine:
        out = engine.agent("a").tool_call("shell", {})
    # kind, name, language, source: | on lines 1-4; the script's line 2 is the YAML's line 6
    assert out.blocked and "inline.yaml:6" in (out.hooks[0].error or ""), out.hooks[0].error


@pytest.mark.parametrize("lang", LANGS)
def test_allow_commands_runs_only_listed_tools_and_commands(tmp_path: Path, lang: str) -> None:
    config = {"tools": ["shell", "read_file"], "commands": ["ls", "git status"]}
    hook = f"kind: script_hook\nname: allow\nscript: ../../../scripts/allow_commands.{lang}\nconfig: {json.dumps(config)}\n"
    root = write(tmp_path / "config", agent_files("a", {"allow": hook}))
    shutil.copytree(REPO / "config" / "scripts", root / "scripts")
    with Engine.load(root, db=str(tmp_path / "s.db")) as eng:
        agent = eng.agent("a")
        calls = {
            ("shell", "ls -la"): False,
            ("shell", "git status && ls"): False,
            ("read_file", ""): False,
            ("shell", "git push --force"): True,
            ("shell", "ls $(rm -rf x)"): True,
            ("delete_file", ""): True,
            ("http", ""): True,
        }
        seen = {
            call: agent.tool_call(call[0], {"command": call[1]}, user_id="u").blocked
            for call in calls
        }
    assert seen == calls


@pytest.mark.parametrize(
    "script",
    sorted(p.name for p in (REPO / "config" / "scripts").glob("*.js")),
)
def test_a_shipped_javascript_top_level_runs_once_per_context(script: str) -> None:
    """A top level of plain data runs once per context; one holding a RegExp (or any value
    that is not plain data) runs on every call, which made a 50 KB deny list at the top of a
    no_deletes.js variant cost a copy per call. The shipped scripts keep theirs once."""
    from engine.sandbox.javascript import JavaScriptRuntime
    from engine.sandbox.jsscope import top_level_plan
    from engine.sandbox.limits import Limits

    source = (REPO / "config" / "scripts" / script).read_text(encoding="utf-8")
    plan = top_level_plan(source)
    if plan is None:  # nothing but functions at its top level: nothing to keep
        assert not re.search(r"^(const|let|var) ", source, re.M), script
        return
    js, limits = JavaScriptRuntime(), Limits().as_wire()
    request = {"source": source, "filename": script, "key": "k", "top_level": plan}
    assert js.compile({**request, "limits": limits})["ok"]
    js.prepare()
    config = EXAMPLE_CONFIG.get(script.removesuffix(".js"), {})
    call = {
        "function": "on_tool_call",
        "script": request,
        "limits": limits,
        "limits_key": "l",
        "config_key": "c",
        "config_text": json.dumps(config),
        "state": {},
    }
    if "on_tool_call" in source:  # calls may write to what the top level kept: then it is not
        for name, tool_input in (("shell", {"command": "ls -la /tmp"}), ("read_file", {})):
            event = json.dumps({"name": name, "input": tool_input, "time": 1.0})
            answer = js.call_v2(call, event)
            assert isinstance(answer, str) and answer.startswith('{"ok":true'), answer
            js.prepare()
    assert js._recent["k"].plan is not None, f"{script}: its top level would run on every call"
