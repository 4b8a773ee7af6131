"""``hookengine serve``: the admin HTTP service over a loaded config."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.common import EXIT_OK
from engine.runtime import Engine


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the admin HTTP service (127.0.0.1 by default)")
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--host", help="address to bind (default: http.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default: http.port, 8765)")
    p.add_argument("--watch", action="store_true", help="reload agents when their files change")
    p.add_argument("--db", help="use this store instead of engine.yaml's")
    p.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    from engine.http import serve as run

    with Engine.load(args.config, watch=args.watch, db=args.db) as engine:
        run(engine, args.host, args.port)
    return EXIT_OK
