"""``check`` finds what fails at run time: every problem of every agent and stage in one run,
static checks of scripts, and errors in the author's terms (positions, YAML, fields)."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine import Engine
from engine.checking import check_project
from engine.cli import hookengine
from engine.config.loader import load_hook_file
from engine.errors import EventError, Problem
from engine.sandbox.static_checks import check_script


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def inline(name: str, language: str, source: str, extra: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(source), "  ")
    return f"kind: script_hook\nname: {name}\nlanguage: {language}\n{extra}source: |\n{body}"


def agent(name: str, hooks: dict[str, str], extra: str = "") -> dict[str, str]:
    files = {f"agents/{name}/agent.yaml": f"hooks: [{', '.join(hooks)}]\n{extra}"}
    files.update({f"agents/{name}/hooks/{h}.yaml": text for h, text in hooks.items()})
    return files


def problems(root: Path) -> list[Problem]:
    return check_project(root).problems


def one(root: Path) -> Problem:
    found = problems(root)
    assert len(found) == 1, found
    return found[0]


GOOD_JS = "function on_tool_call(event, host) { return null; }\n"


# -- exhaustive ------------------------------------------------------------------------------


def test_check_reports_every_agent_and_every_stage_in_one_run(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            # a field error in agent.yaml: its hook's script error still shows
            **agent("a", {"g": inline("g", "javascript", "function on_tool_call(e, h) {\n")}),
            "agents/a/agent.yaml": "hooks: [g]\nbogus: 1\n",
            # a script that compiles but names an undefined global
            **agent(
                "b",
                {"g": inline("g", "javascript", "function on_tool_call(e, h) { require('x'); }\n")},
            ),
            # a Python syntax error
            **agent("c", {"p": inline("p", "python", "def on_tool_call(e, h):\n    x = 1 +\n")}),
            # a YAML error
            **agent("d", {"y": "kind: inject\n\tname: y\n"}),
            # and one agent that is fine
            **agent("ok", {"g": inline("g", "javascript", GOOD_JS)}),
        },
    )
    report = check_project(root)
    where = sorted((_agent_of(p.path), p.field) for p in report.problems)
    assert where == [
        ("a", "bogus"),
        ("a", "source"),
        ("b", "require"),
        ("c", "source"),
        ("d", "name"),
    ]
    assert [a.name for a in report.agents] == ["ok"]


def _agent_of(path: str) -> str:
    parts = Path(path).parts
    return parts[parts.index("agents") + 1]


def test_the_check_command_prints_all_problems_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write(
        tmp_path / "config",
        {
            **agent("a", {"g": inline("g", "javascript", "function on_tool_cal(e, h) {}\n")}),
            **agent(
                "b", {"g": inline("g", "python", "def on_tool_call(e, h):\n    return e['args']\n")}
            ),
            **agent("ok", {"g": inline("g", "javascript", GOOD_JS)}),
        },
    )
    assert hookengine.main(["check", str(root)]) == 2
    out, err = capsys.readouterr()
    assert "did you mean 'on_tool_call'?" in err
    assert "unknown field" not in err and "did you mean e.input?" in err
    assert "2 problems found" in err
    assert "ok  ok: 1 hooks (g)" in out and "ok  a" not in out


def test_a_host_hook_with_a_problem_does_not_hide_the_agents_problems(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "engine.yaml": "hook_files: [hooks/h.yaml]\n",
            "hooks/h.yaml": inline(
                "h", "javascript", "function on_tool_call(e, h) { fetch('x'); }\n"
            ),
            **agent(
                "a",
                {
                    "g": inline(
                        "g",
                        "python",
                        "def on_after_trun(e, h):\n    pass\n\n\ndef on_after_turn(e, h):\n    pass\n",
                    )
                },
            ),
        },
    )
    found = problems(root)
    assert sorted(str(p.field) for p in found) == ["fetch", "on_after_trun"]
    assert "did you mean 'on_after_turn'?" in str(found)


# -- static checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("console2", None),
        ("require", "cannot load modules"),
        ("process", "host.config"),
        ("fetch", "no network"),
        ("setTimeout", "no timers"),
        ("JSOn", "did you mean 'JSON'?"),
    ],
)
def test_an_undefined_javascript_global_is_an_error_with_a_hint(
    name: str, hint: str | None
) -> None:
    source = f"function on_tool_call(event, host) {{\n  return {{block: !!{name}}};\n}}\n"
    (finding,) = check_script(source, "javascript")
    assert (finding.line, finding.column, finding.field) == (2, 20, name)
    assert "is not defined in the sandbox" in finding.message
    if hint is not None:
        assert finding.hint is not None and hint in finding.hint


def test_names_the_script_declares_or_guards_with_typeof_are_not_findings() -> None:
    source = """
        const LIMIT = 3;
        function helper({a, b: [c]}, ...rest) { return a + c + rest.length; }
        function on_tool_call(event, host) {
          var seen = typeof window === "undefined";
          try { JSON.parse("x"); } catch (err) { host.log(String(err)); }
          const f = (x) => x + LIMIT;
          console.log(Date.now(), new Date(0), Math.max(1, 2), arguments.length);
          return {block: seen && f(helper({a: 1, b: [2]}))};
        }
    """
    assert check_script(textwrap.dedent(source), "javascript") == []


def test_every_way_javascript_declares_a_name_counts_as_declared() -> None:
    source = """
        function on_tool_call(event, host) {
          for (const x of event.input.list || []) { host.log(x); }
          for (let k in event.input) { host.log(k); }
          for (var i = 0, n = 2; i < n; i++) {}
          const f = function named() { return named; };
          class A { m() { return this; } static s = 1; #p = 2; get g() { return this.#p; } }
          outer: for (;;) { break outer; }
          const [a, , b = 1, ...c] = [1, 2];
          const {d, e: {f2}, ...g} = {e: {}};
          let h; h = 1;
          const fn = async () => { await 1; };
          function* gen() { yield 1; }
          try {} catch ({message}) { host.log(message); }
          const o = {a, b, [c]: 1, m() { return super.toString; }};
          return {block: new A() instanceof A && `${d}${f2}${g}${o}${fn}${gen}${f}` === ""};
        }
    """
    assert check_script(textwrap.dedent(source), "javascript") == []


def test_math_random_is_an_error() -> None:
    (finding,) = check_script(
        "function on_tool_call(e, h) { return {x: Math.random()}; }", "javascript"
    )
    assert finding.field == "Math.random" and "replay" in finding.message


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_an_on_name_that_is_not_a_point_is_an_error(language: str) -> None:
    source = (
        "def on_tool_cal(event, host):\n    return None\n"
        if language == "python"
        else "function on_tool_cal(event, host) { return null; }\n"
    )
    (finding,) = check_script(source, language)
    assert finding.field == "on_tool_cal" and finding.line == 1
    assert finding.hint == "did you mean 'on_tool_call'?"


@pytest.mark.parametrize(
    ("language", "source", "column"),
    [
        ("javascript", "function on_tool_call(event, host) {\n  return event.args;\n}\n", 16),
        ("javascript", "function on_tool_call(event, host) {\n  return event['args'];\n}\n", 16),
        ("javascript", "const on_tool_call = (event) => {\n  return event.args;\n};\n", 16),
        ("python", "def on_tool_call(event, host):\n    return event['args']\n", 18),
        ("python", "def on_tool_call(event, host):\n    return event.get('args')\n", 22),
        ("python", "def on_tool_call(event, host):\n    return 'args' in event\n", 12),
    ],
)
def test_an_event_field_the_point_lacks_is_an_error(
    language: str, source: str, column: int
) -> None:
    (finding,) = check_script(source, language)
    assert (finding.line, finding.column) == (2, column)
    assert finding.field == "event.args"
    assert finding.message == "tool_call events have no field 'args'"
    assert finding.hint == "did you mean event.input?"


def test_python_attribute_access_on_the_event_dict_is_an_error() -> None:
    (finding,) = check_script("def on_tool_call(event, host):\n    return event.input\n", "python")
    assert "AttributeError" in finding.message and finding.hint == "write event['input']"
    clean = "def on_tool_call(event, host):\n    return {'x': list(event.keys())}\n"
    assert check_script(clean, "python") == []


def test_a_script_that_does_not_parse_has_no_static_findings() -> None:
    assert check_script("function on_tool_call(e) { require(", "javascript") == []
    assert check_script("def on_x(:\n", "python") == []


# -- positions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "source", "line", "column"),
    [
        ("javascript", "function on_tool_call(e, h) {\n  return {block: ];\n}\n", 6, 20),
        ("python", "def on_tool_call(e, h):\n    x = (1 +\n", 6, 11),
    ],
)
def test_an_inline_compile_error_is_at_its_yaml_line_and_column(
    tmp_path: Path, language: str, source: str, line: int, column: int
) -> None:
    root = write(tmp_path / "config", agent("a", {"g": inline("g", language, source)}))
    problem = one(root)
    assert problem.path.endswith("agents/a/hooks/g.yaml") and problem.field == "source"
    assert (problem.line, problem.column) == (line, column)
    text = (root / "agents/a/hooks/g.yaml").read_text().splitlines()
    assert text[line - 1].strip()  # the line named is a line of the script


@pytest.mark.parametrize(
    ("language", "source", "column"),
    [
        ("javascript", "function on_tool_call(e, h) {\n  null.x;\n}\n", 5),
        ("python", "def on_tool_call(e, h):\n    return 1 // 0\n", None),
    ],
)
def test_an_inline_runtime_error_is_at_its_yaml_line(
    tmp_path: Path, language: str, source: str, column: int | None
) -> None:
    root = write(tmp_path / "config", agent("a", {"g": inline("g", language, source)}))
    where = "g.yaml:6" + (f":{column}" if column else "")
    assert where in error_of(root)


def error_of(root: Path) -> str:
    """The error of the one hook of agent ``a`` at a tool call."""
    with Engine.load(root, records=False, db=":memory:") as engine:
        outcome = engine.agent("a").tool_call("shell", {})
    assert outcome.blocked
    return str(outcome.hooks[0].error)


def test_a_static_finding_in_a_script_file_is_at_the_files_line(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            **agent("a", {"g": "kind: script_hook\nname: g\nscript: g.js\n"}),
            "agents/a/hooks/g.js": "// guard\nfunction on_tool_call(event, host) {\n  setTimeout(1);\n}\n",
        },
    )
    problem = one(root)
    assert problem.path.endswith("agents/a/hooks/g.js")
    assert (problem.line, problem.column, problem.field) == (3, 3, "setTimeout")


def test_a_bad_script_suffix_is_reported_at_the_script_key(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("kind: script_hook\nname: g\ndescription: x\nscript: g.txt\n")
    _, found = load_hook_file(path)
    (problem,) = found
    assert (problem.line, problem.field) == (4, "script")
    assert problem.message.startswith("must name a .py or .js file, got 'g.txt' (rename")


# -- YAML and field errors in our words ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("kind: inject\n\tname: x\n", 2, "a tab in the indentation"),
        ("kind: inject\nname: x\n  text: y\n", 3, "indented under a key that already has a value"),
        ("kind: inject\nname: 'x\ntext: y\n", 2, "a quote opened here is never closed"),
        ("kind: inject\nname: x\ndescription: note: this\n", 3, "must be quoted"),
        ("kind: inject\nname: @x\n", 2, "cannot start with '@'"),
        ("config:\n    a: 1\n  b: 2\n", 3, "indentation does not match the lines above"),
    ],
)
def test_yaml_syntax_errors_say_what_to_change(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = tmp_path / "h.yaml"
    path.write_text(text)
    _, (problem,) = load_hook_file(path)
    assert problem.line == line and words in problem.message
    assert problem.message.startswith("YAML syntax error: ")


def test_an_unknown_field_says_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "h.yaml"
    path.write_text("kind: inject\nname: h\nmessages: [{role: system, content: hi}]\nnme: x\n")
    _, found = load_hook_file(path)
    assert [str(p).split("h.yaml:")[1] for p in found] == [
        "4: nme: unknown field 'nme' (did you mean 'name'?)"
    ]


def test_a_hook_test_event_with_a_wrong_field_names_it_in_yaml_terms(tmp_path: Path) -> None:
    path = tmp_path / "h.yaml"
    path.write_text(
        inline("g", "javascript", GOOD_JS)
        + "tests:\n  - point: tool_call\n    event:\n      name: shell\n      args: {cmd: ls}\n"
        "    expect: {blocked: false}\n"
    )
    _, (problem,) = load_hook_file(path)
    assert problem.line == 10 and problem.field == "tests[0].event.args"
    assert problem.message == "unknown field 'args' (did you mean 'input'?) (in a tool_call event)"
    assert "Extra inputs" not in str(problem)


def test_a_string_as_tool_input_from_host_code_is_an_event_error_in_python_terms(
    tmp_path: Path,
) -> None:
    root = write(tmp_path / "config", agent("a", {"g": inline("g", "javascript", GOOD_JS)}))
    with Engine.load(root, records=False, db=":memory:") as engine:
        with pytest.raises(EventError) as info:
            engine.agent("a").tool_call("shell", "rm -rf /")  # type: ignore[arg-type]
        assert info.value.errors == [
            {"loc": ["input"], "msg": "must be a dict, got a str 'rm -rf /'"}
        ]
        with pytest.raises(EventError, match=r"unknown field 'args' \(did you mean 'input'\?\)"):
            engine.agent("a").evaluate("tool_call", {"name": "x", "args": {}})
    assert "pydantic" not in str(info.value) and "https://" not in str(info.value)


@pytest.mark.parametrize(
    ("language", "source", "words"),
    [
        (
            "python",
            "def on_tool_call(e, h):\n    return [1]\n",
            "must be None or a dict, not a list",
        ),
        (
            "python",
            "def on_tool_call(e, h):\n    return {'input': 'x'}\n",
            "input: must be a dict, got a str 'x'",
        ),
        (
            "javascript",
            "function on_tool_call(e, h) { return {input: 'x'}; }\n",
            "input: must be an object, got a string 'x'",
        ),
        (
            "python",
            "def on_tool_call(e, h):\n    return {'input': [1]}\n",
            "must be a dict, got a list",
        ),
        (
            "javascript",
            "function on_tool_call(e, h) { return {input: [1]}; }\n",
            "must be an object, got an array",
        ),
    ],
)
def test_a_bad_result_is_described_in_the_scripts_language(
    tmp_path: Path, language: str, source: str, words: str
) -> None:
    root = write(tmp_path / "config", agent("a", {"g": inline("g", language, source)}))
    assert words in error_of(root)


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_a_timeout_names_the_hook_the_limit_and_timeout_ms(tmp_path: Path, language: str) -> None:
    source = (
        "def on_tool_call(e, h):\n    while True:\n        pass\n"
        if language == "python"
        else "function on_tool_call(e, h) { for (;;) {} }\n"
    )
    hook = inline("spin", language, source, extra="timeout_ms: 30\n")
    root = write(tmp_path / "config", agent("a", {"spin": hook}))
    reason = error_of(root)
    assert "hook 'spin' ran past its time limit of 30 ms" in reason
    assert "timeout_ms" in reason and "spin.yaml" in reason


# -- the docs' examples ----------------------------------------------------------------------

DOCS = Path(__file__).parent.parent / "docs"

CLI_EXAMPLE = {
    **agent("a", {"guard": inline("guard", "javascript", GOOD_JS)}),
    "agents/a/agent.yaml": "hooks: [guard]\nbogus: 1\n",
    **agent(
        "b",
        {
            "guard": inline(
                "guard",
                "javascript",
                "function on_tool_call(event, host) {\n  var cmd = event.args.cmd;\n  return {block: cmd === 'rm'};\n}\n",
            )
        },
    ),
    **agent(
        "c",
        {
            "spin": inline(
                "spin",
                "python",
                "def on_tool_call(e, h):\n    return None\n",
                extra="timeout_ms: fast\n",
            )
        },
    ),
    **agent("d", {"y": "kind: inject\nname: y\nmessages:\n\t- {role: system, content: hi}\n"}),
    **agent("e", {"guard": inline("guard", "javascript", GOOD_JS)}),
}


def test_the_check_example_in_cli_md_is_what_check_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "config", CLI_EXAMPLE)
    monkeypatch.chdir(tmp_path)
    assert hookengine.main(["check", "config"]) == 2
    out, err = capsys.readouterr()
    text = (DOCS / "cli.md").read_text()
    assert f"  ```\n{textwrap.indent(err + out, '  ')}  ```\n" in text


def test_the_console_example_in_scripting_md_logs_what_it_says(tmp_path: Path) -> None:
    text = (DOCS / "scripting.md").read_text()
    hook = text.split("```yaml\nkind: script_hook\nname: console_demo\n", 1)[1].split("```", 1)[0]
    root = write(
        tmp_path / "config",
        agent("a", {"console_demo": "kind: script_hook\nname: console_demo\n" + hook}),
    )
    with Engine.load(root, db=":memory:") as engine:
        outcome = engine.agent("a").tool_call("delete_file", {"path": "/tmp/x"})
        engine.flush()
        (record,) = engine.records(limit=1)
    assert outcome.blocked
    logs = record.hooks[0].logs
    assert logs == ['tool delete_file {"path":"/tmp/x"}', "warn: refusing /tmp/x"]
    for line in logs:
        assert f"`{line}`" in text
