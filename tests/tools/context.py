"""A ToolContext and a LoadContext for testing tools without the engine's call path."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.yamlfile import read_yaml
from engine.tools.base import ArtifactType, ToolInputError


@dataclass
class FakeLoadContext:
    """What a loader may use: lines come from the YAML file itself."""

    base_dir: Path
    agent: str = "demo"

    def line(self, path: Path, *keys: str | int) -> int | None:
        doc, _ = read_yaml(path, str(path))
        return None if doc is None else doc.line_of(tuple(keys))

    def sandbox(self) -> Any:
        raise AssertionError("Open WebUI toolkits never use the sandbox")


@dataclass
class FakeToolContext:
    """One call's context; artifacts go into ``folder``; emitted events into ``emitted``."""

    folder: Path
    agent: str = "demo"
    tool: str = ""
    session_id: str | None = "s1"
    user_id: str | None = "u1"
    call_id: str | None = "c1"
    emit: Callable[[dict[str, Any]], None] | None = None
    ask: Callable[[dict[str, Any]], Any] | None = None
    emitted: list[dict[str, Any]] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    session_vars: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def recording(cls, folder: Path, **values: Any) -> FakeToolContext:
        """A context whose ``emit`` callback records into ``emitted``."""
        ctx = cls(folder, **values)
        ctx.emit = ctx.emitted.append
        return ctx

    def add_artifact(
        self, name: str, file_name: str | None, type: ArtifactType, val: Any, desc: str = ""
    ) -> str:
        data = val.encode() if isinstance(val, str) else bytes(val)
        artifact_id, path = self.create_artifact_path(name, file_name or name, type, desc)
        path.write_bytes(data)
        self.artifacts[artifact_id]["sha256"] = hashlib.sha256(data).hexdigest()
        return artifact_id

    def create_artifact_path(
        self, name: str, file_name: str, type: ArtifactType, desc: str = ""
    ) -> tuple[str, Path]:
        with self.lock:
            artifact_id = f"a{len(self.artifacts) + 1}"
            folder = self.folder / artifact_id
            folder.mkdir(parents=True)
            self.artifacts[artifact_id] = {"id": artifact_id, "name": name, "type": type}
        return artifact_id, folder / Path(file_name).name

    def artifact_path(self, ref: str) -> Path:
        for artifact_id in self.artifacts:
            for path in (self.folder / artifact_id).iterdir():
                if ref in (artifact_id, path.name):
                    return path
        raise ToolInputError(f"no artifact {ref!r} in this session")

    def log(self, level: str, text: str) -> None:
        self.logs.append((level, text))

    def get_session_var(self, name: str, default: Any = None) -> Any:
        return self.session_vars.get(name, default)
