"""The JavaScript runtime's wrappers and answers (worker side, plain Python: QuickJS stays in
javascript.py): the wrappers of a top level that runs once, checked as if the host's plan were
hostile, and the failure answers the worker sends back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

LINE_OFFSET = 1000
"""User source starts on line LINE_OFFSET + 1 of what QuickJS sees: later frames are the user's."""
STRICT = '"use strict";'
"""Scripts run in strict mode: a sloppy-only construct (``with``, octal literals, assigning to
an undeclared name at parse time...) is a load error with its line."""
_FRAME = re.compile(r"<input>:(\d+):(\d+)")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def once_wrappers(
    source: str, plan: dict[str, Any], table: str, parses: Callable[[str], bool]
) -> tuple[str, str, bool] | None:
    """The two wrappers of a top level that runs once (see prelude.js runOnce), or None.

    The plan comes from the host (jsscope.py); it is checked here as if it were hostile: its
    names must be plain identifiers, and its body must parse on its own as a strict Script, so
    neither wrapper can be closed early. A wrong plan can make a script misbehave, never share
    anything but the frozen copies: the body runs anew on every call.
    """
    names, param, body = plan.get("names"), plan.get("param"), plan.get("body")
    if not (
        isinstance(names, list)
        and all(isinstance(n, str) and _IDENTIFIER.match(n) for n in names)
        and isinstance(param, str)
        and _IDENTIFIER.match(param)
        and isinstance(body, str)
        and parses(body)
    ):
        return None
    values = (
        "(function () {"
        + STRICT
        + "\n" * LINE_OFFSET
        + source
        + "\n;return ["
        + ", ".join(names)
        + "];})"
    )
    once_body = (
        f"(function ({param}) {{"
        + STRICT
        + "\n" * LINE_OFFSET
        + body
        + "\n;return {"
        + table
        + "};})"
    )
    return values, once_body, bool(plan.get("objects"))


def user_position(stack: str) -> tuple[int | None, int | None]:
    for m in _FRAME.finditer(stack):
        line = int(m.group(1))
        if line > LINE_OFFSET:
            return line - LINE_OFFSET, int(m.group(2))
    return None, None


def limit_reason(message: str, doing: str) -> str:
    if "interrupted" in message:
        return f"time limit exceeded while {doing}"
    if "out of memory" in message:
        return f"memory limit exceeded while {doing}"
    if "stack" in message:
        return f"stack limit exceeded while {doing}"
    return f"{doing} failed: {message.splitlines()[0] if message else 'unknown error'}"


def compile_failure(message: str, line: int | None, column: int | None) -> dict[str, Any]:
    return {
        "ok": False,
        "kind": "compile",
        "problems": [{"line": line, "column": column, "message": message}],
    }


def limit_failure(message: str, stack: bool) -> dict[str, Any]:
    if stack or "stack" in message:
        return {
            "ok": False,
            "kind": "limit",
            "cause": "memory",
            "message": "stack limit exceeded (recursion too deep)",
        }
    if "interrupted" in message:
        return {"ok": False, "kind": "limit", "cause": "timeout", "message": "time limit exceeded"}
    if "out of memory" in message:
        return {"ok": False, "kind": "limit", "cause": "memory", "message": "memory limit exceeded"}
    return {
        "ok": False,
        "kind": "runtime",
        "cause": "error",
        "message": message.splitlines()[0] if message else "error",
        "line": None,
    }


def error_answer(err: dict[str, Any], cause: str) -> dict[str, Any]:
    message = f"{err['type']}: {err['message']}"
    if err["type"] == "RangeError" and "call stack" in err["message"]:
        return {
            "ok": False,
            "kind": "limit",
            "cause": "memory",
            "message": "stack limit exceeded (recursion too deep)",
        }
    if err["type"] == "InternalError" and "out of memory" in err["message"]:
        return {"ok": False, "kind": "limit", "cause": "memory", "message": "memory limit exceeded"}
    line, column = user_position(err.get("stack", ""))
    return {
        "ok": False,
        "kind": "runtime",
        "cause": cause,
        "message": message,
        "line": line,
        "column": column,
    }
