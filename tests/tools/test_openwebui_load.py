"""A toolkit that cannot load says why, naming the file, the line and the field."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest
import yaml

from engine.tools.base import ToolLoadError
from engine.tools.openwebui import load_openwebui
from tests.tools.context import FakeLoadContext
from tests.tools.openwebui_support import load, write_toolkit

PLAIN = 'class Tools:\n    def ping(self) -> str:\n        """Ping."""\n        return "pong"\n'


def load_error(tmp_path: Path, name: str, source: str | None = None, **fields: object):
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, name, source, **fields)
    return exc.value.problems


def test_importing_open_webui_is_a_load_error_naming_the_module_and_line(tmp_path: Path) -> None:
    source = (
        '"""\ntitle: x\n"""\nimport json\nfrom open_webui.models.users import Users\n'
        "import open_webui.utils.misc as misc\n\n" + PLAIN
    )
    problems = load_error(tmp_path, "owui", source)
    assert [(p.line, p.message) for p in problems] == [
        (
            5,
            "imports open_webui.models.users: Open WebUI's own modules are not available in "
            "the engine",
        ),
        (
            6,
            "imports open_webui.utils.misc: Open WebUI's own modules are not available in "
            "the engine",
        ),
    ]
    assert problems[0].path.endswith("tools/owui.py")


def test_a_dynamic_open_webui_import_is_a_load_error_too(tmp_path: Path) -> None:
    source = "import importlib\nimportlib.import_module('open_webui.config')\n" + PLAIN
    problems = load_error(tmp_path, "dyn", source)
    assert problems[0].line == 2
    assert "cannot import open_webui" in problems[0].message
    assert problems[0].hint == "Open WebUI's own modules are not available in the engine"


def test_a_missing_requirement_is_a_load_error_and_is_never_installed(tmp_path: Path) -> None:
    source = (
        '"""\ntitle: x\nRequirements: aiohttp, surely-not-installed-pkg>=1.0, nopkg.sub\n"""\n'
        + PLAIN
    )
    problems = load_error(tmp_path, "req", source)
    assert [p.message for p in problems][1:] == ["'nopkg.sub' is not installed"]
    assert (problems[0].line, problems[0].field) == (3, "requirements")
    assert problems[0].message == "'surely-not-installed-pkg>=1.0' is not installed"
    assert "never installs" in (problems[0].hint or "")
    assert importlib.util.find_spec("surely_not_installed_pkg") is None


def test_installed_requirements_load_even_without_a_space(tmp_path: Path) -> None:
    source = '"""\nrequirements:aiohttp,PyYAML\n"""\n' + PLAIN
    assert list(load(tmp_path, "ok", source)) == ["ping"]


def test_a_module_the_file_imports_that_is_missing_is_named(tmp_path: Path) -> None:
    problems = load_error(tmp_path, "imp", "import json\nimport surely_missing_mod\n" + PLAIN)
    assert problems[0].line == 2
    assert problems[0].message.startswith("cannot import surely_missing_mod")
    assert problems[0].hint == "install it where the engine runs (pip install surely_missing_mod)"


def test_a_raising_constructor_is_a_load_error_with_its_line(tmp_path: Path) -> None:
    source = "class Tools:\n    def __init__(self):\n        raise RuntimeError('no key')\n"
    problems = load_error(tmp_path, "init", source)
    assert (problems[0].line, problems[0].message) == (3, "raised RuntimeError: no key")


def test_a_file_without_tools_or_with_bad_syntax_is_a_load_error(tmp_path: Path) -> None:
    assert load_error(tmp_path, "none", "x = 1\n")[0].message == "the file defines no Tools class"
    problem = load_error(tmp_path, "syntax", "class Tools:\n    def f(self:\n")[0]
    assert problem.line == 2 and problem.message.startswith("syntax error")


def test_a_hint_with_no_json_schema_is_a_load_error_naming_the_method(tmp_path: Path) -> None:
    source = (
        "from collections.abc import Callable\n\nclass Tools:\n"
        "    def apply(self, fn: Callable[[int], int]) -> str:\n"
        '        """Apply."""\n        return ""\n'
    )
    problem = load_error(tmp_path, "cb", source)[0]
    assert (problem.line, problem.field) == (4, "apply")
    assert problem.message.startswith("no JSON Schema for its parameters")


def test_a_method_name_too_long_for_a_tool_name_is_refused(tmp_path: Path) -> None:
    name = "m" * 65
    source = f'class Tools:\n    def {name}(self) -> str:\n        """Long."""\n        return ""\n'
    problem = load_error(tmp_path, "long", source)[0]
    assert (problem.field, problem.message) == (name, "not a valid tool name")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"valvez": {}}, "valvez", "unknown field 'valvez'"),
        ({"timeout_ms": 0}, "timeout_ms", "must be > 0, got 0"),
        ({"id": "bad id"}, "id", "String should match pattern '^[A-Za-z0-9_-]{1,64}$'"),
        ({"enabled": "sometimes"}, "enabled", "must be true or false, got text 'sometimes'"),
        ({"valves": ["a"]}, "valves", "must be a mapping, got a list"),
    ],
)
def test_bad_yaml_fields_are_load_errors_with_their_line(
    tmp_path: Path, fields: dict[str, object], field: str, message: str
) -> None:
    problem = load_error(tmp_path, "string_reverse", **fields)[0]
    assert (problem.line, problem.field, problem.message) == (3, field, message)


def test_an_unknown_yaml_field_suggests_the_right_one(tmp_path: Path) -> None:
    assert load_error(tmp_path, "string_reverse", valvez={})[0].hint == "did you mean 'valves'?"


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("../../outside.py", "'../../outside.py' is outside"),
        ("string_reverse.txt", "'string_reverse.txt' is not a .py file"),
        ("missing.py", "'missing.py': file not found"),
    ],
)
def test_the_file_must_be_a_py_file_inside_the_config(
    tmp_path: Path, file: str, message: str
) -> None:
    base = tmp_path / "base"
    path = write_toolkit(base, "string_reverse")
    (tmp_path / "outside.py").write_text(PLAIN)
    data = {"kind": "openwebui_tools", "file": file}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ToolLoadError) as exc:
        load_openwebui(path, data, FakeLoadContext(base))
    problem = exc.value.problems[0]
    assert (problem.line, problem.field) == (2, "file")
    assert problem.message.startswith(message)


def test_a_failed_load_leaves_root_logging_as_it_was(tmp_path: Path) -> None:
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    source = (
        "import logging\nlogging.basicConfig(level=logging.DEBUG, force=True)\n"
        "logging.getLogger().setLevel(logging.DEBUG)\nraise ValueError('late')\n"
    )
    assert load_error(tmp_path, "logs", source)[0].message == "raised ValueError: late"
    assert (root.level, list(root.handlers)) == before


def test_exit_at_import_is_a_load_error_and_the_host_stays_up(tmp_path: Path) -> None:
    problem = load_error(tmp_path, "quits", "import sys\nsys.exit(3)\n" + PLAIN)[0]
    assert (problem.line, problem.message) == (2, "raised SystemExit: 3")


def test_valves_that_are_not_a_pydantic_model_are_a_load_error(tmp_path: Path) -> None:
    source = "class Tools:\n    class Valves:\n        key = 'x'\n\n" + PLAIN.split("\n", 1)[1]
    problem = load_error(tmp_path, "odd", source, valves={"key": "y"})[0]
    assert (problem.field, problem.message) == ("Valves", "Valves is not a pydantic BaseModel")


RAISING_VALIDATOR = """
from pydantic import BaseModel, field_validator


class Tools:
    class Valves(BaseModel):
        region: str = "eu"

        @field_validator("region")
        @classmethod
        def known(cls, value: str) -> str:
            if value not in ("eu", "us"):
                raise ValueError("region must be eu or us")
            if value == "us":
                raise LookupError("no us servers today")
            return value

    def ping(self) -> str:
        return "pong"
"""


def test_a_valves_validator_message_is_the_error_and_the_host_stays_up(tmp_path: Path) -> None:
    problem = load_error(tmp_path, "val", RAISING_VALIDATOR, valves={"region": "mars"})[0]
    assert (problem.line, problem.field) == (4, "valves.region")
    assert problem.message == "region must be eu or us"
    problem = load_error(tmp_path, "val", RAISING_VALIDATOR, valves={"region": "us"})[0]
    assert (problem.field, problem.message) == (
        "valves",
        "Valves raised LookupError: no us servers today",
    )


def test_a_builtin_callable_attribute_without_a_signature_is_a_load_error(tmp_path: Path) -> None:
    source = "class Tools:\n    def __init__(self):\n        self.build = min\n"
    problem = load_error(tmp_path, "builtin", source)[0]
    assert problem.field == "build" and problem.message.startswith("no signature to read")


def test_a_file_name_with_a_nul_byte_is_a_load_error(tmp_path: Path) -> None:
    path = write_toolkit(tmp_path, "string_reverse")
    data = {"kind": "openwebui_tools", "file": "a\0b.py"}
    with pytest.raises(ToolLoadError) as exc:
        load_openwebui(path, data, FakeLoadContext(tmp_path))
    assert exc.value.problems[0].field == "file"
