"""Input schemas: TaskWeaver-style parameters as JSON Schema, schema checks, input validation."""

from __future__ import annotations

from typing import Any

from engine.errors import Problem

TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array"},
    "dict": {"type": "object"},
    "Any": {},
    "None": {"type": "null"},
}
"""TaskWeaver's parameter types in JSON Schema."""


def parameters_schema(parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """The object schema of TaskWeaver-style ``parameters`` (name, type, required,
    description, default); an unknown type is taken as any value (the loader refuses it)."""
    properties: dict[str, Any] = {}
    required = []
    for p in parameters:
        prop = dict(TYPES.get(str(p.get("type")), {}))
        if p.get("description"):
            prop["description"] = p["description"]
        if p.get("default") is not None:
            prop["default"] = p["default"]
        properties[str(p["name"])] = prop
        if p.get("required"):
            required.append(str(p["name"]))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def check_schema(schema: Any, shown: str, line: int | None, field: str) -> list[Problem]:
    """Problems of a tool's JSON Schema: it must be a valid draft 2020-12 object schema."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    if not isinstance(schema, dict) or schema.get("type") != "object":
        return [Problem(shown, line, field, "must be an object schema (type: object)")]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return [
            Problem(
                shown,
                line,
                field,
                f"not a valid JSON Schema at {where or '/'}: {exc.message[:200]}",
            )
        ]
    return []


def validator(schema: dict[str, Any]) -> Any:
    """A compiled validator of ``schema`` (made once per tool)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def input_errors(checker: Any, value: Any) -> list[str]:
    """Each way ``value`` fails the schema, as ``field: message`` (field ``(input)`` for the
    whole input), in a stable order."""
    errors = sorted(checker.iter_errors(value), key=lambda e: (list(e.absolute_path), e.message))
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(input)'}: {e.message}" for e in errors
    ]


def strict_ok(schema: Any) -> bool:
    """Whether ``schema`` already is what OpenAI's strict mode asks for, so ``strict: true`` may
    be claimed without rewriting it (a schema is never rewritten).

    The rules are those of the openai SDK's ``to_strict_json_schema`` (what
    ``pydantic_function_tool`` sends): a schema qualifies when that function would leave it as
    it is. Each object has ``additionalProperties: false`` (an open object never qualifies),
    ``required`` lists every property in order, no ``default`` is null, no ``$ref`` has
    siblings and no ``allOf`` has a single entry; the same holds in ``$defs``,
    ``definitions``, properties, ``items``, ``anyOf`` and ``allOf``.
    """
    return isinstance(schema, dict) and _strict(schema)


def _strict(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict) and not all(_strict(v) for v in defs.values()):
            return False
    if node.get("type") == "object" and node.get("additionalProperties", True) is not False:
        return False
    props = node.get("properties")
    if isinstance(props, dict) and (
        node.get("required") != list(props) or not all(_strict(v) for v in props.values())
    ):
        return False
    if isinstance(node.get("items"), dict) and not _strict(node["items"]):
        return False
    for key in ("anyOf", "allOf"):
        parts = node.get(key)
        if isinstance(parts, list) and not all(_strict(v) for v in parts):
            return False
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        return False
    if "default" in node and node["default"] is None:
        return False
    return not (node.get("$ref") and len(node) > 1)
