"""Open WebUI toolkits give the specs Open WebUI 0.12.4 gives (goldens made by its rules)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from engine.tools.openwebui_specs import (
    parse_description,
    parse_frontmatter,
    parse_param_docs,
    parse_requirements,
)
from tests.conftest import REPO
from tests.tools.openwebui_oracle import GOLDEN, derive, toolkit_files
from tests.tools.openwebui_support import load, spec_dict

VALVES = {"web_search": {"search_url": "http://127.0.0.1:9/search"}}
NAMES = [path.stem for path in toolkit_files()]


def golden(name: str) -> list[dict]:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def test_there_are_at_least_fifteen_synthetic_toolkits_each_with_a_golden() -> None:
    assert len(NAMES) >= 15
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_toolkit_specs_equal_the_goldens(tmp_path: Path, name: str) -> None:
    tools = load(tmp_path, name, valves=VALVES.get(name, {}))
    assert [spec_dict(tool) for tool in tools.values()] == golden(name)


@pytest.mark.parametrize("name", NAMES)
def test_open_webuis_own_pipeline_still_derives_the_goldens(
    request: pytest.FixtureRequest, name: str
) -> None:
    """Drift: langchain-core and pydantic, run through Open WebUI's steps, re-derive each
    golden (``--update-golden`` rewrites them; review the diff)."""
    derived = derive(next(p for p in toolkit_files() if p.stem == name))
    path = GOLDEN / f"{name}.json"
    if request.config.getoption("--update-golden"):
        path.write_text(json.dumps(derived, indent=2, sort_keys=True) + "\n")
    assert derived == golden(name), f"{path} drifted: run pytest --update-golden, review"


def test_the_goldens_cover_every_rule_the_issue_names() -> None:
    text = "\n".join((GOLDEN / f"{name}.json").read_text() for name in NAMES)
    for shape in ('"prefixItems"', '"enum"', '"const"', '"anyOf"', '"default"'):
        assert shape in text, shape
    assert "_helper" not in text and "__user__" not in text and "__request__" not in text


def test_un_hinted_parameters_are_strings_and_optional_collapses(tmp_path: Path) -> None:
    legacy = spec_dict(load(tmp_path, "unhinted")["legacy"])["parameters"]
    assert legacy["properties"]["a"] == {"type": "string", "description": "First thing"}
    assert legacy["properties"]["d"] == {"type": "string", "description": "Maybe nothing"}
    assert legacy["required"] == ["a"]
    search = spec_dict(load(tmp_path, "optional_params")["search"])["parameters"]
    assert search["properties"]["site"] == {"type": "string", "description": "Restrict to one site"}
    assert search["properties"]["domains"] == {"type": "array", "items": {"type": "string"}}


def test_private_and_dunder_methods_and_nested_classes_are_not_tools(tmp_path: Path) -> None:
    tools = load(tmp_path, "helpers")
    assert sorted(tools) == ["add", "greet", "version"]


def test_reserved_arguments_never_reach_the_spec(tmp_path: Path) -> None:
    spec = spec_dict(load(tmp_path, "reserved_all")["inspect_call"])
    assert list(spec["parameters"]["properties"]) == ["query"]
    assert spec["parameters"]["required"] == ["query"]
    only_user = spec_dict(load(tmp_path, "reserved_all")["only_user"])
    assert only_user["parameters"] == {"properties": {}, "type": "object"}


def test_a_method_without_a_docstring_is_described_by_its_name(tmp_path: Path) -> None:
    assert load(tmp_path, "async_methods")["sync_echo"].spec.description == "sync_echo"


def test_param_lines_continue_until_a_blank_line_or_the_next_field() -> None:
    doc = """
        Do it.

        :param a: one
            two
        :param b:
            three
        :param __user__: hidden
        :return: not a param
            still not
        :param c: four

        not c
    """
    assert parse_param_docs(doc) == {"a": "one two", "b": "three", "c": "four"}
    assert parse_description(doc) == "Do it."
    assert parse_description("\n  Line one\n  line two\n") == "Line one\nline two"
    assert parse_description(None) == ""


def test_frontmatter_keys_are_case_insensitive_and_need_the_opening_quotes_alone() -> None:
    source = '"""\nTitle: Calc\nrequirements:aiohttp, pandas>=2\n  Version : 1\n"""\nx = 1\n'
    found = parse_frontmatter(source)
    assert found["title"] == "Calc" and found["requirements"] == "aiohttp, pandas>=2"
    assert "version" not in found  # "Version : 1" is not a key line in Open WebUI either
    assert parse_requirements(found["requirements"]) == ["aiohttp", "pandas>=2"]
    assert parse_frontmatter('"""title: x\n"""') == {}
    assert parse_frontmatter('# title: x\n"""\ntitle: y\n"""') == {}
    assert parse_frontmatter('"""\ntitle: a\n"""\n"""\nauthor: b\n"""') == {"title": "a"}


def test_the_engine_never_imports_langchain_or_open_webui() -> None:
    for path in sorted((REPO / "engine" / "tools").glob("openwebui*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            for name in names:
                assert name.split(".")[0] not in ("langchain", "langchain_core", "open_webui"), (
                    f"{path.name} imports {name}"
                )
