"""Open WebUI 0.12.4's own spec pipeline, with langchain-core: the goldens' source.

A dev script, never imported by the engine. It follows Open WebUI's code path step by step
(``get_functions_from_tool``, ``convert_function_to_pydantic_model``, langchain-core's
``convert_to_openai_function``, ``clean_openai_tool_schema``) and writes
tests/golden/openwebui/<toolkit>.json. Run it after changing a toolkit in
tests/tools/openwebui_toolkits/:

    PYTHONPATH=$PWD python -m tests.tools.openwebui_oracle

Written against langchain-core 1.8.3 (Open WebUI 0.12.4 pins 1.4.8; the conversion step used
here, pydantic model -> function, is the same in both). Two choices of ours, made the same way
in the engine: ``__`` parameters are left out of the model (Open WebUI drops them from the
properties afterwards), and a ``:param`` description continues on the lines after it.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_type_hints

from langchain_core.utils.function_calling import convert_to_openai_function
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

HERE = Path(__file__).parent
TOOLKITS = HERE / "openwebui_toolkits"
GOLDEN = HERE.parent / "golden" / "openwebui"


def load_instance(path: Path) -> Any:
    """The ``Tools()`` of a toolkit file, imported as its own module."""
    module = types.ModuleType(f"_oracle_{path.stem}")
    sys.modules[module.__name__] = module
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module.Tools()


def parse_description(docstring: str | None) -> str:
    if not docstring:
        return ""
    lines = [line.strip() for line in docstring.strip().split("\n")]
    description_lines: list[str] = []
    for line in lines:
        if re.match(r":param", line) or re.match(r":return", line):
            break
        description_lines.append(line)
    return "\n".join(description_lines)


def parse_docstring(docstring: str | None) -> dict[str, str]:
    if not docstring:
        return {}
    param_pattern = re.compile(r":param (\w+):\s*(.*)")
    descriptions: dict[str, str] = {}
    current = None
    for raw in docstring.splitlines():
        line = raw.strip()
        match = param_pattern.match(line)
        if match:
            current, text = match.groups()
            descriptions[current] = text.strip()
        elif current and line and not line.startswith(":"):
            descriptions[current] = (descriptions[current] + " " + line).strip()
        else:
            current = None
    return {k: v for k, v in descriptions.items() if v and not k.startswith("__")}


def convert_function_to_pydantic_model(func: Callable[..., Any]) -> type[BaseModel]:
    type_hints = get_type_hints(func)
    parameters = inspect.signature(func).parameters
    docstring = func.__doc__
    function_param_descriptions = parse_docstring(docstring)
    field_defs: dict[str, Any] = {}
    for name, param in parameters.items():
        if name.startswith("__"):
            continue
        type_hint = type_hints.get(name, Any)
        default_value = param.default if param.default is not param.empty else ...
        param_description = function_param_descriptions.get(name)
        if isinstance(default_value, FieldInfo):
            if param_description and default_value.description is None:
                default_value = FieldInfo.merge_field_infos(
                    default_value, description=param_description
                )
            field_defs[name] = (type_hint, default_value)
        elif param_description:
            field_defs[name] = (type_hint, Field(default_value, description=param_description))
        else:
            field_defs[name] = (type_hint, default_value)
    model = create_model(func.__name__, **field_defs)
    model.__doc__ = parse_description(docstring)
    return model


def clean_properties(schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    if "anyOf" in schema:
        non_null_types = [t for t in schema["anyOf"] if t.get("type") != "null"]
        if len(non_null_types) == 1:
            schema.update(non_null_types[0])
            del schema["anyOf"]
        else:
            schema["anyOf"] = non_null_types
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    if "type" not in schema and "anyOf" not in schema and "properties" not in schema:
        schema["type"] = "string"
    if "properties" in schema:
        for prop_schema in schema["properties"].values():
            clean_properties(prop_schema)
    if "items" in schema:
        clean_properties(schema["items"])


def get_functions_from_tool(tool: object) -> list[Callable[..., Any]]:
    return [
        getattr(tool, func)
        for func in dir(tool)
        if callable(getattr(tool, func))
        and not func.startswith("_")
        and not inspect.isclass(getattr(tool, func))
    ]


def derive(path: Path) -> list[dict[str, Any]]:
    """The specs of a toolkit file as Open WebUI makes them."""
    specs = []
    for func in get_functions_from_tool(load_instance(path)):
        spec = dict(convert_to_openai_function(convert_function_to_pydantic_model(func)))
        clean_properties(spec["parameters"])
        spec["description"] = spec.get("description") or func.__name__
        specs.append(spec)
    return specs


def toolkit_files() -> list[Path]:
    return sorted(TOOLKITS.glob("*.py"))


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for path in toolkit_files():
        target = GOLDEN / f"{path.stem}.json"
        target.write_text(json.dumps(derive(path), indent=2, sort_keys=True) + "\n")
        print(target)


if __name__ == "__main__":
    main()
