"""Kind ``script_tool``: a Python or JavaScript ``run(input, host)`` run in the sandbox."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.config.loader import show
from engine.config.models import Int, JsonConfig
from engine.config.scriptfile import ScriptRef, read_script
from engine.errors import Problem, ScriptCompileError, ScriptError, fix_for, phrase, unknown_field
from engine.sandbox import CompiledScript, Language, Limits
from engine.sandbox.guards import TOOL_ENTRY
from engine.tools.base import (
    NAME_PATTERN,
    LoadContext,
    Tool,
    ToolLoadError,
    ToolResult,
    ToolSpec,
)
from engine.tools.schemas import check_schema, parameters_schema

_LANGUAGES = {".py": Language.PYTHON, ".js": Language.JAVASCRIPT}


class Parameter(BaseModel):
    """A TaskWeaver-style parameter (``parameters:`` instead of ``input_schema:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    type: Literal["str", "int", "float", "bool", "list", "dict", "Any", "None"]
    """TaskWeaver's types (docs/tools.md); any other is a load error."""
    required: bool = False
    description: str = ""
    default: Any = None


class ScriptToolConfig(BaseModel):
    """tools/<name>.yaml of ``kind: script_tool``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    kind: Literal["script_tool"]
    name: str = Field(pattern=NAME_PATTERN)
    """The tool's name as models see it."""
    description: str = Field(min_length=1)
    """What the tool does, for the model."""
    script: str | None = None
    """A .py or .js file beside the YAML defining ``run(input, host)``."""
    source: str | None = None
    """The script inline (needs ``language:``)."""
    language: Literal["python", "javascript"] | None = None
    input_schema: dict[str, Any] | None = None
    """The input's JSON Schema (an object schema), offered to models as is."""
    parameters: list[Parameter] | None = None
    """TaskWeaver-style parameters, turned into the input schema."""
    output_schema: dict[str, Any] | None = None
    """The ``data`` JSON Schema, exported to MCP as ``outputSchema``."""
    annotations: dict[str, Any] = Field(default_factory=dict)
    """MCP tool annotations (``readOnlyHint``, ...): hints, never trusted."""
    enabled: bool = True
    """false: validated, never offered nor called."""
    timeout_ms: Int | None = Field(default=None, gt=0)
    """The call's time limit (default: engine.yaml ``scripts.timeout_ms``)."""
    memory_mb: Int | None = Field(default=None, gt=0)
    """The script's memory (default: engine.yaml ``scripts.memory_mb``)."""
    config: JsonConfig = Field(default_factory=dict)
    """Values the script reads as ``host.config``."""

    @model_validator(mode="after")
    def _one_source(self) -> ScriptToolConfig:
        if (self.script is None) == (self.source is None):
            raise ValueError("script: give exactly one of script: (a file) or source: (inline)")
        if self.source is not None and self.language is None:
            raise ValueError("language: an inline source: needs language: python or javascript")
        if self.script is not None and Path(self.script).suffix not in _LANGUAGES:
            raise ValueError("script: must be a .py or .js file")
        if (self.input_schema is None) == (self.parameters is None):
            raise ValueError("input_schema: give exactly one of input_schema: or parameters:")
        return self


@dataclass
class ScriptTool:
    """A loaded script tool: ``invoke`` runs ``run(input, host)`` in a sandbox worker."""

    spec: Any
    path: Path
    pool: Any
    script: CompiledScript
    limits: Limits
    config: dict[str, Any]
    enabled: bool = True
    timeout_ms: int | None = None
    kind: str = "script_tool"
    isolation: Literal["thread", "process"] = "thread"
    owner: str = ""
    shown: str = ""
    line_offset: int = 0
    bounded: bool = True
    """Runs under the sandbox's own time limit: the call path calls it directly."""

    def invoke(self, input: Mapping[str, Any], ctx: Any) -> ToolResult:
        """Run the script on ``input``; its artifacts go to ``ctx``.

        Raises:
            ScriptError: the script raised, returned no answer, or hit a limit.
        """
        try:
            result = self.pool.call(
                self.script,
                TOOL_ENTRY,
                dict(input),
                config=self.config,
                state={},
                limits=self.limits,
                owner=self.owner,
            )
        except ScriptError as exc:
            raise type(exc)(
                f"{self.shown}{_at(exc.line, self.line_offset)}: {exc.message}",
                language=exc.language,
                line=exc.line,
                cause=exc.cause,
            ) from exc
        for emit in result.emits:
            if emit.get("type") == "artifact":
                data = emit["data"]
                ctx.add_artifact(data["name"], data["name"], "txt", data["text"], mime=data["mime"])
            else:
                ctx.record_event(emit)
        for line in result.logs:
            ctx.log("info", line)
        return as_result(self.shown, (result.value or {}).get(TOOL_ENTRY))

    def close(self) -> None:
        self.pool.forget(self.owner)
        self.pool.release(self.script)


def _at(line: int | None, offset: int) -> str:
    return "" if line is None else f":{line + offset}"


def as_result(shown: str, value: Any) -> ToolResult:
    """A ``run`` answer as a result: a string, or ``{content, data}``.

    Raises:
        ValueError: anything else, named.
    """
    if isinstance(value, str):
        return ToolResult(content=value)
    if isinstance(value, dict) and set(value) <= {"content", "data"} and "content" in value:
        content = value["content"]
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        return ToolResult(content=content, data=value.get("data"))
    got = "nothing" if value is None else type(value).__name__
    raise ValueError(f"{shown}: run must return a string or {{content, data}}, not {got}")


def load_script_tool(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    """Validate the YAML, read and compile the script; one tool.

    Raises:
        ToolLoadError: every problem, with file, line and field.
    """
    shown = _shown(path)
    try:
        config = ScriptToolConfig.model_validate(data)
    except ValidationError as exc:
        raise ToolLoadError(_problems(exc, shown, path, ctx)) from None
    params = [p.model_dump() for p in config.parameters or []]
    schema = config.input_schema or parameters_schema(params)
    problems = _schema_problems(config, schema, shown, path, ctx)
    limits, found = _limits(config, ctx, shown, path)
    source, language, filename, offset, read = _source(config, path, ctx, shown)
    if problems + found + read:
        raise ToolLoadError(problems + found + read)
    pool = ctx.sandbox()
    script = _compile(pool, config, (source, language, filename), offset, ctx.agent, shown)
    spec = ToolSpec(
        config.name, config.description, schema, config.output_schema, dict(config.annotations)
    )
    tool = ScriptTool(
        spec=spec,
        path=path,
        pool=pool,
        script=script,
        limits=limits,
        config=dict(config.config),
        enabled=config.enabled,
        timeout_ms=limits.timeout_ms,
        owner=f"{shown}:{config.name}",
        shown=filename,
        line_offset=offset,
    )
    return [tool]


def _schema_problems(
    config: ScriptToolConfig, schema: dict[str, Any], shown: str, path: Path, ctx: LoadContext
) -> list[Problem]:
    problems = check_schema(schema, shown, ctx.line(path, "input_schema"), "input_schema")
    if config.output_schema is not None:
        line = ctx.line(path, "output_schema")
        problems += check_schema(config.output_schema, shown, line, "output_schema")
    return problems


def _compile(
    pool: Any,
    config: ScriptToolConfig,
    script: tuple[str, Language, str],
    offset: int,
    agent: str,
    shown: str,
) -> CompiledScript:
    """The script compiled in the sandbox and held by the pool (released by ``close``)."""
    source, language, filename = script
    owner = f"tool\0{agent}\0{config.name}"
    try:
        compiled = pool.compile(
            source, filename=filename, language=language, key_owner=owner, tool=True
        )
    except ScriptCompileError as exc:
        yaml = shown if config.script is None else None
        raise ToolLoadError([_moved(p, offset, yaml) for p in exc.problems]) from exc
    pool.hold(compiled)
    return compiled


def _moved(problem: Problem, offset: int, yaml: str | None) -> Problem:
    if yaml is None or problem.line is None:
        return problem
    return Problem(yaml, problem.line + offset, "source", problem.message, problem.hint)


def _shown(path: Path) -> str:
    return show(path)


def _source(
    config: ScriptToolConfig, path: Path, ctx: LoadContext, shown: str
) -> tuple[str, Language, str, int, list[Problem]]:
    if config.script is None:
        offset = ctx.line(path, "source") or 0
        return config.source or "", Language(config.language or ""), shown, offset, []
    ref = ScriptRef(shown, ctx.line(path, "script"))
    target, text, problems = read_script(path, config.script, root=ctx.root, ref=ref, tool=True)
    if target is None or text is None:
        return "", Language.PYTHON, shown, 0, problems
    return text, _LANGUAGES[target.suffix], _shown(target), 0, []


def _limits(
    config: ScriptToolConfig, ctx: LoadContext, shown: str, path: Path
) -> tuple[Limits, list[Problem]]:
    s = ctx.settings.scripts
    problems = [
        Problem(
            shown,
            ctx.line(path, key),
            key,
            f"{value} {unit} is above the operator's ceiling of {ceiling} {unit}",
            hint=f"engine.yaml scripts.max_{key} = {ceiling}",
        )
        for key, value, ceiling, unit in (
            ("timeout_ms", config.timeout_ms, s.max_timeout_ms, "ms"),
            ("memory_mb", config.memory_mb, s.max_memory_mb, "MB"),
        )
        if value is not None and value > ceiling
    ]
    limits = Limits(
        timeout_ms=config.timeout_ms or s.timeout_ms, memory_mb=config.memory_mb or s.memory_mb
    )
    return limits, problems


def _problems(exc: ValidationError, shown: str, path: Path, ctx: LoadContext) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc: list[str | int] = list(err["loc"])
        if err["type"] == "extra_forbidden":
            message, hint = unknown_field(str(loc[-1]), list(ScriptToolConfig.model_fields))
        else:
            message, hint = phrase(err), fix_for(err)
        head, sep, rest = message.partition(": ")
        if not loc and sep and head in ScriptToolConfig.model_fields:
            loc, message = [head], rest
        field_name = ".".join(str(part) for part in loc) or None
        problems.append(Problem(shown, ctx.line(path, *loc), field_name, message, hint))
    return problems
