"""What both commands share: errors to stderr with exit code 2, JSON output."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from engine.errors import ConfigError, EngineError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad usage of a command; exit code 2 with a one-line reason."""


def fail(prog: str, exc: BaseException) -> int:
    """Report an error on stderr (one line per problem) and return the exit code 2."""
    if isinstance(exc, ConfigError):
        for problem in exc.problems:
            say(f"{prog}: error: {problem}", file=sys.stderr)
    else:
        say(f"{prog}: error: {exc}", file=sys.stderr)
    return EXIT_USAGE


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``).

    A surrogate cannot be encoded to UTF-8, so printing one raises; a hook's log, error or
    change may hold one. The escape reads the same in text, and in JSON output it is the
    JSON escape of that very code point, so parsing the output gives back the value.
    """
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def say(text: str = "", **options: Any) -> None:
    """``print`` for every command's output: lone surrogates are escaped, never raised."""
    print(escape_surrogates(text), **options)


def print_json(data: Any) -> None:
    say(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def run_main(prog: str, body: Any) -> int:
    """Run a command body; translate our errors to exit code 2 instead of a traceback."""
    try:
        return int(body())
    except (UsageError, EngineError, json.JSONDecodeError) as exc:
        return fail(prog, exc)
    except BrokenPipeError:
        return EXIT_OK
