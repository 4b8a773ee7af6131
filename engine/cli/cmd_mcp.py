"""``hookengine mcp-proxy``: an MCP gateway whose tool calls an agent's hooks decide."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from engine.cli.common import EXIT_FAILED, EXIT_OK, UsageError, say
from engine.runtime import Engine

TOKEN_VARIABLE = "HOOKENGINE_MCP_TOKEN"
"""The environment variable holding the bearer token ``--http`` requires."""

MIN_TOKEN_CHARS = 16


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp-proxy",
        help="an MCP gateway: hooks decide the tool calls of the MCP server it runs",
        usage="hookengine mcp-proxy --agent A [options] -- CMD [ARGS ...]",
    )
    p.add_argument("--agent", required=True, help="the agent whose hooks decide")
    p.add_argument("--user", help="the user id every evaluation is scoped to")
    p.add_argument(
        "--allow-tools",
        action="append",
        default=[],
        metavar="GLOB",
        help="offer only tools matching GLOB (repeatable; default: all)",
    )
    p.add_argument(
        "--deny-tools",
        action="append",
        default=[],
        metavar="GLOB",
        help="never offer nor call tools matching GLOB (repeatable; wins over --allow-tools)",
    )
    p.add_argument(
        "--include-binary",
        action="store_true",
        help="hand hooks binary content whole (default: {type, mimeType, bytes, stub} stubs)",
    )
    p.add_argument(
        "--call-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="answer a tool call isError (and cancel it upstream) when the server sends nothing "
        "for it this long; each progress notice starts the wait again; 0: no limit "
        "(default: 300)",
    )
    p.add_argument(
        "--clean-env",
        action="store_true",
        help="start the server with a minimal environment (PATH, HOME, ...) instead of this one",
    )
    p.add_argument("--watch", action="store_true", help="reload hooks when their files change")
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--db", help="use this store instead of engine.yaml's")
    p.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help=f"serve streamable HTTP on PORT instead of stdio (bearer token: ${TOKEN_VARIABLE})",
    )
    p.add_argument("--bind", default="127.0.0.1", help="address for --http (default: 127.0.0.1)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the MCP server to run, after --")
    p.set_defaults(func=run_proxy)


def run_proxy(args: argparse.Namespace) -> int:
    """Serve until the client leaves (exit 0) or the upstream dies (exit 1)."""
    import anyio

    from engine.integrations.mcp import Gateway, GatewayOptions
    from engine.integrations.mcp_serve import run_stdio

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("the MCP server to run is missing: add -- CMD [ARGS ...]")
    if not args.call_timeout >= 0:  # also NaN
        raise UsageError("--call-timeout: a number of seconds >= 0 (0: no limit)")
    token = _token() if args.http is not None else ""
    options = GatewayOptions(
        agent=args.agent,
        command=tuple(command),
        user_id=args.user,
        allow_tools=tuple(args.allow_tools),
        deny_tools=tuple(args.deny_tools),
        include_binary=args.include_binary,
        clean_env=args.clean_env,
        call_timeout_s=args.call_timeout if args.call_timeout > 0 else None,
    )
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    with Engine.load(args.config, watch=args.watch, db=args.db) as engine:
        gateway = Gateway(engine, options)
        try:
            if args.http is None:
                run_stdio(gateway)
            else:
                anyio.run(_serve_http, gateway, token, args.bind, args.http)
        except KeyboardInterrupt:  # Ctrl-C (uvicorn re-raises the SIGINT it handled): a stop
            return EXIT_OK
        except Exception as exc:  # noqa: BLE001 - the command's edge: report, exit non-zero
            say(f"hookengine mcp-proxy: error: {_cause(exc)}", file=sys.stderr)
            return EXIT_FAILED
    if gateway.failure:
        say(f"hookengine mcp-proxy: error: {gateway.failure}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _serve_http(gateway: Any, token: str, host: str, port: int) -> None:
    from engine.integrations.mcp_serve import serve_http

    await serve_http(gateway, token, host=host, port=port)


def _token() -> str:
    token = os.environ.get(TOKEN_VARIABLE, "")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(
            f"--http: set ${TOKEN_VARIABLE} to a bearer token of at least {MIN_TOKEN_CHARS} "
            "characters (clients send it as Authorization: Bearer <token>)"
        )
    return token


def _cause(exc: BaseException) -> str:
    """The innermost cause of a task group's failure, as one line."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
