"""TaskWeaver's ``self.ctx`` over the engine's call context, and the artifacts it makes.

``PluginContext`` is what a plugin sees: TaskWeaver's names (``add_artifact``,
``create_artifact_path``, ``execution_id``, ``get_env``...) over the engine's ``ToolContext``,
with artifact types and file names checked before the store sees them. ``ScratchContext``
keeps artifacts in a folder, for ``@test_plugin`` tests run without an engine.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from engine.tools.base import ArtifactType, ToolContext, ToolInputError

ARTIFACT_TYPES: tuple[str, ...] = get_args(ArtifactType)
_MIMES = {"df": "text/csv", "svg": "image/svg+xml", "html": "text/html", "txt": "text/plain"}


class PluginContext:
    """TaskWeaver's ``self.ctx`` over the engine's call context: artifacts, log, env."""

    def __init__(self, ctx: ToolContext, plugin: str) -> None:
        self._ctx = ctx
        self._plugin = plugin
        self.made: list[tuple[str, str, str]] = []
        """The artifacts this call made: (id, name, type)."""

    @property
    def session_id(self) -> str | None:
        return self._ctx.session_id

    @property
    def execution_id(self) -> str | None:
        """TaskWeaver's execution id: the engine's call id."""
        return self._ctx.call_id

    @property
    def env_id(self) -> str:
        return self._ctx.agent

    def add_artifact(
        self, name: str, file_name: str, type: str, val: Any, desc: str | None = None
    ) -> str:
        """Store ``val`` as an artifact of the session; its id (TaskWeaver's signature)."""
        kind = _artifact_type(type)
        _check_file_name(file_name)
        ident = self._ctx.add_artifact(
            name, file_name, kind, _artifact_value(kind, val), desc or ""
        )
        self.made.append((ident, name, kind))
        return ident

    def create_artifact_path(
        self, name: str, file_name: str, type: str, desc: str | None = None
    ) -> tuple[str, str]:
        """A new artifact's id and the path the plugin writes it to."""
        kind = _artifact_type(type)
        _check_file_name(file_name)
        ident, path = self._ctx.create_artifact_path(name, file_name, kind, desc or "")
        self.made.append((ident, name, kind))
        return ident, str(path)

    def log(self, level: str, message: str) -> None:
        self._ctx.log(level, message)

    def get_session_var(self, variable_name: str, default: Any = None) -> Any:
        return self._ctx.get_session_var(variable_name, default)

    def get_env(self, plugin_name: str, variable_name: str) -> str:
        """The environment variable ``PLUGIN_<plugin_name>_<variable_name>``.

        Raises:
            KeyError: it is not set (the message names it).
        """
        name = f"PLUGIN_{plugin_name}_{variable_name}"
        if name not in os.environ:
            raise KeyError(f"environment variable {name} is required by plugin {self._plugin!r}")
        return os.environ[name]


def _artifact_type(kind: str) -> ArtifactType:
    if kind not in ARTIFACT_TYPES:
        raise ValueError(f"artifact type {kind!r} is not one of {', '.join(ARTIFACT_TYPES)}")
    return kind  # type: ignore[return-value]


def _check_file_name(file_name: str | None) -> None:
    """A plain file name: never a path (no folder, no traversal, not absolute)."""
    if file_name is None:
        return
    if not isinstance(file_name, str) or not file_name.strip():
        raise ValueError("artifact file_name must be a non-empty text")
    if "/" in file_name or "\\" in file_name or file_name in (".", "..") or "\0" in file_name:
        raise ValueError(f"artifact file_name {file_name!r} must be a plain file name")


def _artifact_value(kind: str, val: Any) -> str | bytes:
    if is_dataframe(val):
        return str(val.to_csv(index=False))
    if isinstance(val, str | bytes):
        return val
    raise TypeError(
        f"artifact of type {kind!r}: val must be text or bytes"
        + (" or a DataFrame" if kind == "df" else "")
        + f", got {type(val).__name__}"
    )


def is_dataframe(value: Any) -> bool:
    """A pandas DataFrame (checked without importing pandas)."""
    return type(value).__name__ == "DataFrame" and type(value).__module__.startswith("pandas")


def artifact_rows(made: list[tuple[str, str, str]], ctx: ToolContext) -> list[dict[str, Any]]:
    rows = []
    for ident, name, kind in made:
        path = ctx.artifact_path(ident)
        body = path.read_bytes() if path.is_file() else b""
        mime = _MIMES.get(kind) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        rows.append(
            {
                "id": ident,
                "name": name,
                "type": kind,
                "mime": mime,
                "bytes": len(body),
                "sha256": hashlib.sha256(body).hexdigest(),
            }
        )
    return rows


class ScratchContext:
    """A call context whose artifacts are files in ``folder`` (plugin tests; no store)."""

    def __init__(self, folder: Path, *, agent: str, tool: str, session_id: str = "test") -> None:
        self.folder, self.agent, self.tool = folder, agent, tool
        self.session_id: str | None = session_id
        self.user_id: str | None = None
        self.call_id: str | None = "test"
        self.emit: Callable[[dict[str, Any]], None] | None = None
        self.ask: Callable[[dict[str, Any]], Any] | None = None
        self.session_vars: dict[str, Any] = {}
        self.logs: list[tuple[str, str]] = []
        self._names: dict[str, str] = {}

    def add_artifact(
        self, name: str, file_name: str | None, type: ArtifactType, val: Any, desc: str = ""
    ) -> str:
        ident, path = self.create_artifact_path(name, file_name or name, type, desc)
        body = _artifact_value(type, val)
        path.write_bytes(body.encode() if isinstance(body, str) else body)
        return ident

    def create_artifact_path(
        self, name: str, file_name: str, type: ArtifactType, desc: str = ""
    ) -> tuple[str, Path]:
        _check_file_name(file_name)
        ident = f"a{len(self._names) + 1}"
        (self.folder / ident).mkdir()
        self._names[ident] = file_name
        return ident, self.folder / ident / file_name

    def artifact_path(self, ref: str) -> Path:
        for ident, file_name in self._names.items():
            if ref in (ident, file_name):
                return self.folder / ident / file_name
        raise ToolInputError(f"no artifact {ref!r} in this session")

    def log(self, level: str, text: str) -> None:
        self.logs.append((level, text))

    def get_session_var(self, name: str, default: Any = None) -> Any:
        return self.session_vars.get(name, default)


__all__ = [
    "ARTIFACT_TYPES",
    "PluginContext",
    "ScratchContext",
    "artifact_rows",
    "is_dataframe",
]
