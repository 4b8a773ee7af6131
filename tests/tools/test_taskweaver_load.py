"""Loading TaskWeaver plugins: the schema enforced field by field, the shim, the Python file."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import pytest

from engine.config.loader import show
from engine.tools.taskweaver import TaskWeaverTool
from tests.tools.taskweaver_support import FIXTURES, load, load_problems, write_plugin

SAMPLE_PY = """\
from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Sample(Plugin):
    def __call__(self, a):
        return f"the sum is {a}"
"""

SAMPLE_YAML = """\
name: sample
description: A sample plugin that adds two numbers.
parameters:
  - name: a
    type: int
    required: true
    description: the first number to add
returns:
  - name: description
    type: str
    description: the sum, said in words
"""


def test_the_seed_example_yaml_loads_verbatim() -> None:
    tool = load(FIXTURES / "anomaly_detection.yaml")
    assert tool.kind == "taskweaver" and tool.enabled and tool.isolation == "thread"
    assert tool.spec.name == "anomaly_detection"
    assert tool.spec.description.startswith("anomaly_detection function identifies anomalies")
    schema = tool.spec.input_schema
    assert list(schema["properties"]) == ["df", "time_col_name", "value_col_name"]
    assert schema["required"] == ["df", "time_col_name", "value_col_name"]
    assert schema["properties"]["df"]["type"] == "string"
    assert "artifact" in schema["properties"]["df"]["description"]
    assert schema["additionalProperties"] is False
    assert tool.plugin_class.__name__ == "AnomalyDetectionPlugin"
    assert tool.warnings == []


def test_every_field_is_read(tmp_path: Path) -> None:
    tool = load(FIXTURES / "echo_all.yaml")
    schema = tool.schema
    assert (schema.enabled, schema.required, schema.plugin_only) == (False, True, True)
    assert tool.enabled is False
    assert schema.code == "shared_echo" and tool.plugin_class.__name__ == "Echo"
    assert schema.configurations == {"greeting": "hello", "api_key": None}
    assert tool.spec.description == (
        "Echoes every argument back, with the plugin's configurations.\n\n"
        'Examples:\nresult, description = echo_all(text="hi", count=2)'
    )
    assert [r.name for r in schema.returns] == ["echo", "description"]
    count = tool.spec.input_schema["properties"]["count"]
    assert count == {
        "type": "integer",
        "description": "how many times to repeat the text",
        "default": 1,
    }
    assert tool.spec.input_schema["required"] == ["text"]


def test_each_type_maps_to_json_schema() -> None:
    props = load(FIXTURES / "echo_all.yaml").spec.input_schema["properties"]
    types_of = {name: {k: v for k, v in p.items() if k == "type"} for name, p in props.items()}
    assert types_of == {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "items": {"type": "array"},
        "mapping": {"type": "object"},
        "anything": {},
        "nothing": {"type": "null"},
    }


def test_two_yamls_share_one_code_file_with_their_own_configurations(tmp_path: Path) -> None:
    shared = (FIXTURES / "shared_echo.py").read_text()
    (tmp_path / "shared_echo.py").write_text(shared)
    for name, greeting in (("echo_a", "hi"), ("echo_b", "salut")):
        text = SAMPLE_YAML.replace("sample", name).replace("- name: a", "- name: text")
        text += f"code: shared_echo.py\nconfigurations:\n  greeting: {greeting}\n"
        write_plugin(tmp_path, text, None, name=name)
    a, b = load(tmp_path / "echo_a.yaml"), load(tmp_path / "echo_b.yaml")
    assert a.schema.configurations == {"greeting": "hi"}
    assert b.schema.configurations == {"greeting": "salut"}
    assert a.plugin_class is not b.plugin_class  # each YAML runs the file for itself


def test_a_short_item_description_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="engine.tools.taskweaver"):
        tool = load(FIXTURES / "tell_joke.yaml")
    expected = f"{show(FIXTURES / 'tell_joke.yaml')}:13: returns[0].description: "
    assert len(tool.warnings) == 1 and tool.warnings[0].startswith(expected)
    assert "'the joke.'" in tool.warnings[0]
    assert tool.warnings[0] in caplog.text


def test_register_plugin_on_a_function_makes_a_plugin() -> None:
    tool = load(FIXTURES / "tell_joke.yaml")
    assert tool.plugin_class.__name__ == "FunctionPlugin_tell_joke"
    assert [t.name for t in tool.tests] == ["test_tell_joke", "test_joke_is_french"]


def test_the_shim_exists_only_while_the_file_loads(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    py = SAMPLE_PY.replace(
        "@register_plugin",
        f"import sys\nwith open({str(seen)!r}, 'w') as f:\n"
        "    f.write(str('taskweaver.plugin' in sys.modules))\n"
        "@register_plugin",
    )
    load(write_plugin(tmp_path, SAMPLE_YAML, py, name="sample"))
    assert seen.read_text() == "True"
    assert not [m for m in sys.modules if m.lower().split(".")[0] == "taskweaver"]
    with pytest.raises(ImportError):
        __import__("taskweaver.plugin")


def test_the_shim_puts_back_a_module_that_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = types.ModuleType("taskweaver")
    monkeypatch.setitem(sys.modules, "taskweaver", real)
    tool = load(write_plugin(tmp_path, SAMPLE_YAML, SAMPLE_PY, name="sample"))
    assert tool.plugin_class.__name__ == "Sample"
    assert sys.modules["taskweaver"] is real
    assert "taskweaver.plugin" not in sys.modules


def test_concurrent_loads_keep_their_own_registrations(tmp_path: Path) -> None:
    paths = []
    for i in range(8):
        py = SAMPLE_PY.replace("class Sample", f"class Sample{i}").replace(
            "@register_plugin", "import time\ntime.sleep(0.01)\n@register_plugin"
        )
        yaml = SAMPLE_YAML.replace("name: sample", f"name: sample{i}")
        paths.append(write_plugin(tmp_path / str(i), yaml, py, name=f"sample{i}"))
    loaded: dict[int, TaskWeaverTool] = {}

    def run(i: int) -> None:
        loaded[i] = load(paths[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: t.plugin_class.__name__ for i, t in loaded.items()} == {
        i: f"Sample{i}" for i in range(8)
    }


def test_an_import_error_at_load_names_the_module(tmp_path: Path) -> None:
    py = "import hookengine_absent_plotting_lib\n" + SAMPLE_PY
    path = write_plugin(tmp_path, SAMPLE_YAML, py, name="sample")
    (problem,) = load_problems(path)
    assert problem.path == show(tmp_path / "sample.py") and problem.line == 1
    assert "'hookengine_absent_plotting_lib'" in problem.message


def test_pandas_missing_at_import_points_at_the_tools_data_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    path = write_plugin(tmp_path, SAMPLE_YAML, "import pandas as pd\n" + SAMPLE_PY, name="sample")
    (problem,) = load_problems(path)
    assert "'pandas'" in problem.message and "tools-data" in str(problem.hint)


def test_a_dataframe_type_without_pandas_is_a_load_error_naming_tools_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    problems = load_problems(FIXTURES / "anomaly_detection.yaml")
    shown = show(FIXTURES / "anomaly_detection.yaml")
    assert [(p.line, p.field) for p in problems] == [
        (9, "parameters[0].type"),
        (24, "returns[0].type"),
    ]
    assert all("tools-data" in str(p) and str(p).startswith(shown) for p in problems)


def test_an_import_of_the_shim_outside_it_fails_clearly(tmp_path: Path) -> None:
    py = SAMPLE_PY.replace("register_plugin\n", "register_plugin, plugin_config\n", 1)
    (problem,) = load_problems(write_plugin(tmp_path, SAMPLE_YAML, py, name="sample"))
    assert problem.line == 1 and "taskweaver.plugin" in problem.message
    assert "register_plugin and test_plugin" in str(problem.hint)


@pytest.mark.parametrize(
    ("py", "line", "fragment"),
    [
        ("def broken(:\n", 1, "syntax error"),
        (
            "from taskweaver.plugin import Plugin\n\n\nclass Sample(Plugin):\n    pass\n",
            None,
            "registers no plugin",
        ),
        (
            SAMPLE_PY + "\n\n@register_plugin\ndef other(a):\n    return 'x'\n",
            None,
            "registers 2 plugins (Sample, FunctionPlugin_other)",
        ),
        (
            "x = 1\nraise RuntimeError('no config')\n",
            2,
            "raised RuntimeError while loading: no config",
        ),
        (
            "from taskweaver.plugin import register_plugin\nregister_plugin(42)\n",
            2,
            "@register_plugin takes a Plugin subclass or a function",
        ),
    ],
    ids=["syntax", "none", "two", "raises", "not-callable"],
)
def test_a_bad_plugin_file_names_its_line(
    tmp_path: Path, py: str, line: int | None, fragment: str
) -> None:
    (problem,) = load_problems(write_plugin(tmp_path, SAMPLE_YAML, py, name="sample"))
    assert problem.path == show(tmp_path / "sample.py")
    assert (problem.line, fragment in problem.message) == (line, True), problem


def _swap(old: str, new: str) -> str:
    assert old in SAMPLE_YAML
    return SAMPLE_YAML.replace(old, new)


BAD_YAMLS = [
    (
        "unknown-field",
        SAMPLE_YAML + "descriptions: more words here\n",
        12,
        "descriptions",
        "did you mean 'description'?",
    ),
    (
        "unknown-item-field",
        _swap("    required: true", "    requried: true"),
        6,
        "parameters[0].requried",
        "did you mean 'required'?",
    ),
    (
        "bad-name",
        _swap("name: sample", "name: sample-tool"),
        1,
        "name",
        "letters, digits and '_' only",
    ),
    ("long-name", _swap("name: sample", "name: " + "s" * 65), 1, "name", "at most 64"),
    (
        "short-description",
        _swap("A sample plugin that adds two numbers.", "adds"),
        2,
        "description",
        "at least 10 characters",
    ),
    (
        "missing-description",
        _swap("description: A sample plugin that adds two numbers.\n", ""),
        1,
        "description",
        "required field is missing",
    ),
    (
        "unknown-type",
        _swap("type: int", "type: integer"),
        5,
        "parameters[0].type",
        "did you mean 'int'?",
    ),
    (
        "generic-type",
        _swap("type: int", "type: List[int]"),
        5,
        "parameters[0].type",
        "unknown type 'List[int]' (did you mean 'list'?)",
    ),
    (
        "item-missing-type",
        _swap("    type: int\n", ""),
        4,
        "parameters[0].type",
        "required field is missing",
    ),
    ("enabled-not-bool", SAMPLE_YAML + "enabled: sometimes\n", 12, "enabled", "true or false"),
    (
        "parameters-mapping",
        _swap("  - name: a\n", "  name: a\n")
        .replace("    type: int", "  type: int")
        .replace("    required", "  required")
        .replace("    description: the first", "  description: the first"),
        3,
        "parameters",
        "must be a list",
    ),
    (
        "duplicate-parameter",
        _swap(
            "returns:",
            "  - name: a\n    type: str\n    description: the first number again\nreturns:",
        ),
        8,
        "parameters[1].name",
        "'a' twice",
    ),
    (
        "date-default",
        _swap("    required: true", "    default: 2024-01-01"),
        6,
        "parameters[0].default",
        "must be JSON data",
    ),
    (
        "configurations-list",
        SAMPLE_YAML + "configurations: [a, b]\n",
        12,
        "configurations",
        "a mapping",
    ),
    (
        "code-traversal",
        SAMPLE_YAML + "code: ../outside\n",
        12,
        "code",
        "must name a .py file beside the YAML",
    ),
    ("code-missing", SAMPLE_YAML + "code: nowhere\n", 12, "code", "no plugin file nowhere.py"),
    (
        "parameter-not-an-argument",
        _swap("- name: a", "- name: b"),
        4,
        "parameters[0].name",
        "'b' is not an argument of the plugin's __call__",
    ),
    ("examples-not-text", SAMPLE_YAML + "examples: [1, 2]\n", 12, "examples", "must be text"),
]


@pytest.mark.parametrize(
    ("yaml", "line", "field", "fragment"),
    [case[1:] for case in BAD_YAMLS],
    ids=[case[0] for case in BAD_YAMLS],
)
def test_a_bad_yaml_names_file_line_and_field(
    tmp_path: Path, yaml: str, line: int, field: str | None, fragment: str
) -> None:
    path = write_plugin(tmp_path, yaml, SAMPLE_PY, name="sample")
    problems = load_problems(path)
    first = problems[0]
    assert (first.path, first.line, first.field) == (show(path), line, field), problems
    assert fragment in str(first), str(first)
    where = f"{show(path)}:{line}: " + (f"{field}: " if field else "")
    assert str(first).startswith(where)


def test_a_bad_yaml_reports_every_problem_at_once(tmp_path: Path) -> None:
    fields = SAMPLE_YAML + "colour: blue\nversion: 2\n"
    problems = load_problems(write_plugin(tmp_path / "a", fields, SAMPLE_PY, name="sample"))
    assert [(p.field, p.line) for p in problems] == [("colour", 12), ("version", 13)]
    types_ = _swap("type: int", "type: integer").replace("type: str", "type: text")
    problems = load_problems(write_plugin(tmp_path / "b", types_, SAMPLE_PY, name="sample"))
    assert [(p.field, p.line) for p in problems] == [
        ("parameters[0].type", 5),
        ("returns[0].type", 10),
    ]
    assert "did you mean 'str'?" in str(problems[1])


def test_the_code_file_must_not_be_a_link_out_of_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(SAMPLE_PY)
    folder = tmp_path / "plugins"
    path = write_plugin(folder, SAMPLE_YAML + "code: evil\n", None, name="sample")
    (folder / "evil.py").symlink_to(outside / "evil.py")
    (problem,) = load_problems(path)
    assert (problem.field, problem.line) == ("code", 12)


def test_a_plugin_module_is_importable_by_name_until_the_tool_closes(tmp_path: Path) -> None:
    py = "from __future__ import annotations\n\nfrom dataclasses import dataclass\n\n" + (
        SAMPLE_PY.replace(
            "@register_plugin",
            "@dataclass\nclass Row:\n    a: int\n\n\n@register_plugin",
        ).replace('return f"the sum is {a}"', 'return f"the sum is {Row(a).a}"')
    )
    tool = load(write_plugin(tmp_path, SAMPLE_YAML, py, name="sample"))
    assert sys.modules[tool.module_name].__file__ == str(tmp_path / "sample.py")
    tool.close()
    assert tool.module_name not in sys.modules


def test_a_failed_load_leaves_no_module_behind(tmp_path: Path) -> None:
    before = set(sys.modules)
    for i, py in enumerate(
        ["raise SystemExit(3)\n", "x = 1\n", SAMPLE_PY.replace("(self, a)", "(self)")]
    ):
        load_problems(write_plugin(tmp_path / str(i), SAMPLE_YAML, py, name="sample"))
    assert {m for m in set(sys.modules) - before if m.startswith("hookengine_taskweaver")} == set()


def test_sys_exit_while_loading_is_a_load_error(tmp_path: Path) -> None:
    (problem,) = load_problems(
        write_plugin(tmp_path, SAMPLE_YAML, "raise SystemExit(3)\n", "sample")
    )
    assert (problem.line, problem.message) == (1, "raised SystemExit while loading: 3")


def test_an_unreadable_plugin_file_is_a_load_error(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, SAMPLE_YAML, None, name="sample")
    (tmp_path / "sample.py").write_bytes(b"x = '\xff\xfe'\n")
    (problem,) = load_problems(path)
    assert problem.path == show(tmp_path / "sample.py")
    assert problem.message.startswith("cannot read the plugin file")


def test_a_plugin_file_that_loads_a_plugin_keeps_both_registrations(tmp_path: Path) -> None:
    inner = write_plugin(tmp_path / "inner", SAMPLE_YAML, SAMPLE_PY, name="sample")
    outer_py = f"""\
from taskweaver.plugin import Plugin, register_plugin
from tests.tools.taskweaver_support import load

INNER = load(__import__("pathlib").Path({str(inner)!r}))


@register_plugin
class Outer(Plugin):
    def __call__(self, a):
        return INNER.plugin_class.__name__
"""
    done: list[TaskWeaverTool] = []
    outer = write_plugin(tmp_path / "outer", SAMPLE_YAML, outer_py, name="sample")
    thread = threading.Thread(target=lambda: done.append(load(outer)), daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert done, "loading a plugin from a plugin file deadlocked"
    assert done[0].plugin_class.__name__ == "Outer"
    assert "taskweaver" not in sys.modules


def test_a_function_plugin_declares_only_its_own_arguments(tmp_path: Path) -> None:
    py = "from taskweaver.plugin import register_plugin\n\n\n@register_plugin\n"
    py += "def sample(b):\n    return str(b)\n"
    (problem,) = load_problems(write_plugin(tmp_path, SAMPLE_YAML, py, name="sample"))
    assert (problem.line, problem.field) == (4, "parameters[0].name")
    assert problem.hint == "arguments: b"


def test_loading_the_engine_module_imports_neither_pandas_nor_a_shim() -> None:
    import subprocess

    code = (
        "import sys, engine.tools.taskweaver; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pandas', 'numpy', 'taskweaver', 'taskWeaver')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
        check=True,
    )
    assert done.stdout.strip() == "[]"
