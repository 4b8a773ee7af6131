"""A TaskWeaver plugin's YAML schema, enforced: fields, types, and the input schema it makes.

TaskWeaver documents this schema and never enforces it; we do, so a misspelt field or an
unknown type is found at load, with the file, line and field, instead of by the model.
"""

from __future__ import annotations

import difflib
import importlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config.yamlfile import dotted
from engine.errors import Problem, fix_for, phrase, unknown_field
from engine.tools.base import LoadContext, ToolLoadError

MIN_DESCRIPTION = 10
"""The shortest plugin description (characters): shorter is a load error; an item's shorter
description only warns (TaskWeaver's own ``tell_joke`` returns "the joke.")."""

JSON_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array"},
    "dict": {"type": "object"},
    "Any": {},
    "None": {"type": "null"},
}
"""The TaskWeaver types a parameter or return may declare, as JSON Schema; ``DataFrame``
besides (an artifact id or CSV file name in, a ``df`` artifact out)."""

DATAFRAME = "DataFrame"


class PluginItem(BaseModel):
    """One entry of ``parameters:`` or ``returns:``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The Python argument (or return value) name."""
    type: str
    """One of ``str int float bool list dict Any None DataFrame``."""
    required: bool = False
    """Parameters only: the model must pass it."""
    description: str = ""
    """What the model is told about it (under 10 characters warns)."""
    default: Any = None
    """Parameters only: the value used when the model leaves it out (shown in the schema)."""


class PluginSchema(BaseModel):
    """A TaskWeaver plugin YAML, field for field."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_]+$", max_length=64)
    """The tool's name, and (without ``code:``) the ``<name>.py`` beside the YAML."""
    enabled: bool = True
    """False: validated at load, never offered or called."""
    required: bool = False
    """TaskWeaver: always offered to the planner; kept for compatibility, no effect here."""
    plugin_only: bool = False
    """TaskWeaver: callable only as a plugin; kept for compatibility, no effect here."""
    description: str = Field(min_length=MIN_DESCRIPTION)
    """What the model is told the tool does (at least 10 characters)."""
    examples: str | None = None
    """Example calls, appended to the description the model sees."""
    parameters: list[PluginItem] = []
    """The call's arguments, in order."""
    returns: list[PluginItem] = []
    """The values the function returns, by position."""
    code: str | None = None
    """The Python file (``name`` or ``name.py``) beside the YAML, when not ``<name>.py``."""
    configurations: dict[str, Any] | None = None
    """Values the plugin reads as ``self.config`` (nulls allowed)."""


def parse_schema(path: Path, data: Any, ctx: LoadContext, shown: str) -> PluginSchema:
    """The validated schema of ``data``, or ToolLoadError with every problem.

    Raises:
        ToolLoadError: an unknown field, a wrong value, an unknown type, DataFrame without
            pandas, a non-JSON default.
    """
    try:
        schema = PluginSchema.model_validate(data)
    except ValidationError as exc:
        raise ToolLoadError(_model_problems(exc, path, ctx, shown)) from exc
    problems = _item_problems(schema, path, ctx, shown)
    if problems:
        raise ToolLoadError(problems)
    return schema


def schema_warnings(schema: PluginSchema, path: Path, ctx: LoadContext, shown: str) -> list[str]:
    """Short item descriptions, in compiler style (they warn, TaskWeaver ships some)."""
    found = []
    for group, items in (("parameters", schema.parameters), ("returns", schema.returns)):
        for i, item in enumerate(items):
            if len(item.description.strip()) < MIN_DESCRIPTION:
                line = ctx.line(path, group, i, "description") or ctx.line(path, group, i)
                problem = Problem(
                    shown,
                    line,
                    f"{group}[{i}].description",
                    f"{item.name!r} has a short description ({item.description!r})",
                    f"say in {MIN_DESCRIPTION} characters or more what it is",
                )
                found.append(str(problem))
    return found


def _model_problems(exc: ValidationError, path: Path, ctx: LoadContext, shown: str) -> list[Any]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            choices = _fields_for(loc[:-1])
            message, hint = unknown_field(str(loc[-1]), choices)
        elif err["type"] == "string_pattern_mismatch":
            message, hint = _pattern_message(loc, err.get("input")), None
        elif err["type"] == "string_too_short":
            least = err.get("ctx", {}).get("min_length")
            message = f"must be at least {least} characters, got {err.get('input')!r}"
            hint = "say what the tool does and when to use it"
        else:
            message, hint = phrase(err), fix_for(err)
        line = ctx.line(path, *loc) or ctx.line(path, *loc[:-1]) or 1
        problems.append(Problem(shown, line, dotted(loc) or None, message, hint))
    return problems


def _fields_for(loc: tuple[Any, ...]) -> list[str]:
    model = PluginItem if loc and loc[0] in ("parameters", "returns") else PluginSchema
    return list(model.model_fields)


def _pattern_message(loc: tuple[Any, ...], value: Any) -> str:
    if loc == ("name",):
        return f"must be letters, digits and '_' only, got {value!r}"
    return f"must be a Python identifier, got {value!r}"


def _item_problems(schema: PluginSchema, path: Path, ctx: LoadContext, shown: str) -> list[Problem]:
    problems = []
    for group, items in (("parameters", schema.parameters), ("returns", schema.returns)):
        seen: set[str] = set()
        for i, item in enumerate(items):
            at = (group, i)
            if item.name in seen:
                problems.append(_at(ctx, path, shown, (*at, "name"), f"{item.name!r} twice"))
            seen.add(item.name)
            problems += _type_problems(item, path, ctx, shown, at)
            if not _is_json(item.default):
                message = "must be JSON data (text, number, true/false, list, mapping, null)"
                problems.append(_at(ctx, path, shown, (*at, "default"), message))
    return problems


def _type_problems(
    item: PluginItem, path: Path, ctx: LoadContext, shown: str, at: tuple[Any, ...]
) -> list[Problem]:
    if item.type in JSON_TYPES:
        return []
    if item.type != DATAFRAME:
        close = _meant_type(item.type)
        known = ", ".join([*JSON_TYPES, DATAFRAME])
        hint = f"did you mean {close!r}?" if close else f"types: {known}"
        return [_at(ctx, path, shown, (*at, "type"), f"unknown type {item.type!r}", hint)]
    if not pandas_available():
        message = "DataFrame needs pandas, which is not installed"
        hint = "install the tools-data extra: pip install 'hookengine[tools-data]'"
        return [_at(ctx, path, shown, (*at, "type"), message, hint)]
    return []


_TYPE_ALIASES = {
    "string": "str",
    "text": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "tuple": "list",
    "object": "dict",
    "mapping": "dict",
    "null": "None",
    "nonetype": "None",
    "pd.dataframe": DATAFRAME,
}
"""What authors write for a type (JSON Schema's words, typing's generics), and ours."""


def _meant_type(written: str) -> str | None:
    """The type an author most likely meant: ``List[int]`` -> ``list``, ``string`` -> ``str``."""
    base = written.split("[", 1)[0].strip()
    names = [*JSON_TYPES, DATAFRAME]
    by_case = {name.lower(): name for name in names}
    found = by_case.get(base.lower()) or _TYPE_ALIASES.get(base.lower())
    if found:
        return found
    close = difflib.get_close_matches(base, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _at(
    ctx: LoadContext,
    path: Path,
    shown: str,
    loc: tuple[Any, ...],
    message: str,
    hint: str | None = None,
) -> Problem:
    line = ctx.line(path, *loc) or ctx.line(path, *loc[:-1])
    return Problem(shown, line, dotted(loc), message, hint)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def pandas_available() -> bool:
    """Whether pandas imports (the ``tools-data`` extra); imported only when a plugin needs it."""
    try:
        importlib.import_module("pandas")
    except ImportError:
        return False
    return True


def input_schema(schema: PluginSchema) -> dict[str, Any]:
    """The JSON Schema of a call's input: one property per parameter, in order."""
    properties = {item.name: _property(item) for item in schema.parameters}
    required = [item.name for item in schema.parameters if item.required]
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _property(item: PluginItem) -> dict[str, Any]:
    if item.type == DATAFRAME:
        prop: dict[str, Any] = {"type": "string"}
        note = "A DataFrame: the id or CSV file name of an artifact of this session."
        description = f"{item.description} ({note})" if item.description else note
    else:
        prop, description = dict(JSON_TYPES[item.type]), item.description
    if description:
        prop["description"] = description
    if item.default is not None:
        prop["default"] = item.default
    return prop


def tool_description(schema: PluginSchema) -> str:
    """What the model reads: the description, then the examples when there are some."""
    text = schema.description.strip()
    if schema.examples and schema.examples.strip():
        text += "\n\nExamples:\n" + schema.examples.strip()
    return text
