"""The curl examples of docs/http.md and docs/opa.md, run against a real server over the demo
config: each must answer the JSON the docs show after it (ids and timings aside), and the
docs' links must resolve."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.runtime import Engine
from tests.conftest import REPO
from tests.http.test_http import run_server

DOCS = REPO / "docs"
TOKEN = "docs-example-token"
VOLATILE = {
    "decision_id",
    "batch_decision_id",
    "turn_id",
    "duration_us",
    "duration_ms",
    "version",
}
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def examples(doc: str) -> list[tuple[str, Any]]:
    """Each ``sh`` block that runs curl, with the JSON block that follows it."""
    blocks = BLOCK.findall((DOCS / doc).read_text())
    found = []
    for (lang, code), (next_lang, answer) in itertools.pairwise(blocks):
        if lang == "sh" and code.lstrip().startswith("curl") and next_lang == "json":
            found.append((code, json.loads(answer)))
    return found


def steady(data: Any) -> Any:
    """``data`` with its ids and timings blanked."""
    if isinstance(data, dict):
        return {k: None if k in VOLATILE else steady(v) for k, v in data.items()}
    if isinstance(data, list):
        return [steady(v) for v in data]
    return data


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("docs")
    config = root / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("data"))
    with (config / "engine.yaml").open("a") as f:
        f.write(
            "http:\n  tokens:\n    - {name: sidecar, env: HOOKENGINE_TOKEN, scopes: [decide]}\n"
        )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOOKENGINE_TOKEN", TOKEN)
        engine = Engine.load(config, db=str(root / "docs.db"))
        try:
            yield from run_server(engine)
        finally:
            engine.close()


@pytest.mark.parametrize("doc", ["http.md", "opa.md"])
def test_the_curl_examples_answer_what_the_docs_show(base: str, doc: str) -> None:
    curl = shutil.which("curl")
    if curl is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the docs' examples need curl")
        pytest.skip("SKIPPED LOUDLY: curl is not installed; the docs' examples were not run")
    found = examples(doc)
    assert len(found) >= (6 if doc == "http.md" else 2)
    env = {**os.environ, "HOOKENGINE_TOKEN": TOKEN}
    for code, expected in found:
        command = code.replace("http://127.0.0.1:8765", base)
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, timeout=30, env=env
        )
        assert done.returncode == 0, (code, done.stderr)
        assert steady(json.loads(done.stdout)) == steady(expected), code


@pytest.mark.parametrize("doc", ["http.md", "opa.md"])
def test_the_docs_links_resolve(doc: str) -> None:
    text = (DOCS / doc).read_text()
    for target, anchor in re.findall(r"\]\(([a-z_]*\.md)?(?:#([^)]*))?\)", text):
        path = DOCS / target if target else DOCS / doc
        assert path.is_file(), f"{doc} links to missing {target}"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{doc} links to missing {target}#{anchor}"


def test_the_sdk_example_in_opa_md_is_the_one_the_tests_run() -> None:
    script = (REPO / "tests/fixtures/node/opa_client.mjs").read_text()
    doc = (DOCS / "opa.md").read_text()
    assert 'import { OPAClient } from "@open-policy-agent/opa";' in script and doc
    for call in ("new OPAClient(", "evaluate(", "evaluateBatch(", "rejectMixed: true"):
        assert call in script and call in doc, call
    assert Path(REPO / "tests/http/test_opa_sdk.py").is_file()
