"""Imports point one way (STYLE.md): a lower layer never imports a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

# Lowest first. A module may import its own layer and the layers below it.
LAYERS: list[set[str]] = [
    {"errors"},
    {"boundary", "encoding", "jsontext", "points", "policy", "text"},
    {"changes", "hosts", "store.records"},
    {"config"},
    {"store", "providers", "host_api"},
    {"sandbox"},
    {"kinds", "entries"},
    {"masking", "outcome", "records"},
    {"approvals", "batches", "pipeline"},
    {"tools"},
    {"runtime", "session", "session_layers", "point_calls"},
    {
        "reload",
        "reload_events",
        "reload_reads",
        "reload_watch",
        "reload_log",
        "replay",
        "explain",
        "why",
        "yamltests",
        "demo",
        "checking",
        "integrations",
    },
    {"cli", "http"},
]

# Deliberate exceptions, each with its reason.
ALLOWED = {
    # Engine.load(watch=True) is the documented API; the import is lazy, inside __init__.
    ("runtime", "reload"),
    # the demo renders outcomes the way the CLI does; imported lazily inside play().
    ("demo", "cli"),
}


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    for depth in (2, 1):
        name = ".".join(parts[:depth])
        for i, layer in enumerate(LAYERS):
            if name in layer:
                return i
    return None


def unit(module: str) -> str:
    parts = module.split(".")
    two = ".".join(parts[:2])
    return two if layer_of(two) is not None and two in set().union(*LAYERS) else parts[0]


def engine_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("engine."):
            found.add(node.module.removeprefix("engine."))
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix("engine.") for a in node.names if a.name.startswith("engine.")
            }
    return found


def test_imports_point_one_way() -> None:
    wrong = []
    for path in sorted((REPO / "engine").rglob("*.py")):
        module = ".".join(path.relative_to(REPO / "engine").with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module == "__init__":
            continue
        mine = layer_of(module)
        assert mine is not None, f"engine/{module} is in no layer: add it to LAYERS"
        for imported in engine_imports(path):
            theirs = layer_of(imported)
            if theirs is None:
                wrong.append(f"{module} imports unknown engine.{imported}")
            elif theirs > mine and (unit(module), unit(imported)) not in ALLOWED:
                wrong.append(f"{module} (layer {mine}) imports engine.{imported} (layer {theirs})")
    assert wrong == []


def test_the_sandbox_needs_nothing_above_the_points() -> None:
    """Workers load engine/sandbox alone: it must not pull in config, store or kinds."""
    for path in sorted((REPO / "engine" / "sandbox").rglob("*.py")):
        for imported in engine_imports(path):
            assert imported.split(".")[0] in {"errors", "points", "sandbox"}, (path, imported)
