"""What both commands share: errors to stderr with exit code 2, JSON output."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import json
import os
import re
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from engine.errors import ConfigError, EngineError

if TYPE_CHECKING:
    from engine.store import Record

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


EXTRAS = {
    "fastapi": "http",
    "uvicorn": "http",
    "starlette": "http",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "agents": "openai-agents",
    "pandas": "tools-data",
}
"""Optional packages by top-level module, and the extra of pyproject.toml that installs each."""


def run_main(prog: str, body: Any) -> int:
    """Run a command body; translate our errors to exit code 2 instead of a traceback (a
    command whose optional package is not installed names the extra to install)."""
    try:
        return int(body())
    except (UsageError, EngineError, json.JSONDecodeError) as exc:
        return fail(prog, exc)
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        missing = UsageError(
            f"this command needs the optional package {exc.name!r}: "
            f"pip install 'hookengine[{extra}]'"
        )
        return fail(prog, missing)
    except BrokenPipeError:
        return EXIT_OK


def end_process(code: int) -> NoReturn:
    """End a command's process with exit code ``code``, as the interpreter would at exit but
    without its teardown.

    Threads are waited for and the exit handlers run (an engine still open is closed there,
    its records flushed), then the output is flushed; what is skipped is freeing every module
    and object one by one, which takes a one-shot ``hook_tool`` run about a tenth of its
    time and changes nothing outside the process.
    """
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


# -- filters every command takes the same way ------------------------------------------------

DURATION = re.compile(r"(\d+)\s*([smhdw])")
"""``--since 2h``: a count and a unit (seconds, minutes, hours, days, weeks)."""
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def time_filter(flag: str, text: str | None, *, now: datetime | None = None) -> str | None:
    """``--since`` / ``--until`` as the records' own time format (UTC ISO, microseconds).

    Takes an ISO date or time (a time without a zone is UTC) or a duration back from now
    (``90s``, ``15m``, ``2h``, ``7d``, ``1w``). UsageError, with examples, for anything else.
    """
    if text is None:
        return None
    duration = DURATION.fullmatch(text.strip())
    if duration:
        seconds = int(duration.group(1)) * UNIT_SECONDS[duration.group(2)]
        moment = (now or datetime.now(UTC)) - timedelta(seconds=seconds)
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise UsageError(
                f"{flag} {text!r}: not a time; write an ISO time (2026-05-01, "
                "2026-05-01T14:30:00Z) or a duration back from now (30m, 2h, 7d)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def point_filter(text: str | None) -> str | None:
    """``--point``: one of the engine's points; UsageError with a suggestion otherwise."""
    from engine.points import Point

    names = [p.value for p in Point]
    if text is None or text in names:
        return text
    raise UsageError(f"--point {text!r}: no such point{suggestion(text, names)}")


def suggestion(word: str, options: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest option, else the list of options."""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.5)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (one of: {', '.join(options) or 'none'})"


def agent_filter(name: str | None, known: list[str]) -> str | None:
    """``--agent``: an agent of the config; UsageError with a suggestion otherwise."""
    if name is None or name in known:
        return name
    raise UsageError(f"--agent {name!r}: no such agent in the config{suggestion(name, known)}")


# -- the store a command reads -----------------------------------------------------------------


def store_url(config: str | Path, db: str | None) -> str:
    """The store to read: ``--db`` if given, else the one ``engine.yaml`` names."""
    if db:
        return str(db)
    from engine.config import load_engine_settings

    root = Path(config).resolve()
    settings, problems = load_engine_settings(root)
    if problems:
        raise ConfigError(problems)
    return settings.store_url(root.parent)


MIN_ID_CHARS = 4
"""A record id may be shortened to its first characters, but not below this."""


def find_record(url: str, record_id: str) -> Record:
    """The one record whose id is ``record_id`` or begins with it; UsageError if none or
    several do."""
    from engine.store import RecordQuery, open_store

    if len(record_id) < MIN_ID_CHARS:
        raise UsageError(f"record id {record_id!r}: give at least {MIN_ID_CHARS} characters")
    if "://" not in url and url != ":memory:" and not Path(url).exists():
        raise UsageError(f"no store at {url}: nothing was recorded there yet (or pass --db)")
    store = open_store(url)
    try:
        found = store.query_records(RecordQuery(id=record_id, limit=5))
    finally:
        store.close()
    if not found:
        raise UsageError(
            f"no record {record_id!r} in {url} (see the ids with: hookengine records --db {url})"
        )
    if len(found) > 1 and found[0].id != record_id:
        ids = ", ".join(r.id for r in found)
        raise UsageError(f"record id {record_id!r} is ambiguous: {ids} (give more characters)")
    return found[0]


# -- naming the config folder, the same way in every command -----------------------------------

DEFAULT_CONFIG = "config"


def not_a_hook_file(path: Path) -> str:
    """Why ``path`` (not a regular file) cannot be a hook file, as ``hookengine check`` says
    it: ``hook file not found``, ``is a directory, not a regular file``, ..."""
    if not os.path.lexists(path):  # the common mistake, told without importing the config
        return "hook file not found"
    from engine.config.yamlfile import path_problem  # the package imports pydantic

    problem = path_problem(path) or "cannot read file"
    return "hook file not found" if problem == "file not found" else problem


def add_config(p: argparse.ArgumentParser, *, positional: bool = False) -> None:
    """``--config DIR`` (and, where a command always took one, the folder as a positional)."""
    if positional:
        p.add_argument("where", nargs="?", metavar="CONFIG", help="config folder (or --config)")
    p.add_argument("--config", help=f"config folder (default: {DEFAULT_CONFIG})")


def config_of(args: argparse.Namespace) -> str:
    """The config folder a command was given: ``--config``, the positional, or ``config``."""
    where, flag = getattr(args, "where", None), args.config
    if where and flag and Path(where) != Path(flag):
        raise UsageError(f"two config folders given: {where} and --config {flag}; give one")
    return str(where or flag or DEFAULT_CONFIG)


def version_text() -> str:
    """``hookengine 0.1.0``-style version of the installed package (or of the checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hookengine")
    except PackageNotFoundError:
        return "unknown (not installed)"


class VersionAction(argparse.Action):
    """``--version``: prints ``PROG VERSION`` and exits, like argparse's own, but looks the
    version up only when asked: the lookup imports ``importlib.metadata`` and reads the
    installed packages' metadata, a tenth of a one-shot ``hook_tool`` run."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        say(f"{parser.prog} {version_text()}")
        parser.exit()
