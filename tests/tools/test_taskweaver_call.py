"""Calling TaskWeaver plugins: DataFrames, returns by position, self.ctx, artifacts, tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd  # the tools-data extra, part of the test extra
import pytest

from engine.tools.base import ToolInputError, ToolResult
from engine.tools.taskweaver import run_plugin_tests
from tests.tools.taskweaver_support import FIXTURES, FolderContext, load, write_plugin

SERIES = "ts,val\n" + "".join(
    f"2024-01-{i % 28 + 1:02d},{100 if i == 20 else 1 + i % 3}\n" for i in range(40)
)


def test_anomaly_detection_runs_on_a_csv_artifact(tmp_path: Path) -> None:
    ctx = FolderContext(tmp_path)
    series = ctx.add_artifact("series", "series.csv", "df", SERIES)
    tool = load(FIXTURES / "anomaly_detection.yaml")
    result = tool.invoke({"df": series, "time_col_name": "ts", "value_col_name": "val"}, ctx)
    assert not result.is_error, result.content
    assert result.content == "There are 1 anomalies in the time series data"
    returned = result.data["df"]["artifact"]
    assert [(a["name"], a["type"]) for a in result.artifacts] == [
        ("anomaly_detection_results", "df"),
        ("df", "df"),
    ]
    assert result.artifacts[1]["id"] == returned
    frame = pd.read_csv(ctx.artifact_path(returned))
    assert list(frame.columns) == ["ts", "val", "Is_Anomaly"]
    assert frame["Is_Anomaly"].tolist() == [i == 20 for i in range(40)]
    stored = ctx.artifacts[-1]
    assert stored.desc.startswith("This DataFrame extends the input DataFrame")
    assert stored.file_name == "df.csv"


def test_a_dataframe_parameter_takes_a_csv_file_name(tmp_path: Path) -> None:
    ctx = FolderContext(tmp_path)
    ctx.add_artifact("series", "series.csv", "df", SERIES)
    tool = load(FIXTURES / "anomaly_detection.yaml")
    result = tool.invoke({"df": "series.csv", "time_col_name": "ts", "value_col_name": "val"}, ctx)
    assert result.content.startswith("There are 1 anomalies")


def test_a_dataframe_parameter_naming_no_artifact_is_an_input_error(tmp_path: Path) -> None:
    tool = load(FIXTURES / "anomaly_detection.yaml")
    ctx = FolderContext(tmp_path)
    with pytest.raises(ToolInputError, match=r"'nothing\.csv'"):
        tool.invoke({"df": "nothing.csv", "time_col_name": "ts", "value_col_name": "v"}, ctx)
    empty = ctx.add_artifact("empty", "empty.csv", "df", "")
    with pytest.raises(ToolInputError, match="df: artifact 'art1' is not a readable CSV"):
        tool.invoke({"df": empty, "time_col_name": "ts", "value_col_name": "v"}, ctx)


def test_a_plugin_returning_none_gives_an_error_result(tmp_path: Path) -> None:
    ctx = FolderContext(tmp_path)
    text = ctx.add_artifact("words", "words.csv", "df", "ts,val\nnot a date,1\n")
    tool = load(FIXTURES / "anomaly_detection.yaml")  # `return` when ts is no datetime
    result = tool.invoke({"df": text, "time_col_name": "ts", "value_col_name": "val"}, ctx)
    assert result.is_error
    assert "returned None; returns: declares 2 (df, description)" in result.content


def test_a_lazy_heavy_import_loads_and_its_call_is_an_error_naming_the_module(
    tmp_path: Path,
) -> None:
    tool = load(FIXTURES / "lazy_forecast.yaml")
    result = tool.invoke({"values": [1, 2, 3]}, FolderContext(tmp_path))
    assert result.is_error
    assert "'hookengine_absent_forecaster'" in result.content
    assert "lazy_forecast" in result.content


def test_every_argument_and_configuration_reaches_the_plugin(tmp_path: Path) -> None:
    tool = load(FIXTURES / "echo_all.yaml")
    given = {
        "text": "hi",
        "ratio": 0.5,
        "flag": True,
        "items": [1, "two"],
        "mapping": {"k": [None]},
        "anything": 3,
        "nothing": None,
    }
    result = tool.invoke(given, FolderContext(tmp_path))
    assert result.content == "hi"  # count's YAML default, 1
    assert result.data == {
        "echo": {
            **given,
            "count": 1,
            "config": {"greeting": "hello", "api_key": None},
            "plugin": "echo_all",
        }
    }


def test_each_call_gets_a_fresh_plugin_and_its_own_config(tmp_path: Path) -> None:
    py = """\
from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Counter(Plugin):
    calls = 0

    def __call__(self, a):
        self.calls += 1
        self.config["seen"] = a
        return f"calls={self.calls} config={sorted(self.config)}"
"""
    yaml = _yaml(["a: int"], ["description: str"]) + "configurations:\n  base: 1\n"
    tool = load(write_plugin(tmp_path, yaml, py))
    ctx = FolderContext(tmp_path)
    assert tool.invoke({"a": 1}, ctx).content == "calls=1 config=['base', 'seen']"
    assert tool.invoke({"a": 2}, ctx).content == "calls=1 config=['base', 'seen']"
    assert tool.schema.configurations == {"base": 1}


def _yaml(params: list[str], returns: list[str]) -> str:
    def items(specs: list[str]) -> str:
        out = ""
        for spec in specs:
            name, kind = (part.strip() for part in spec.split(":"))
            out += f"  - name: {name}\n    type: {kind}\n    description: the {name} value\n"
        return out or "  []\n"

    return (
        "name: p\ndescription: A plugin made for one test case.\n"
        f"parameters:\n{items(params)}returns:\n{items(returns)}"
    )


def _call(
    tmp_path: Path, returns: list[str], body: str, ctx: FolderContext | None = None
) -> ToolResult:
    py = (
        "from taskweaver.plugin import Plugin, register_plugin\n\n\n@register_plugin\n"
        f"class P(Plugin):\n    def __call__(self):\n        {body}\n"
    )
    tool = load(write_plugin(tmp_path, _yaml([], returns), py))
    return tool.invoke({}, ctx or FolderContext(tmp_path))


@pytest.mark.parametrize(
    ("returns", "body", "content", "data"),
    [
        (
            ["description: str", "count: int"],
            "return 'two of them', 2",
            "two of them",
            {"count": 2},
        ),
        (
            ["summary: str", "note: str"],
            "return 'a summary', 'a note'",
            "a note",
            {"summary": "a summary"},
        ),
        (["description: str"], "return 'only text'", "only text", None),
        (
            ["rows: list", "description: str"],
            "return [[1, 'a']], 'one row'",
            "one row",
            {"rows": [[1, "a"]]},
        ),
        (
            ["total: int", "description: str"],
            "import numpy\n        return numpy.int64(7), 'seven'",
            "seven",
            {"total": 7},
        ),
    ],
    ids=["description-first", "last-string", "single", "list", "numpy-scalar"],
)
def test_returns_map_by_position(
    tmp_path: Path, returns: list[str], body: str, content: str, data: object
) -> None:
    result = _call(tmp_path, returns, body)
    assert (result.is_error, result.content, result.data) == (False, content, data)


def test_no_returns_section_takes_the_value_as_the_text(tmp_path: Path) -> None:
    result = _call(tmp_path, [], "return 'plain'")
    assert (result.is_error, result.content) == (False, "plain")


@pytest.mark.parametrize(
    ("returns", "body", "fragment"),
    [
        (["description: str"], "return None", "returned None for 'description'"),
        (["a: str", "description: str"], "return 'x'", "returned a str; returns: declares 2"),
        (["a: str", "description: str"], "return 'x', 'y', 'z'", "returned 3 values"),
        (["a: Any", "description: str"], "return {1, 2}, 'a set'", "returned a set for 'a'"),
        (["a: float", "description: str"], "return float('nan'), 'nan'", "not JSON data"),
        (["a: int", "b: int"], "return 1, 2", "returned no text for the model"),
        (["a: DataFrame", "description: str"], "return 'not a frame', 'x'", "declared a DataFrame"),
        (["a: Any", "description: str"], "return 'x', None", "returned None for 'description'"),
    ],
    ids=["none", "too-few", "too-many", "set", "nan", "no-text", "not-a-frame", "none-later"],
)
def test_a_bad_return_gives_an_error_result(
    tmp_path: Path, returns: list[str], body: str, fragment: str
) -> None:
    result = _call(tmp_path, returns, body)
    assert result.is_error and fragment in result.content, result.content
    assert result.content.startswith("plugin 'p' ")


def test_a_raising_plugin_raises_to_the_call_path(tmp_path: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        _call(tmp_path, ["description: str"], "return str(1 / 0)")


def test_every_artifact_type_is_stored_with_its_row(tmp_path: Path) -> None:
    ctx = FolderContext(tmp_path, session_vars={"user": "ada"})
    tool = load(FIXTURES / "artifacts.yaml")
    result = tool.invoke({"kind": "all"}, ctx)
    assert result.content == "Stored 8 artifacts for ada"
    kinds = ["chart", "image", "df", "file", "txt", "svg", "html"]
    assert [(a["type"], a["name"]) for a in result.artifacts] == [
        *[(k, f"report_{k}") for k in kinds],
        ("txt", "written"),
    ]
    assert [a["mime"] for a in result.artifacts] == [
        "image/png",
        "image/jpeg",
        "text/csv",
        "application/octet-stream",
        "text/plain",
        "image/svg+xml",
        "text/html",
        "text/plain",
    ]
    for row in result.artifacts:
        body = ctx.artifact_path(row["id"]).read_bytes()
        assert (row["bytes"], row["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert result.data == {
        "ids": {**{k: f"art{i + 1}" for i, k in enumerate(kinds)}, "written": "art8"}
    }
    assert ctx.artifact_path("art8").read_text() == "session=s1 execution=call-7"
    assert [a.desc for a in ctx.artifacts][:2] == ["a chart artifact", "a image artifact"]
    assert ctx.logs == [("info", "stored 8 artifacts"), ("debug", "done")]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (
            "self.ctx.add_artifact('x', 'x.pdf', 'pdf', 'v')",
            ValueError,
            "'pdf' is not one of chart, image, df, file, txt, svg, html",
        ),
        (
            "self.ctx.add_artifact('x', '../x.txt', 'txt', 'v')",
            ValueError,
            "must be a plain file name",
        ),
        (
            "self.ctx.create_artifact_path('x', '/etc/passwd', 'txt')",
            ValueError,
            "must be a plain file name",
        ),
        (
            "self.ctx.add_artifact('x', 'x.txt', 'txt', object())",
            TypeError,
            "val must be text or bytes, got object",
        ),
    ],
    ids=["bad-type", "traversal", "absolute", "not-text"],
)
def test_a_misused_artifact_call_raises_naming_the_rule(
    tmp_path: Path, call: str, error: type[Exception], fragment: str
) -> None:
    ctx = FolderContext(tmp_path)
    with pytest.raises(error, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        _call(tmp_path, ["description: str"], f"{call}\n        return 'never'", ctx)
    assert ctx.artifacts == []


def test_get_env_reads_plugin_prefixed_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = load(FIXTURES / "env_reader.yaml")
    monkeypatch.setenv("PLUGIN_env_reader_endpoint", "https://example.test/api")
    result = tool.invoke({}, FolderContext(tmp_path))
    assert result.content == "endpoint is https://example.test/api"
    monkeypatch.delenv("PLUGIN_env_reader_endpoint")
    monkeypatch.setenv("endpoint", "not this one")
    with pytest.raises(KeyError, match="PLUGIN_env_reader_endpoint is required"):
        tool.invoke({}, FolderContext(tmp_path))


def test_plugin_tests_run_and_report_each_outcome(tmp_path: Path) -> None:
    tool = load(FIXTURES / "tell_joke.yaml")
    results = run_plugin_tests(tool, FolderContext(tmp_path))
    assert [(r.name, r.passed) for r in results] == [
        ("test_tell_joke", True),
        ("test_joke_is_french", False),
    ]
    assert results[0].description == "an English joke comes back"
    assert results[1].error is not None and results[1].error.startswith("AssertionError: Why")


def test_plugin_tests_without_a_context_use_a_scratch_folder() -> None:
    py = """\
from taskweaver.plugin import Plugin, register_plugin, test_plugin


@register_plugin
class Saver(Plugin):
    def __call__(self, text):
        ident = self.ctx.add_artifact("saved", "saved.txt", "txt", text)
        return ident, "saved"


@test_plugin()
def test_saves(api_call):
    ident, description = api_call(text="kept")
    assert description == "saved" and ident
"""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        yaml = _yaml(["text: str"], ["ident: str", "description: str"])
        tool = load(write_plugin(Path(folder), yaml, py))
    (result,) = run_plugin_tests(tool)
    assert (result.name, result.passed, result.error) == ("test_saves", True, None)


def test_sys_exit_in_a_call_is_an_error_result_and_the_host_stays_up(tmp_path: Path) -> None:
    result = _call(tmp_path, ["description: str"], "raise SystemExit(2)")
    assert (result.is_error, result.content) == (True, "plugin 'p' called sys.exit(2)")


def test_nested_configurations_are_copied_per_call(tmp_path: Path) -> None:
    py = """\
from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Appender(Plugin):
    def __call__(self, a):
        self.config["seen"]["values"].append(a)
        return f"seen={self.config['seen']['values']}"
"""
    yaml = _yaml(["a: int"], ["description: str"]) + "configurations:\n  seen:\n    values: []\n"
    tool = load(write_plugin(tmp_path, yaml, py))
    ctx = FolderContext(tmp_path)
    assert tool.invoke({"a": 1}, ctx).content == "seen=[1]"
    assert tool.invoke({"a": 2}, ctx).content == "seen=[2]"


def test_artifacts_made_before_a_bad_return_are_still_listed(tmp_path: Path) -> None:
    body = "self.ctx.add_artifact('kept', 'kept.txt', 'txt', 'made')\n        return None"
    result = _call(tmp_path, ["description: str"], body)
    assert result.is_error
    assert [(a["name"], a["bytes"]) for a in result.artifacts] == [("kept", 4)]
