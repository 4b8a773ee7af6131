"""``hookengine check``, ``demo`` and ``records``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.checking import check_project
from engine.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_config,
    agent_filter,
    config_of,
    find_record,
    point_filter,
    print_json,
    say,
    store_url,
    suggestion,
    time_filter,
)
from engine.cli.render import short
from engine.config import agent_names
from engine.errors import Problem
from engine.hosts import HOSTS
from engine.replay import shadow_text
from engine.runtime import Engine
from engine.store import RecordQuery, open_store


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="validate every agent and print all problems")
    add_config(p, positional=True)
    p.add_argument(
        "--host",
        choices=list(HOSTS),
        help="also warn, per hook, of the changes this host cannot apply (docs/hosts.md)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=check)

    p = sub.add_parser("demo", help="play a scripted conversation through the demo agent")
    add_config(p)
    p.add_argument("--agent", default="demo", help="agent to play it through (default: demo)")
    p.add_argument(
        "--db",
        default="data/demo.db",
        help="store for the demo, emptied first (default: data/demo.db)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=demo)

    p = sub.add_parser("records", help="show recorded evaluations, newest first")
    add_config(p)
    p.add_argument("--db", help="read records from this store instead of engine.yaml's")
    p.add_argument("--id", help="the record with this id (or first characters), in full")
    p.add_argument("--agent")
    p.add_argument("--point")
    p.add_argument("--scope", help="a scope key (user:u1) or a bare id")
    p.add_argument("--host", help="the host that asked (native, claude-code, ...)")
    p.add_argument("--since", help="ISO time or a duration back from now (2h), inclusive")
    p.add_argument("--until", help="ISO time or a duration back from now, exclusive")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=records)


def check(args: argparse.Namespace) -> int:
    """Check every agent through every stage (YAML, fields, script compile, static checks) and
    report every problem; exit 2 if any.

    Warnings (a redactor with ``on_error: ignore``) are printed but do not change the exit
    code: the configuration is valid, only risky."""
    host = HOSTS[args.host] if getattr(args, "host", None) else None
    report = check_project(config_of(args), host=host)
    count = len(report.problems)
    if args.json:
        print_json(
            {
                "ok": not count,
                "problems": [_problem_data(p) for p in report.problems],
                "agents": {a.name: list(a.hooks) for a in report.agents},
                "warnings": [str(w) for w in report.warnings],
            }
        )
        return EXIT_USAGE if count else EXIT_OK
    for problem in report.problems:
        say(f"hookengine: error: {problem}", file=sys.stderr)
    if count:
        say(f"{count} problem{'s' if count > 1 else ''} found", file=sys.stderr)
    for agent in report.agents:
        say(f"ok  {agent.name}: {len(agent.hooks)} hooks ({', '.join(agent.hooks)})")
    for warning in report.warnings:
        say(f"warning: {warning}")
    return EXIT_USAGE if count else EXIT_OK


def _problem_data(problem: Problem) -> dict[str, Any]:
    return {
        "file": problem.path,
        "line": problem.line,
        "column": getattr(problem, "column", None),
        "field": problem.field,
        "message": str(problem),
    }


def demo(args: argparse.Namespace) -> int:
    from engine.demo import play

    db = Path(args.db)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Engine.load(config_of(args), db=str(db)) as engine:
        agent = engine.agent(agent_filter(args.agent, engine.agents) or "demo")
        if args.json:
            outcomes = play(agent, say=lambda _text: None)
        else:
            say(
                f"Playing the demo conversation through agent {args.agent!r} "
                f"({len(agent.pipeline.slots)} hooks), offline."
            )
            outcomes = play(agent)
        engine.flush()
        recorded = len(engine.records(limit=100_000))  # an answer given early has two
    if args.json:
        print_json({"db": str(db), "outcomes": [o.to_dict() for o in outcomes]})
        return EXIT_OK
    say(f"\n{recorded} evaluations recorded in {db}; see them with: hookengine records --db {db}")
    return EXIT_OK


def records(args: argparse.Namespace) -> int:
    url = store_url(config_of(args), args.db)
    if args.id:
        return _one_record(url, args.id, as_json=args.json)
    query = RecordQuery(
        agent=args.agent,
        point=point_filter(args.point),
        scope=args.scope,
        host=host_filter(args.host),
        since=time_filter("--since", args.since),
        until=time_filter("--until", args.until),
        limit=args.limit,
    )
    store = open_store(url)
    try:
        found = store.query_records(query)
        if not found and args.agent:
            _known_agent(store, config_of(args), args.agent)
    finally:
        store.close()
    if args.json:
        print_json([r.model_dump(mode="json") for r in found])
        return EXIT_OK
    for r in found:
        host = "" if r.host == "native" else f"  via {r.host}"
        say(f"{r.time}  {r.agent}  {r.point}  {r.scope_key}  gen {r.generation}  {r.id[:8]}{host}")
        for run in r.hooks:
            detail = run.error or (json.dumps(run.change, ensure_ascii=False) if run.change else "")
            mode = "" if run.mode == "enforce" else " [shadow]"
            say(f"    {run.name}{mode} {run.status} {run.duration_ms:.2f}ms {short(detail, 100)}")
        decided = r.outcome
        if decided.get("blocked"):
            say(f"    => BLOCKED: {decided.get('reason')}")
        for entry in decided.get("shadow") or []:
            say(f"    => shadow: {shadow_text(entry)}")
    if not found:
        say("no records match")
    return EXIT_OK


def _known_agent(store: Any, config: str, agent: str) -> None:
    """UsageError if ``agent`` has no record at all and is no agent of the config."""
    if store.query_records(RecordQuery(agent=agent, limit=1)):
        return
    root = Path(config).resolve()
    agent_filter(agent, agent_names(root) if root.is_dir() else [])


def host_filter(name: str | None) -> str | None:
    """``--host``: a host the engine knows; UsageError with a suggestion otherwise."""
    if name is None or name in HOSTS or name == "native":
        return name
    raise UsageError(f"--host {name!r}: no such host{suggestion(name, ['native', *HOSTS])}")


def _one_record(url: str, record_id: str, *, as_json: bool) -> int:
    from engine.why import record_lines

    record = find_record(url, record_id)
    if as_json:
        print_json([record.model_dump(mode="json")])
    else:
        say("\n".join(record_lines(record)))
    return EXIT_OK
