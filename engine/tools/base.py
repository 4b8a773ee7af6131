"""What every tool kind provides, and what a call of a tool gets and gives back.

A tool file (``agents/<agent>/tools/<name>.yaml``, or one listed in ``tool_files``) is read by
the loader of its kind (``kind:`` absent: a TaskWeaver plugin; ``openwebui_tools``;
``script_tool``), which returns ``Tool`` objects. The agent's one call path
(``Agent.call_tool``) runs the ``tool_call`` hooks, validates the input against
``spec.input_schema``, calls ``Tool.invoke`` under the tool's time limit, and runs the
``tool_result`` hooks: no tool is ever called another way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""A tool's name, as every model API accepts it."""

ArtifactType = Literal["chart", "image", "df", "file", "txt", "svg", "html"]


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about a tool (exports render it per API: ``tool_specs(format)``)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    """A JSON Schema (draft 2020-12) object schema for the input; never rewritten."""
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    """MCP tool annotations from the YAML (hints, never trusted)."""


@dataclass
class ToolResult:
    """What a tool call gives back, to the host and (``content``) to the model."""

    content: str
    """What the model sees."""
    data: Any = None
    """The tool's structured data (JSON): the call path shows it to the ``tool_result`` hooks
    (the event's ``data``) and keeps it only when they left ``content`` as it was."""
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    """Artifacts the call made: ``{id, name, type, mime, bytes, sha256}``."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """Events the tool emitted (Open WebUI ``__event_emitter__``), in order."""
    is_error: bool = False
    """The call failed (blocked, bad input, raised, timed out): ``content`` says why."""
    replaced: bool = False
    """A ``tool_result`` hook replaced ``content`` (a redaction, a withheld result): the call
    path then drops ``data``, which may hold what the hook took out of the content (and
    ``mcp-serve`` sends no ``structuredContent``)."""


class ToolContext(Protocol):
    """What the call path hands a tool for one call (built per call by the engine)."""

    agent: str
    tool: str
    session_id: str | None
    user_id: str | None
    call_id: str | None
    emit: Callable[[dict[str, Any]], None] | None
    """The host's event callback (Open WebUI ``__event_emitter__`` events go here and into
    ``ToolResult.events``); None without one."""
    ask: Callable[[dict[str, Any]], Any] | None
    """The host's ``__event_call__`` callback; None without one."""

    def add_artifact(
        self,
        name: str,
        file_name: str | None,
        type: ArtifactType,
        val: Any,
        desc: str = "",
    ) -> str:
        """Store an artifact of this call's session; its id. ``val``: text, bytes, or (``df``)
        a pandas DataFrame."""
        ...

    def create_artifact_path(
        self, name: str, file_name: str, type: ArtifactType, desc: str = ""
    ) -> tuple[str, Path]:
        """A new artifact's id and the file path the tool writes it to."""
        ...

    def artifact_path(self, ref: str) -> Path:
        """The file of an artifact of this session, by id or by file name (a CSV path a
        DataFrame parameter names); ToolInputError if there is none."""
        ...

    def log(self, level: str, text: str) -> None: ...

    def get_session_var(self, name: str, default: Any = None) -> Any: ...


class Tool(Protocol):
    """A loaded tool of any kind."""

    spec: ToolSpec
    kind: str
    """``taskweaver``, ``openwebui_tools``, ``script_tool`` or ``delegate``."""
    path: Path
    """The file it was declared in (errors name it)."""
    enabled: bool
    """False: validated at load, never offered or called."""
    timeout_ms: int | None
    """This tool's time limit (None: the engine's default)."""
    isolation: Literal["thread", "process"]
    """Where ``invoke`` runs: a thread of the host (trusted in-process code) or a killable
    worker process."""

    def invoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the tool on a validated input. May raise: the call path turns any exception
        into an ``is_error`` result naming it. Never called for a disabled tool.

        A tool whose code fills in arguments the input leaves out (a TaskWeaver ``default:``,
        a Python default of an Open WebUI method) defines ``argument_defaults()`` returning
        them: the call path puts them into the input before the ``tool_call`` hooks, so the
        hooks decide on the input the tool runs with.

        A tool may also define ``async ainvoke(input, ctx)``: ``acall_tool`` awaits it on the
        running loop under the same time limit, instead of running ``invoke`` in a thread
        (a delegate tool does, so the host's async turn runner runs on the host's loop)."""
        ...

    def close(self) -> None:
        """Release what the tool holds (called when its agent is replaced or closed)."""
        ...


class ToolLoadError(Exception):
    """A tool file that cannot be loaded: ``problems`` as ``engine.errors.Problem`` (file,
    line, field, message, hint). The loaders raise it; the engine turns it into a
    ``ConfigError``."""

    def __init__(self, problems: list[Any]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class ToolInputError(Exception):
    """A call's input the tool cannot use (a DataFrame reference to no artifact, ...):
    an ``is_error`` result the model can act on."""


Loader = Callable[[Path, dict[str, Any], "LoadContext"], list[Tool]]
"""A tool kind's loader: the YAML file, its parsed mapping, and what loading may use."""


class LoadContext(Protocol):
    """What a loader may use."""

    agent: str
    base_dir: Path
    """The config folder's parent (relative paths in YAML resolve against the file's folder)."""
    root: Path
    """The config folder: files a tool YAML names must lie inside it."""
    settings: Any
    """The engine's settings (``EngineSettings``: script limits and their ceilings, tools)."""

    def line(self, path: Path, *keys: str | int) -> int | None:
        """The line of a key in a YAML file (for errors)."""
        ...

    def sandbox(self) -> Any:
        """The script worker pool (script tools run there)."""
        ...


@dataclass(frozen=True)
class ToolTestResult:
    """One test a tool file carries (TaskWeaver ``@test_plugin``), as ``hookengine tools test``
    reports it."""

    tool: str
    name: str
    ok: bool
    message: str = ""


class SelfTestingTool(Protocol):
    """A tool whose file carries its own tests (optional: ``hookengine tools test`` runs
    ``run_tests`` of each tool that has it)."""

    def run_tests(self, ctx: ToolContext) -> list[ToolTestResult]: ...


__all__ = [
    "NAME_PATTERN",
    "ArtifactType",
    "LoadContext",
    "Loader",
    "SelfTestingTool",
    "Tool",
    "ToolContext",
    "ToolInputError",
    "ToolLoadError",
    "ToolResult",
    "ToolSpec",
    "ToolTestResult",
]
