"""Replay: recorded events through the current hooks, reporting every decision that differs.

Nothing is written: no records, no script state, no memos of the live engine. Judge answers
and ``host.now()`` come from the record (per-hook extras and the event's ``time``), so a replay
is deterministic. Memos and script state start empty and evolve through the replayed events,
oldest first; records are replayed as stored (masked fields stay masked).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.boundary import normalize_event
from engine.errors import EngineError, InputError
from engine.hosts import HOSTS
from engine.kinds import Memo
from engine.outcome import DECISION_FIELDS, Outcome
from engine.pipeline import REFUSED_PREFIX, Pipeline, Services, evaluate, refuse_event
from engine.points import Point
from engine.runtime import Engine
from engine.session import Session
from engine.store import Record, RecordQuery, open_store

POINT_NAMES = frozenset(p.value for p in Point)


@dataclass(frozen=True)
class Difference:
    """One recorded decision the current hooks decide differently."""

    record: Record
    kind: str
    """``allowed → blocked``, ``blocked → allowed``, ``changed input``, ``different answer``..."""
    fields: tuple[str, ...]
    before: dict[str, Any]
    after: dict[str, Any]
    shadow_before: list[dict[str, Any]]
    shadow_after: list[dict[str, Any]]


@dataclass
class ReplayReport:
    """Counts, every difference, and shadow decisions before and after."""

    total: int = 0
    same: int = 0
    skipped: int = 0
    """Records that could not be replayed (an agent or point the engine does not have)."""
    skips: list[tuple[Record, str]] = field(default_factory=list)
    """Each skipped record with why it was skipped."""
    differences: list[Difference] = field(default_factory=list)
    """Enforced decisions that differ (what the host would now do differently)."""
    shadow_differences: list[Difference] = field(default_factory=list)
    """Same enforced decision, but a shadow hook now decides differently."""
    kinds: Counter[str] = field(default_factory=Counter)
    shadow_before: Counter[str] = field(default_factory=Counter)
    """Per shadow hook: how many recorded events it would have changed."""
    shadow_after: Counter[str] = field(default_factory=Counter)
    """Per shadow hook: how many replayed events it would change now."""


def _norm(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def classify(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Name a difference the way a reviewer reads it, and list the fields that differ."""
    fields = tuple(f for f in DECISION_FIELDS if _norm(before.get(f)) != _norm(after.get(f)))
    if bool(before.get("blocked")) != bool(after.get("blocked")):
        return ("allowed → blocked" if after.get("blocked") else "blocked → allowed"), fields
    names = {
        "reason": "different reason",
        "input": "changed input",
        "answer": "different answer",
        "question": "rewritten question",
        "result": "different result",
        "messages": "different messages",
        "notices": "different notices",
    }
    for name in names:
        if name in fields:
            return names[name], fields
    return (f"different {fields[0]}" if fields else "same"), fields


class Replayer:
    """Replays records through an engine's current pipelines without side effects; each
    record as its host asked (a change the host cannot apply blocks at ``tool_call`` again)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.scratch = open_store(":memory:")
        memos: dict[tuple[str, str], Memo] = {}
        self.services = Services(self.scratch, lambda a, h: memos.setdefault((a, h), Memo()), None)
        self.sessions: dict[tuple[str, Any], Session] = {}
        """The sessions records were made in, opened once per agent and layer."""

    def outcome(self, record: Record) -> Outcome:
        """The current hooks' outcome for a recorded event (recorded judge answers reused);
        a session's record runs through that session's layers again."""
        pipeline = self.pipeline(record)
        extras = {run.name: run.extras for run in record.hooks if run.extras}
        point = Point(record.point)
        host = HOSTS.get(record.host) if record.host != "native" else None
        refused = record.outcome.get("input_error")
        if isinstance(refused, str):  # refused when recorded (e.g. a text over its cap):
            # the record holds only the cut event, so it is refused again, not re-decided
            cause = refused.removeprefix(REFUSED_PREFIX)
            return refuse_event(
                pipeline, point, InputError([cause], event=record.event), self.services
            )
        try:
            event = normalize_event(record.event)  # the host boundary's rule, as when recorded
        except InputError as exc:
            return refuse_event(pipeline, point, exc, self.services)
        return evaluate(pipeline, point, event, self.services, replay=extras, host=host)

    def pipeline(self, record: Record) -> Pipeline:
        """The agent's current pipeline, or the layers of the session that made ``record``
        (the session's hooks as they are now; ConfigError when one is gone)."""
        agent = self.engine.agent(record.agent)
        layer = record.outcome.get("session")
        if not isinstance(layer, dict):
            return agent.pipeline
        key = (tuple(layer.get("hooks") or ()), bool(layer.get("drop_agent_hooks")))
        session = self.sessions.get((record.agent, key))
        if session is None:
            session = agent.session("replay", list(key[0]), drop_agent_hooks=key[1])
            self.sessions[(record.agent, key)] = session
        return session.pipeline

    def run(
        self, records: list[Record], progress: Callable[[int, int], None] | None = None
    ) -> ReplayReport:
        """Replay ``records`` oldest first; ``progress(done, total)`` after each."""
        report = ReplayReport()
        ordered = sorted(records, key=lambda r: r.time)
        for done, record in enumerate(ordered, 1):
            self._one(record, report)
            if progress is not None:
                progress(done, len(ordered))
        return report

    def unplayable(self, record: Record) -> str | None:
        """Why ``record`` cannot be replayed here (None: it can)."""
        if record.agent not in self.engine.agents:
            known = ", ".join(self.engine.agents) or "none"
            return f"agent {record.agent!r} is not in the config (agents: {known})"
        if record.point not in POINT_NAMES:
            return f"point {record.point!r} is not a point of this engine"
        return None

    def _one(self, record: Record, report: ReplayReport) -> None:
        report.total += 1
        why = self.unplayable(record)
        if why is None:
            try:
                out = self.outcome(record)
            except EngineError as exc:
                why = f"cannot be evaluated: {exc}"
        if why is not None:
            report.skipped += 1
            report.skips.append((record, why))
            return
        before, after = record.outcome, _norm(out.decision())
        shadow_before, shadow_after = record.outcome.get("shadow") or [], _norm(out.shadow)
        report.shadow_before.update(s["hook"] for s in shadow_before)
        report.shadow_after.update(s["hook"] for s in shadow_after)
        kind, fields = classify(before, after)
        if not fields:
            report.same += 1
            if _norm(shadow_before) != shadow_after:
                report.shadow_differences.append(
                    Difference(
                        record,
                        "shadow decision changed",
                        (),
                        before,
                        after,
                        shadow_before,
                        shadow_after,
                    )
                )
            return
        report.kinds[kind] += 1
        report.differences.append(
            Difference(record, kind, fields, before, after, shadow_before, shadow_after)
        )

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.scratch.close()


def load_records(
    engine: Engine,
    *,
    agent: str | None = None,
    point: str | None = None,
    since: str | None = None,
    limit: int = 10_000,
) -> list[Record]:
    """The newest ``limit`` records matching the filters, oldest first."""
    query = RecordQuery(agent=agent, point=point, since=since, limit=limit)
    return list(reversed(engine.records(query)))


def replay(
    engine: Engine, records: list[Record], progress: Callable[[int, int], None] | None = None
) -> ReplayReport:
    """Replay ``records`` through ``engine``'s current hooks (see the module docstring)."""
    replayer = Replayer(engine)
    try:
        return replayer.run(records, progress)
    finally:
        replayer.close()


# -- rendering ---------------------------------------------------------------------------------


def report_lines(report: ReplayReport, *, limit: int = 50) -> list[str]:
    """Every difference (up to ``limit``), then counts and shadow decisions."""
    lines = []
    for diff in report.differences[:limit]:
        lines += difference_lines(diff)
    if len(report.differences) > limit:
        lines.append(f"... {len(report.differences) - limit} more differences")
    for diff in report.shadow_differences[:limit]:
        lines += difference_lines(diff)
    if len(report.shadow_differences) > limit:
        lines.append(f"... {len(report.shadow_differences) - limit} more shadow differences")
    lines.append(
        f"replayed {report.total}: {report.same} same, {len(report.differences)} "
        f"differ, {report.skipped} skipped"
    )
    lines += [f"  {count:6d}  skipped: {why}" for why, count in skip_reasons(report).items()]
    lines += [f"  {count:6d}  {kind}" for kind, count in report.kinds.most_common()]
    if report.shadow_differences:
        lines.append(
            f"  {len(report.shadow_differences):6d}  shadow decision changed "
            "(enforced decision the same)"
        )
    for hook in sorted(set(report.shadow_before) | set(report.shadow_after)):
        lines.append(
            f"  shadow {hook}: would change {report.shadow_after[hook]} events now "
            f"(recorded: {report.shadow_before[hook]})"
        )
    return lines


def skip_reasons(report: ReplayReport) -> dict[str, int]:
    """How many records were skipped for each reason, the most common first."""
    return dict(Counter(why for _record, why in report.skips).most_common())


def difference_lines(diff: Difference) -> list[str]:
    r = diff.record
    lines = [f"{r.time}  {r.agent}  {r.point}  {r.scope_key}  {r.id[:8]}: {diff.kind}"]
    subject = _subject(r)
    if subject:
        lines.append(f"    event: {subject}")
    for name in diff.fields:
        was, now = _short(diff.before.get(name)), _short(diff.after.get(name))
        lines.append(f"    {name}: {was} -> {now}")
    lines += [f"    shadow (recorded): {shadow_text(s)}" for s in diff.shadow_before]
    lines += [f"    shadow (now): {shadow_text(s)}" for s in diff.shadow_after]
    return lines


def shadow_text(entry: dict[str, Any]) -> str:
    """A shadow decision as people read it: ``guard would have blocked: no deletes``."""
    if entry.get("error"):
        return f"{entry['hook']} failed (not applied): {_short(entry['error'])}"
    change = entry.get("change") or {}
    if change.get("block"):
        return f"{entry['hook']} would have blocked: {_short(change['block'])}"
    return f"{entry['hook']} would have changed: {_short(change)}"


def _subject(r: Record) -> str:
    e = r.event
    if r.point in ("tool_call", "tool_result"):
        return f"{e.get('name')} {_short(e.get('input'))}"
    return _short(e.get("question") or e.get("answer") or e.get("status") or "")


def _short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "Difference",
    "ReplayReport",
    "Replayer",
    "classify",
    "load_records",
    "replay",
    "report_lines",
    "skip_reasons",
]
