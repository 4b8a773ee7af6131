"""Read the file a hook's ``script:`` key names, inside the config folder only.

The rule, stated once: ``script:`` is relative to the hook's YAML; after every symlink is
resolved, the file must lie inside the config folder (the folder given to ``Engine.load``,
itself resolved), end in ``.py`` or ``.js`` like the name in the YAML does, be a regular file of
at most MAX_SCRIPT_BYTES of UTF-8 text, and name at least one ``on_<point>`` function. Anything
else is a Problem at the ``script:`` line. Problems name paths, never the file's content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.config.yamlfile import ConfigReadError, os_reason, read_bytes
from engine.errors import Problem
from engine.points import Point

MAX_SCRIPT_BYTES = 256_000
"""The largest script file read; equal to the sandbox's ``Limits.max_source_bytes``."""
SUFFIXES = (".py", ".js")
_TOOL_FUNCTION = re.compile(r"\b(def|function)\s+run\b")
_POINT_FUNCTION = re.compile(r"\bon_(" + "|".join(p.value for p in Point) + r")\b")


@dataclass(frozen=True)
class ScriptRef:
    """Where a ``script:`` key is: the YAML that holds it and the line of the key."""

    yaml: str
    line: int | None

    def problem(self, message: str, hint: str | None = None) -> Problem:
        return Problem(self.yaml, self.line, "script", message, hint)


class ScriptFileError(Exception):
    """One reason a script file cannot be used (becomes a Problem)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def read_script(
    hook_path: Path, name: str, *, root: Path, ref: ScriptRef, tool: bool = False
) -> tuple[Path | None, str | None, list[Problem]]:
    """The resolved path and text of ``name`` (relative to ``hook_path``'s folder), or a problem.
    A ``tool`` script names a ``run`` function instead of ``on_<point>`` ones."""
    try:
        target = _resolve(hook_path.parent, name, root.resolve())
        return target, _read(target, tool=tool), []
    except ScriptFileError as exc:
        named = name if len(name) <= 200 else f"{name[:90]}…{name[-90:]}"  # as show() cuts
        return None, None, [ref.problem(f"{named!r}: {exc.message}", exc.hint)]


def _resolve(folder: Path, name: str, root: Path) -> Path:
    if "\0" in name:
        raise ScriptFileError("the path contains a NUL character")
    link = folder / name
    try:
        target = link.resolve(strict=True)
    except FileNotFoundError:
        dangling = " (a symlink whose target is missing)" if link.is_symlink() else ""
        raise ScriptFileError(
            f"script file not found{dangling}", "script: is relative to this YAML file's folder"
        ) from None
    except RuntimeError:  # Python 3.11 reports a symlink loop this way
        raise ScriptFileError("symlink loop") from None
    except OSError as exc:
        raise ScriptFileError(os_reason(exc)) from None
    if not target.is_relative_to(root):
        raise ScriptFileError(
            f"resolves to {target}, outside the config folder {root}",
            "put scripts inside the config folder, e.g. config/scripts/",
        )
    if target.suffix not in SUFFIXES or target.suffix != Path(name).suffix:
        raise ScriptFileError(
            f"resolves to {target}, which is not a {Path(name).suffix} file",
            "a script (and a symlink's target) must end in .py or .js, the same as in the YAML",
        )
    return target


def _read(target: Path, *, tool: bool = False) -> str:
    """Read as every config file is (see ``read_bytes``), then checked as a script."""
    try:
        return _text(read_bytes(target, MAX_SCRIPT_BYTES), tool=tool)
    except ConfigReadError as exc:
        raise ScriptFileError(str(exc)) from None


def _text(data: bytes, *, tool: bool = False) -> str:
    if len(data) > MAX_SCRIPT_BYTES:
        raise ScriptFileError(f"is larger than {MAX_SCRIPT_BYTES} bytes")
    if b"\0" in data:
        raise ScriptFileError("holds a NUL byte: it is a binary file, not a script")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptFileError(f"is not UTF-8 text (invalid byte at offset {exc.start})") from None
    if not text.strip():
        raise ScriptFileError("is empty")
    if tool:
        if not _TOOL_FUNCTION.search(text):
            raise ScriptFileError(
                "defines no run function, so it is not read as a tool script",
                "e.g. def run(input, host): / function run(input, host) {...}",
            )
        return text
    if not _POINT_FUNCTION.search(text):
        raise ScriptFileError(
            "defines no on_<point> function, so it is not read as a script",
            "e.g. on_tool_call(event, host); the file's content is not shown",
        )
    return text


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_JS_UNDEFINED = re.compile(r"\S+ is not defined")
_ECHOING = ("syntax error", "SyntaxError", "NameError", "ReferenceError")


def without_tokens(message: str) -> str:
    """A script file's syntax or name error without the text it quotes from the file.

    Quoted tokens (but single punctuation marks) become '…', and a JavaScript
    ``x is not defined`` becomes ``… is not defined``: the line and column still point at
    the spot, and no file that is not a valid script has its content shown. Other messages
    (the script's own errors) pass unchanged.
    """
    if not any(word in message for word in _ECHOING):
        return message
    return _JS_UNDEFINED.sub("… is not defined", _QUOTED.sub(_hidden, message))


def _hidden(quoted: re.Match[str]) -> str:
    """A quoted punctuation mark (``';'``) stays: it tells the author what the parser wanted."""
    token = quoted.group(0)
    return token if len(token) == 3 and not token[1].isalnum() else "'…'"
