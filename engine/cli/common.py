"""What both commands share: errors to stderr with exit code 2, JSON output."""

from __future__ import annotations

import json
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
            print(f"{prog}: error: {problem}", file=sys.stderr)
    else:
        print(f"{prog}: error: {exc}", file=sys.stderr)
    return EXIT_USAGE


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def run_main(prog: str, body: Any) -> int:
    """Run a command body; translate our errors to exit code 2 instead of a traceback."""
    try:
        return int(body())
    except (UsageError, EngineError, json.JSONDecodeError) as exc:
        return fail(prog, exc)
    except BrokenPipeError:
        return EXIT_OK
