"""Open WebUI 0.12.4's rules for a toolkit file: its frontmatter and each method's spec.

Open WebUI builds a spec per public method of ``Tools``: a pydantic model from the signature
(type hints, defaults, ``:param`` descriptions), its JSON Schema through langchain-core's
``convert_to_openai_function`` (refs inlined, titles removed), then its own cleaning
(``Optional`` collapsed, ``default: null`` dropped, a missing type made ``string``). The
engine never imports langchain or Open WebUI: the steps are reimplemented here, and a test
re-derives the golden specs with langchain-core to catch drift.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

RESERVED = frozenset(
    {
        "__user__",
        "__event_emitter__",
        "__event_call__",
        "__metadata__",
        "__messages__",
        "__files__",
        "__model__",
        "__id__",
        "__chat_id__",
        "__message_id__",
    }
)
"""Reserved arguments the engine binds, each only when a method declares it."""

DEFAULTED = frozenset({"__request__", "__oauth_token__"})
"""Reserved arguments the engine has no value for: a method gets its declared default."""

_FRONTMATTER_LINE = re.compile(r"^\s*([a-z_]+):\s*(.*)\s*$", re.IGNORECASE)
_PARAM_LINE = re.compile(r":param (\w+):\s*(.*)")


def parse_frontmatter(source: str) -> dict[str, str]:
    """The ``key: value`` lines of a file's opening docstring (keys lower-cased).

    As in Open WebUI, the file's first line must be ``\"\"\"`` exactly, and the block ends at
    the next line holding ``\"\"\"``; other lines are ignored. ``requirements:aiohttp``
    (no space) counts.
    """
    lines = source.splitlines()
    if not lines or lines[0].strip() != '"""':
        return {}
    found: dict[str, str] = {}
    for line in lines[1:]:
        if '"""' in line:
            break
        match = _FRONTMATTER_LINE.match(line)
        if match:
            found[match.group(1).strip().lower()] = match.group(2).strip()
    return found


def parse_requirements(value: str) -> list[str]:
    """The requirement specifiers of a ``requirements:`` value (comma separated)."""
    return [part.strip() for part in value.split(",") if part.strip()]


def parse_description(docstring: str | None) -> str:
    """The docstring up to its first ``:param`` or ``:return`` line, lines stripped."""
    if not docstring:
        return ""
    kept: list[str] = []
    for line in (line.strip() for line in docstring.strip().split("\n")):
        if line.startswith((":param", ":return")):
            break
        kept.append(line)
    return inspect.cleandoc("\n".join(kept))


def parse_param_docs(docstring: str | None) -> dict[str, str]:
    """Each ``:param name: text`` of a docstring, with its continuation lines.

    A continuation line is a non-blank line after a ``:param`` line that does not start with
    ``:``; it is joined with one space. ``__`` parameters are dropped.
    """
    found: dict[str, str] = {}
    current: str | None = None
    for line in (line.strip() for line in (docstring or "").splitlines()):
        match = _PARAM_LINE.match(line)
        if match:
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif current is not None and line and not line.startswith(":"):
            found[current] = f"{found[current]} {line}".strip()
        else:
            current = None
    return {name: text for name, text in found.items() if text and not name.startswith("__")}


def public_methods(instance: object) -> list[tuple[str, Callable[..., Any]]]:
    """The methods Open WebUI offers as tools: callable, not ``_``-prefixed, not classes."""
    found = []
    for name in dir(instance):
        value = getattr(instance, name, None)
        if callable(value) and not name.startswith("_") and not inspect.isclass(value):
            found.append((name, value))
    return found


def model_parameters(func: Callable[..., Any]) -> list[inspect.Parameter]:
    """The parameters a model fills: all but ``self``, ``*args``/``**kwargs`` and ``__``."""
    return [
        p
        for p in inspect.signature(func).parameters.values()
        if not p.name.startswith("__")
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def function_model(func: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of a method's model-filled parameters (Open WebUI's rules).

    Un-hinted parameters are ``Any`` (the spec makes them strings); a ``Field(...)`` default
    supplies a description, and a ``:param`` line one where the ``Field`` has none.
    """
    hints = get_type_hints(func)
    described = parse_param_docs(func.__doc__)
    fields: dict[str, Any] = {}
    for param in model_parameters(func):
        hint = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        text = described.get(param.name)
        if isinstance(default, FieldInfo):
            if text and default.description is None:
                default = FieldInfo.merge_field_infos(default, description=text)
            fields[param.name] = (hint, default)
        elif text:
            fields[param.name] = (hint, Field(default, description=text))
        else:
            fields[param.name] = (hint, default)
    model: type[BaseModel] = create_model(func.__name__, **fields)
    model.__doc__ = parse_description(func.__doc__)
    return model


def function_spec(name: str, func: Callable[..., Any]) -> dict[str, Any]:
    """``{name, description, parameters}`` of a method, as Open WebUI 0.12.4 makes it.

    Raises:
        TypeError, NameError, pydantic errors: a hint pydantic cannot turn into a schema.
    """
    schema = _inline_refs(function_model(func).model_json_schema())
    schema.pop("$defs", None)
    schema.pop("title", None)
    description = schema.pop("description", "") or name
    parameters = _without_titles(schema)
    clean_properties(parameters)
    return {"name": name, "description": description, "parameters": parameters}


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``$ref``s replaced by their definitions; sibling keys override (a cycle is cut)."""

    def walk(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(item, active) for item in node]
        if not isinstance(node, dict):
            return node
        siblings = {
            k: (copy.deepcopy(v) if k == "$defs" else walk(v, active))
            for k, v in node.items()
            if k != "$ref"
        }
        ref = node.get("$ref")
        if ref is None or ref in active:
            return siblings
        target = walk(copy.deepcopy(_resolve(schema, ref)), active | {ref})
        merged = dict(target) if isinstance(target, dict) else {}
        merged.update(siblings)
        return merged

    result: dict[str, Any] = walk(schema, frozenset())
    return result


def _resolve(schema: dict[str, Any], ref: str) -> Any:
    node: Any = schema
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _without_titles(node: dict[str, Any], parent: str = "") -> dict[str, Any]:
    """``title`` keys removed, except a property called ``title``; lists are left as they
    are (langchain-core's rule, kept for equal specs)."""
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and not (isinstance(value, dict) and parent == "properties"):
            continue
        kept[key] = _without_titles(value, key) if isinstance(value, dict) else value
    return kept


def clean_properties(schema: dict[str, Any]) -> None:
    """Open WebUI's cleaning, in place: ``anyOf`` loses its ``null`` member (one left: it
    becomes the schema), ``default: null`` goes, a schema without a type is a string;
    applied to ``properties`` and ``items`` recursively."""
    if "anyOf" in schema:
        others = [t for t in schema["anyOf"] if t.get("type") != "null"]
        if len(others) == 1:
            schema.update(others[0])
            del schema["anyOf"]
        else:
            schema["anyOf"] = others
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    if "type" not in schema and "anyOf" not in schema and "properties" not in schema:
        schema["type"] = "string"
    for sub in schema.get("properties", {}).values():
        if isinstance(sub, dict):
            clean_properties(sub)
    if isinstance(schema.get("items"), dict):
        clean_properties(schema["items"])
