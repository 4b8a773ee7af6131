"""An agent's loaded tools: built from its tool files, checked together, exported per format."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.toolfiles import ToolFile
from engine.errors import ConfigError, Problem
from engine.tools.base import NAME_PATTERN, Tool, ToolLoadError
from engine.tools.kinds import loader_for
from engine.tools.schemas import validator

_NAME = re.compile(NAME_PATTERN)


@dataclass
class Loading:
    """The ``LoadContext`` the engine gives a kind's loader."""

    agent: str
    base_dir: Path
    root: Path
    settings: Any
    files: dict[Path, ToolFile]
    sandbox_of: Any
    engine: Any = None
    """The engine the agent belongs to (a delegate tool asks its other agents)."""

    def line(self, path: Path, *keys: str | int) -> int | None:
        tool = self.files.get(path)
        return None if tool is None else tool.line(*keys)

    def sandbox(self) -> Any:
        return self.sandbox_of()


@dataclass
class ToolSet:
    """The tools one agent offers, by name (disabled ones kept apart: validated, not offered).
    A reload builds a new set; the spec exports are cached per set."""

    tools: dict[str, Tool] = field(default_factory=dict)
    disabled: dict[str, Tool] = field(default_factory=dict)
    version: str = ""
    _exports: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _validators: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _calls: int = 0
    _retired: bool = False
    _closed: bool = False

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def checker(self, tool: Tool) -> Any:
        """The compiled input validator of ``tool`` (made on its first call)."""
        found = self._validators.get(tool.spec.name)
        if found is None:
            found = self._validators.setdefault(tool.spec.name, validator(tool.spec.input_schema))
        return found

    def export(self, format: str) -> list[dict[str, Any]]:
        """Every enabled tool's spec in ``format`` (see engine/tools/exports.py), made once."""
        found = self._exports.get(format)
        if found is None:
            from engine.tools.exports import FORMATS, render

            if format not in FORMATS:
                raise ValueError(
                    f"unknown tool spec format {format!r} (one of: {', '.join(FORMATS)})"
                )

            made = [render(t.spec, format) for t in self.tools.values()]
            with self._lock:
                found = self._exports.setdefault(format, made)
        return found

    def enter(self) -> None:
        """A call starts on this set (``leave`` when it ends)."""
        with self._lock:
            self._calls += 1

    def leave(self) -> None:
        with self._lock:
            self._calls -= 1
            closing = self._retired and self._calls == 0 and not self._closed
            self._closed = self._closed or closing
        if closing:
            self._close_tools()

    def retire(self) -> None:
        """A reload replaced this set: close it once no call runs on it any more."""
        with self._lock:
            self._retired = True
            closing = self._calls == 0 and not self._closed
            self._closed = self._closed or closing
        if closing:
            self._close_tools()

    def close(self) -> None:
        """Close every tool now (the engine is closing)."""
        with self._lock:
            closing, self._closed = not self._closed, True
        if closing:
            self._close_tools()

    def _close_tools(self) -> None:
        for tool in [*self.tools.values(), *self.disabled.values()]:
            tool.close()


def build_tools(files: tuple[ToolFile, ...], loading: Loading, *, version: str = "") -> ToolSet:
    """Load every tool file with its kind's loader into one set.

    Raises:
        ConfigError: every problem of every file: a loader's, a name that is not a valid tool
            name, a name two files declare (naming both).
    """
    loaded: list[tuple[ToolFile, Tool]] = []
    problems: list[Problem] = []
    for file in files:
        try:
            loader = loader_for(file.kind, shown=file.shown, line=file.line("kind"))
            loaded += [(file, t) for t in loader(file.path, file.data, loading)]
        except ToolLoadError as exc:
            problems += exc.problems
    problems += _name_problems(loaded)
    if problems:
        for _, tool in loaded:
            tool.close()
        raise ConfigError(problems)
    found = ToolSet(version=version)
    for _, tool in loaded:
        (found.tools if tool.enabled else found.disabled)[tool.spec.name] = tool
    return found


def _name_problems(loaded: list[tuple[ToolFile, Tool]]) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[str, ToolFile] = {}
    for file, tool in loaded:
        name = tool.spec.name
        if not _NAME.match(name):
            message = f"tool name {name!r} is not valid: {NAME_PATTERN}"
            problems.append(Problem(file.shown, file.line("name"), "name", message))
        elif name in first:
            message = f"duplicate tool name {name!r} (also in {first[name].shown})"
            hint = "give each tool of an agent its own name (no tool is renamed silently)"
            problems.append(Problem(file.shown, file.line("name"), "name", message, hint))
        first.setdefault(name, file)
    return problems
