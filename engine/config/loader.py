"""Load and validate a config folder: engine.yaml, the host layer, every agent and its hooks.

Problems are collected, never stopped at the first; an agent loads whole or not at all.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from engine.config.models import (
    KINDS,
    AgentConfig,
    CompactionConfig,
    EngineSettings,
    HookBase,
    ScriptHookConfig,
)
from engine.config.scriptfile import ScriptRef, read_script
from engine.config.toolfiles import ToolFile, read_tool_file
from engine.config.yamlfile import Loc, YamlDoc, dotted, os_reason, read_yaml
from engine.errors import ConfigError, Problem, fix_for, phrase, shortened, unknown_field
from engine.points import suggest

Layer = Literal["agent", "host"]


@dataclass(frozen=True)
class HookSpec:
    """A validated hook file: its model, where it came from, and its version."""

    config: Any
    """The kind's model (InjectConfig, ScriptHookConfig, ...)."""
    path: Path
    shown: str
    """The path as errors and records show it."""
    version: str
    """sha256 of the YAML and, for scripts, the script (12 hex digits)."""
    layer: Layer
    script_path: Path | None = None
    script_text: str | None = None
    line_of: dict[Loc, int] = field(default_factory=dict, compare=False, repr=False)
    source_at: tuple[int, int] | None = None
    """An inline script's place in the YAML: (lines before its first line, columns before
    its text), so a position in the script is ``line + source_at[0]``, ``column +
    source_at[1]`` in the file."""

    @property
    def name(self) -> str:
        return str(self.config.name)

    @property
    def kind(self) -> str:
        return str(self.config.kind)

    def script_position(
        self, line: int | None, column: int | None
    ) -> tuple[str, int | None, int | None]:
        """A position in the hook's script as the author finds it: the script file's own
        (path, line, column), or for an inline ``source:`` the YAML file's."""
        if self.script_path is not None:
            return show(self.script_path), line, column
        if self.source_at is None:
            return self.shown, self.line("source"), None
        lines, columns = self.source_at
        return (
            self.shown,
            None if line is None else line + lines,
            None if column is None else column + columns,
        )

    def line(self, *loc: str | int) -> int | None:
        for end in range(len(loc), -1, -1):
            line = self.line_of.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


@dataclass(frozen=True)
class AgentSpec:
    """An agent's validated config and its hooks in order (the host layer not included)."""

    name: str
    folder: Path
    config: AgentConfig
    hooks: tuple[HookSpec, ...]
    files: frozenset[Path]
    """Every file the agent's config was read from (for hot reload)."""
    tools: tuple[ToolFile, ...] = ()
    """The agent's tool files as read (their kinds' loaders validate them when built)."""

    @property
    def tools_version(self) -> str:
        """Changes when any tool file (or a file one names) does."""
        return digest(*(t.version for t in self.tools))


@dataclass(frozen=True)
class ProjectConfig:
    """A whole config folder."""

    root: Path
    """The config folder (holds engine.yaml and agents/)."""
    base_dir: Path
    """The project folder: relative db paths resolve against it (the config folder's parent)."""
    settings: EngineSettings
    host_hooks: tuple[HookSpec, ...]
    agents: dict[str, AgentSpec]
    host_files: frozenset[Path] = frozenset()


def show(path: Path) -> str:
    """A path as people read it: relative to the working folder when inside it."""
    try:
        text = str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # outside; a NUL, a loop, a path too long
        text = str(path)
    return text if len(text) <= 200 else f"{text[:90]}…{text[-90:]}"


def resolved(path: Path) -> Path:
    """``path`` with symlinks resolved, or as given where that fails (a loop, a bad name)."""
    try:
        return path.resolve()
    except (ValueError, OSError, RuntimeError):
        return path.absolute()


def present(path: Path) -> bool:
    """Whether anything is at ``path`` (even a dangling link or a FIFO), so a file that is
    there but unusable is reported by the reader instead of being taken as missing."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True
    return True


def digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:12]


# -- validation errors -> problems ---------------------------------------------------------


def _fields_at(model: type[BaseModel], loc: Loc) -> list[str]:
    for part in loc:
        if isinstance(part, int):
            continue
        info = model.model_fields.get(str(part))
        sub = _model_of(info.annotation) if info else None
        if sub is None:
            return []
        model = sub
    return list(model.model_fields)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def model_problems(
    exc: ValidationError, doc: YamlDoc, shown: str, model: type[BaseModel]
) -> list[Problem]:
    """One Problem per pydantic error, in our words, with the line of the field it is about."""
    problems = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(err["loc"])
        hint = None
        if err["type"] == "extra_forbidden":
            message, hint = unknown_field(str(loc[-1]), _fields_at(model, loc[:-1]))
            where: Loc = loc
            field_name = dotted(loc) or None
        else:
            message, hint = phrase(err), fix_for(err)
            where, message = _field_named(loc, message, model)
            field_name = dotted(where) or None
        problems.append(Problem(shown, doc.line_of(where), field_name, message, hint))
    return problems


def _field_named(loc: Loc, message: str, model: type[BaseModel]) -> tuple[Loc, str]:
    """A model-wide error whose message starts with one of its fields (``script: must be a .py
    or .js file``) is about that field: its line, not the file's first."""
    head, sep, rest = message.partition(": ")
    parts = head.replace("[", ".").replace("]", "").split(".")
    path = [int(p) if p.isdigit() else p for p in parts]
    if sep and path[0] in _fields_at(model, loc):
        return (*loc, *path), rest
    return loc, message


def validate(model: type[BaseModel], doc: YamlDoc, shown: str) -> tuple[Any, list[Problem]]:
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        return None, model_problems(exc, doc, shown, model)


# -- files ---------------------------------------------------------------------------------


def load_hook_file(
    path: Path, *, layer: Layer = "agent", root: Path | None = None
) -> tuple[HookSpec | None, list[Problem]]:
    """Read and validate one hook YAML file (and read its script, if it has one).

    ``root`` is the config folder a script must lie in (default: the nearest folder above the
    hook holding engine.yaml or agents/, else the hook's own folder).
    """
    shown = show(path)
    doc, problems = read_yaml(path, shown)
    if doc is None or problems:
        return None, problems
    kind = doc.data.get("kind")
    if kind is None:
        return None, [
            Problem(shown, 1, "kind", "required field is missing", f"one of: {', '.join(KINDS)}")
        ]
    if not isinstance(kind, str) or kind not in KINDS:
        close = suggest(str(kind), list(KINDS))
        hint = f"did you mean {close!r}?" if close else f"one of: {', '.join(KINDS)}"
        line = doc.line_of(("kind",))
        shown_kind = shortened(kind) if isinstance(kind, str) else kind
        return None, [Problem(shown, line, "kind", f"unknown kind {shown_kind!r}", hint)]
    model = KINDS[kind]
    config, problems = validate(model, doc, shown)
    if config is None:
        return None, problems
    script_path = script_text = None
    if isinstance(config, ScriptHookConfig | CompactionConfig) and config.script is not None:
        ref = ScriptRef(shown, doc.line_of(("script",)))
        here = resolved(path).parent
        folder = root or find_config_root(here) or here
        script_path, script_text, problems = read_script(path, config.script, root=folder, ref=ref)
        if problems:
            return None, problems
    version = digest(doc.text, script_text or "")
    spec = HookSpec(
        config,
        resolved(path),
        shown,
        version,
        layer,
        script_path,
        script_text,
        dict(doc.lines),
        _source_at(doc) if script_path is None else None,
    )
    return spec, []


def _source_at(doc: YamlDoc) -> tuple[int, int] | None:
    """Where an inline ``source:`` text starts: a block (``|``) starts on the line after the
    key, indented; a quoted or plain text on the key's own line, after the quote."""
    at = doc.scalars.get(("source",))
    if at is None:
        return None
    line, column, style = at
    if style in ("|", ">"):
        after = doc.text.splitlines()[line:]
        indent = next((len(t) - len(t.lstrip(" ")) for t in after if t.strip()), 0)
        return line, indent
    return line - 1, column + (1 if style in ("'", '"') else 0)


def load_engine_settings(root: Path) -> tuple[EngineSettings, list[Problem]]:
    """config/engine.yaml, or the defaults when there is none."""
    path = root / "engine.yaml"
    if not present(path):
        return EngineSettings(), []
    doc, problems = read_yaml(path, show(path))
    if doc is None or problems:
        return EngineSettings(), problems
    settings, problems = validate(EngineSettings, doc, show(path))
    return settings or EngineSettings(), problems


def _hook_paths(
    folder: Path, files: list[str], names: list[str], doc: YamlDoc | None
) -> list[tuple[Path, int | None]]:
    found = []
    for i, rel in enumerate(files):
        found.append((folder / rel, doc.line_of(("hook_files", i)) if doc else None))
    for i, name in enumerate(names):
        line = doc.line_of(("hooks", i)) if doc else None
        found.append((folder / "hooks" / f"{name}.yaml", line))
    return found


def _load_hooks(
    paths: list[tuple[Path, int | None]], owner: str, layer: Layer, root: Path
) -> tuple[list[HookSpec], list[Problem]]:
    specs: list[HookSpec] = []
    problems: list[Problem] = []
    for path, line in paths:
        if not present(path):
            problems.append(
                Problem(
                    owner,
                    line,
                    "hook_files" if line else None,
                    f"hook file not found: {show(path)}",
                    "paths in hook_files are relative to the agent's folder; "
                    "hooks: [name] reads hooks/<name>.yaml",
                )
            )
            continue
        spec, found = load_hook_file(path, layer=layer, root=root)
        problems += found
        if spec is not None:
            specs.append(spec)
    return specs, problems


def _duplicates(specs: list[HookSpec]) -> list[Problem]:
    problems = []
    first: dict[str, HookSpec] = {}
    for spec in specs:
        if spec.name in first:
            problems.append(
                Problem(
                    spec.shown,
                    spec.line("name"),
                    "name",
                    f"duplicate hook name {spec.name!r} (also in {first[spec.name].shown})",
                    "give each hook of an agent (and of the host layer) its own name",
                )
            )
        first.setdefault(spec.name, spec)
    return problems


def load_host_layer(root: Path, settings: EngineSettings) -> tuple[list[HookSpec], list[Problem]]:
    doc = None
    engine_yaml = root / "engine.yaml"
    if present(engine_yaml):
        doc, _ = read_yaml(engine_yaml, show(engine_yaml))
    paths = _hook_paths(root, settings.hook_files, settings.hooks, doc)
    specs, problems = _load_hooks(paths, show(engine_yaml), "host", root)
    return specs, problems + _duplicates(specs)


def load_agent(
    root: Path, name: str, host_hooks: list[HookSpec] | tuple[HookSpec, ...] = ()
) -> AgentSpec:
    """Load one agent whole, or raise ConfigError with every problem found."""
    spec, problems = read_agent(root, name, host_hooks)
    if problems or spec is None:
        raise ConfigError(problems)
    return spec


def read_agent(
    root: Path, name: str, host_hooks: list[HookSpec] | tuple[HookSpec, ...] = ()
) -> tuple[AgentSpec | None, list[Problem]]:
    """One agent as far as it loads, and every problem found on the way.

    A field error in agent.yaml does not stop its hook files from being read (the lists are
    taken from the raw YAML where they are lists of text), so ``check`` reports the problems
    of every file in one run. The spec holds only the hooks that loaded (and, when agent.yaml
    has a field error, a config of the hooks it lists); None when agent.yaml cannot be read.
    """
    folder = root / "agents" / name
    path = folder / "agent.yaml"
    shown = show(path)
    doc, problems = read_yaml(path, shown)
    if doc is None:
        return None, problems
    config, invalid = validate(AgentConfig, doc, shown)
    problems += invalid
    files, names = _listed(config, doc.data)
    paths = _hook_paths(folder, files, names, doc)
    specs, found = _load_hooks(paths, shown, "agent", root)
    problems += found
    tool_paths = _tool_paths(folder, config, doc)
    tools, found = _load_tools(tool_paths, shown)
    problems += found
    if not paths and not tool_paths and config is not None:
        problems.append(
            Problem(
                shown,
                1,
                "hook_files",
                "the agent lists no hooks and no tools",
                "add hook_files: [hooks/<file>.yaml], hooks: [<name>] or tools: [<name>]",
            )
        )
    problems += _duplicates([*specs, *host_hooks])
    if config is None:  # its hooks are still built and checked, never run
        config = AgentConfig.model_construct(hook_files=files, hooks=names)
    # every file listed, loaded or not: a check names the agent's broken files as its own
    files_read = {resolved(path), *(s.path for s in specs), *(resolved(p) for p, _ in paths)}
    files_read |= {s.script_path for s in specs if s.script_path}
    files_read |= {resolved(p) for p, _ in tool_paths}.union(*(t.files for t in tools))
    spec = AgentSpec(name, folder, config, tuple(specs), frozenset(files_read), tuple(tools))
    return spec, problems


def _tool_paths(
    folder: Path, config: AgentConfig | None, doc: YamlDoc
) -> list[tuple[Path, int | None]]:
    data = doc.data if isinstance(doc.data, dict) else {}
    files = config.tool_files if config else _texts(data.get("tool_files"))
    names = config.tools if config else _texts(data.get("tools"))
    found = [(folder / f, doc.line_of(("tool_files", i))) for i, f in enumerate(files)]
    found += [
        (folder / "tools" / f"{n}.yaml", doc.line_of(("tools", i))) for i, n in enumerate(names)
    ]
    return found


def _texts(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _load_tools(
    paths: list[tuple[Path, int | None]], owner: str
) -> tuple[list[ToolFile], list[Problem]]:
    tools: list[ToolFile] = []
    problems: list[Problem] = []
    for path, line in paths:
        if not present(path):
            hint = "tool_files are relative to the agent's folder; tools: [name] reads "
            hint += "tools/<name>.yaml"
            problems.append(
                Problem(owner, line, "tools", f"tool file not found: {show(path)}", hint)
            )
            continue
        tool, found = read_tool_file(path, show(path), digest, resolved)
        problems += found
        if tool is not None:
            tools.append(tool)
    return tools, problems


def _listed(config: AgentConfig | None, data: Any) -> tuple[list[str], list[str]]:
    """The agent's hook_files and hooks: from the model, or leniently from the raw YAML."""
    if config is not None:
        return list(config.hook_files), list(config.hooks)
    lists = []
    for key in ("hook_files", "hooks"):
        value = data.get(key) if isinstance(data, dict) else None
        texts = value if isinstance(value, list) else []
        lists.append([v for v in texts if isinstance(v, str)])
    return lists[0], lists[1]


def agent_names(root: Path) -> list[str]:
    """Every folder under agents/ holding an ``agent.yaml`` of any kind: one that is a folder
    or a FIFO is read (and reported) like the others, never skipped in silence.

    Raises:
        ConfigError: agents/ cannot be listed.
    """
    agents = root / "agents"
    try:
        if not agents.is_dir():
            return []
        return sorted(p.name for p in agents.iterdir() if present(p / "agent.yaml"))
    except OSError as exc:
        reason = os_reason(exc)
        raise ConfigError.single(show(agents), f"cannot list the folder: {reason}") from None


def load_project(root: str | Path, *, only: list[str] | None = None) -> ProjectConfig:
    """Load every agent (or ``only`` those) under ``root``; ConfigError lists all problems."""
    project, problems = read_project(root, only=only)
    if problems or project is None:
        raise ConfigError(problems)
    return project


CONFIG_NOT_FOUND = (
    "config folder not found: name the folder that holds agents/ with --config DIR"
    " (the default is ./config)"
)


def read_project(
    root: str | Path, *, only: list[str] | None = None
) -> tuple[ProjectConfig | None, list[Problem]]:
    """A config folder as far as it loads, and every problem of every file.

    The project holds the host hooks and the agents that loaded (an agent with a problem
    holds the hooks that loaded, so their scripts can still be checked); None when the folder
    is missing.
    """
    root = resolved(Path(root))
    if not _is_dir(root):
        return None, [Problem(show(root), None, None, CONFIG_NOT_FOUND)]
    settings, problems = load_engine_settings(root)
    host, host_problems = load_host_layer(root, settings)
    problems += host_problems
    agents: dict[str, AgentSpec] = {}
    try:
        names = only if only is not None else agent_names(root)
        listed = True
    except ConfigError as exc:
        problems, names, listed = problems + exc.problems, [], False
    if not names and only is None and listed:
        problems.append(
            Problem(show(root), None, None, "no agents found (expected agents/<name>/agent.yaml)")
        )
    for name in names:
        spec, found = read_agent(root, name, host)
        problems += found
        if spec is not None:
            agents[name] = spec
    host_files = {resolved(root / "engine.yaml"), *(s.path for s in host)}
    host_files |= {s.script_path for s in host if s.script_path}
    project = ProjectConfig(root, root.parent, settings, tuple(host), agents, frozenset(host_files))
    return project, problems


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def find_config_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding engine.yaml or agents/."""
    for folder in [start, *start.parents]:
        if (folder / "engine.yaml").is_file() or (folder / "agents").is_dir():
            return folder
    return None


__all__ = [
    "AgentSpec",
    "HookBase",
    "HookSpec",
    "ProjectConfig",
    "agent_names",
    "find_config_root",
    "load_agent",
    "load_engine_settings",
    "load_hook_file",
    "load_host_layer",
    "load_project",
    "read_agent",
    "read_project",
]
