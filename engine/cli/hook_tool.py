"""``hook_tool``: load one hook file and run it at one point, for testing it locally."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    EXIT_OK,
    UsageError,
    VersionAction,
    end_process,
    not_a_hook_file,
    print_json,
    run_main,
    say,
)
from engine.cli.plugins import skip_empty_plugin_lookup
from engine.cli.testrun import add_test_options
from engine.errors import ConfigError

if TYPE_CHECKING:
    from engine.config.loader import ProjectConfig
    from engine.outcome import Outcome
    from engine.runtime import Agent, Engine

VERBS = {
    "info": (0, "show the parsed config"),
    "user": (1, "run before_user_message with QUESTION"),
    "turn": (2, "run before_assistant_message, then after_turn, with QUESTION ANSWER"),
    "loop": (1, "run after_loop with STATUS (e.g. job_done)"),
    "tool": (2, "run tool_call with NAME and a JSON object of input"),
    "result": (3, "run tool_result with NAME, JSON input and a JSON result"),
    "feedback": (2, "run feedback with TURN_ID and like|dislike"),
    "call": (1, "run before_call with a JSON object of instruction, messages, tools, settings"),
    "test": (0, "run the hook's YAML tests (tests: and <name>.test.yaml); exit 1 on failure"),
    "approvals": (0, "list the tool calls waiting on a person (with --db)"),
    "approve": (1, "approve the waiting call ID (with --db; --by, --note)"),
    "deny": (1, "deny the waiting call ID (with --db; --by, --note)"),
}
APPROVAL_VERBS = ("approvals", "approve", "deny")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hook_tool",
        description="Run one hook file locally at one lifecycle point.",
        epilog="verbs: " + "; ".join(f"{v} — {h}" for v, (_, h) in VERBS.items()),
    )
    p.add_argument("hook", help="the hook's YAML file")
    p.add_argument("verb", choices=list(VERBS), help="what to run")
    p.add_argument("args", nargs="*", help="the verb's arguments")
    p.add_argument(
        "--db",
        help="put the hook's store (and records) in this file or URL "
        "(default: a scratch store in memory, so the project's records stay clean)",
    )
    p.add_argument(
        "--config",
        help="take engine settings from this config folder "
        "(default: the nearest one above the hook)",
    )
    p.add_argument(
        "--live",
        action="store_true",
        help="use the configured LLM provider for judges and memorizers",
    )
    p.add_argument("--agent", default="hook_tool", help="agent (and process) name in the event")
    p.add_argument("--template", help="template name in the scope")
    p.add_argument("--user", help="user_id in the scope")
    p.add_argument("--session", help="session_id in the scope")
    p.add_argument("--call-id", help="call_id of the tool verb's call (default: none)")
    p.add_argument("--by", default="hook_tool", help="who approves or denies (recorded)")
    p.add_argument("--note", help="why (recorded with an approval or a denial)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--version", action=VersionAction)
    test_options = p.add_argument_group("options of the test verb")
    add_test_options(test_options)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hook_tool`` console script.

    With ``argv`` None (the console script: the process's own command line) the process is
    the run's own: its cyclic garbage collector stays off (starting up, it would walk the
    freshly imported engine again and again, about a twentieth of a one-shot run, to free
    nothing; the run's memory is given back when it exits) and it ends here
    (``end_process``), without the interpreter's teardown. Given ``argv``, it returns the
    exit code.
    """
    if argv is None:
        gc.disable()
    code = _main(argv)
    if argv is None:
        end_process(code)
    return code


def _main(argv: list[str] | None) -> int:
    p = parser()
    try:
        args = p.parse_intermixed_args(argv)
    except SystemExit as exc:  # argparse already printed the usage line
        return int(exc.code or 0)
    return run_main("hook_tool", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """Run a verb. The engine's modules (pydantic, the stores, the sandbox) are imported
    here, below the usage checks: ``--help`` and a usage error need none of them."""
    wanted, _ = VERBS[args.verb]
    if len(args.args) != wanted:
        raise UsageError(f"{args.verb} takes {wanted} argument(s), got {len(args.args)}")
    path = Path(args.hook)
    if not path.is_file():
        raise UsageError(f"{args.hook}: {not_a_hook_file(path)}")
    skip_empty_plugin_lookup()  # before the first pydantic model is built
    if args.verb == "info":
        return _info(path, args)
    if args.verb == "test":
        return _test(path, args)
    if args.verb in APPROVAL_VERBS and not args.db:
        raise UsageError(
            f"{args.verb} reads the store the tool call asked in: give the same --db "
            "(a scratch store keeps nothing between runs)"
        )
    db = args.db or SCRATCH_STORE
    if args.verb in APPROVAL_VERBS:
        with load_engine(
            path, agent=args.agent, db=db, live=False, one_shot=True, config=args.config
        ) as engine:
            return _approvals(engine.agent(args.agent), args)
    with load_engine(
        path, agent=args.agent, db=db, live=args.live, one_shot=True, config=args.config
    ) as engine:
        outcomes = _evaluate(engine.agent(args.agent), args)
        engine.flush()
    if args.json:
        print_json(
            {
                "hook": str(path),
                "verb": args.verb,
                "outcome": outcomes[0].to_dict(),
                "outcomes": [o.to_dict() for o in outcomes],
            }
        )
    else:
        from engine.cli.render import outcome_lines

        for out in outcomes:
            say("\n".join(outcome_lines(out)))
    return EXIT_OK


SCRATCH_STORE = ":memory:"
"""Where a run keeps its records and state unless ``--db`` names a store: trying a hook
never mixes into the project's records (each run starts from an empty store)."""


def load_engine(
    path: Path,
    *,
    agent: str,
    db: str | None,
    live: bool,
    one_shot: bool = False,
    config: str | None = None,
) -> Engine:
    """An engine whose one agent has just the hook at ``path`` (no host layer).

    ``one_shot``: the engine evaluates once and exits (``OneShotEngine``). ``config``: the
    folder whose ``engine.yaml`` applies (default: the nearest config folder above the hook).
    """
    if not one_shot:
        from engine.runtime import Engine

        project = _project(path, agent=agent, config=config, one_shot=one_shot)
        return Engine(project, live=live, db=db)
    from engine.cli.earlypool import EarlyPool, prestart, runs_scripts

    # a script hook's worker boots while the configuration models are imported and the hook
    # is read, then the pool takes it (EarlyPool): it boots beside the engine's own start-up
    prestarted = prestart(path)
    try:
        project = _project(path, agent=agent, config=config, one_shot=one_shot)
    except BaseException:
        if prestarted is not None:
            prestarted.close()
        raise
    early = EarlyPool(project.settings, prestarted) if runs_scripts(project) else None
    if early is None and prestarted is not None:
        prestarted.close()
    from engine.cli.oneshot import OneShotEngine

    engine = OneShotEngine(project, early=early, live=live, db=db)
    engine.open_what_hooks_use(agent)
    return engine


def _project(path: Path, *, agent: str, config: str | None, one_shot: bool) -> ProjectConfig:
    """The project of ``load_engine``: one agent, ``agent``, with the hook at ``path``."""
    from engine.config import load_engine_settings, load_hook_file
    from engine.config.loader import AgentSpec, ProjectConfig
    from engine.config.models import AgentConfig, EngineSettings

    spec, problems = load_hook_file(path)
    root = _config_root(path, config)
    settings, found = load_engine_settings(root) if root else (EngineSettings(), [])
    if problems or found or spec is None:
        raise ConfigError(problems + found)
    update: dict[str, Any] = {"process": agent}
    if one_shot:  # one evaluation runs in one worker: the others would only start and stop
        update["scripts"] = settings.scripts.model_copy(update={"workers": 1})
    settings = settings.model_copy(update=update)
    base = root.parent if root else Path.cwd()
    spec_of_agent = AgentSpec(
        agent, path.parent, AgentConfig(hook_files=[path.name]), (spec,), frozenset({spec.path})
    )
    return ProjectConfig(root or path.parent, base, settings, (), {agent: spec_of_agent})


def _config_root(path: Path, config: str | None) -> Path | None:
    from engine.config import find_config_root

    if config is None:
        return find_config_root(path.resolve().parent)
    root = Path(config)
    if not root.is_dir():
        raise UsageError(f"--config {config}: config folder not found")
    return root.resolve()


def _approvals(agent: Agent, args: argparse.Namespace) -> int:
    """``approvals``: what waits (in ``--session`` when given); ``approve`` / ``deny`` ID."""
    from engine.cli.render import approval_line, short

    if args.verb == "approvals":
        waiting = agent.approvals(session_id=args.session, user_id=args.user)
        if args.json:
            print_json({"approvals": [a.to_dict() for a in waiting]})
        else:
            say("\n".join(approval_line(a) for a in waiting) or "no approvals waiting")
        return EXIT_OK
    done = agent.resolve(args.args[0], args.verb == "approve", by=args.by, note=args.note)
    if args.json:
        print_json({"approval": done.to_dict()})
    else:
        say(f"{done.status} by {done.resolved_by}: {done.tool} {short(done.input)}")
    return EXIT_OK


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {"user_id": args.user, "session_id": args.session, "template": args.template}


def _json_arg(text: str, what: str) -> Any:
    """``text`` read strictly (engine/jsontext.py): a repeated key, NaN, deep nesting or a
    huge integer is a usage error naming ``what``, not a traceback or a last-wins guess."""
    from engine.jsontext import parse_strict

    try:
        return parse_strict(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from None


def _evaluate(agent: Agent, args: argparse.Namespace) -> list[Outcome]:
    scope, a = _scope(args), args.args
    if args.verb == "user":
        return [agent.before_user_message(a[0], **scope)]
    if args.verb == "turn":
        shown = agent.before_assistant_message(a[0], a[1], **scope)
        return [shown, agent.after_turn(a[0], shown.answer or a[1], **scope)]
    if args.verb == "loop":
        return [agent.after_loop(a[0], **scope)]
    if args.verb == "tool":
        data = _json_arg(a[1], "the tool input")
        if not isinstance(data, dict):
            raise UsageError('the tool input must be a JSON object, e.g. \'{"path": "a.txt"}\'')
        return [agent.tool_call(a[0], data, call_id=args.call_id, **scope)]
    if args.verb == "result":
        data = _json_arg(a[1], "the tool input")
        if not isinstance(data, dict):
            raise UsageError("the tool input must be a JSON object")
        return [agent.tool_result(a[0], data, _json_arg(a[2], "the tool result"), **scope)]
    if args.verb == "call":
        return [agent.before_call(**_call_fields(a[0]), **scope)]
    if a[1] not in ("like", "dislike"):
        raise UsageError("feedback rating must be like or dislike")
    return [agent.feedback(a[0], a[1], **scope)]


CALL_FIELDS = ("instruction", "messages", "tools", "settings")


def _call_fields(text: str) -> dict[str, Any]:
    """The ``call`` verb's JSON object: any of instruction, messages, tools, settings."""
    data = _json_arg(text, "the call")
    example = '\'{"instruction": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}\''
    if not isinstance(data, dict):
        raise UsageError(f"the call must be a JSON object, e.g. {example}")
    unknown = sorted(set(data) - set(CALL_FIELDS))
    if unknown:
        raise UsageError(
            f"the call: unknown field {unknown[0]!r} (fields: {', '.join(CALL_FIELDS)})"
        )
    return data


def _test(path: Path, args: argparse.Namespace) -> int:
    from engine.cli.testrun import run_and_report

    with load_engine(
        path, agent=args.agent, db=":memory:", live=args.live, config=args.config
    ) as engine:
        return run_and_report(list(engine.project.agents[args.agent].hooks), engine.env, args)


def _info(path: Path, args: argparse.Namespace) -> int:
    from engine.config import load_hook_file

    spec, problems = load_hook_file(path)
    if spec is None:
        raise ConfigError(problems)
    data = spec.config.model_dump(mode="json")
    data["on_error"] = spec.config.effective_on_error.value
    info = {"file": spec.shown, "version": spec.version, "layer": spec.layer, "config": data}
    if spec.script_path:
        info["script_file"] = str(spec.script_path)
    if args.json:
        print_json(info)
        return EXIT_OK
    say(f"{spec.shown}  ({spec.kind} {spec.name!r}, version {spec.version})")
    for key, value in data.items():
        if key not in ("kind", "name"):
            say(f"  {key}: {json.dumps(value, ensure_ascii=False)}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
