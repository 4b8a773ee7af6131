"""The whole exception tree of the engine.

::

    EngineError                 everything we raise on purpose
    ├── ConfigError             bad YAML or model; .problems (path, line, field); all of them
    ├── ScriptError             a user script failed; .hook .language .line
    │   ├── ScriptCompileError  syntax / policy violations, each with line and column
    │   ├── ScriptRuntimeError  the script raised, misused the host API, or returned bad data
    │   └── ScriptLimitError    time, memory, stack or output budget exceeded; worker died
    ├── PluginError             a change a point does not accept, an unknown point
    ├── InputError              the host's event is not JSON data; .problems by path
    ├── EventError              the host called a point wrongly; .errors [{loc, msg}]
    └── StoreError              the store could not read or write
        └── StoreUnavailableError   the store as a whole cannot write now (down, disk full)

Foreign exceptions (YAML, pydantic, RestrictedPython, QuickJS, SQLAlchemy) are translated
where they happen, with the original kept as ``__cause__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a configuration file, in compiler style."""

    path: str
    line: int | None
    field: str | None
    message: str
    hint: str | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.field}: " if self.field else f"{where}: "
        text += self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class ConfigError(EngineError):
    """A configuration could not be loaded; ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid configuration")

    @property
    def path(self) -> str | None:
        return self.problems[0].path if self.problems else None

    @property
    def line(self) -> int | None:
        return self.problems[0].line if self.problems else None

    @property
    def field(self) -> str | None:
        return self.problems[0].field if self.problems else None

    @classmethod
    def single(
        cls,
        path: str | Path,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> ConfigError:
        return cls([Problem(str(path), line, field, message, hint)])


class ScriptError(EngineError):
    """A user script failed.

    ``cause`` is one of ``error``, ``timeout``, ``memory``, ``invalid_result``, ``crashed``,
    ``busy`` (no sandbox worker came free in time), ``unavailable`` (no worker runs and none
    can be started), ``quarantined`` (the hook kept killing workers), ``compile``; it is what
    records and outcomes report.
    """

    cause = "error"

    def __init__(
        self,
        message: str,
        *,
        hook: str | None = None,
        language: str | None = None,
        line: int | None = None,
        column: int | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hook = hook
        self.language = language
        self.line = line
        self.column = column
        if cause is not None:
            self.cause = cause


class ScriptCompileError(ScriptError):
    """A script did not compile or broke the sandbox policy; ``problems`` has every one."""

    cause = "compile"

    def __init__(
        self, problems: list[Problem], *, hook: str | None = None, language: str | None = None
    ) -> None:
        self.problems = list(problems)
        first = self.problems[0] if self.problems else None
        super().__init__(
            "\n".join(str(p) for p in self.problems) or "script did not compile",
            hook=hook,
            language=language,
            line=first.line if first else None,
            column=first.column if first else None,
        )


class ScriptRuntimeError(ScriptError):
    """The script raised, misused the host API, or returned something the point refuses."""


class ScriptLimitError(ScriptError):
    """The script ran past a limit (time, memory, stack, output) or its worker died."""

    cause = "timeout"


class PluginError(EngineError):
    """A hook returned a change its point does not accept, or named an unknown point."""

    def __init__(
        self,
        message: str,
        *,
        hook: str | None = None,
        point: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.hook = hook
        self.point = point
        self.field = field


class InputError(EngineError):
    """The host's event could not be normalised (engine/boundary.py).

    ``problems`` names each value by its path (``event.input.data: bytes is not JSON``);
    ``event`` is the event with those values replaced by markers, safe to record.
    """

    def __init__(self, problems: list[str], *, event: dict[str, Any] | None = None) -> None:
        self.problems = list(problems)
        self.event: dict[str, Any] = event if event is not None else {}
        super().__init__("; ".join(self.problems) or "the event is not valid input")


class EventError(EngineError):
    """The host called a point wrongly: an unknown point, ``fields`` that are not a mapping, a
    field missing, unknown or of the wrong type, a scope value that is not text.

    ``errors`` lists each mistake as ``{"loc": [...], "msg": ...}``, ``loc`` the path of the
    field (``["input"]``, ``["scope", "user_id"]``); the message names each as ``loc: msg``.
    Unlike an ``InputError`` (the event's data), this is raised to the host: the call itself
    is wrong and would be wrong every time.
    """

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors: list[dict[str, Any]] = [
            {"loc": list(e["loc"]), "msg": str(e["msg"])} for e in errors
        ]
        super().__init__("; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in self.errors))


def _loc(loc: list[Any]) -> str:
    return ".".join(str(part) for part in loc) or "event"


class StoreError(EngineError):
    """The store could not read or write."""


class StoreUnavailableError(StoreError):
    """The store as a whole cannot write now (unreachable, its disk full, locked past the
    busy timeout): no fault of what was written, so worth writing again later."""
