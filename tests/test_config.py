"""Config loading: every bad input gets its own message naming file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from engine.config import load_project, models
from engine.config.models import Strict
from engine.errors import ConfigError, Problem
from engine.tools.delegate import DelegateConfig
from engine.tools.openwebui import OpenWebUIConfig
from engine.tools.script import ScriptToolConfig

AGENT = "agents/a/agent.yaml"
HOOK = "agents/a/hooks/h.yaml"
GOOD_HOOK = """
kind: inject
name: h
messages:
  - role: system
    content: hi
"""


def problems_of(project: Callable[[dict[str, str]], Path], files: dict[str, str]) -> list[Problem]:
    files = {AGENT: "hook_files: [hooks/h.yaml]\n", **files}
    with pytest.raises(ConfigError) as err:
        load_project(project(files))
    return err.value.problems


# (case, files, expected file suffix, line, field, message part, hint part)
CASES = [
    (
        "yaml syntax",
        {HOOK: "kind: inject\nname: [unclosed\n"},
        "h.yaml",
        2,  # the bracket that is never closed
        "name",
        "YAML syntax error: a ']' is missing",
        None,
    ),
    ("empty file", {HOOK: ""}, "h.yaml", 1, None, "empty", None),
    (
        "unknown kind",
        {HOOK: "kind: injct\nname: h\n"},
        "h.yaml",
        1,
        "kind",
        "unknown kind",
        "did you mean 'inject'?",
    ),
    ("missing kind", {HOOK: "name: h\n"}, "h.yaml", 1, "kind", "required", "inject"),
    (
        "unknown field",
        {HOOK: GOOD_HOOK + "fist_n: 2\n"},
        "h.yaml",
        6,
        "fist_n",
        "unknown field",
        "did you mean 'first_n'?",
    ),
    (
        "wrong type",
        {HOOK: GOOD_HOOK + "first_n: two\n"},
        "h.yaml",
        6,
        "first_n",
        "must be a whole number, got text 'two'",
        None,
    ),
    (
        "out of range",
        {HOOK: GOOD_HOOK + "first_n: 0\n"},
        "h.yaml",
        6,
        "first_n",
        "must be >= 1, got 0",
        None,
    ),
    (
        "bad role",
        {HOOK: "kind: inject\nname: h\nmessages:\n  - role: tool\n    content: x\n"},
        "h.yaml",
        4,
        "messages[0].role",
        "'system', 'user' or 'assistant'",
        None,
    ),
    (
        "missing required",
        {HOOK: "kind: escalate\nname: h\n"},
        "h.yaml",
        1,
        "message",
        "required field is missing",
        None,
    ),
    ("not a mapping", {HOOK: "- kind: inject\n"}, "h.yaml", 1, None, "expected a mapping", None),
    (
        "duplicate key",
        {HOOK: GOOD_HOOK + "name: again\n"},
        "h.yaml",
        6,
        "name",
        "duplicate key",
        None,
    ),
    (
        "keys YAML reads alike",  # yes, on and true are one key to YAML; so are 1 and 0x1
        {
            HOOK: "kind: script_hook\nname: h\npoints: [tool_call]\nsource: 'x'\n"
            "config:\n  modes: {yes: 1, on: 2}\n"
        },
        "h.yaml",
        6,
        "config.modes.on",
        "duplicate key: 'on' is 'yes' to YAML",
        None,
    ),
    (
        "numbers YAML reads alike",
        {
            HOOK: "kind: script_hook\nname: h\npoints: [tool_call]\nsource: 'x'\n"
            "config:\n  ids:\n    1: a\n    0x1: b\n"
        },
        "h.yaml",
        8,
        "config.ids.0x1",
        "duplicate key: '0x1' is '1' to YAML",
        None,
    ),
    (
        "hook file missing",
        {AGENT: "description: x\nhook_files: [hooks/nope.yaml]\n"},
        "agent.yaml",
        2,
        "hook_files",
        "hook file not found",
        None,
    ),
    (
        "unknown agent field",
        {AGENT: "hook_file: [hooks/h.yaml]\n", HOOK: GOOD_HOOK},
        "agent.yaml",
        1,
        "hook_file",
        "unknown field",
        "did you mean 'hook_files'?",
    ),
    (
        "engine.yaml type",
        {"engine.yaml": "retention: lots\n", HOOK: GOOD_HOOK},
        "engine.yaml",
        1,
        "retention",
        "must be a whole number",
        None,
    ),
    (
        "nested unknown field",
        {"engine.yaml": "scripts:\n  timeout: 5\n", HOOK: GOOD_HOOK},
        "engine.yaml",
        2,
        "scripts.timeout",
        "unknown field",
        "did you mean 'timeout_ms'?",
    ),
    (
        "script and source",
        {HOOK: "kind: script_hook\nname: h\nscript: a.js\nlanguage: python\nsource: x\n"},
        "h.yaml",
        3,
        "script",
        "either script",
        None,
    ),
    (
        "script missing",
        {HOOK: "kind: script_hook\nname: h\nscript: nope.js\n"},
        "h.yaml",
        3,
        "script",
        "script file not found",
        None,
    ),
    (
        "negative",
        {HOOK: "kind: escalate\nname: h\nmessage: m\nmin_answer_chars: -1\n"},
        "h.yaml",
        4,
        "min_answer_chars",
        "must be >= 0, got -1",
        None,
    ),
    (
        "bad name",
        {HOOK: "kind: inject\nname: two words\n"},
        "h.yaml",
        2,
        "name",
        "should match pattern",
        None,
    ),
    (
        "no hooks",
        {AGENT: "description: nothing\n"},
        "agent.yaml",
        1,
        "hook_files",
        "lists no hooks",
        "hook_files",
    ),
    (
        "wrong point",
        {HOOK: "kind: script_hook\nname: h\nlanguage: python\nsource: x\npoints: [tool_cal]\n"},
        "h.yaml",
        5,
        "points[0]",
        "tool_call",
        None,
    ),
    (
        "no points",
        {HOOK: "kind: script_hook\nname: h\nlanguage: python\nsource: x\npoints: []\n"},
        "h.yaml",
        5,
        "points",
        "an empty list subscribes the hook to no point",
        None,
    ),
    (
        "no tools to ask about",
        {HOOK: "kind: approval\nname: h\ntools: []\n"},
        "h.yaml",
        3,
        "tools",
        "must not be empty",
        None,
    ),
    (
        "timeout true",
        {HOOK: "kind: script_hook\nname: h\nlanguage: python\nsource: x\ntimeout_ms: true\n"},
        "h.yaml",
        5,
        "timeout_ms",
        "must be a whole number, got true",
        "whole number",
    ),
    (
        "seconds false",
        {HOOK: "kind: approval\nname: h\ntimeout_s: false\n"},
        "h.yaml",
        3,
        "timeout_s",
        "must be a number, got false",
        None,
    ),
    (
        "timeout zero",
        {HOOK: "kind: script_hook\nname: h\nlanguage: python\nsource: x\ntimeout_ms: 0\n"},
        "h.yaml",
        5,
        "timeout_ms",
        "must be > 0, got 0",
        None,
    ),
]


@pytest.mark.parametrize(
    ("case", "files", "suffix", "line", "field", "message", "hint"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_a_bad_config_names_file_line_and_field(
    project: Callable[[dict[str, str]], Path],
    case: str,
    files: dict[str, str],
    suffix: str,
    line: int,
    field: str | None,
    message: str,
    hint: str | None,
) -> None:
    problems = problems_of(project, files)
    assert len(problems) == 1, problems
    (p,) = problems
    assert p.path.endswith(suffix)
    assert p.line == line
    assert p.field == field
    assert message in p.message
    if hint:
        assert p.hint and hint in p.hint
    assert str(p).startswith(f"{p.path}:{line}")


def test_duplicate_hook_names_in_one_agent(project: Callable[[dict[str, str]], Path]) -> None:
    problems = problems_of(
        project,
        {
            AGENT: "hook_files: [hooks/h.yaml, hooks/g.yaml]\n",
            HOOK: GOOD_HOOK,
            "agents/a/hooks/g.yaml": GOOD_HOOK,
        },
    )
    assert len(problems) == 1
    assert problems[0].path.endswith("g.yaml") and problems[0].line == 2
    assert "duplicate hook name 'h'" in problems[0].message


def test_every_problem_is_reported_not_only_the_first(
    project: Callable[[dict[str, str]], Path],
) -> None:
    problems = problems_of(
        project,
        {
            AGENT: "hook_files: [hooks/h.yaml, hooks/g.yaml, hooks/missing.yaml]\n",
            HOOK: GOOD_HOOK + "fist_n: 1\nnotise: x\n",
            "agents/a/hooks/g.yaml": "kind: escalat\nname: g\n",
        },
    )
    assert {(Path(p.path).name, p.field) for p in problems} == {
        ("h.yaml", "fist_n"),
        ("h.yaml", "notise"),
        ("g.yaml", "kind"),
        ("agent.yaml", "hook_files"),
    }


def test_an_agent_loads_whole_or_not_at_all(project: Callable[[dict[str, str]], Path]) -> None:
    root = project(
        {
            AGENT: "hook_files: [hooks/h.yaml]\n",
            HOOK: GOOD_HOOK,
            "agents/b/agent.yaml": "hook_files: [hooks/x.yaml]\n",
            "agents/b/hooks/x.yaml": "kind: inject\nname: x\nfirst_n: -3\n",
        }
    )
    with pytest.raises(ConfigError) as err:
        load_project(root)
    assert all("agents/b" in p.path for p in err.value.problems)
    good = load_project(root, only=["a"])
    assert list(good.agents) == ["a"]


def test_hooks_by_name_and_the_host_layer(project: Callable[[dict[str, str]], Path]) -> None:
    root = project(
        {
            AGENT: "hooks: [h]\n",
            HOOK: GOOD_HOOK,
            "engine.yaml": "hooks: [rules]\n",
            "hooks/rules.yaml": "kind: inject\nname: rules\nmessages: []\n",
        }
    )
    config = load_project(root)
    assert [h.name for h in config.agents["a"].hooks] == ["h"]
    assert [(h.name, h.layer) for h in config.host_hooks] == [("rules", "host")]


def test_a_host_hook_may_not_reuse_an_agent_hook_name(
    project: Callable[[dict[str, str]], Path],
) -> None:
    problems = problems_of(
        project,
        {
            HOOK: GOOD_HOOK,
            "engine.yaml": "hooks: [h]\n",
            "hooks/h.yaml": GOOD_HOOK,
        },
    )
    assert "duplicate hook name" in problems[0].message


def test_the_version_changes_with_the_yaml(project: Callable[[dict[str, str]], Path]) -> None:
    root = project({AGENT: "hooks: [h]\n", HOOK: GOOD_HOOK})
    before = load_project(root).agents["a"].hooks[0].version
    (root / HOOK).write_text(GOOD_HOOK + "notice: x\n")
    after = load_project(root).agents["a"].hooks[0].version
    assert before != after and len(after) == 12


def test_on_error_defaults_by_kind(project: Callable[[dict[str, str]], Path]) -> None:
    root = project(
        {
            AGENT: "hook_files: [hooks/h.yaml, hooks/s.yaml]\n",
            HOOK: GOOD_HOOK,
            "agents/a/hooks/s.yaml": "kind: script_hook\nname: s\nlanguage: python\nsource: x\n",
        }
    )
    inject, script = load_project(root).agents["a"].hooks
    assert inject.config.effective_on_error == "ignore"
    assert script.config.effective_on_error == "fail"


def test_the_demo_config_is_valid() -> None:
    from tests.conftest import REPO

    config = load_project(REPO / "config")
    assert "demo" in config.agents


TOKENS = """http:
  tokens:
    - name: gateway
      env: GATEWAY_TOKEN
      scopes: [decide]
    - name: gateway
      env: OTHER_TOKEN
      scopes: [decide, admin]
"""


def test_http_token_names_are_unique_and_the_error_names_the_line(
    project: Callable[[dict[str, str]], Path],
) -> None:
    problems = problems_of(project, {HOOK: GOOD_HOOK, "engine.yaml": TOKENS})
    assert len(problems) == 1, problems
    (p,) = problems
    assert p.path.endswith("engine.yaml") and p.line == 6
    assert p.field == "http.tokens[1].name"
    assert "token name 'gateway' is used twice" in p.message


@pytest.mark.parametrize(
    ("yaml", "field", "message"),
    [
        ("scopes: []", "http.tokens[0].scopes", "must not be empty"),
        ("scopes: [read]", "http.tokens[0].scopes[0]", "'decide', 'approve' or 'admin'"),
        ("scopes: [decide]\n      token: x", "http.tokens[0].token", "unknown field"),
    ],
)
def test_a_bad_http_token_names_its_field(
    project: Callable[[dict[str, str]], Path], yaml: str, field: str, message: str
) -> None:
    engine_yaml = f"http:\n  tokens:\n    - name: a\n      env: A_TOKEN\n      {yaml}\n"
    problems = problems_of(project, {HOOK: GOOD_HOOK, "engine.yaml": engine_yaml})
    assert [p.field for p in problems] == [field]
    assert message in problems[0].message


def test_http_tokens_and_limits_have_defaults_and_read_from_yaml(
    project: Callable[[dict[str, str]], Path],
) -> None:
    engine_yaml = TOKENS.replace("name: gateway\n      env: OTHER", "name: ops\n      env: OTHER")
    engine_yaml += "  max_concurrency: 8\n"
    http = load_project(
        project(
            {AGENT: "hook_files: [hooks/h.yaml]\n", HOOK: GOOD_HOOK, "engine.yaml": engine_yaml}
        )
    ).settings.http
    assert [(t.name, t.env, t.scopes) for t in http.tokens] == [
        ("gateway", "GATEWAY_TOKEN", ["decide"]),
        ("ops", "OTHER_TOKEN", ["decide", "admin"]),
    ]
    assert http.max_concurrency == 8
    assert http.max_decision_body_bytes == 1_048_576
    assert http.token_env == "HOOKENGINE_ADMIN_TOKEN"


def _numeric(annotation: Any) -> bool:
    return annotation in (int, float) or any(_numeric(arg) for arg in get_args(annotation))


def _numbers() -> list[tuple[type[BaseModel], str]]:
    found = []
    strict = [m for m in vars(models).values() if isinstance(m, type) and issubclass(m, Strict)]
    for model in [*strict, ScriptToolConfig, DelegateConfig, OpenWebUIConfig]:  # tool YAML too
        found += [(model, n) for n, i in model.model_fields.items() if _numeric(i.annotation)]
    return found


@pytest.mark.parametrize(
    ("model", "field"), _numbers(), ids=[f"{m.__name__}.{f}" for m, f in _numbers()]
)
def test_no_number_field_of_the_config_takes_a_boolean(model: type[BaseModel], field: str) -> None:
    # pydantic reads true as 1: timeout_ms: true was a 1 ms budget
    for value in (True, False):
        with pytest.raises(ValidationError) as err:
            model.model_validate({field: value})
        wrong = [e for e in err.value.errors() if e["loc"] == (field,)]
        assert wrong and wrong[0]["type"] in ("int_type", "float_type"), err.value
