"""``hookengine tools``, ``hookengine artifacts`` and ``hookengine mcp-serve``: an agent's tools
listed, exported, called and tested, every call through the agent's guarded call path."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json, say
from engine.jsontext import parse_strict
from engine.runtime import Engine

FORMATS = ("openai-chat", "openai-responses", "anthropic", "mcp")


def register(sub: Any) -> None:
    p = sub.add_parser("tools", help="list, show, export, call and test an agent's tools")
    tools = p.add_subparsers(dest="tools_command", required=True, metavar="ACTION")
    for name, help_text in (
        ("list", "the agent's tools: name, kind, enabled, description"),
        ("show", "one tool: its spec and where it is declared"),
        ("export", "every enabled tool's spec in one model API's format (JSON)"),
        ("call", "call a tool through the agent's hooks and print the result"),
        ("test", "run the tests tool files carry (TaskWeaver @test_plugin)"),
    ):
        q = tools.add_parser(name, help=help_text)
        q.add_argument("--agent", required=True)
        q.add_argument("--config", default="config", help="config folder (default: config)")
        q.add_argument("--db", help="use this store instead of engine.yaml's")
        if name in ("show", "call"):
            q.add_argument("name", help="the tool's name")
        if name == "export":
            q.add_argument("--format", choices=FORMATS, default="openai-chat")
        if name == "call":
            q.add_argument("input", nargs="?", default="{}", help="the input as JSON")
            q.add_argument("--session", help="the session artifacts belong to")
            q.add_argument("--user", help="the user the call is scoped to")
        q.set_defaults(func=_ACTIONS[name])

    p = sub.add_parser("artifacts", help="the artifacts tool calls made in a session")
    p.add_argument("session", help="the session id")
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--db", help="use this store instead of engine.yaml's")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.set_defaults(func=list_artifacts)

    p = sub.add_parser("mcp-serve", help="serve an agent's tools as an MCP server over stdio")
    p.add_argument("--agent", required=True)
    p.add_argument("--config", default="config", help="config folder (default: config)")
    p.add_argument("--db", help="use this store instead of engine.yaml's")
    p.add_argument("--user", help="the user every call is scoped to")
    p.add_argument("--session", help="the session every call is scoped to (default: a new one)")
    p.add_argument("--watch", action="store_true", help="reload tools when their files change")
    p.set_defaults(func=mcp_serve)


def _engine(args: argparse.Namespace, **options: Any) -> Engine:
    return Engine.load(args.config, db=args.db, **options)


def list_tools(args: argparse.Namespace) -> int:
    with _engine(args, records=False) as engine:
        tools = engine.agent(args.agent).tools
        rows = [(t, True) for t in tools.tools.values()]
        rows += [(t, False) for t in tools.disabled.values()]
        for tool, enabled in sorted(rows, key=lambda r: r[0].spec.name):
            state = "" if enabled else "  (disabled)"
            say(f"{tool.spec.name:24} {tool.kind:16} {tool.spec.description[:60]}{state}")
        if not rows:
            say(f"agent {args.agent!r} has no tools")
    return EXIT_OK


def show_tool(args: argparse.Namespace) -> int:
    with _engine(args, records=False) as engine:
        tools = engine.agent(args.agent).tools
        tool = tools.tools.get(args.name) or tools.disabled.get(args.name)
        if tool is None:
            raise UsageError(f"agent {args.agent!r} has no tool {args.name!r}")
        print_json(
            {
                "name": tool.spec.name,
                "kind": tool.kind,
                "file": str(tool.path),
                "enabled": tool.enabled,
                "isolation": tool.isolation,
                "timeout_ms": tool.timeout_ms,
                "description": tool.spec.description,
                "input_schema": tool.spec.input_schema,
                "output_schema": tool.spec.output_schema,
                "annotations": tool.spec.annotations,
            }
        )
    return EXIT_OK


def export_tools(args: argparse.Namespace) -> int:
    with _engine(args, records=False) as engine:
        print_json(engine.agent(args.agent).tool_specs(args.format))
    return EXIT_OK


def call_tool(args: argparse.Namespace) -> int:
    """Exit 0 when the result is not an error, 1 when it is."""
    try:
        value = parse_strict(args.input)
    except ValueError as exc:  # not JSON, or JSON a policy must not take (a repeated key)
        raise UsageError(f"input: not JSON: {exc}") from None
    with _engine(args) as engine:
        result = engine.agent(args.agent).call_tool(
            args.name, value, session_id=args.session, user_id=args.user
        )
        print_json(vars(result))
    return EXIT_FAILED if result.is_error else EXIT_OK


def test_tools(args: argparse.Namespace) -> int:
    """Exit 1 when a test failed; tools without tests are listed as such."""
    from engine.tools.artifacts import CallContext

    failed = 0
    with _engine(args, records=False) as engine:
        tools = engine.agent(args.agent).tools
        for tool in [*tools.tools.values(), *tools.disabled.values()]:
            run_tests = getattr(tool, "run_tests", None)
            if run_tests is None:
                say(f"{tool.spec.name}: no tests")
                continue
            ctx = CallContext(
                args.agent, tool.spec.name, "tools-test", None, None, engine.artifact_store
            )
            for test in run_tests(ctx):
                failed += not test.ok
                mark = "PASSED" if test.ok else "FAILED"
                say(f"{test.tool}::{test.name} {mark}{': ' + test.message if test.message else ''}")
    return EXIT_FAILED if failed else EXIT_OK


def list_artifacts(args: argparse.Namespace) -> int:
    with _engine(args, records=False) as engine:
        rows = engine.artifacts(args.session)
        if args.json:
            print_json(rows)
            return EXIT_OK
        for row in rows:
            say(f"{row['id']}  {row['type']:5} {row['bytes']:>9}  {row['tool']:20} {row['name']}")
        if not rows:
            say(f"session {args.session!r} has no artifacts")
    return EXIT_OK


def mcp_serve(args: argparse.Namespace) -> int:
    import logging

    from engine.integrations.tool_server import ToolServer, serve_stdio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    with _engine(args, watch=args.watch) as engine:
        server = ToolServer(engine, args.agent, user_id=args.user, session_id=args.session)
        try:
            serve_stdio(server)
        except KeyboardInterrupt:
            return EXIT_OK
    return EXIT_OK


_ACTIONS = {
    "list": list_tools,
    "show": show_tool,
    "export": export_tools,
    "call": call_tool,
    "test": test_tools,
}
