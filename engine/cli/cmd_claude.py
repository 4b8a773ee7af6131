"""``hookengine claude-code``: the Claude Code / Codex hook command and its installer."""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.cli.common import EXIT_OK, UsageError, say
from engine.integrations.claude_code import (
    DIALECTS,
    POINT_OF,
    describe,
    event_name,
    failure_output,
    handle,
)
from engine.jsontext import parse_strict

HOOK_TIMEOUT_S = 30
"""Claude Code's timeout for each installed hook; the command answers by itself before it."""

DECIDE_WITHIN_S = 20.0
"""How long ``hook`` waits for a decision before it answers with the event's failure."""

MATCH_ALL = frozenset({"PreToolUse", "PostToolUse"})
"""The events whose hook groups take a tool ``matcher`` ("*": every tool)."""


def register(sub: Any) -> None:
    p = sub.add_parser("claude-code", help="Claude Code and Codex hooks (hook, install)")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    hook = verbs.add_parser("hook", help="read one hook event on stdin, print its decision")
    hook.add_argument("--agent", required=True, help="the agent whose hooks decide")
    hook.add_argument("--dialect", choices=DIALECTS, default="claude", help="output dialect")
    hook.add_argument("--config", default="config", help="config folder (default: config)")
    hook.add_argument("--db", help="use this store instead of engine.yaml's")
    hook.add_argument(
        "--timeout",
        type=float,
        default=DECIDE_WITHIN_S,
        help=f"seconds to wait for a decision (default {DECIDE_WITHIN_S:g})",
    )
    hook.set_defaults(func=run_hook)
    install = verbs.add_parser("install", help="write the hooks into .claude/settings.json")
    install.add_argument("--agent", required=True, help="the agent whose hooks decide")
    install.add_argument("--http", metavar="URL", help="use http hooks to this hookengine serve")
    install.add_argument(
        "--settings",
        default=".claude/settings.json",
        help="settings file to merge into (default: .claude/settings.json)",
    )
    install.add_argument("--config", default="config", help="config folder for command hooks")
    install.add_argument("--db", help="store for command hooks (default: engine.yaml's)")
    install.set_defaults(func=run_install)


# -- hook --------------------------------------------------------------------------------------


def run_hook(args: argparse.Namespace) -> int:
    """Print one JSON decision for the event on stdin; exit 0 whatever happens (but a wrong
    command line: exit 2, which Claude Code also takes as a block)."""
    if not args.timeout > 0:
        raise UsageError(f"--timeout: must be > 0, not {args.timeout:g}")
    raw = sys.stdin.buffer.read()
    try:
        payload = parse_strict(raw)  # a repeated key is refused: which one wins is a guess
    except ValueError as exc:
        _print(failure_output(None, f"the hook input is not JSON ({exc})"))
        return EXIT_OK
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    worker = threading.Thread(target=decide, args=(args, payload, answers.put), daemon=True)
    started = time.monotonic()
    worker.start()
    try:
        answer = answers.get(timeout=args.timeout)
    except queue.Empty:
        message = f"no decision within {args.timeout:g} s"
        answer = failure_output(payload, message, dialect=args.dialect)
    _print(answer)
    # the engine closes after the decision (records flushed, workers stopped): within the
    # time left, else exit without it (the stuck evaluation or store holds it)
    worker.join(max(0.0, args.timeout - (time.monotonic() - started)))
    if worker.is_alive():
        sys.stdout.flush()
        os._exit(EXIT_OK)
    return EXIT_OK


def decide(
    args: argparse.Namespace, payload: Any, answer: Callable[[dict[str, Any]], None]
) -> None:
    """Load the agent's engine, ``answer`` the decision on ``payload``, then close the engine;
    a failure to load or open it is the event's failure answer (a deny at PreToolUse)."""
    event = event_name(payload)
    try:
        from engine.cli.oneshot import OneShotEngine
        from engine.config.loader import load_project

        project = load_project(args.config, only=[args.agent])
        # one evaluation runs in one worker: the others would only start and stop
        scripts = project.settings.scripts.model_copy(update={"workers": 1})
        settings = project.settings.model_copy(update={"scripts": scripts})
        engine = OneShotEngine(replace(project, settings=settings), db=args.db)
    except Exception as exc:  # noqa: BLE001 - the command's edge: fail closed, exit 0
        answer(failure_output(payload, describe(exc), dialect=args.dialect))
        return
    with engine:
        try:
            if event in POINT_OF and args.agent in engine.agents:
                engine.open_what_hooks_use(args.agent)
        except Exception as exc:  # noqa: BLE001 - the command's edge: fail closed, exit 0
            answer(failure_output(payload, describe(exc), dialect=args.dialect))
            return
        answer(handle(engine, args.agent, payload, dialect=args.dialect))


def _print(answer: dict[str, Any]) -> None:
    say(json.dumps(answer, ensure_ascii=False))


# -- install -----------------------------------------------------------------------------------


def run_install(args: argparse.Namespace) -> int:
    """Merge the five hooks into the settings file (idempotent: ours are replaced, the
    user's own hooks and settings are kept)."""
    path = Path(args.settings)
    settings = _read_settings(path)
    handler = http_handler(args.agent, args.http) if args.http else command_handler(args)
    merged = merge_hooks(settings, handler)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", "utf-8")
    temporary.replace(path)
    kind = f"http hooks to {handler['url']}" if args.http else "command hooks"
    say(f"{path}: {kind} for agent {args.agent!r} on {', '.join(POINT_OF)} (onFailure: block)")
    return EXIT_OK


def command_handler(args: argparse.Namespace) -> dict[str, Any]:
    """A ``type: command`` hook running this command by absolute paths."""
    words = [*_hookengine_command(), "claude-code", "hook", "--agent", args.agent]
    words += ["--config", str(Path(args.config).resolve())]
    if args.db:
        kept = args.db == ":memory:" or "://" in args.db
        words += ["--db", args.db if kept else str(Path(args.db).resolve())]
    return {
        "type": "command",
        "command": shlex.join(words),
        "timeout": HOOK_TIMEOUT_S,
        "onFailure": "block",
    }


def http_handler(agent: str, url: str) -> dict[str, Any]:
    """A ``type: http`` hook posting to ``hookengine serve`` at ``url`` with the bearer token
    from ``$HOOKENGINE_TOKEN`` (Claude Code reads it from the environment, not the file)."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--http: {url!r} is not an http:// or https:// URL")
    return {
        "type": "http",
        "url": f"{url.rstrip('/')}/v1/claude-code/{agent}",
        "headers": {"Authorization": "Bearer $HOOKENGINE_TOKEN"},
        "allowedEnvVars": ["HOOKENGINE_TOKEN"],
        "timeout": HOOK_TIMEOUT_S,
        "onFailure": "block",
    }


def merge_hooks(settings: dict[str, Any], handler: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with ``handler`` on each handled event, replacing hookengine's earlier
    handlers (of any agent) and keeping every other hook and setting as it was."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError("settings: hooks: must be an object")
    merged = {**settings, "hooks": dict(hooks)}
    for event in POINT_OF:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"settings: hooks.{event}: must be a list")
        kept = [g for g in (_without_ours(group) for group in groups) if g is not None]
        group: dict[str, Any] = {"matcher": "*"} if event in MATCH_ALL else {}
        merged["hooks"][event] = [*kept, {**group, "hooks": [handler]}]
    return merged


def _without_ours(group: Any) -> Any:
    """The group without hookengine's handlers; None if nothing else was in it."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    left = [h for h in group["hooks"] if not _is_ours(h)]
    if not left and group["hooks"]:
        return None
    return {**group, "hooks": left}


def _is_ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        return "/v1/claude-code/" in str(handler.get("url", ""))
    return " claude-code hook " in str(handler.get("command", ""))


def _read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the settings ({exc}); left unchanged") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the settings must be a JSON object; left unchanged")
    return data


def _hookengine_command() -> list[str]:
    """The absolute command that runs ``hookengine``: its console script beside this Python,
    else this Python running the module."""
    script = Path(sys.executable).parent / "hookengine"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "engine.cli.hookengine"]
