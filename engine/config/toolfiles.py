"""Read an agent's tool files: the YAML of each (its kind's loader validates it later) and the
files it names, so hot reload watches them and the version changes when any of them does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.yamlfile import ConfigReadError, Loc, read_bytes, read_yaml
from engine.errors import Problem

FILE_KEYS = ("script", "file", "code_file")
"""Keys of a tool YAML that name a file beside it (script tools, Open WebUI toolkits)."""
MAX_NAMED_BYTES = 1_000_000
"""The most of a named file hashed into the version: the largest file a tool kind reads (an
Open WebUI toolkit); a larger one is its kind's loader's error."""


@dataclass(frozen=True)
class ToolFile:
    """One tool YAML as read: its data for the kind's loader, and where it came from."""

    path: Path
    shown: str
    data: dict[str, Any]
    version: str
    """sha256 of the YAML and of every file it names (12 hex digits)."""
    files: frozenset[Path] = frozenset()
    """The YAML and the files it names (for hot reload)."""
    line_of: dict[Loc, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def kind(self) -> str | None:
        kind = self.data.get("kind")
        return kind if isinstance(kind, str) else None

    def line(self, *loc: str | int) -> int | None:
        for end in range(len(loc), -1, -1):
            line = self.line_of.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


def named_files(path: Path, data: dict[str, Any]) -> list[Path]:
    """The files a tool YAML names: its file keys, and a TaskWeaver plugin's ``<code>.py``."""
    found = [path.parent / v for k in FILE_KEYS if isinstance(v := data.get(k), str)]
    code = data.get("code")
    if "kind" not in data and isinstance(code, str) and "\n" not in code:
        found.append(path.parent / f"{code}.py")
    return found


def read_tool_file(
    path: Path, shown: str, digest: Any, resolved: Any
) -> tuple[ToolFile | None, list[Problem]]:
    """Read one tool YAML (a mapping) and hash it with the files it names."""
    doc, problems = read_yaml(path, shown)
    if doc is None or problems:
        return None, problems
    if not isinstance(doc.data, dict):
        return None, [Problem(shown, 1, None, "a tool file must be a mapping of fields")]
    named = named_files(path, doc.data)
    texts = [_text(p) for p in named]
    files = frozenset({resolved(path), *(resolved(p) for p in named)})
    version = digest(doc.text, *texts)
    return ToolFile(resolved(path), shown, doc.data, version, files, dict(doc.lines)), []


def _text(path: Path) -> str:
    """The named file's text for the version, read as config files are (a FIFO or a device is
    never opened, the size is capped); "" for a file that cannot be read, which is the kind's
    loader's error, with its line."""
    try:
        return read_bytes(path, MAX_NAMED_BYTES).decode("utf-8", "replace")
    except ConfigReadError:
        return ""
