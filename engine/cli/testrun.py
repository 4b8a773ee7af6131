"""How ``hookengine test`` and ``hook_tool … test`` choose, run and report YAML tests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    agent_filter,
    config_of,
    not_a_hook_file,
    print_json,
    say,
)

if TYPE_CHECKING:
    from engine.config.loader import HookSpec
    from engine.kinds import BuildEnv
    from engine.yamltests import Report


def add_test_options(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The options both test commands take."""
    p.add_argument("-k", dest="pattern", help="run only tests whose '<hook>: <name>' holds this")
    p.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML")
    p.add_argument(
        "--require-tests", action="store_true", help="fail (exit 1) if a hook has no tests"
    )
    p.add_argument("--progress", action="store_true", help="progress bar even without a tty")


def test(args: argparse.Namespace) -> int:
    """Run the hooks' tests (every hook, an agent's, named ones, or one file's); exit 1 if
    one fails, 2 if the config is invalid."""
    from engine.runtime import Engine
    from engine.yamltests import project_hooks

    target = Path(config_of(args))
    if target.suffix in (".yaml", ".yml"):
        return test_file(target, args)
    with Engine.load(target, records=False, db=":memory:", live=args.live) as engine:
        agent = agent_filter(args.agent, engine.agents)
        project = engine.project
        specs = project_hooks(project)
        if agent:  # an agent's hooks: its own and the host layer's, which run after them
            specs = [*project.agents[agent].hooks, *project.host_hooks]
        return run_and_report(chosen(specs, args.hook), engine.env, args)


def test_file(path: Path, args: argparse.Namespace) -> int:
    """The tests of one hook file (given as the hook's YAML or its ``.test.yaml``)."""
    from engine.cli.hook_tool import load_engine

    if path.name.endswith(".test.yaml"):
        path = path.with_name(path.name.removesuffix(".test.yaml") + ".yaml")
    if not path.is_file():
        raise UsageError(f"{path}: {not_a_hook_file(path)}")
    if args.agent:
        raise UsageError("--agent: a hook file is tested alone; give a config folder instead")
    with load_engine(path, agent="test", db=":memory:", live=args.live) as engine:
        specs = list(engine.project.agents["test"].hooks)
        return run_and_report(chosen(specs, args.hook), engine.env, args)


def run_and_report(specs: list[HookSpec], env: BuildEnv, args: argparse.Namespace) -> int:
    """Run the tests of ``specs`` and print them; exit 1 on a failure, an error, or (with
    ``--require-tests``) a hook without tests."""
    from engine.cli.render import progress_bar
    from engine.yamltests import junit_xml, report_data, report_lines, run_hooks

    with progress_bar("test", force=args.progress, unit="hooks") as bar:
        report = run_hooks(specs, env, pattern=args.pattern, progress=bar)
    if args.junit:
        _write(Path(args.junit), junit_xml(report))
    if args.json:
        print_json(report_data(report))
    else:
        say("\n".join(report_lines(report)))
    return EXIT_OK if passed(report, require_tests=args.require_tests) else EXIT_FAILED


def passed(report: Report, *, require_tests: bool) -> bool:
    return report.ok and not (require_tests and report.untested)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--junit {path}: cannot write it: {exc.strerror}") from exc


def chosen(specs: list[Any], names: list[str] | None) -> list[Any]:
    """The hooks of ``specs`` named in ``names`` (all if None); UsageError for a name that
    is no hook, with a suggestion."""
    from engine.cli.common import suggestion

    if not names:
        return specs
    known = [s.name for s in specs]
    for name in names:
        if name not in known:
            raise UsageError(f"--hook {name!r}: no such hook{suggestion(name, sorted(known))}")
    return [s for s in specs if s.name in names]
