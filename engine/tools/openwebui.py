"""Open WebUI toolkits (``kind: openwebui_tools``): a ``Tools`` class file loaded unchanged.

A toolkit YAML names the ``.py`` file and its ``valves:``. Each public method of ``Tools``
becomes one tool, its spec made by Open WebUI 0.12.4's rules (``openwebui_specs``). The file
is trusted in-process code: it is imported once at load (its ``requirements:`` must already be
importable; nothing is ever installed), sync methods run in a thread, async ones are awaited.

``openwebui_specs`` holds the spec rules, ``openwebui_toolkit`` the imported file and its
valves, ``openwebui_call`` one method's call.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config.models import Int
from engine.config.yamlfile import ConfigReadError, read_text
from engine.errors import Problem
from engine.tools.base import LoadContext, Tool, ToolLoadError
from engine.tools.openwebui_specs import parse_frontmatter, parse_requirements
from engine.tools.openwebui_toolkit import Toolkit, load_error, problems_of

MAX_TOOLKIT_BYTES = 1_000_000
"""The largest toolkit ``.py`` file read."""

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class OpenWebUIConfig(BaseModel):
    """A toolkit YAML (``kind: openwebui_tools``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["openwebui_tools"]
    file: str
    """The toolkit's ``.py`` file, relative to the YAML's folder."""
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The toolkit's id (``__id__``); default: the file's name without ``.py``."""
    valves: dict[str, Any] = Field(default_factory=dict)
    """Values for the toolkit's ``Valves``, validated by it at load."""
    user_valves: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Starting ``UserValves`` values per user id, validated at load."""
    enabled: bool = True
    """False: validated at load, never offered or called."""
    timeout_ms: Int | None = Field(default=None, gt=0)
    """Each method's time limit (default: the engine's)."""
    annotations: dict[str, Any] = Field(default_factory=dict)
    """MCP tool annotations given to every method's spec."""


# -- loading -----------------------------------------------------------------------------


def load_openwebui(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    """Load a toolkit YAML and its ``.py`` file: one tool per public method of ``Tools``.

    Args:
        path: the YAML file.
        data: its parsed mapping.
        ctx: what loading may use (``ctx.line`` for the lines of errors).

    Returns:
        The toolkit's tools, in method-name order.

    Raises:
        ToolLoadError: every problem found, each with file, line and field.
    """
    config = _validate(path, data, ctx)
    source_path = _source_path(path, config, ctx)
    source = _read(source_path)
    _check_source(source_path, source)
    toolkit = Toolkit.load(config, source_path, source, ctx.agent)
    try:
        toolkit.configure(config, path, ctx)
        return toolkit.tools(config)
    except ToolLoadError:
        toolkit.close()
        raise


def _validate(path: Path, data: dict[str, Any], ctx: LoadContext) -> OpenWebUIConfig:
    try:
        return OpenWebUIConfig.model_validate(data)
    except ValidationError as exc:
        raise ToolLoadError(problems_of(exc, path, ctx, OpenWebUIConfig)) from exc


def _source_path(path: Path, config: OpenWebUIConfig, ctx: LoadContext) -> Path:
    """The toolkit file: a ``.py`` inside the config folder's parent (no traversal out)."""
    line = ctx.line(path, "file")
    try:
        where = (path.parent / config.file).resolve()
    except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop
        raise load_error(path, line, "file", f"{config.file!r}: {exc}") from exc
    if where.suffix != ".py":
        raise load_error(path, line, "file", f"{config.file!r} is not a .py file")
    if not where.is_relative_to(ctx.base_dir.resolve()):
        raise load_error(path, line, "file", f"{config.file!r} is outside {ctx.base_dir}")
    if not where.is_file():
        raise load_error(path, line, "file", f"{config.file!r}: file not found")
    return where


def _read(source_path: Path) -> str:
    try:
        return read_text(source_path, MAX_TOOLKIT_BYTES)
    except ConfigReadError as exc:
        raise load_error(source_path, exc.line, None, exc.message) from exc


def _check_source(source_path: Path, source: str) -> None:
    """Refuse a file that imports Open WebUI or needs a requirement that is missing."""
    try:
        tree = ast.parse(source, str(source_path))
    except SyntaxError as exc:
        raise load_error(source_path, exc.lineno, None, f"syntax error: {exc.msg}") from exc
    problems = [
        Problem(
            str(source_path),
            node.lineno,
            None,
            f"imports {module}: Open WebUI's own modules are not available in the engine",
            "use the arguments the engine passes (__user__, __event_emitter__, ...) instead",
        )
        for node, module in _imports(tree)
        if module == "open_webui" or module.startswith("open_webui.")
    ]
    problems += _missing_requirements(source_path, source)
    if problems:
        raise ToolLoadError(problems)


def _imports(tree: ast.AST) -> Iterator[tuple[ast.stmt, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module


def _missing_requirements(source_path: Path, source: str) -> list[Problem]:
    front = parse_frontmatter(source)
    line = next(
        (n for n, text in enumerate(source.splitlines(), 1) if "requirements" in text.lower()),
        None,
    )
    return [
        Problem(
            str(source_path),
            line,
            "requirements",
            f"{requirement!r} is not installed",
            f"install it where the engine runs (pip install '{requirement}'); "
            "the engine never installs requirements",
        )
        for requirement in parse_requirements(front.get("requirements", ""))
        if not _importable(requirement)
    ]


def _importable(requirement: str) -> bool:
    """A requirement's distribution is installed, or a module of its name imports."""
    match = _REQUIREMENT_NAME.match(requirement)
    if match is None:
        return False
    name = match.group(1)
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return importlib.util.find_spec(name.replace("-", "_").lower()) is not None
    except (ImportError, ValueError):  # a dotted name whose parent package is missing
        return False
