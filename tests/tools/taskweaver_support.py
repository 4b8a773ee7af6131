"""What the TaskWeaver tests share: a call context over a folder, a load context over a YAML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.yamlfile import read_yaml
from engine.tools.base import ArtifactType, ToolInputError, ToolLoadError
from engine.tools.taskweaver import TaskWeaverTool, load_taskweaver

FIXTURES = Path(__file__).parent / "taskweaver"


@dataclass
class Artifact:
    id: str
    name: str
    file_name: str
    type: str
    desc: str
    path: Path


@dataclass
class FolderContext:
    """A ToolContext whose artifacts are files under ``folder/<session>/<id>/``."""

    folder: Path
    agent: str = "demo"
    tool: str = "plugin"
    session_id: str | None = "s1"
    user_id: str | None = "u1"
    call_id: str | None = "call-7"
    emit: Callable[[dict[str, Any]], None] | None = None
    ask: Callable[[dict[str, Any]], Any] | None = None
    session_vars: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)

    def add_artifact(
        self, name: str, file_name: str | None, type: ArtifactType, val: Any, desc: str = ""
    ) -> str:
        ident, path = self.create_artifact_path(name, file_name or name, type, desc)
        if hasattr(val, "to_csv"):
            val = val.to_csv(index=False)
        path.write_bytes(val.encode() if isinstance(val, str) else val)
        return ident

    def create_artifact_path(
        self, name: str, file_name: str, type: ArtifactType, desc: str = ""
    ) -> tuple[str, Path]:
        ident = f"art{len(self.artifacts) + 1}"
        folder = self.folder / str(self.session_id) / ident
        folder.mkdir(parents=True)
        path = folder / file_name
        self.artifacts.append(Artifact(ident, name, file_name, type, desc, path))
        return ident, path

    def artifact_path(self, ref: str) -> Path:
        for art in self.artifacts:
            if ref in (art.id, art.file_name):
                return art.path
        raise ToolInputError(f"no artifact {ref!r} in session {self.session_id}")

    def log(self, level: str, text: str) -> None:
        self.logs.append((level, text))

    def get_session_var(self, name: str, default: Any = None) -> Any:
        return self.session_vars.get(name, default)


class YamlLoadContext:
    """A LoadContext that finds key lines by reading the YAML file again."""

    def __init__(self, base_dir: Path, agent: str = "demo") -> None:
        self.agent, self.base_dir = agent, base_dir

    def line(self, path: Path, *keys: str | int) -> int | None:
        doc, _ = read_yaml(path, str(path))
        return None if doc is None else doc.lines.get(tuple(keys))

    def sandbox(self) -> Any:
        raise AssertionError("TaskWeaver plugins never use the sandbox")


def load(path: Path) -> TaskWeaverTool:
    doc, problems = read_yaml(path, str(path))
    assert doc is not None and not problems, problems
    (tool,) = load_taskweaver(path, doc.data, YamlLoadContext(path.parent))
    assert isinstance(tool, TaskWeaverTool)
    return tool


def load_problems(path: Path) -> list[Any]:
    doc, problems = read_yaml(path, str(path))
    assert doc is not None and not problems, problems
    try:
        load_taskweaver(path, doc.data, YamlLoadContext(path.parent))
    except ToolLoadError as exc:
        return exc.problems
    raise AssertionError(f"{path} loaded")


def write_plugin(folder: Path, yaml_text: str, py_text: str | None, name: str = "p") -> Path:
    """``folder/<name>.yaml`` (and ``<name>.py`` when given); the YAML's path."""
    folder.mkdir(parents=True, exist_ok=True)
    if py_text is not None:
        (folder / f"{name}.py").write_text(py_text)
    path = folder / f"{name}.yaml"
    path.write_text(yaml_text)
    return path
