"""Open WebUI toolkits (``kind: openwebui_tools``): a ``Tools`` class file loaded unchanged.

A toolkit YAML names the ``.py`` file and its ``valves:``. Each public method of ``Tools``
becomes one tool, its spec made by Open WebUI 0.12.4's rules (``openwebui_specs``). The file
is trusted in-process code: it is imported once at load (its ``requirements:`` must already be
importable; nothing is ever installed), sync methods run in a thread, async ones are awaited.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import importlib.util
import inspect
import itertools
import json
import logging
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config.yamlfile import ConfigReadError, read_text
from engine.errors import Problem, fix_for, phrase, unknown_field
from engine.tools.base import (
    NAME_PATTERN,
    LoadContext,
    Tool,
    ToolContext,
    ToolLoadError,
    ToolResult,
    ToolSpec,
)
from engine.tools.openwebui_specs import (
    DEFAULTED,
    RESERVED,
    function_spec,
    parse_frontmatter,
    parse_requirements,
    public_methods,
)

log = logging.getLogger(__name__)

MAX_TOOLKIT_BYTES = 1_000_000
"""The largest toolkit ``.py`` file read."""

_IMPORT_LOCK = threading.Lock()
_SERIAL = itertools.count(1)
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class OpenWebUIConfig(BaseModel):
    """A toolkit YAML (``kind: openwebui_tools``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["openwebui_tools"]
    file: str
    """The toolkit's ``.py`` file, relative to the YAML's folder."""
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The toolkit's id (``__id__``); default: the file's name without ``.py``."""
    valves: dict[str, Any] = Field(default_factory=dict)
    """Values for the toolkit's ``Valves``, validated by it at load."""
    user_valves: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Starting ``UserValves`` values per user id, validated at load."""
    enabled: bool = True
    """False: validated at load, never offered or called."""
    timeout_ms: int | None = Field(default=None, gt=0)
    """Each method's time limit (default: the engine's)."""
    annotations: dict[str, Any] = Field(default_factory=dict)
    """MCP tool annotations given to every method's spec."""


# -- loading -----------------------------------------------------------------------------


def load_openwebui(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    """Load a toolkit YAML and its ``.py`` file: one tool per public method of ``Tools``.

    Args:
        path: the YAML file.
        data: its parsed mapping.
        ctx: what loading may use (``ctx.line`` for the lines of errors).

    Returns:
        The toolkit's tools, in method-name order.

    Raises:
        ToolLoadError: every problem found, each with file, line and field.
    """
    config = _validate(path, data, ctx)
    source_path = _source_path(path, config, ctx)
    source = _read(source_path)
    _check_source(source_path, source)
    toolkit = Toolkit.load(config, source_path, source, ctx.agent)
    try:
        toolkit.configure(config, path, ctx)
        return toolkit.tools(config)
    except ToolLoadError:
        toolkit.close()
        raise


def _validate(path: Path, data: dict[str, Any], ctx: LoadContext) -> OpenWebUIConfig:
    try:
        return OpenWebUIConfig.model_validate(data)
    except ValidationError as exc:
        raise ToolLoadError(_problems(exc, path, ctx, OpenWebUIConfig)) from exc


def _problems(
    exc: ValidationError,
    path: Path,
    ctx: LoadContext,
    model: type[BaseModel],
    *prefix: str | int,
) -> list[Problem]:
    """A pydantic error as file:line problems, each field as its author wrote it."""
    problems = []
    for err in exc.errors():
        loc = (*prefix, *err["loc"])
        name = ".".join(str(part) for part in loc)
        if err["type"] == "extra_forbidden":
            message, hint = unknown_field(str(err["loc"][-1]), list(model.model_fields))
        else:
            message, hint = phrase(err), fix_for(err)
        problems.append(Problem(str(path), ctx.line(path, *loc), name, message, hint))
    return problems


def _source_path(path: Path, config: OpenWebUIConfig, ctx: LoadContext) -> Path:
    """The toolkit file: a ``.py`` inside the config folder's parent (no traversal out)."""
    where = (path.parent / config.file).resolve()
    line = ctx.line(path, "file")
    if where.suffix != ".py":
        raise _one(path, line, "file", f"{config.file!r} is not a .py file")
    if not where.is_relative_to(ctx.base_dir.resolve()):
        raise _one(path, line, "file", f"{config.file!r} is outside {ctx.base_dir}")
    if not where.is_file():
        raise _one(path, line, "file", f"{config.file!r}: file not found")
    return where


def _read(source_path: Path) -> str:
    try:
        return read_text(source_path, MAX_TOOLKIT_BYTES)
    except ConfigReadError as exc:
        raise _one(source_path, exc.line, None, exc.message) from exc


def _one(
    path: Path, line: int | None, name: str | None, message: str, hint: str | None = None
) -> ToolLoadError:
    return ToolLoadError([Problem(str(path), line, name, message, hint)])


def _check_source(source_path: Path, source: str) -> None:
    """Refuse a file that imports Open WebUI or needs a requirement that is missing."""
    try:
        tree = ast.parse(source, str(source_path))
    except SyntaxError as exc:
        raise _one(source_path, exc.lineno, None, f"syntax error: {exc.msg}") from exc
    problems = [
        Problem(
            str(source_path),
            node.lineno,
            None,
            f"imports {module}: Open WebUI's own modules are not available in the engine",
            "use the arguments the engine passes (__user__, __event_emitter__, ...) instead",
        )
        for node, module in _imports(tree)
        if module == "open_webui" or module.startswith("open_webui.")
    ]
    problems += _missing_requirements(source_path, source)
    if problems:
        raise ToolLoadError(problems)


def _imports(tree: ast.AST) -> Iterator[tuple[ast.stmt, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module


def _missing_requirements(source_path: Path, source: str) -> list[Problem]:
    front = parse_frontmatter(source)
    line = next(
        (n for n, text in enumerate(source.splitlines(), 1) if "requirements" in text.lower()),
        None,
    )
    return [
        Problem(
            str(source_path),
            line,
            "requirements",
            f"{requirement!r} is not installed",
            f"install it where the engine runs (pip install '{requirement}'); "
            "the engine never installs requirements",
        )
        for requirement in parse_requirements(front.get("requirements", ""))
        if not _importable(requirement)
    ]


def _importable(requirement: str) -> bool:
    """A requirement's distribution is installed, or a module of its name imports."""
    match = _REQUIREMENT_NAME.match(requirement)
    if match is None:
        return False
    name = match.group(1)
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return importlib.util.find_spec(name.replace("-", "_").lower()) is not None
    except (ImportError, ValueError):  # a dotted name whose parent package is missing
        return False


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """Undo what the file does to the root logger (real tools call ``basicConfig``)."""
    root = logging.getLogger()
    handlers, level, filters = list(root.handlers), root.level, list(root.filters)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.filters[:] = filters
        root.setLevel(level)


# -- the toolkit ---------------------------------------------------------------------------


@dataclass
class Toolkit:
    """One loaded toolkit file: its module, its ``Tools`` instance and its user valves."""

    id: str
    path: Path
    module: types.ModuleType
    instance: Any
    frontmatter: dict[str, str]
    user_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, config: OpenWebUIConfig, source_path: Path, source: str, agent: str) -> Toolkit:
        """Import the file as its own module and make its ``Tools`` instance.

        Raises:
            ToolLoadError: the file failed to import, or has no ``Tools`` class.
        """
        agent_part = re.sub(r"\W", "_", agent)
        name = f"_hookengine_openwebui_{agent_part}_{next(_SERIAL)}"
        module = types.ModuleType(name)
        module.__file__ = str(source_path)
        with _IMPORT_LOCK, _root_logging_kept():
            sys.modules[name] = module
            try:
                _execute(module, source, source_path)
                instance = _instantiate(module, source_path)
            except BaseException:
                sys.modules.pop(name, None)
                raise
        toolkit_id = config.id or source_path.stem
        return cls(toolkit_id, source_path, module, instance, parse_frontmatter(source))

    def configure(self, config: OpenWebUIConfig, path: Path, ctx: LoadContext) -> None:
        """Set ``self.valves`` from the YAML (even when ``__init__`` does not) and validate
        each user's starting ``UserValves``.

        Raises:
            ToolLoadError: a value its model refuses, or valves the toolkit does not have.
        """
        problems = self._set_valves(config.valves, path, ctx)
        for user_id, values in config.user_valves.items():
            problems += self._check_user_values(values, path, ctx, user_id)
        if problems:
            raise ToolLoadError(problems)
        model = self.user_valves_model
        if model is not None:
            self.user_values = {
                user: model(**values).model_dump() for user, values in config.user_valves.items()
            }

    def _set_valves(self, values: dict[str, Any], path: Path, ctx: LoadContext) -> list[Problem]:
        model = getattr(type(self.instance), "Valves", None)
        if model is None:
            if not values:
                return []
            line = ctx.line(path, "valves")
            return [Problem(str(path), line, "valves", "the toolkit has no Valves class")]
        problems = _model_problems(model, values, path, ctx, "valves")
        if not problems:
            self.instance.valves = model(**values)
        return problems

    def _check_user_values(
        self, values: dict[str, Any], path: Path, ctx: LoadContext, user_id: str
    ) -> list[Problem]:
        model = self.user_valves_model
        if model is None:
            line = ctx.line(path, "user_valves")
            return [Problem(str(path), line, "user_valves", "the toolkit has no UserValves class")]
        return _model_problems(model, values, path, ctx, "user_valves", user_id)

    @property
    def user_valves_model(self) -> type[BaseModel] | None:
        model = getattr(type(self.instance), "UserValves", None)
        return model if isinstance(model, type) and issubclass(model, BaseModel) else None

    def user_valves(self, user_id: str | None) -> BaseModel | None:
        """A fresh ``UserValves`` for one call of ``user_id`` (None without the class): each
        call gets its own object, so concurrent calls never share one."""
        model = self.user_valves_model
        if model is None:
            return None
        with self.lock:
            values = dict(self.user_values.get(user_id or "", {}))
        return model(**values)

    def set_user_valves(self, user_id: str, values: Mapping[str, Any]) -> None:
        """Replace a user's ``UserValves`` values (validated first).

        Raises:
            ValueError: the toolkit has no ``UserValves``, or the values are refused.
        """
        model = self.user_valves_model
        if model is None:
            raise ValueError(f"toolkit {self.id!r} has no UserValves")
        checked = model(**values).model_dump()
        with self.lock:
            self.user_values[user_id] = checked

    def tools(self, config: OpenWebUIConfig) -> list[Tool]:
        """One tool per public method.

        Raises:
            ToolLoadError: a method whose name, spec or reserved arguments cannot be used.
        """
        problems: list[Problem] = []
        tools: list[Tool] = []
        for name, method in public_methods(self.instance):
            try:
                tools.append(self._tool(name, method, config))
            except ToolLoadError as exc:
                problems += exc.problems
        if problems:
            raise ToolLoadError(problems)
        return tools

    def _tool(self, name: str, method: Callable[..., Any], config: OpenWebUIConfig) -> Tool:
        line = _line_of(method)
        if not re.match(NAME_PATTERN, name):
            raise _one(self.path, line, name, "not a valid tool name", f"match {NAME_PATTERN}")
        defaults = _reserved_defaults(self.path, line, name, method)
        try:
            spec = function_spec(name, method)
        except Exception as exc:  # a hint pydantic cannot turn into a schema
            raise _one(self.path, line, name, f"no JSON Schema for its parameters: {exc}") from exc
        return OpenWebUITool(
            spec=ToolSpec(name, spec["description"], spec["parameters"], None, config.annotations),
            path=self.path,
            enabled=config.enabled,
            timeout_ms=config.timeout_ms,
            toolkit=self,
            method=method,
            defaulted=defaults,
        )

    def close(self) -> None:
        """Forget the toolkit's module."""
        sys.modules.pop(self.module.__name__, None)


def _execute(module: types.ModuleType, source: str, source_path: Path) -> None:
    """Run the file's code as the module's (the file is trusted: it is the operator's)."""
    try:
        exec(compile(source, str(source_path), "exec"), module.__dict__)
    except Exception as exc:
        raise _failed(source_path, exc) from exc


def _instantiate(module: types.ModuleType, source_path: Path) -> Any:
    """The file's ``Tools()``; import and constructor failures as load errors."""
    try:
        module_globals = module.__dict__
        tools_class = module_globals.get("Tools")
        if not isinstance(tools_class, type):
            raise _one(source_path, None, None, "the file defines no Tools class")
        return tools_class()
    except ToolLoadError:
        raise
    except Exception as exc:
        raise _failed(source_path, exc) from exc


def _model_problems(
    model: type[BaseModel],
    values: dict[str, Any],
    path: Path,
    ctx: LoadContext,
    *prefix: str,
) -> list[Problem]:
    problems = []
    for key in values:
        if key not in model.model_fields:
            message, hint = unknown_field(key, list(model.model_fields))
            where = ".".join((*prefix, key))
            problems.append(Problem(str(path), ctx.line(path, *prefix, key), where, message, hint))
    try:
        model(**values)
    except ValidationError as exc:
        problems += _problems(exc, path, ctx, model, *prefix)
    return problems


def _failed(source_path: Path, exc: BaseException) -> ToolLoadError:
    """A toolkit file that raised while importing or constructing ``Tools``."""
    line = _traceback_line(exc, source_path)
    if isinstance(exc, ImportError) and exc.name:
        message = f"cannot import {exc.name}: {exc}"
        hint = (
            "Open WebUI's own modules are not available in the engine"
            if exc.name.split(".")[0] == "open_webui"
            else f"install it where the engine runs (pip install {exc.name.split('.')[0]})"
        )
        return _one(source_path, line, None, message, hint)
    return _one(source_path, line, None, f"raised {type(exc).__name__}: {exc}")


def _traceback_line(exc: BaseException, source_path: Path) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(source_path)]
    return frames[-1].lineno if frames else None


def _line_of(method: Callable[..., Any]) -> int | None:
    code = getattr(inspect.unwrap(method), "__code__", None)
    return code.co_firstlineno if code is not None else None


def _reserved_defaults(
    path: Path, line: int | None, name: str, method: Callable[..., Any]
) -> frozenset[str]:
    """The ``__`` arguments of a method the engine leaves at their declared default
    (``__request__``, ``__oauth_token__``, unknown ones), each logged as a warning.

    Raises:
        ToolLoadError: such an argument without a default.
    """
    defaulted: set[str] = set()
    for param in inspect.signature(method).parameters.values():
        if not param.name.startswith("__") or param.name in RESERVED:
            continue
        if param.default is inspect.Parameter.empty:
            why = "the engine has no value for it" if param.name in DEFAULTED else "unknown"
            raise _one(
                path,
                line,
                f"{name}.{param.name}",
                f"reserved argument {param.name} without a default ({why})",
                f"declare {param.name}=None",
            )
        log.warning(
            "%s:%s: %s: %s gets its default %r (the engine has no value for it)",
            path,
            line,
            name,
            param.name,
            param.default,
        )
        defaulted.add(param.name)
    return frozenset(defaulted)


# -- one tool ------------------------------------------------------------------------------


@dataclass
class OpenWebUITool:
    """One method of a toolkit, as a tool."""

    spec: ToolSpec
    path: Path
    enabled: bool
    timeout_ms: int | None
    toolkit: Toolkit
    method: Callable[..., Any]
    defaulted: frozenset[str] = frozenset()
    kind: str = "openwebui_tools"
    isolation: Literal["thread", "process"] = "thread"

    def invoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the method on ``input`` (an async method in its own event loop).

        Raises:
            Exception: whatever the method raised (the call path makes it ``is_error``).
        """
        if not inspect.iscoroutinefunction(self.method):
            events: list[dict[str, Any]] = []
            value = self.method(**self._arguments(input, ctx, events))
            return self._result(value, input, ctx, events)
        return _run_coroutine(lambda: self.ainvoke(input, ctx))

    async def ainvoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the method on ``input``: awaited when async, in a thread when sync.

        Raises:
            Exception: whatever the method raised (the call path makes it ``is_error``).
        """
        events: list[dict[str, Any]] = []
        arguments = self._arguments(input, ctx, events)
        if inspect.iscoroutinefunction(self.method):
            value = await self.method(**arguments)
        else:
            value = await asyncio.to_thread(self.method, **arguments)
        return self._result(value, input, ctx, events)

    def close(self) -> None:
        self.toolkit.close()

    def _arguments(
        self, input: Mapping[str, Any], ctx: ToolContext, events: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The model's arguments the method declares, and the reserved ones it declares."""
        params = inspect.signature(self.method).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        arguments = {
            k: v for k, v in input.items() if not k.startswith("__") and (open_ended or k in params)
        }
        for name in params:
            if name in RESERVED:
                arguments[name] = self._reserved(name, ctx, events)
        return arguments

    def _reserved(self, name: str, ctx: ToolContext, events: list[dict[str, Any]]) -> Any:
        if name == "__event_emitter__":
            return _emitter(ctx, events)
        if name == "__event_call__":
            return _caller(ctx)
        if name == "__user__":
            return self._user(ctx)
        if name == "__metadata__":
            return self._metadata(ctx)
        if name in ("__messages__", "__files__"):
            return list(getattr(ctx, name.strip("_"), None) or [])
        if name == "__model__":
            return dict(getattr(ctx, "model", None) or {"id": ctx.agent})
        return {
            "__id__": self.toolkit.id,
            "__chat_id__": ctx.session_id,
            "__message_id__": ctx.call_id,
        }[name]

    def _user(self, ctx: ToolContext) -> dict[str, Any]:
        """``__user__``: ``{id, name, email, role}`` (from ``ctx.user`` where the host gives
        one) and, when the toolkit has ``UserValves``, this call's own ``valves``."""
        given = dict(getattr(ctx, "user", None) or {})
        user: dict[str, Any] = {
            "id": ctx.user_id,
            "name": given.get("name", ctx.user_id),
            "email": given.get("email", ""),
            "role": given.get("role", "user"),
        }
        if self.toolkit.user_valves_model is not None:
            user["valves"] = self.toolkit.user_valves(ctx.user_id)
        return user

    def _metadata(self, ctx: ToolContext) -> dict[str, Any]:
        return {
            "agent": ctx.agent,
            "user_id": ctx.user_id,
            "chat_id": ctx.session_id,
            "session_id": ctx.session_id,
            "message_id": ctx.call_id,
            "tool_ids": [self.toolkit.id],
            **dict(getattr(ctx, "metadata", None) or {}),
        }

    def _result(
        self,
        value: Any,
        input: Mapping[str, Any],
        ctx: ToolContext,
        events: list[dict[str, Any]],
    ) -> ToolResult:
        """What the method returned as a result: text as it is, JSON data as indented JSON
        (kept in ``data``), anything else as ``str()``; plus a citation when the toolkit's
        ``citation`` is on."""
        if isinstance(value, str):
            content, data = value, None
        elif isinstance(value, dict | list):
            content, data = json.dumps(value, indent=2, ensure_ascii=False, default=str), value
        else:
            content, data = ("" if value is None else str(value)), None
        if getattr(self.toolkit.instance, "citation", False):
            _record(ctx, events, self._citation(content, input))
        return ToolResult(content=content, data=data, events=events)

    def _citation(self, content: str, input: Mapping[str, Any]) -> dict[str, Any]:
        source = f"TOOL:{self.spec.name}"
        return {
            "type": "citation",
            "data": {
                "source": {"name": source},
                "document": [content],
                "metadata": [{"source": source, "parameters": dict(input)}],
            },
        }


def _record(ctx: ToolContext, events: list[dict[str, Any]], event: dict[str, Any]) -> None:
    events.append(event)
    if ctx.emit is not None:
        ctx.emit(event)


def _emitter(ctx: ToolContext, events: list[dict[str, Any]]) -> Callable[[Any], Any]:
    """``__event_emitter__``: each event kept in order and passed to the host's callback."""

    async def emit(event: dict[str, Any]) -> None:
        if not isinstance(event, dict):
            raise TypeError(f"__event_emitter__ takes a dict, got {type(event).__name__}")
        _record(ctx, events, event)

    return emit


def _caller(ctx: ToolContext) -> Callable[[Any], Any] | None:
    """``__event_call__``: the host's ``ask`` callback awaited, or None without one."""
    ask = ctx.ask
    if ask is None:
        return None

    async def call(event: dict[str, Any]) -> Any:
        answer = ask(event)
        return await answer if inspect.isawaitable(answer) else answer

    return call


def _run_coroutine(make: Callable[[], Any]) -> Any:
    """Run a coroutine to its end from sync code, in this thread when it has no running
    event loop, else in a helper thread (a loop cannot be nested)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1, thread_name_prefix="openwebui-tool") as helper:
        return helper.submit(lambda: asyncio.run(make())).result()
