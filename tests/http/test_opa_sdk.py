"""The real OPA SDK (npm @open-policy-agent/opa, pinned in tests/fixtures/node) against a real
uvicorn server on loopback: ``evaluate`` and ``evaluateBatch`` with a bearer token, a mixed
batch, and a 401 for a wrong token. Needs ``npm ci`` in tests/fixtures/node: in CI (CI=true)
its absence fails; elsewhere the test skips and says why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.runtime import Engine
from tests.http.test_decisions import DECIDE, TOKENS, make_engine
from tests.http.test_http import run_server

NODE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "node"
SDK = NODE_DIR / "node_modules" / "@open-policy-agent" / "opa" / "package.json"


def node_or_skip() -> str:
    node = shutil.which("node")
    missing = "node" if node is None else None if SDK.exists() else f"{SDK} (run npm ci)"
    if missing is None:
        return str(node)
    if os.environ.get("CI") == "true":
        pytest.fail(f"the OPA SDK test needs {missing}; CI runs npm ci in {NODE_DIR}")
    pytest.skip(f"SKIPPED LOUDLY: the real OPA SDK test needs {missing}")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    eng: Engine = make_engine(tmp_path)
    try:
        yield from run_server(eng)
    finally:
        eng.close()


def test_the_real_opa_sdk_evaluates_and_batches_with_a_bearer_token(base: str) -> None:
    node = node_or_skip()
    done = subprocess.run(
        [node, str(NODE_DIR / "opa_client.mjs"), base, DECIDE, "a"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=NODE_DIR,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["allowed"]["allow"] is True and out["allowed"]["blocked"] is False
    assert out["blocked"]["allow"] is False
    assert out["blocked"]["reason"] == "deleting is not allowed: rm -rf /srv"
    assert out["batch"]["a"]["allow"] is True and out["batch"]["b"]["allow"] is False
    assert out["mixed"]["a"]["allow"] is True
    bad = out["mixed"]["bad"]
    assert bad["httpStatusCode"] == "500" and bad["code"] == "invalid_input"
    assert "body.inputs.bad.name" in bad["errors"][0]["message"]
    assert out["rejected"] is not None and "invalid_input" in json.dumps(out["rejected"])
    wrong = out["wrong"]
    assert wrong["name"] == "SDKError" and wrong["status"] == 401, wrong
    assert "Status 401 Content-Type application/json" in wrong["message"]
