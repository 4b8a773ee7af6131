"""TaskWeaver's ``taskweaver.plugin`` API, and running a plugin file with it importable.

``from taskweaver.plugin import Plugin, register_plugin, test_plugin`` works only while a
plugin file runs: the shim modules enter ``sys.modules`` for that run and leave after (the
previous entries, if any, come back), under one lock so two loads never see each other's
registrations. The seed docs spell it ``taskWeaver.plugin``; both spellings work.
"""

from __future__ import annotations

import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHIM_NAMES = ("taskweaver", "taskWeaver")
_LOCK = threading.RLock()  # reentrant: a plugin file may itself load a plugin


class Plugin:
    """TaskWeaver's plugin base class: ``__call__`` is the tool; ``self.config`` holds the
    YAML's ``configurations``; ``self.ctx`` is the call's context (artifacts, log, env)."""

    def __init__(self, name: str, ctx: Any, config: dict[str, Any]) -> None:
        self.name = name
        self.ctx = ctx
        self.config = config

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"plugin {self.name!r} does not define __call__")

    def log(self, level: str, message: str) -> None:
        """TaskWeaver's ``Plugin.log``: the call's log."""
        self.ctx.log(level, message)


@dataclass(frozen=True)
class PluginTest:
    """One ``@test_plugin`` function: it gets the plugin (callable) and asserts."""

    name: str
    description: str
    func: Callable[[Any], Any]


@dataclass
class Registry:
    """What one plugin file registered while it ran."""

    plugins: list[type[Plugin]] = field(default_factory=list)
    tests: list[PluginTest] = field(default_factory=list)

    def register_plugin(self, target: Any) -> Any:
        """``@register_plugin``: a ``Plugin`` subclass, or a function made into one."""
        if isinstance(target, type) and issubclass(target, Plugin):
            self.plugins.append(target)
            return target
        if callable(target):
            self.plugins.append(_function_plugin(target))
            return target
        raise TypeError("@register_plugin takes a Plugin subclass or a function")

    def test_plugin(
        self, name: str | None = None, description: str | None = None
    ) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
        """``@test_plugin(name=..., description=...)``: a test run by ``hookengine tools test``."""

        def collect(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
            title = name or func.__name__
            self.tests.append(PluginTest(title, description or title, func))
            return func

        return collect


def _function_plugin(func: Callable[..., Any]) -> type[Plugin]:
    def call(self: Plugin, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    call.__wrapped__ = func  # type: ignore[attr-defined]  # its signature is the function's
    return type(f"FunctionPlugin_{func.__name__}", (Plugin,), {"__call__": call})


class LoadFailure(Exception):
    """The plugin file did not run: the line in it, and what went wrong."""

    def __init__(self, line: int | None, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.line, self.message, self.hint = line, message, hint


def run_plugin_file(path: Path, module_name: str) -> tuple[types.ModuleType, Registry]:
    """Run ``path`` as module ``module_name`` with the shim importable; what it registered.

    Raises:
        LoadFailure: the file did not compile, an import failed (naming the module), or it
            raised while running.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadFailure(None, f"cannot read the plugin file: {exc}") from exc
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise LoadFailure(exc.lineno, f"syntax error: {exc.msg}") from exc
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    registry = Registry()
    # registered under its own unique name (dataclasses and pickle look classes up there);
    # the tool's close() removes it
    sys.modules[module_name] = module
    try:
        with _shim(registry):
            _run(code, module, path)
    except LoadFailure:
        sys.modules.pop(module_name, None)
        raise
    return module, registry


def _run(code: types.CodeType, module: types.ModuleType, path: Path) -> None:
    try:
        exec(code, module.__dict__)
    except ImportError as exc:
        raise LoadFailure(_line_in(exc, path), *_import_message(exc)) from exc
    except (Exception, SystemExit) as exc:  # user code at load: reported, the host stays up
        message = f"raised {type(exc).__name__} while loading: {exc}"
        raise LoadFailure(_line_in(exc, path), message) from exc


def _import_message(exc: ImportError) -> tuple[str, str | None]:
    name = exc.name or str(exc)
    if name.split(".")[0] in SHIM_NAMES:
        return f"cannot import {name!r}: {exc}", "taskweaver.plugin offers Plugin, " + (
            "register_plugin and test_plugin"
        )
    hint = "install it where the engine runs (the engine never installs packages)"
    if name.split(".")[0] == "pandas":
        hint = "install the tools-data extra: pip install 'hookengine[tools-data]'"
    return f"cannot import module {name!r}: {exc}", hint


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The line of the plugin file the exception came from (its last frame in that file)."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == str(path):
            line = frame.lineno
    return line


@contextmanager
def _shim(registry: Registry) -> Iterator[None]:
    with _LOCK:
        saved = {name: sys.modules.get(name) for name in _module_names()}
        for root in SHIM_NAMES:
            package, plugin = _shim_modules(root, registry)
            sys.modules[root], sys.modules[f"{root}.plugin"] = package, plugin
        try:
            yield
        finally:
            for name, before in saved.items():
                if before is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = before


def _module_names() -> list[str]:
    return [name for root in SHIM_NAMES for name in (root, f"{root}.plugin")]


def _shim_modules(root: str, registry: Registry) -> tuple[types.ModuleType, types.ModuleType]:
    plugin = types.ModuleType(f"{root}.plugin", "TaskWeaver's plugin API (hookengine's shim).")
    plugin.Plugin = Plugin  # type: ignore[attr-defined]
    plugin.register_plugin = registry.register_plugin  # type: ignore[attr-defined]
    plugin.test_plugin = registry.test_plugin  # type: ignore[attr-defined]
    package = types.ModuleType(root)
    package.__path__ = []  # a package, so "taskweaver.plugin" imports
    package.plugin = plugin  # type: ignore[attr-defined]
    return package, plugin
