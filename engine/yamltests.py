"""Hook tests in YAML: collect a hook's tests (inline ``tests:`` and ``<name>.test.yaml``), run
them on the hook alone, and report in a pytest-like form."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.loader import HookSpec, ProjectConfig, present, show, validate
from engine.config.models import HookTest, HookTestExpect, Strict
from engine.config.yamlfile import read_yaml
from engine.errors import ConfigError, Problem, ScriptCompileError
from engine.kinds import BuildEnv, Hook, Memo, Mode, build_hook
from engine.outcome import Outcome
from engine.pipeline import Pipeline, Services, Slot, evaluate
from engine.points import Point, make_event
from engine.store import Store, open_store

TEST_AGENT = "test"


class HookTestFile(Strict):
    """A sibling ``<name>.test.yaml``: more tests of the hook ``<name>.yaml``."""

    tests: list[HookTest]
    """The tests, written as in a hook's ``tests:``."""


@dataclass(frozen=True)
class Case:
    """One test of one hook, with where it is written."""

    spec: HookSpec
    test: HookTest
    path: str
    line: int | None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    @property
    def title(self) -> str:
        return self.test.name or f"{self.test.point.value} test"


@dataclass
class Result:
    """How one case went: failures are the unmet expectations (empty: passed)."""

    case: Case
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class Report:
    """Every result of a run, collection problems, and how long it took."""

    results: list[Result] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    untested: list[HookSpec] = field(default_factory=list)
    """Hooks with no tests at all (``--require-tests`` fails on them)."""
    seconds: float = 0.0

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if not r.passed]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.problems


def test_file_of(path: Path) -> Path:
    """The sibling test file of a hook file: ``hooks/guard.yaml`` -> ``hooks/guard.test.yaml``."""
    return path.with_name(f"{path.stem}.test.yaml")


# -- collecting --------------------------------------------------------------------------------


def collect(spec: HookSpec) -> tuple[list[Case], list[Problem]]:
    """The hook's inline tests, then those of its sibling test file (if there is one)."""
    cases = [
        Case(spec, t, spec.shown, spec.line("tests", i)) for i, t in enumerate(spec.config.tests)
    ]
    sibling = test_file_of(spec.path)
    if not present(sibling):  # a FIFO or a folder there is reported, not skipped
        return cases, []
    shown = show(sibling)
    doc, problems = read_yaml(sibling, shown)
    if doc is None or problems:
        return cases, problems
    model, problems = validate(HookTestFile, doc, shown)
    if model is None:
        return cases, problems
    cases += [Case(spec, t, shown, doc.line_of(("tests", i))) for i, t in enumerate(model.tests)]
    return cases, []


def project_hooks(project: ProjectConfig) -> list[HookSpec]:
    """Every hook of a project once: each agent's, then the host layer's."""
    seen: dict[Path, HookSpec] = {}
    for agent in project.agents.values():
        for spec in agent.hooks:
            seen.setdefault(spec.path, spec)
    for spec in project.host_hooks:
        seen.setdefault(spec.path, spec)
    return list(seen.values())


# -- running -----------------------------------------------------------------------------------


class _Enforced:
    """A hook seen as enforced: a shadow hook's tests check what it would decide."""

    mode = Mode.ENFORCE

    def __init__(self, hook: Hook) -> None:
        self._hook = hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hook, name)


def run_hooks(
    specs: Iterable[HookSpec],
    env: BuildEnv,
    *,
    pattern: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Run every test of every hook in ``specs``; each hook is built apart, on a scratch store.

    Args:
        pattern: run only the tests whose ``<hook>: <test name>`` holds it (any case).
        progress: called with ``(hooks done, hooks)`` after each hook.
    """
    started = time.perf_counter()
    report = Report()
    specs = list(specs)
    for done, spec in enumerate(specs, 1):
        cases, problems = collect(spec)
        report.problems += problems
        if not cases and not problems:
            report.untested.append(spec)
        cases = [c for c in cases if pattern is None or matches(c, pattern)]
        if cases:
            results, problems = run_cases(spec, cases, env)
            report.results += results
            report.problems += problems
        if progress is not None:
            progress(done, len(specs))
    report.seconds = time.perf_counter() - started
    return report


def matches(case: Case, pattern: str) -> bool:
    """Whether ``case`` is selected by ``-k pattern``: its ``<hook>: <title>`` holds it."""
    return pattern.casefold() in f"{case.spec.name}: {case.title}".casefold()


def run_cases(
    spec: HookSpec, cases: list[Case], env: BuildEnv
) -> tuple[list[Result], list[Problem]]:
    """Build ``spec`` on a scratch store (nothing real is read or written) and run ``cases``."""
    store = open_store(":memory:")
    scratch = dataclasses.replace(env, open_store=lambda _url: store, db_override=None)
    try:
        try:
            hook = build_hook(spec, scratch)
        except (ConfigError, ScriptCompileError) as exc:
            return [], list(exc.problems)
        try:
            return [run_case(case, hook, store) for case in cases], []
        finally:
            hook.close()
    finally:
        store.close()


def run_case(case: Case, hook: Hook, store: Store) -> Result:
    """Evaluate one case on ``hook`` alone (fresh memos) and check its expectations."""
    test = case.test
    if test.point not in hook.points:
        points = ", ".join(sorted(p.value for p in hook.points)) or "none"
        return Result(case, [f"the hook does not run at {test.point.value} (it runs at {points})"])
    memos: dict[tuple[str, str], Memo] = {}
    services = Services(store, lambda a, h: memos.setdefault((a, h), Memo()), None)
    pipeline = Pipeline(TEST_AGENT, (Slot(_Enforced(hook), case.spec.layer),))
    for step in test.given:
        event = _event(
            step.point, step.event, test, scope={**test.scope, **step.scope}, time=step.time
        )
        evaluate(pipeline, step.point, event, services)
    out = evaluate(pipeline, test.point, _event(test.point, test.event, test), services)
    failures = check(test.expect, out)
    errors = [f"the hook failed: {run.error}" for run in out.hooks if run.error]
    return Result(case, failures + errors, out.duration_ms / 1000)


def _event(
    point: Point,
    fields: dict[str, Any],
    test: HookTest,
    *,
    scope: dict[str, str] | None = None,
    time: str | None = None,
) -> dict[str, Any]:
    fields = {"turn_id": "test-turn", **fields}
    return make_event(
        point,
        agent=TEST_AGENT,
        scope=test.scope if scope is None else scope,
        time=time or test.time,
        **fields,
    )


# -- checking ----------------------------------------------------------------------------------

EQUALS = ("answer", "question", "messages", "input", "result")


def check(expect: HookTestExpect, out: Outcome) -> list[str]:
    """Every unmet expectation of ``expect`` on ``out``, as a readable line."""
    given = expect.model_fields_set
    fails: list[str] = []
    if "blocked" in given and out.blocked != expect.blocked:
        why = f" (reason: {out.reason})" if out.reason else ""
        fails.append(f"blocked: expected {_j(expect.blocked)}, got {_j(out.blocked)}{why}")
    if expect.reason_contains is not None and expect.reason_contains not in (out.reason or ""):
        fails.append(
            f"reason: expected to contain {expect.reason_contains!r}, got {_j(out.reason)}"
        )
    for name in EQUALS:
        if name in given and _norm(getattr(out, name)) != _norm(getattr(expect, name)):
            fails.append(
                f"{name}: expected {_j(getattr(expect, name))}, got {_j(getattr(out, name))}"
            )
    fails += _contains(expect, out)
    if expect.no_change is not None and expect.no_change == out.changed:
        wanted = "no change" if expect.no_change else "a change"
        fails.append(f"expected {wanted}, got {_j(_changed(out)) if out.changed else 'none'}")
    return fails


def _contains(expect: HookTestExpect, out: Outcome) -> list[str]:
    fails = []
    if expect.answer_contains is not None and expect.answer_contains not in (out.answer or ""):
        fails.append(
            f"answer: expected to contain {expect.answer_contains!r}, got {_j(out.answer)}"
        )
    texts = [str(m.get("content", "")) for m in out.messages]
    if expect.messages_contain is not None and not any(expect.messages_contain in t for t in texts):
        fails.append(
            f"messages: expected one to contain {expect.messages_contain!r}, got {_j(out.messages)}"
        )
    if expect.input_contains is not None:
        missing = {
            k: v
            for k, v in expect.input_contains.items()
            if _norm((out.input or {}).get(k)) != _norm(v)
        }
        if missing:
            fails.append(f"input: expected to contain {_j(missing)}, got {_j(out.input)}")
    result = out.result if isinstance(out.result, str) else _j(out.result)
    if expect.result_contains is not None and expect.result_contains not in result:
        fails.append(f"result: expected to contain {expect.result_contains!r}, got {result}")
    if expect.notices_contain is not None and not any(
        expect.notices_contain in n for n in out.notices
    ):
        fails.append(
            f"notices: expected one to contain {expect.notices_contain!r}, got {_j(out.notices)}"
        )
    return fails


def _changed(out: Outcome) -> dict[str, Any]:
    return {r.name: r.change for r in out.hooks if r.change}


def _norm(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# -- reporting ---------------------------------------------------------------------------------


def as_problems(report: Report) -> list[Problem]:
    """A failed run as config problems (file:line of each failing test), for reload errors."""
    problems = list(report.problems)
    for result in report.failed:
        case = result.case
        problems.append(
            Problem(
                case.path,
                case.line,
                "tests",
                f"test {case.title!r} failed: {'; '.join(result.failures)}",
            )
        )
    return problems


def report_lines(report: Report) -> list[str]:
    """The report as pytest prints one: a line of dots per file, failures, a summary line."""
    lines: list[str] = []
    by_file: dict[str, str] = {}
    for result in report.results:
        by_file[result.case.path] = by_file.get(result.case.path, "") + (
            "." if result.passed else "F"
        )
    lines += [f"{path} {marks}" for path, marks in by_file.items()]
    if report.failed or report.problems:
        lines.append(_banner("FAILURES" if report.failed else "ERRORS"))
    for result in report.failed:
        lines.append(_banner(f"{result.case.spec.name}: {result.case.title}", "_"))
        lines.append(f"{result.case.where}: {result.case.test.point.value}")
        lines += [f"E   {failure}" for failure in result.failures]
    lines += [f"ERROR {problem}" for problem in report.problems]
    lines += [f"no tests: {spec.name} ({spec.shown})" for spec in report.untested]
    lines.append(_banner(_summary(report)))
    return lines


def _summary(report: Report) -> str:
    failed, passed = len(report.failed), len(report.results) - len(report.failed)
    parts = [f"{failed} failed"] if failed else []
    parts += [f"{passed} passed"] if passed or not report.results else []
    parts += [f"{len(report.problems)} errors"] if report.problems else []
    untested = f"; {len(report.untested)} without tests" if report.untested else ""
    return f"{', '.join(parts)} in {report.seconds:.2f}s{untested}"


def _banner(text: str, fill: str = "=") -> str:
    return f" {text} ".center(72, fill)


def report_data(report: Report) -> dict[str, Any]:
    """The report as ``hookengine test --json`` prints it (docs/schemas/test.json)."""
    return {
        "ok": report.ok,
        "passed": len(report.results) - len(report.failed),
        "failed": len(report.failed),
        "errors": len(report.problems),
        "seconds": round(report.seconds, 4),
        "results": [
            {
                "hook": r.case.spec.name,
                "file": r.case.path,
                "line": r.case.line,
                "name": r.case.title,
                "point": r.case.test.point.value,
                "passed": r.passed,
                "failures": r.failures,
                "seconds": round(r.seconds, 6),
            }
            for r in report.results
        ],
        "problems": [str(p) for p in report.problems],
        "untested": [{"hook": s.name, "file": s.shown} for s in report.untested],
    }


def junit_xml(report: Report) -> str:
    """The report as JUnit XML (one testcase per test, one per collection error), the form
    CI services show."""
    from xml.etree import ElementTree as ET

    suite = ET.Element(
        "testsuite",
        name="hookengine",
        tests=str(len(report.results) + len(report.problems)),
        failures=str(len(report.failed)),
        errors=str(len(report.problems)),
        time=f"{report.seconds:.4f}",
    )
    for r in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=r.case.spec.name,
            name=r.case.title,
            file=r.case.path,
            line=str(r.case.line or 0),
            time=f"{r.seconds:.6f}",
        )
        if not r.passed:
            failure = ET.SubElement(case, "failure", message=r.failures[0])
            failure.text = "\n".join([r.case.where, *r.failures])
    for problem in report.problems:
        case = ET.SubElement(suite, "testcase", classname="collection", name=str(problem))
        ET.SubElement(case, "error", message=str(problem)).text = str(problem)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
