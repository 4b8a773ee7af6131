"""The docs tell the truth: every point, kind, field and verb is documented; examples run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.cli.hook_tool import VERBS
from engine.config.loader import load_hook_file
from engine.config.models import KINDS, HookBase
from engine.points import Point
from tests.conftest import REPO

DOCS = REPO / "docs"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_every_point_has_its_section() -> None:
    text = (DOCS / "points.md").read_text()
    for point in Point:
        assert f"\n## {point.value}\n" in text, point


def test_every_kind_and_field_is_documented() -> None:
    text = (DOCS / "hooks.md").read_text()
    for kind, model in KINDS.items():
        assert f"\n## {kind}\n" in text, kind
        section = text.split(f"\n## {kind}\n", 1)[1].split("\n## ", 1)[0]
        for field in model.model_fields:
            if field in HookBase.model_fields:
                assert f"`{field}`" in text, field
                continue
            for part in _nested(model, field):
                assert f"`{part}`" in section, f"{kind}.{part} is not documented"


def _nested(model: type[HookBase], field: str) -> list[str]:
    from pydantic import BaseModel

    annotation = model.model_fields[field].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f"{field}.{sub}" for sub in annotation.model_fields]
    return [field]


def test_every_hook_tool_verb_is_documented() -> None:
    text = (DOCS / "cli.md").read_text()
    for verb in VERBS:
        assert f"hook_tool <hook.yaml> {verb}" in text, verb


def test_yaml_hook_examples_in_the_docs_are_valid(tmp_path: Path) -> None:
    checked = 0
    for doc in sorted(DOCS.glob("*.md")):
        for n, block in enumerate(blocks(doc.read_text(), "yaml")):
            if not block.lstrip().startswith(("kind:", "#")) or "\nname:" not in block:
                continue
            if "script:" in block:  # refers to a file next to it; checked in scripting tests
                continue
            if "/tools/" in block.split("\n", 1)[0]:  # a tool file: checked by the tools tests
                continue
            path = tmp_path / f"{doc.stem}-{n}.yaml"
            path.write_text(block)
            spec, problems = load_hook_file(path)
            assert spec is not None, f"{doc.name} example {n}: {problems}"
            checked += 1
    assert checked >= 4


DOC_FILES = [
    "index.md",
    "points.md",
    "hooks.md",
    "scripting.md",
    "internals.md",
    "cli.md",
    "http.md",
    "operations.md",
    "hosts.md",
    "opa.md",
    "litellm.md",
    "claude-code.md",
    "mcp.md",
    "langchain.md",
    "openai-agents.md",
    "tools.md",
    "tools-taskweaver.md",
    "tools-openwebui.md",
    "builtins.md",
    "builtins-entries.md",
    "builtins-compaction.md",
    "builtins-layers.md",
    "builtins-approval.md",
    "builtins-delegate.md",
]


def anchors(text: str) -> set[str]:
    """GitHub-style anchors of a markdown file's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("doc", DOC_FILES)
def test_docs_exist_and_link_nothing_missing(doc: str) -> None:
    text = (DOCS / doc).read_text()
    for target, anchor in re.findall(r"\]\(([a-z_]*\.md)?(?:#([^)]*))?\)", text):
        path = DOCS / target if target else DOCS / doc
        assert path.is_file(), f"{doc} links to missing {target}"
        if anchor:
            assert anchor in anchors(path.read_text()), f"{doc} links to missing #{anchor}"


def test_every_page_in_docs_is_link_checked() -> None:
    assert sorted(path.name for path in DOCS.glob("*.md")) == sorted(DOC_FILES)
