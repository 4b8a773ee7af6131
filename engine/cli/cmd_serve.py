"""``hookengine serve``: the decision and admin HTTP service over a loaded config."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from typing import Any

from engine.cli.common import EXIT_OK, EXIT_USAGE, add_config, config_of
from engine.runtime import Engine


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve", help="run the decision and admin HTTP service (127.0.0.1 by default)"
    )
    add_config(p)
    p.add_argument("--host", help="address to bind (default: http.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default: http.port, 8765)")
    p.add_argument(
        "--watch",
        action="store_true",
        help="reload agents when their files change; each reload is logged on stderr",
    )
    p.add_argument("--db", help="use this store instead of engine.yaml's")
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="decisions need no token (only when binding a loopback address)",
    )
    p.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    from engine.http import serve as run

    with Engine.load(config_of(args), watch=args.watch, db=args.db) as engine:
        if args.watch:
            log_reloads(engine)
        http = engine.settings.http
        host = args.host or http.host
        refusal = start_refusal(http, host, no_auth=args.no_auth)
        if refusal:
            print(f"hookengine serve: {refusal}", file=sys.stderr)
            return EXIT_USAGE
        run(engine, host, args.port, no_auth=args.no_auth)
    return EXIT_OK


def log_reloads(engine: Engine) -> None:
    """Print each successful reload (generation, files, hash) on stderr, as it goes live."""
    from engine.reload_log import ReloadLog, entry_line

    def show(entry: dict[str, Any]) -> None:
        print(f"hookengine serve: {entry_line(entry)}", file=sys.stderr, flush=True)

    ReloadLog.of(engine).listeners.append(show)


def start_refusal(http: Any, host: str, *, no_auth: bool) -> str | None:
    """Why the service must not start, or None: decisions must need a token, unless
    ``--no-auth`` on a loopback address (where only this machine can ask)."""
    if no_auth:
        if is_loopback(host):
            return None
        return f"--no-auth is allowed only on a loopback address (127.0.0.1, ::1), not {host!r}"
    decide = [t for t in http.tokens if "decide" in t.scopes]
    if any(os.environ.get(t.env) for t in decide):
        return None
    if decide:
        unset = ", ".join(f"${t.env}" for t in decide)
        return f"no decide token: {unset} unset or empty (set one, or use --no-auth on loopback)"
    return (
        "no decide token configured: add http.tokens in engine.yaml, e.g. "
        "[{name: sidecar, env: HOOKENGINE_TOKEN, scopes: [decide]}], and set the variable "
        "(or use --no-auth on a loopback address)"
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
