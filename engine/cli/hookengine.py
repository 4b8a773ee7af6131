"""``hookengine``: agent-level commands (check, demo, records, serve, ...)."""

from __future__ import annotations

import argparse
import importlib
import sys

from engine.cli.common import VersionAction, run_main

# Each module adds its subcommands with register(subparsers); the order is the help's order.
COMMAND_MODULES = (
    "engine.cli.cmd_core",
    "engine.cli.cmd_ops",
    "engine.cli.cmd_serve",
    "engine.cli.cmd_claude",
    "engine.cli.cmd_mcp",
    "engine.cli.cmd_tools",
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hookengine", description="Check, run, inspect and serve hookengine agents."
    )
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hookengine`` console script."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return run_main("hookengine", lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
