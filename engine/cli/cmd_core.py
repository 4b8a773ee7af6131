"""``hookengine check``, ``demo`` and ``records``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.cli.common import EXIT_OK, print_json, say
from engine.cli.render import short
from engine.config import load_engine_settings
from engine.errors import ConfigError
from engine.explain import OUTPUT_FIELDS, host_warnings, ignore_warning
from engine.hosts import HOSTS
from engine.points import Point
from engine.replay import shadow_text
from engine.runtime import Engine
from engine.store import RecordQuery, open_store


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="validate every agent and print all problems")
    p.add_argument("config", nargs="?", default="config", help="config folder (default: config)")
    p.add_argument(
        "--host",
        choices=list(HOSTS),
        help="also warn, per hook, of the changes this host cannot apply (docs/hosts.md)",
    )
    p.set_defaults(func=check)

    p = sub.add_parser("demo", help="play a scripted conversation through the demo agent")
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--agent", default="demo", help="agent to play it through (default: demo)")
    p.add_argument(
        "--db",
        default="data/demo.db",
        help="store for the demo, emptied first (default: data/demo.db)",
    )
    p.set_defaults(func=demo)

    p = sub.add_parser("records", help="show recorded evaluations, newest first")
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--db", help="read records from this store instead of engine.yaml's")
    p.add_argument("--agent")
    p.add_argument("--point")
    p.add_argument("--scope", help="a scope key (user:u1) or a bare id")
    p.add_argument("--host", help="the host that asked (native, claude-code, ...)")
    p.add_argument("--since", help="ISO time, inclusive")
    p.add_argument("--until", help="ISO time, exclusive")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=records)


def check(args: argparse.Namespace) -> int:
    """Load every agent (scripts compiled) and report every problem; exit 2 if any.

    Warnings (a redactor with ``on_error: ignore``) are printed but do not change the exit
    code: the configuration is valid, only risky."""
    warned: set[str] = set()
    host = HOSTS[args.host] if getattr(args, "host", None) else None
    with Engine.load(args.config, records=False, db=":memory:") as engine:
        for name in engine.agents:
            pipeline = engine.agent(name).pipeline
            hooks = pipeline.slots
            say(f"ok  {name}: {len(hooks)} hooks ({', '.join(s.hook.name for s in hooks)})")
            warnings = [
                ignore_warning(slot.hook, point)
                for point in OUTPUT_FIELDS
                for slot in pipeline.by_point[point]
            ]
            if host is not None:
                warnings += [
                    f"{name}: host {host.name}: {text}"
                    for point in Point
                    for slot in pipeline.by_point[point]
                    for text in host_warnings(slot.hook, point, host)
                ]
            for warning in warnings:
                if warning is not None and warning not in warned:  # host hooks: once
                    warned.add(warning)
                    say(f"warning: {warning}")
    return EXIT_OK


def demo(args: argparse.Namespace) -> int:
    from engine.demo import play

    db = Path(args.db)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Engine.load(args.config, db=str(db)) as engine:
        agent = engine.agent(args.agent)
        say(
            f"Playing the demo conversation through agent {args.agent!r} "
            f"({len(agent.pipeline.slots)} hooks), offline."
        )
        outcomes = play(agent)
    say(
        f"\n{len(outcomes)} evaluations recorded in {db}; "
        f"see them with: hookengine records --db {db}"
    )
    return EXIT_OK


def _store_url(args: argparse.Namespace) -> str:
    if args.db:
        return str(args.db)
    root = Path(args.config).resolve()
    settings, problems = load_engine_settings(root)
    if problems:
        raise ConfigError(problems)
    return settings.store_url(root.parent)


def records(args: argparse.Namespace) -> int:
    query = RecordQuery(
        agent=args.agent,
        point=args.point,
        scope=args.scope,
        host=args.host,
        since=args.since,
        until=args.until,
        limit=args.limit,
    )
    store = open_store(_store_url(args))
    try:
        found = store.query_records(query)
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
