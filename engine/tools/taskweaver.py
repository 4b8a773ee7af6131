"""TaskWeaver plugins as tools: a YAML schema plus a Python file, loaded unchanged.

A call runs the plugin in the host (trusted in-process code, ``isolation: thread``): each call
makes a fresh plugin instance whose ``self.ctx`` is that call's context. DataFrame parameters
arrive as an artifact id or CSV file name and are read with pandas; the returned values map to
``returns:`` by position: the ``description`` string (else the last string) is what the model
sees, the rest is host-only ``data``, and a returned DataFrame becomes a ``df`` artifact.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import itertools
import json
import logging
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config.loader import show
from engine.errors import Problem
from engine.tools.base import (
    LoadContext,
    Tool,
    ToolContext,
    ToolInputError,
    ToolLoadError,
    ToolResult,
    ToolSpec,
    ToolTestResult,
)
from engine.tools.taskweaver_context import (
    PluginContext,
    ScratchContext,
    artifact_rows,
    is_dataframe,
)
from engine.tools.taskweaver_schema import (
    DATAFRAME,
    PluginItem,
    PluginSchema,
    input_schema,
    parse_schema,
    schema_warnings,
    tool_description,
)
from engine.tools.taskweaver_shim import LoadFailure, Plugin, PluginTest, run_plugin_file

log = logging.getLogger(__name__)

_SERIAL = itertools.count(1)


# -- the tool ------------------------------------------------------------------------------


@dataclass
class TaskWeaverTool:
    """A loaded TaskWeaver plugin (see the module docstring)."""

    spec: ToolSpec
    path: Path
    schema: PluginSchema
    plugin_class: type[Plugin]
    tests: list[PluginTest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Problems that only warn (short item descriptions), in compiler style."""
    enabled: bool = True
    """False: validated at load, never offered or called (the YAML's ``enabled``)."""
    module_name: str = ""
    """The plugin file's module in ``sys.modules`` (removed by ``close``)."""
    kind: str = "taskweaver"
    timeout_ms: int | None = None
    isolation: Literal["thread", "process"] = "thread"

    def plugin(self, ctx: ToolContext) -> tuple[Plugin, PluginContext]:
        """A fresh plugin instance for one call, and its ``self.ctx``."""
        plugin_ctx = PluginContext(ctx, self.schema.name)
        config = copy.deepcopy(self.schema.configurations or {})
        return self.plugin_class(self.schema.name, plugin_ctx, config), plugin_ctx

    def invoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the plugin on ``input``; an ``is_error`` result for a failed lazy import, a
        ``None`` or non-JSON return. Other exceptions propagate to the call path.

        Raises:
            ToolInputError: a DataFrame parameter names no readable CSV artifact.
        """
        kwargs = self._arguments(input, ctx)
        plugin, plugin_ctx = self.plugin(ctx)
        try:
            result = plugin(**kwargs)
        except SystemExit as exc:  # trusted code, but sys.exit() must not end the host
            message = f"plugin {self.spec.name!r} called sys.exit({exc.code!r})"
            return ToolResult(content=message, is_error=True)
        except ImportError as exc:
            name = exc.name or str(exc)
            message = f"plugin {self.spec.name!r} needs module {name!r}, which cannot be imported"
            return ToolResult(content=f"{message}: {exc}", is_error=True)
        try:
            out = self._result(result, plugin_ctx)
        except _BadReturn as exc:
            out = ToolResult(content=f"plugin {self.spec.name!r} {exc}", is_error=True)
        out.artifacts = artifact_rows(plugin_ctx.made, ctx)  # made even when the return is bad
        return out

    def run_tests(self, ctx: ToolContext) -> list[ToolTestResult]:
        """The plugin's ``@test_plugin`` tests, as ``hookengine tools test`` reports them."""
        return [
            ToolTestResult(self.spec.name, r.name, r.passed, r.error or "")
            for r in run_plugin_tests(self, ctx)
        ]

    def close(self) -> None:
        """Forget the plugin's module (its classes go when the last call ends)."""
        sys.modules.pop(self.module_name, None)

    def argument_defaults(self) -> dict[str, Any]:
        """The ``default:`` of each parameter that has one: the call path puts them into the
        input before the ``tool_call`` hooks (``_arguments`` fills the same ones in when the
        plugin is called directly)."""
        return {
            item.name: item.default for item in self.schema.parameters if item.default is not None
        }

    def _arguments(self, input: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        kwargs = dict(input)
        for item in self.schema.parameters:
            if item.name not in kwargs and item.default is not None:
                kwargs[item.name] = item.default
            if item.type == DATAFRAME and item.name in kwargs:
                kwargs[item.name] = _read_frame(item.name, kwargs[item.name], ctx)
        return kwargs

    def _result(self, result: Any, plugin_ctx: PluginContext) -> ToolResult:
        items = self.schema.returns or [PluginItem(name="result", type="Any")]
        values = _positional(result, items)
        data: dict[str, Any] = {}
        for item, value in zip(items, values, strict=True):
            data[item.name] = _returned(item, value, plugin_ctx)
        key = _content_key(items, data)
        content = data.pop(key)
        return ToolResult(content=content, data=data or None)


class _BadReturn(Exception):
    """The plugin returned what its ``returns:`` cannot carry."""


def _read_frame(name: str, ref: Any, ctx: ToolContext) -> Any:
    pd = importlib.import_module("pandas")  # the tools-data extra; checked at load
    if not isinstance(ref, str):
        raise ToolInputError(f"{name}: a DataFrame is given as an artifact id or CSV file name")
    path = ctx.artifact_path(ref)
    try:
        return pd.read_csv(path)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise ToolInputError(f"{name}: artifact {ref!r} is not a readable CSV ({exc})") from exc


def _positional(result: Any, items: list[PluginItem]) -> list[Any]:
    if len(items) == 1:
        return [result]
    names = ", ".join(item.name for item in items)
    if not isinstance(result, tuple | list) or len(result) != len(items):
        got = f"{len(result)} values" if isinstance(result, tuple | list) else _kind(result)
        raise _BadReturn(f"returned {got}; returns: declares {len(items)} ({names})")
    return list(result)


def _returned(item: PluginItem, value: Any, plugin_ctx: PluginContext) -> Any:
    if value is None:
        raise _BadReturn(f"returned None for {item.name!r} (nothing to give the model)")
    if is_dataframe(value):
        ident = plugin_ctx.add_artifact(
            item.name, f"{item.name}.csv", "df", value, item.description
        )
        return {"artifact": ident}
    if item.type == DATAFRAME:
        raise _BadReturn(f"returned {_kind(value)} for {item.name!r}, declared a DataFrame")
    value = _plain(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _BadReturn(f"returned {_kind(value)} for {item.name!r}, not JSON data") from exc
    return value


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value (plugins compute with numpy and pandas)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _content_key(items: list[PluginItem], data: dict[str, Any]) -> str:
    texts = [item.name for item in items if isinstance(data[item.name], str)]
    if not texts:
        raise _BadReturn(
            "returned no text for the model (a TaskWeaver plugin returns a description)"
        )
    return "description" if "description" in texts else texts[-1]


# -- loading -------------------------------------------------------------------------------


def load_taskweaver(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    """Load a TaskWeaver plugin: its YAML (``data``, read from ``path``) and its Python file.

    Returns:
        The one tool the plugin is (disabled ones too: validated, never offered).

    Raises:
        ToolLoadError: every problem of the YAML, or the Python file's problem (its line and,
            for an import error, the module).
    """
    shown = show(path)
    schema = parse_schema(path, data, ctx, shown)
    code = _code_path(path, schema, ctx, shown)
    module_name = f"hookengine_taskweaver_{next(_SERIAL)}"
    try:
        _, registry = run_plugin_file(code, module_name)
    except LoadFailure as exc:
        raise ToolLoadError([Problem(show(code), exc.line, None, exc.message, exc.hint)]) from exc
    try:
        plugin_class = _one_plugin(registry.plugins, code)
        _check_arguments(plugin_class, schema, path, ctx, shown)
    except ToolLoadError:
        sys.modules.pop(module_name, None)
        raise
    warnings = schema_warnings(schema, path, ctx, shown)
    for text in warnings:
        log.warning("%s", text)
    spec = ToolSpec(schema.name, tool_description(schema), input_schema(schema))
    tool = TaskWeaverTool(spec, path, schema, plugin_class, registry.tests, warnings)
    tool.enabled, tool.module_name = schema.enabled, module_name
    return [tool]


_CODE = re.compile(r"^[A-Za-z0-9_.-]+$")


def _code_path(path: Path, schema: PluginSchema, ctx: LoadContext, shown: str) -> Path:
    name = schema.code or schema.name
    stem = name.removesuffix(".py")
    folder = path.parent
    if not _CODE.match(name) or stem in ("", ".", ".."):
        raise _problem(ctx, path, shown, "code", f"{name!r} must name a .py file beside the YAML")
    code = folder / f"{stem}.py"
    if not code.is_file() or code.resolve().parent != folder.resolve():
        where = "code" if schema.code else "name"
        message = f"no plugin file {code.name} beside the YAML"
        hint = "add it, or set code: to the file's name" if where == "name" else None
        raise _problem(ctx, path, shown, where, message, hint)
    return code


def _problem(
    ctx: LoadContext, path: Path, shown: str, key: str, message: str, hint: str | None = None
) -> ToolLoadError:
    return ToolLoadError([Problem(shown, ctx.line(path, key), key, message, hint)])


def _one_plugin(plugins: list[type[Plugin]], code: Path) -> type[Plugin]:
    if len(plugins) == 1:
        return plugins[0]
    if not plugins:
        message = "registers no plugin"
        hint = "decorate the Plugin subclass or function with @register_plugin"
    else:
        names = ", ".join(p.__name__ for p in plugins)
        message, hint = f"registers {len(plugins)} plugins ({names})", "a file registers one"
    raise ToolLoadError([Problem(show(code), None, None, message, hint)])


def _check_arguments(
    plugin_class: type[Plugin], schema: PluginSchema, path: Path, ctx: LoadContext, shown: str
) -> None:
    """Every declared parameter is an argument of ``__call__`` (unless it takes ``**kwargs``)."""
    signature = inspect.signature(plugin_class.__call__)
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = {p.name for p in params}
    problems = [
        Problem(
            shown,
            ctx.line(path, "parameters", i, "name"),
            f"parameters[{i}].name",
            f"{item.name!r} is not an argument of the plugin's __call__",
            f"arguments: {', '.join(sorted(names - {'self'}))}",
        )
        for i, item in enumerate(schema.parameters)
        if item.name not in names
    ]
    if problems:
        raise ToolLoadError(problems)


# -- @test_plugin --------------------------------------------------------------------------


@dataclass(frozen=True)
class PluginTestResult:
    """One ``@test_plugin`` test's outcome."""

    name: str
    description: str
    passed: bool
    error: str | None = None
    """Why it failed: the exception's type and message."""


def run_plugin_tests(
    tool: TaskWeaverTool, ctx: ToolContext | None = None
) -> list[PluginTestResult]:
    """Run the plugin's ``@test_plugin`` tests; each gets the plugin (called directly, with
    ``ctx`` as its ``self.ctx``: a scratch context in a temporary folder without one)."""
    if ctx is not None:
        return [_run_test(tool, test, ctx) for test in tool.tests]
    with tempfile.TemporaryDirectory(prefix="hookengine-plugin-test-") as folder:
        scratch = ScratchContext(Path(folder), agent="test", tool=tool.spec.name)
        return [_run_test(tool, test, scratch) for test in tool.tests]


def _run_test(tool: TaskWeaverTool, test: PluginTest, ctx: ToolContext) -> PluginTestResult:
    plugin, _ = tool.plugin(ctx)
    try:
        test.func(plugin)
    except Exception as exc:  # noqa: BLE001 - a test's failure is its result
        return PluginTestResult(test.name, test.description, False, f"{type(exc).__name__}: {exc}")
    return PluginTestResult(test.name, test.description, True)


__all__ = [
    "PluginTestResult",
    "TaskWeaverTool",
    "load_taskweaver",
    "run_plugin_tests",
]
