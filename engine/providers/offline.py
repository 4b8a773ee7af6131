"""The offline provider: deterministic, no network. Token overlap judges; rules memorize."""

from __future__ import annotations

from engine.providers.extract import Statement, events, same_value, statements, value_of
from engine.providers.tasks import (
    FactChange,
    Judgement,
    JudgeTask,
    KnownFact,
    LearnedFact,
    Memorization,
    MemorizeTask,
)

SUMMARY_LINE_CHARS = 160


class OfflineProvider:
    """Judges by the candidates' token-overlap scores; memorizes with the rule extractor."""

    name = "offline"

    def judge(self, task: JudgeTask) -> Judgement:
        scores = {c.id: round(c.fallback, 4) for c in task.candidates}
        return Judgement(scores, self.name, {"provider": self.name})

    def memorize(self, task: MemorizeTask) -> Memorization:
        facts: list[LearnedFact] = []
        changes: list[FactChange] = []
        for question, answer in task.turns:
            for found in statements(question):
                if found.stale:
                    changes += _withdrawn(found, task.known)
                else:
                    facts.append(_with_supersedes(found, task.known))
            facts += events(question, "user") + events(answer, "assistant")
        summary = roll_summary(task.summary, task.turns, task.summary_max_chars, task.times)
        return Memorization(
            tuple(facts), tuple(changes), summary, self.name, {"provider": self.name}
        )


def _with_supersedes(found: Statement, known: tuple[KnownFact, ...]) -> LearnedFact:
    """A keyed fact with a new value supersedes the known facts with that key."""
    fact = found.fact
    if fact.key is None:
        return fact
    old = tuple(
        k.id for k in known if k.key == fact.key and not same_value(value_of(k), found.value)
    )
    return LearnedFact(fact.text, fact.importance, fact.key, fact.keywords, old)


def _withdrawn(found: Statement, known: tuple[KnownFact, ...]) -> list[FactChange]:
    return [
        FactChange(k.id, stale=True)
        for k in known
        if k.key == found.fact.key and same_value(value_of(k), found.value)
    ]


def roll_summary(
    old: str,
    turns: tuple[tuple[str, str], ...],
    max_chars: int,
    times: tuple[str, ...] = (),
) -> str:
    """The summary with one line per new turn, dated by the turn's time when known; the
    oldest lines go first past ``max_chars``."""
    if max_chars <= 0:
        return ""
    lines = [line for line in old.splitlines() if line.strip()]
    dates = [t[:10] for t in times] if len(times) == len(turns) else [""] * len(turns)
    lines += [_line(q, a, day) for (q, a), day in zip(turns, dates, strict=True)]
    while lines and len("\n".join(lines)) > max_chars:
        if len(lines) == 1:
            return lines[0][: max_chars - 1].rstrip() + "…"
        lines.pop(0)
    return "\n".join(lines)


def _line(question: str, answer: str, day: str = "") -> str:
    def clip(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= SUMMARY_LINE_CHARS else text[: SUMMARY_LINE_CHARS - 1] + "…"

    dated = f"{day}: " if day else ""
    return f"- {dated}{clip(question)} → {clip(answer)}"
