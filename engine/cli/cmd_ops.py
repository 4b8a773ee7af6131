"""``hookengine test``, ``replay``, ``explain``, ``dev`` and ``status``: operating hooks safely
(``test`` runs in engine/cli/testrun.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from engine.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_config,
    agent_filter,
    config_of,
    find_record,
    point_filter,
    print_json,
    say,
    store_url,
    time_filter,
)
from engine.cli.render import progress_bar
from engine.cli.testrun import add_test_options, test
from engine.config import agent_names, load_project
from engine.errors import ConfigError, StoreError
from engine.points import Point
from engine.runtime import Engine
from engine.store import LossSummary, open_store


def register(sub: Any) -> None:
    p = sub.add_parser("test", help="run every YAML test of every hook (pytest-like output)")
    p.add_argument(
        "where", nargs="?", metavar="CONFIG|HOOK", help="config folder, or one hook's YAML file"
    )
    p.add_argument("--config", help="config folder (default: config)")
    p.add_argument("--live", action="store_true", help="use the configured LLM provider")
    p.add_argument("--agent", help="only this agent's hooks")
    p.add_argument("--hook", action="append", help="only this hook (repeatable)")
    add_test_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=test)

    p = sub.add_parser(
        "replay",
        help="re-evaluate recorded events through the current hooks "
        "and show every decision that differs",
    )
    add_config(p)
    p.add_argument("--db", help="read records from this store instead of engine.yaml's")
    p.add_argument("--agent")
    p.add_argument("--point")
    p.add_argument("--since", help="ISO time (UTC unless it says) or a duration: 30m, 2h, 7d")
    p.add_argument("--limit", type=int, default=10_000, help="newest N records (default 10000)")
    p.add_argument("--show", type=int, default=50, help="differences to print (default 50)")
    p.add_argument(
        "--fail-on-diff",
        action="store_true",
        help="exit 1 if any enforced decision differs (for CI)",
    )
    p.add_argument("--progress", action="store_true", help="progress bar even without a tty")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=replay)

    p = sub.add_parser(
        "explain",
        help="why a record decided what it did; or the effective order of an agent's hooks",
    )
    p.add_argument(
        "record", nargs="?", help="a record id (or its first characters, as `records` shows)"
    )
    add_config(p)
    p.add_argument("--db", help="read the record from this store instead of engine.yaml's")
    p.add_argument("--agent", help="explain this agent's hook order per point")
    p.add_argument("--session-hooks", metavar="H1,H2", help="in a session with these hooks")
    p.add_argument("--drop-agent-hooks", action="store_true", help="the session drops the agent's")
    p.add_argument("--point")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=explain)

    p = sub.add_parser("dev", help="talk to an agent interactively; reloads on save")
    add_config(p)
    p.add_argument("--agent", required=True)
    p.add_argument("--db", help="store for records and state (default: engine.yaml's)")
    p.set_defaults(func=dev)

    p = sub.add_parser(
        "status", help="per agent: generation, last reload, last error; records lost and why"
    )
    add_config(p, positional=True)
    p.add_argument(
        "--db", help="read the record loss ledger from this store (default: engine.yaml's)"
    )
    p.add_argument(
        "--url",
        help="ask a running `hookengine serve` (e.g. http://127.0.0.1:8765) for its live status",
    )
    p.add_argument(
        "--token",
        help="the admin token for --url (default: $HOOKENGINE_ADMIN_TOKEN)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=status)


# -- replay ----------------------------------------------------------------------------------


def replay(args: argparse.Namespace) -> int:
    """Replay recorded events. Differences are findings, not errors: exit 0, unless
    ``--fail-on-diff`` and an enforced decision differs (exit 1)."""
    from engine.replay import load_records, report_lines
    from engine.replay import replay as run_replay

    point, since = point_filter(args.point), time_filter("--since", args.since)
    with Engine.load(config_of(args), records=False, db=args.db) as engine:
        agent = agent_filter(args.agent, engine.agents)
        records = load_records(engine, agent=agent, point=point, since=since, limit=args.limit)
        with progress_bar("replay", force=args.progress) as bar:
            report = run_replay(engine, records, bar)
    if args.json:
        print_json(_replay_data(report))
    else:
        say("\n".join(report_lines(report, limit=args.show)))
    return EXIT_FAILED if args.fail_on_diff and report.differences else EXIT_OK


def _replay_data(report: Any) -> dict[str, Any]:
    from engine.replay import skip_reasons

    return {
        "total": report.total,
        "same": report.same,
        "skipped": report.skipped,
        "skipped_reasons": skip_reasons(report),
        "skips": [
            {"id": r.id, "agent": r.agent, "point": r.point, "reason": why}
            for r, why in report.skips
        ],
        "kinds": dict(report.kinds),
        "shadow_before": dict(report.shadow_before),
        "shadow_after": dict(report.shadow_after),
        "differences": [
            {
                "id": d.record.id,
                "time": d.record.time,
                "agent": d.record.agent,
                "point": d.record.point,
                "kind": d.kind,
                "fields": list(d.fields),
                "before": {f: d.before.get(f) for f in d.fields},
                "after": {f: d.after.get(f) for f in d.fields},
                "shadow_before": d.shadow_before,
                "shadow_after": d.shadow_after,
            }
            for d in report.differences + report.shadow_differences
        ],
    }


# -- explain ---------------------------------------------------------------------------------


def explain(args: argparse.Namespace) -> int:
    """``explain RECORD``: the record's event, each hook's part and who decided;
    ``explain --agent A [--session-hooks H1,H2]``: the hook order per point, with warnings."""
    if args.record:
        return explain_record(args)
    if not args.agent:
        raise UsageError("explain: give a record id (hookengine explain 3f2a9c1e) or --agent")
    from engine.explain import as_data, explain_agent, explanation_lines

    if args.drop_agent_hooks and args.session_hooks is None:
        raise UsageError("explain: --drop-agent-hooks goes with --session-hooks")
    point = point_filter(args.point)
    with Engine.load(config_of(args), records=False, db=":memory:") as engine:
        agent = agent_filter(args.agent, engine.agents)
        assert agent is not None
        hooks = None if args.session_hooks is None else args.session_hooks.split(",")
        ex = explain_agent(
            engine.agent(agent),
            Point(point) if point else None,
            session_hooks=hooks,
            drop_agent_hooks=args.drop_agent_hooks,
        )
    if args.json:
        print_json(as_data(ex))
    else:
        say("\n".join(explanation_lines(ex)))
    return EXIT_OK


def explain_record(args: argparse.Namespace) -> int:
    from engine.why import explain_record as record_data
    from engine.why import record_lines

    record = find_record(store_url(config_of(args), args.db), args.record)
    if args.json:
        print_json(record_data(record))
    else:
        say("\n".join(record_lines(record)))
    return EXIT_OK


# -- dev -------------------------------------------------------------------------------------


def dev(args: argparse.Namespace) -> int:
    from engine.cli.dev import DevSession, draw_prompt, run

    def show(text: str) -> None:
        say(text, flush=True)

    with Engine.load(config_of(args), db=args.db, watch=True) as engine:
        agent_filter(args.agent, engine.agents)
        tty = sys.stdin.isatty()
        session = DevSession(engine, args.agent, show, redraw=draw_prompt if tty else None)
        try:
            run(session, sys.stdin, prompt=tty)
        finally:
            session.close()
    return EXIT_OK


# -- status ----------------------------------------------------------------------------------


def status(args: argparse.Namespace) -> int:
    """Read the config now and report each agent as a fresh engine would run it; with
    ``--url``, what a running ``serve`` reports of itself instead. Exit 1 if an agent does
    not load (or its last reload was refused), or the watcher is failing or stuck."""
    if args.url:
        data = remote_status(args.url, args.token or os.environ.get(TOKEN_ENV, ""))
    else:
        data = project_status(Path(config_of(args)))
        data["records"] = ledger_status(Path(config_of(args)), args.db)
    if args.json:
        print_json(data)
    else:
        say("\n".join(status_lines(data)))
    watcher = data.get("watcher") or {}
    healthy = not watcher.get("error") and not watcher.get("stalled")
    agents_ok = all(a["error"] is None for a in data["agents"].values())
    return EXIT_OK if agents_ok and healthy else EXIT_FAILED


TOKEN_ENV = "HOOKENGINE_ADMIN_TOKEN"
"""Where ``status --url`` finds the admin token when ``--token`` is not given (the default
``http.token_env``)."""


def remote_status(url: str, token: str, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """``GET <url>/v1/status`` of a running service; UsageError naming the URL on failure."""
    target = url.rstrip("/") + "/v1/status"
    if not target.startswith(("http://", "https://")):
        raise UsageError(f"--url {url}: expected http://HOST:PORT")
    request = urllib.request.Request(target, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            data = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise UsageError(f"{target}: HTTP {exc.code}: {_detail(exc)}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"{target}: cannot read the status: {reason}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("agents"), dict):
        raise UsageError(f"{target}: not a hookengine status document")
    return data


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read().decode("utf-8"))["message"])
    except (ValueError, KeyError, TypeError, OSError):
        return str(exc.reason)


def project_status(root: Path) -> dict[str, Any]:
    """``Engine.status()``-shaped data for a config folder, one agent at a time, so that one
    broken agent does not hide the others."""
    agents: dict[str, Any] = {}
    for name in agent_names(root.resolve()):
        try:
            with Engine(load_project(root, only=[name]), records=False, db=":memory:") as eng:
                agents.update(eng.status()["agents"])
        except ConfigError as exc:
            first = exc.problems[0]
            agents[name] = {
                "generation": None,
                "loaded_at": None,
                "reloads": 0,
                "hooks": {},
                "error": {
                    "file": first.path,
                    "line": first.line,
                    "message": str(first),
                    "problems": [str(p) for p in exc.problems],
                },
                "last_error": None,
            }
    return {"watching": False, "generation": 0, "agents": agents}


def ledger_status(root: Path, db: str | None) -> dict[str, Any]:
    """The store's record loss ledger: what every engine writing there lost, and why."""
    try:
        url = db or load_project(root, only=[]).settings.store_url(root.resolve().parent)
    except ConfigError as exc:
        return {"store": None, "error": str(exc.problems[0])}
    if "://" not in url and not Path(url).exists():
        return {"store": url, **LossSummary().as_data()}  # no store yet: nothing written or lost
    try:
        store = open_store(url)
    except StoreError as exc:
        return {"store": url, "error": str(exc)}
    try:
        return {"store": store.url, **store.record_losses().as_data()}
    except StoreError as exc:
        return {"store": store.url, "error": str(exc)}
    finally:
        store.close()


def records_lines(records: dict[str, Any] | None) -> list[str]:
    """The ``records`` part of status data as lines (writer health or the loss ledger)."""
    if records is None:
        return ["records: off"]
    if records.get("error"):
        return [f"records: cannot read the loss ledger: {records['error']}"]
    dropped = records["dropped"]
    causes = ", ".join(f"{cause} {n}" for cause, n in sorted(dropped.items()))
    head = f"records: {sum(dropped.values())} dropped" + (f" ({causes})" if causes else "")
    if "written" in records:
        head += f", {records['written']} written, {records['queued']} queued"
    if records.get("buffered"):
        head += f", {records['buffered']} held for retry"
    lines = [head]
    if records.get("store_reachable") is False:
        lines.append(
            f"    store DOWN since {records['down_since']} ({records['retries']} failed "
            f"attempts); records are kept (at most {records['buffer_max']}, for "
            f"{records['retry_s']:g} s) and retried"
        )
    if records.get("file_notice"):
        lines.append(f"    store file: {records['file_notice']}")
    if records["last_error"]:
        lines.append(f"    last error at {records['last_error_at']}: {records['last_error']}")
    return lines


def watcher_lines(watcher: dict[str, Any] | None) -> list[str]:
    """The reload watcher's health as lines (none for an engine that never watched)."""
    if not watcher or not (watcher["alive"] or watcher["restarts"] or watcher["last_error"]):
        return []
    state = "STALLED" if watcher["stalled"] else ("alive" if watcher["alive"] else "stopped")
    lines = [
        f"watcher: {state}, {watcher['restarts']} restarts, "
        f"last event {watcher['last_event_at'] or '-'}"
    ]
    if watcher["last_error"]:
        label = "error" if watcher["error"] else "last error"
        lines.append(f"    {label} at {watcher['last_error_at']}: {watcher['last_error']}")
    return lines


def status_lines(data: dict[str, Any]) -> list[str]:
    """Status data (``Engine.status()``) as lines: one per agent, then its error if any;
    then the records line when the data has one."""
    lines = [f"watching: {'yes' if data['watching'] else 'no'}"]
    lines += watcher_lines(data.get("watcher"))
    for name, a in data["agents"].items():
        gen = "-" if a["generation"] is None else a["generation"]
        state = "ok" if a["error"] is None else "ERROR"
        lines.append(
            f"{name:<16} generation {gen:<4} loaded {a['loaded_at'] or '-'}  "
            f"reloads {a['reloads']}  {state}"
        )
        error = a["error"] or a.get("last_error")
        if error:
            label = "error" if a["error"] else "last error"
            lines += [f"    {label}: {p}" for p in error["problems"]]
    sandbox = data.get("sandbox")
    if sandbox:
        lines.append(
            f"sandbox: {sandbox['workers']}/{sandbox['size']} workers, {sandbox['busy']} busy, "
            f"{sandbox['respawns_last_minute']} respawns in the last minute"
        )
        lines += [
            f"    quarantined: {q['hook']} ({q['kills']} kills)" for q in sandbox["quarantined"]
        ]
    if "records" in data:
        lines += records_lines(data["records"])
    return lines
