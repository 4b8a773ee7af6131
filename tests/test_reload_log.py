"""``serve --watch`` logs each reload that went live (generation, files, hash), and
``GET /v1/status`` lists the same."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from fastapi.testclient import TestClient

from engine.cli.cmd_serve import log_reloads
from engine.http.app import create_app
from engine.reload_log import ReloadLog, hooks_hash
from engine.runtime import Engine
from tests.conftest import REPO, write
from tests.test_reload import wait_until

ENGINE_YAML = "process: p\nhttp:\n  tokens:\n    - {name: ops, env: T_ADMIN, scopes: [admin]}\n"
INJECT = "kind: inject\nname: ctx\nmessages:\n  - {{role: system, content: {text}}}\n"


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setenv("T_ADMIN", "admin-token")
    write(
        tmp_path / "config",
        {
            "engine.yaml": ENGINE_YAML,
            "agents/a/agent.yaml": "hooks: [ctx]\n",
            "agents/a/hooks/ctx.yaml": INJECT.format(text="be kind"),
        },
    )
    return Engine.load(tmp_path / "config", db=":memory:")


def edit(engine: Engine, text: str) -> None:
    (engine.project.root / "agents/a/hooks/ctx.yaml").write_text(INJECT.format(text=text))
    assert engine.reload_agent("a")


def test_serve_logs_each_reload_with_generation_files_and_hash(
    tmp_path: Path, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.close()
    lines: list[str] = []
    with Engine.load(tmp_path / "config", db=":memory:", watch=True) as watching:
        log_reloads(watching)
        ReloadLog.of(watching).listeners.append(lambda entry: lines.append(entry["hash"]))
        before = hooks_hash(watching, "a")
        hook = tmp_path / "config/agents/a/hooks/ctx.yaml"
        hook.write_text(INJECT.format(text="be brief"))
        wait_until(lambda: bool(lines))
        watching.reload_agent("a")  # nothing changed: not a reload that went live
        after = hooks_hash(watching, "a")
    err = capsys.readouterr().err
    assert before != after and lines == [after]
    assert err == (
        f"hookengine serve: reloaded a: generation 1, files {hook.resolve()}, hash {after}\n"
    )


def test_status_lists_the_reloads_the_service_ran(engine: Engine) -> None:
    with engine:
        client = TestClient(create_app(engine))
        edit(engine, "be brief")
        edit(engine, "be precise")
        data = client.get("/v1/status", headers={"Authorization": "Bearer admin-token"}).json()
        logged = ReloadLog.of(engine).entries()
    assert [(r["agent"], r["generation"]) for r in data["reloads"]] == [("a", 1), ("a", 2)]
    assert data["reloads"] == logged
    assert data["reloads"][-1]["hash"] == hooks_hash(engine, "a")
    schema = json.loads((REPO / "docs/schemas/status.json").read_text())
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
