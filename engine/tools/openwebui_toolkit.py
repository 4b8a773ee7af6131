"""An Open WebUI toolkit file imported as its own module: its ``Tools`` instance, its valves
and user valves, and its methods as tools."""

from __future__ import annotations

import inspect
import itertools
import logging
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from engine.errors import Problem, fix_for, phrase, unknown_field
from engine.tools.base import NAME_PATTERN, LoadContext, Tool, ToolLoadError, ToolSpec
from engine.tools.openwebui_call import OpenWebUITool
from engine.tools.openwebui_specs import (
    DEFAULTED,
    RESERVED,
    function_spec,
    parse_frontmatter,
    public_methods,
)

if TYPE_CHECKING:
    from engine.tools.openwebui import OpenWebUIConfig

log = logging.getLogger("engine.tools.openwebui")

_IMPORT_LOCK = threading.Lock()
_SERIAL = itertools.count(1)


def load_error(
    path: Path, line: int | None, name: str | None, message: str, hint: str | None = None
) -> ToolLoadError:
    return ToolLoadError([Problem(str(path), line, name, message, hint)])


def problems_of(
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
            line = ctx.line(path, "valves")
            no_class = Problem(str(path), line, "valves", "the toolkit has no Valves class")
            return [no_class] if values else []
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return [Problem(str(self.path), None, "Valves", "Valves is not a pydantic BaseModel")]
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
            raise load_error(
                self.path, line, name, "not a valid tool name", f"match {NAME_PATTERN}"
            )
        try:
            inspect.signature(method)
        except (TypeError, ValueError) as exc:  # a builtin callable attribute, say
            raise load_error(self.path, line, name, f"no signature to read: {exc}") from exc
        defaults = _reserved_defaults(self.path, line, name, method)
        try:
            spec = function_spec(name, method)
        except Exception as exc:  # a hint pydantic cannot turn into a schema
            raise load_error(
                self.path, line, name, f"no JSON Schema for its parameters: {exc}"
            ) from exc
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
    except (Exception, SystemExit) as exc:  # exit() in a toolkit must not end the host
        raise _failed(source_path, exc) from exc


def _instantiate(module: types.ModuleType, source_path: Path) -> Any:
    """The file's ``Tools()``; import and constructor failures as load errors."""
    try:
        module_globals = module.__dict__
        tools_class = module_globals.get("Tools")
        if not isinstance(tools_class, type):
            raise load_error(source_path, None, None, "the file defines no Tools class")
        return tools_class()
    except ToolLoadError:
        raise
    except (Exception, SystemExit) as exc:  # exit() in a toolkit must not end the host
        raise _failed(source_path, exc) from exc


def _model_problems(
    model: type[BaseModel],
    values: dict[str, Any],
    path: Path,
    ctx: LoadContext,
    *prefix: str,
) -> list[Problem]:
    """Every problem of ``values`` for ``model``: unknown keys (which a ``Valves`` class would
    silently ignore), then what the model refuses."""
    problems = []
    for key in values:
        if key not in model.model_fields:
            message, hint = unknown_field(key, list(model.model_fields))
            where = ".".join((*prefix, key))
            problems.append(Problem(str(path), ctx.line(path, *prefix, key), where, message, hint))
    known = {key: value for key, value in values.items() if key in model.model_fields}
    try:
        model(**known)
    except ValidationError as exc:
        problems += problems_of(exc, path, ctx, model, *prefix)
    except Exception as exc:  # noqa: BLE001 - a toolkit validator raised: a load error
        where = ".".join(prefix)
        message = f"{model.__name__} raised {type(exc).__name__}: {exc}"
        problems.append(Problem(str(path), ctx.line(path, *prefix), where, message))
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
        return load_error(source_path, line, None, message, hint)
    return load_error(source_path, line, None, f"raised {type(exc).__name__}: {exc}")


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
            raise load_error(
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
