"""What judges and memorizers are asked and what they answer (plain data, JSON-ready)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


class ProviderError(Exception):
    """A provider call failed (timeout, HTTP error, malformed answer). Never leaves the
    providers package: the caller falls back to the offline path and records why."""

    def __init__(self, message: str, *, call: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.call = call or {}


@dataclass(frozen=True)
class Candidate:
    """Something a judge may pick: a stored question or a remembered fact."""

    id: int
    text: str
    fallback: float
    """The offline token-overlap score: what the offline judge answers."""


@dataclass(frozen=True)
class JudgeTask:
    """Which candidates help with a question, and how sure the judge is of each."""

    kind: Literal["faq", "memory"]
    question: str
    candidates: tuple[Candidate, ...]
    instructions: str = ""
    model: str = ""


@dataclass(frozen=True)
class Judgement:
    """Confidence 0..1 per candidate id; ``source`` is ``offline`` or the provider's name."""

    scores: dict[int, float]
    source: str
    call: dict[str, Any] = field(default_factory=dict)
    """What was asked and answered (request, answer, usage, fallback): goes into the record."""

    @property
    def offline(self) -> bool:
        return self.source == "offline"


@dataclass(frozen=True)
class KnownFact:
    """A stored fact the memorizer is shown (so it can correct or supersede it)."""

    id: int
    text: str
    key: str | None = None
    importance: float = 0.5


@dataclass(frozen=True)
class MemorizeTask:
    """Turns to learn from, what is already known, and the summary to roll forward."""

    turns: tuple[tuple[str, str], ...]
    """(question, answer) pairs since the last run, oldest first; the last is this turn."""
    known: tuple[KnownFact, ...] = ()
    summary: str = ""
    summary_max_chars: int = 2000
    instructions: str = ""
    model: str = ""
    times: tuple[str, ...] = ()
    """When each of ``turns`` happened (ISO-8601), when known: summary lines carry the date."""


@dataclass(frozen=True)
class LearnedFact:
    """A durable fact the memorizer extracted."""

    text: str
    importance: float = 0.5
    key: str | None = None
    keywords: tuple[str, ...] = ()
    """Extra words recall should match the fact on (e.g. ``where``/``где`` for a city)."""
    supersedes: tuple[int, ...] = ()


@dataclass(frozen=True)
class FactChange:
    """A correction of a known fact."""

    id: int
    text: str | None = None
    importance: float | None = None
    stale: bool | None = None


@dataclass(frozen=True)
class Memorization:
    """What a memorizer run learned."""

    facts: tuple[LearnedFact, ...] = ()
    changes: tuple[FactChange, ...] = ()
    summary: str | None = None
    source: str = "offline"
    call: dict[str, Any] = field(default_factory=dict)
