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
    ├── ApprovalError           a resolution refused: .approval_id, .cause unknown | expired
    │                           | resolved
    └── StoreError              the store could not read or write
        └── StoreUnavailableError   the store as a whole cannot write now (down, disk full)

Foreign exceptions (YAML, pydantic, RestrictedPython, QuickJS, SQLAlchemy) are translated
where they happen, with the original kept as ``__cause__``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELD_ALIASES = {
    "args": "input",
    "arguments": "input",
    "params": "input",
    "parameters": "input",
    "tool_input": "input",
    "tool": "name",
    "tool_name": "name",
    "output": "result",
    "tool_output": "result",
    "response": "answer",
    "reply": "answer",
    "prompt": "question",
    "message": "question",
    "text": "question",
    "user": "scope",
    "timestamp": "time",
}
"""Names other agent frameworks give event fields, and ours: what "did you mean" offers when
spelling alone finds nothing close."""


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The choice an author most likely meant by ``word``: a close spelling, else the field
    other frameworks call ``word`` (``args`` -> ``input``) when it is one of ``choices``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return close[0]
    alias = FIELD_ALIASES.get(word.lower())
    return alias if alias in choices else None


def unknown_field(word: str, choices: list[str] | tuple[str, ...]) -> tuple[str, str | None]:
    """The message and hint for an unknown field ``word`` among ``choices``."""
    close = did_you_mean(word, choices)
    hint = f"did you mean {close!r}?" if close else f"fields: {', '.join(choices)}"
    return f"unknown field {shortened(word)!r}", hint


def shortened(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with a mark: a key or value of the author's shown in
    a message (a 250 kB key would otherwise fill the error, the log and ``status()``)."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


_KINDS = {
    "yaml": {
        "dict": "a mapping",
        "list": "a list",
        "str": "text",
        "text": "text",
        "bool": "true or false",
        "NoneType": "null",
    },
    "python": {
        "dict": "a dict",
        "list": "a list",
        "str": "a str",
        "text": "a str",
        "bool": "True or False",
        "NoneType": "None",
    },
    "javascript": {
        "dict": "an object",
        "list": "an array",
        "str": "a string",
        "text": "a string",
        "bool": "true or false",
        "NoneType": "null",
    },
}
"""How values are named in each language an author writes: YAML, Python, JavaScript."""
_MUST = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be {bool}",
    "bool_parsing": "must be {bool}",
    "string_type": "must be {text}",
    "list_type": "must be {list}",
    "tuple_type": "must be a list",
    "dict_type": "must be {dict}",
    "model_type": "must be {dict}",
    "model_attributes_type": "must be {dict}",
    "missing": "required field is missing",
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "literal_error": "must be {expected}",
    "enum": "must be {expected}",
    "string_too_short": "must not be empty",
    "too_short": "must have at least {min_length} items",
    "too_long": "must have at most {max_length} items",
    "string_too_long": "must be at most {max_length} characters",
}


_FIX = {
    "int_type": "write a whole number without quotes, e.g. 50",
    "int_parsing": "write a whole number without quotes, e.g. 50",
    "int_from_float": "write a whole number, e.g. 50",
    "float_type": "write a number without quotes, e.g. 0.5",
    "float_parsing": "write a number without quotes, e.g. 0.5",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": "put the text in quotes",
    "list_type": "write a list: [a, b], or one '- item' per line below the key",
    "dict_type": "write 'key: value' lines indented below the key",
    "model_type": "write 'key: value' lines indented below the key",
    "missing": "add it",
    "greater_than": "use a value above {gt}",
    "greater_than_equal": "use {ge} or more",
    "less_than": "use a value below {lt}",
    "less_than_equal": "use {le} or less",
    "literal_error": "write one of them",
    "enum": "write one of them",
    "string_too_short": "write a value, or leave the key out",
}


def fix_for(err: Mapping[str, Any]) -> str | None:
    """How to fix a pydantic error, for a YAML author (None where the message says it)."""
    kind, context = str(err.get("type", "")), err.get("ctx") or {}
    if kind in ("literal_error", "enum") and isinstance(err.get("input"), str):
        choices = re.findall(r"'([^']*)'", str(context.get("expected", "")))
        close = did_you_mean(err["input"], choices)
        if close is not None:
            return f"did you mean {close!r}?"
    template = _FIX.get(kind)
    return None if template is None else template.format(**context)


def phrase(err: Mapping[str, Any], terms: str = "yaml") -> str:
    """A pydantic error (``ValidationError.errors()`` item) in the project's own words.

    ``terms`` names values as their authors write them: ``yaml`` (a mapping, text, null) for
    config files, ``python`` (a dict, a str, None) for host code. Unknown fields are not
    phrased here (see ``unknown_field``, which needs the fields there are).
    """
    kind = str(err.get("type", ""))
    template = _MUST.get(kind)
    if template is None:
        message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        return message.removeprefix("Assertion failed, ")
    names = _KINDS.get(terms, _KINDS["yaml"])
    context = {k: v for k, v in (err.get("ctx") or {}).items()}
    if kind == "too_short" and context.get("min_length") == 1:
        return "must not be empty"  # not "at least 1 items, got a list"
    words = {"dict": names["dict"], "list": names["list"], "text": names["text"]}
    message = template.format(bool=names["bool"], **words, **context)
    if kind != "missing" and "input" in err:
        message += f", got {_value(err['input'], names)}"
    return message


def _value(value: Any, names: dict[str, str]) -> str:
    kind = type(value).__name__
    if value is None:
        return names["NoneType"]
    if isinstance(value, dict | list):
        return names.get(kind, kind)
    if isinstance(value, bool):
        return str(value) if names is _KINDS["python"] else str(value).lower()
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"{names['str']} {shown!r}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


MAX_FIELD_CHARS = 200
"""The longest ``Problem.field`` shown; a longer key path is cut with a mark."""


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

    def __post_init__(self) -> None:
        # a field is the author's key path: bounded, however long a key they wrote
        if self.field is not None and len(self.field) > MAX_FIELD_CHARS:
            object.__setattr__(self, "field", shortened(self.field, MAX_FIELD_CHARS))

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
    ``event`` is the event with those values replaced by markers, safe to record. ``brief``
    says the same naming only the event's fields (``event.result``), for the text that goes
    to the model in place of what was refused: a path within a field holds the data's own
    keys (a key may be a secret).
    """

    def __init__(
        self,
        problems: list[str],
        *,
        event: dict[str, Any] | None = None,
        brief: list[str] | None = None,
    ) -> None:
        self.problems = list(problems)
        self.event: dict[str, Any] = event if event is not None else {}
        self.brief = list(brief) if brief is not None else self.problems
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


class ApprovalError(EngineError):
    """A resolution of a pending approval was refused. ``cause``: ``unknown`` (no approval
    has that id), ``expired`` (its ``timeout_s`` passed: the call was denied) or ``resolved``
    (someone decided already; the first decision stands)."""

    def __init__(self, message: str, *, approval_id: str, cause: str) -> None:
        super().__init__(message)
        self.approval_id = approval_id
        self.cause = cause


class StoreError(EngineError):
    """The store could not read or write."""


class StoreUnavailableError(StoreError):
    """The store as a whole cannot write now (unreachable, its disk full, locked past the
    busy timeout): no fault of what was written, so worth writing again later."""
