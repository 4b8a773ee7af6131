"""``check``: every problem of every agent and every stage of loading, in one run.

Loading stops at the first agent that fails (an engine must not run half a config); checking
must not. So each stage runs on whatever the stage before it could read: every YAML file is
read and validated (a field error in agent.yaml does not hide its hooks), every hook that
validated is built (its script compiled in the sandbox), every script is read by the static
checks (engine/sandbox/static_checks.py), which find what compiles but fails on every call,
and every hook's sibling test file is read. Problems come back in file order, each once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config.loader import AgentSpec, HookSpec, ProjectConfig, read_project, show
from engine.config.models import ScriptHookConfig
from engine.errors import ConfigError, Problem
from engine.explain import OUTPUT_FIELDS, host_warnings, ignore_warning
from engine.hosts import HostProfile
from engine.pipeline import Pipeline, Slot
from engine.points import Point
from engine.runtime import Engine
from engine.sandbox.static_checks import check_script
from engine.yamltests import collect, test_file_of

if TYPE_CHECKING:
    from engine.tools.toolset import ToolSet

_LANGUAGES = {".py": "python", ".js": "javascript"}


@dataclass
class AgentReport:
    """An agent that loads: its hooks in order (host hooks included)."""

    name: str
    hooks: list[str]


@dataclass
class CheckReport:
    """What ``check`` found: problems (the config must not be used), warnings (it may)."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    agents: list[AgentReport] = field(default_factory=list)
    """The agents with no problem."""

    @property
    def ok(self) -> bool:
        return not self.problems


def check_project(root: str | Path, *, host: HostProfile | None = None) -> CheckReport:
    """Check the config folder ``root`` through every stage; never raises for its content.
    With ``host``, warn about changes hooks may make that the host cannot apply."""
    project, problems = read_project(root)
    report = CheckReport(problems=list(problems))
    if project is None:
        return report
    hooks = [*project.host_hooks, *(h for a in project.agents.values() for h in a.hooks)]
    static, in_files = _static(hooks)
    bare = ProjectConfig(project.root, project.base_dir, project.settings, (), {})
    with Engine(bare, records=False, db=":memory:") as engine:
        engine.host_slots = _build(engine, project.host_hooks, "host", report)
        from engine.tools.delegate import delegate_problems

        tools = {s.name: _check_agent(engine, s, report, host) for s in project.agents.values()}
        report.problems += delegate_problems(tools)  # across agents: targets and cycles
        for loaded in tools.values():
            loaded.close()
    # Where a compile error is at the same place, the static finding says more (a
    # ReferenceError at load becomes "require is not defined in the sandbox" with its hint),
    # so it goes first and wins; but not in a script file: the compile error of a file hides
    # the tokens it would quote (a file that is no script must not have its content shown).
    compiled = {(p.path, p.line) for p in report.problems}
    static = [p for p in static if id(p) not in in_files or (p.path, p.line) not in compiled]
    report.problems = static + report.problems
    for hook in {h.path: h for h in hooks}.values():
        report.problems += collect(hook)[1]
    report.problems = _ordered(report.problems)
    failing = {p.path for p in report.problems}
    report.agents = [a for a in report.agents if not _touches(project, a.name, failing)]
    return report


def _build(
    engine: Engine, specs: tuple[HookSpec, ...], layer: str, report: CheckReport
) -> tuple[Slot, ...]:
    try:
        return engine.build_slots(specs, layer)
    except ConfigError as exc:
        report.problems += exc.problems
        return ()


def _check_agent(
    engine: Engine, spec: AgentSpec, report: CheckReport, host: HostProfile | None
) -> ToolSet:
    """Check one agent; its tools (each file through its kind's loader; none if one failed),
    for the checks across agents (the caller closes them)."""
    from engine.tools.toolset import ToolSet

    slots = _build(engine, spec.hooks, "agent", report)
    tools = ToolSet()
    try:
        tools = engine.make_tools(spec)
    except ConfigError as exc:
        report.problems += exc.problems
    try:
        records = spec.config.records or engine.settings.records
        pipeline = Pipeline(spec.name, slots + engine.host_slots, 0, records)
        report.agents.append(AgentReport(spec.name, [s.hook.name for s in pipeline.slots]))
        warnings = [
            ignore_warning(slot.hook, point)
            for point in OUTPUT_FIELDS
            for slot in pipeline.by_point[point]
        ]
        if host is not None:
            warnings += [
                f"{spec.name}: host {host.name}: {text}"
                for point in Point
                for slot in pipeline.by_point[point]
                for text in host_warnings(slot.hook, point, host)
            ]
        for warning in warnings:
            if warning is not None and warning not in report.warnings:  # host hooks: once
                report.warnings.append(warning)
    finally:
        for slot in slots:
            slot.hook.close()
    return tools


def _static(hooks: list[HookSpec]) -> tuple[list[Problem], set[int]]:
    """Static findings of every script hook, in the author's coordinates, and the ids of
    those in script files."""
    problems: list[Problem] = []
    in_files: set[int] = set()
    seen: set[Path] = set()
    for spec in hooks:
        if not isinstance(spec.config, ScriptHookConfig) or spec.path in seen:
            continue
        seen.add(spec.path)
        if spec.script_path is not None:
            language, source = _LANGUAGES[spec.script_path.suffix], spec.script_text or ""
        elif spec.config.language is not None and spec.config.source is not None:
            language, source = spec.config.language, spec.config.source
        else:
            continue
        for finding in check_script(source, language):
            path, line, column = spec.script_position(finding.line, finding.column)
            problem = Problem(path, line, finding.field, finding.message, finding.hint, column)
            problems.append(problem)
            if spec.script_path is not None:
                in_files.add(id(problem))
    return problems, in_files


def _ordered(problems: list[Problem]) -> list[Problem]:
    """Each problem once, by file and line (a script error a static check and the compile
    both saw at the same place is reported once: the first, the static finding)."""
    seen: set[tuple[str, int | None]] = set()
    out = []
    for problem in problems:
        key = (problem.path, problem.line)
        if problem.line is not None and key in seen:
            continue
        seen.add(key)
        out.append(problem)
    return sorted(out, key=lambda p: (p.path, p.line or 0, p.column or 0))


def _touches(project: ProjectConfig, agent: str, failing: set[str]) -> bool:
    """Whether a problem is in one of ``agent``'s files or the host layer's."""
    spec = project.agents[agent]
    files = {show(f) for f in spec.files} | {show(spec.folder / "agent.yaml")}
    files |= {show(f) for f in project.host_files} | {h.shown for h in project.host_hooks}
    files |= {show(test_file_of(h.path)) for h in (*spec.hooks, *project.host_hooks)}
    return bool(files & failing)


__all__ = ["AgentReport", "CheckReport", "check_project"]
