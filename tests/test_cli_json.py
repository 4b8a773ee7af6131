"""Every command's ``--json`` output has a documented shape: docs/schemas/<command>.json,
checked here with jsonschema on real output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.cli.hook_tool import main as hook_tool
from engine.cli.hookengine import main as hookengine
from tests.conftest import REPO, copy_demo

SCHEMAS = REPO / "docs/schemas"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The demo config and a store the demo conversation was recorded in."""
    folder = tmp_path_factory.mktemp("json")
    root = copy_demo(folder)
    db = str(folder / "demo.db")
    assert hookengine(["demo", "--config", str(root), "--db", db]) == 0
    return root, db


def output(
    capsys: pytest.CaptureFixture[str], command: Callable[[list[str]], int], argv: list[str]
) -> Any:
    capsys.readouterr()
    code = command(argv)
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


def conforms(data: Any, schema: str) -> None:
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / schema).read_text()))
    errors = sorted(validator.iter_errors(data), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def first_id(root: Path, db: str, capsys: pytest.CaptureFixture[str]) -> str:
    records = output(capsys, hookengine, ["records", "--db", db, "--point", "tool_call", "--json"])
    return str(records[0]["id"])


COMMANDS: dict[str, Callable[[Path, str, str], list[str]]] = {
    "check": lambda root, db, rid: ["check", str(root), "--json"],
    "test": lambda root, db, rid: ["test", "--config", str(root), "--json"],
    "records": lambda root, db, rid: ["records", "--db", db, "--json"],
    "explain-agent": lambda root, db, rid: [
        "explain",
        "--config",
        str(root),
        "--agent",
        "demo",
        "--json",
    ],
    "explain-record": lambda root, db, rid: ["explain", rid, "--db", db, "--json"],
    "replay": lambda root, db, rid: ["replay", "--config", str(root), "--db", db, "--json"],
    "status": lambda root, db, rid: ["status", str(root), "--db", db, "--json"],
}


@pytest.mark.parametrize("schema", sorted(COMMANDS))
def test_hookengine_json_output_matches_its_schema(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str], schema: str
) -> None:
    root, db = project
    argv = COMMANDS[schema](root, db, first_id(root, db, capsys))
    conforms(output(capsys, hookengine, argv), f"{schema}.json")


def test_records_id_json_matches_the_records_schema(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, db = project
    rid = first_id(root, db, capsys)
    conforms(
        output(capsys, hookengine, ["records", "--db", db, "--id", rid, "--json"]), "records.json"
    )


def test_demo_json_matches_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_demo(tmp_path)
    argv = ["demo", "--config", str(root), "--db", str(tmp_path / "d.db"), "--json"]
    data = output(capsys, hookengine, argv)
    conforms(data, "demo.json")
    assert len(data["outcomes"]) > 10


def test_check_json_of_a_broken_config_lists_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_demo(tmp_path)
    (root / "agents/demo/hooks/city_hint.yaml").write_text("kind: inject\nname: x\nbogus: 1\n")
    capsys.readouterr()
    assert hookengine(["check", str(root), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    conforms(data, "check.json")
    assert data["ok"] is False
    assert data["problems"][0]["field"] == "bogus" and data["problems"][0]["line"] == 3


HOOK = REPO / "config/agents/demo/hooks/no_deletes.yaml"


@pytest.mark.parametrize(
    "argv",
    [
        [str(HOOK), "tool", "delete_file", '{"path": "a"}', "--json"],
        [str(HOOK), "call", '{"instruction": "Be brief."}', "--json"],
    ],
)
def test_hook_tool_json_matches_its_schema(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    conforms(output(capsys, hook_tool, argv), "hook_tool.json")


def test_hook_tool_test_json_matches_the_test_schema(capsys: pytest.CaptureFixture[str]) -> None:
    data = output(capsys, hook_tool, [str(HOOK), "test", "--json"])
    conforms(data, "test.json")
    assert data["ok"] is True and data["passed"] > 3


def test_every_schema_is_valid_and_documented() -> None:
    cli = (REPO / "docs/cli.md").read_text()
    for path in sorted(SCHEMAS.glob("*.json")):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))
        assert f"schemas/{path.name}" in cli, f"docs/cli.md does not link {path.name}"


def test_the_ci_snippet_in_the_docs_turns_problems_into_annotations(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import console

    cli = (REPO / "docs/cli.md").read_text()
    snippet = cli.split("a CI step that fails on a check problem and lists them:\n\n```sh\n")[1]
    snippet = snippet.split("```")[0]
    root = copy_demo(tmp_path)
    (root / "agents/demo/hooks/city_hint.yaml").write_text("kind: inject\nname: x\nbogus: 1\n")
    bin_dir = str(console("hookengine").parent)
    done = subprocess.run(
        ["bash", "-c", snippet],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.startswith(
        "::error file=config/agents/demo/hooks/city_hint.yaml,line=3::"
    ), done.stderr
