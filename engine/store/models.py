"""Values the store hands out and takes for FAQ pairs and memory (plain frozen dataclasses)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaqPair:
    """A stored (question, answer) pair; ``overlap`` counts terms shared with a lookup."""

    id: int
    question: str
    answer: str
    terms: frozenset[str]
    hits: int = 0
    created_at: str = ""
    overlap: int = 0


@dataclass(frozen=True)
class Fact:
    """One remembered fact about a scope (a user, or what a scope falls back to)."""

    id: int
    scope: str
    text: str
    importance: float
    terms: frozenset[str] = frozenset()
    key: str | None = None
    """What the fact is about (``city``, ``name``), when the extractor knows: a new value for
    the same key supersedes the old fact."""
    stale: bool = False
    retired: bool = False
    superseded_by: int | None = None
    supersedes: tuple[int, ...] = ()
    turn_id: str | None = None
    created_at: str = ""
    updated_at: str = ""
    last_recalled_at: str | None = None
    recall_count: int = 0
    overlap: int = 0
    """Terms shared with the lookup that found it (0 for backfilled candidates)."""
    score: float = 0.0
    """The full-text engine's score for the lookup that found it (higher is better)."""

    def as_data(self) -> dict[str, Any]:
        """The fact as JSON data (terms and lookup overlap and score left out)."""
        data = asdict(self)
        for looked_up in ("terms", "overlap", "score"):
            data.pop(looked_up)
        data["supersedes"] = list(self.supersedes)
        return data


@dataclass(frozen=True)
class NewFact:
    """A fact the memorizer wants stored."""

    text: str
    terms: frozenset[str]
    """Index terms: the stems recall matches on (text plus keywords)."""
    importance: float = 0.5
    key: str | None = None
    supersedes: tuple[int, ...] = ()
    """Ids of facts this one contradicts; they are retired when it is stored."""
    turn_id: str | None = None


@dataclass(frozen=True)
class FactEdit:
    """A correction of a stored fact; ``None`` fields stay as they are."""

    id: int
    text: str | None = None
    terms: frozenset[str] | None = None
    importance: float | None = None
    stale: bool | None = None


@dataclass(frozen=True)
class MemoryUpdate:
    """Everything one memorizer run writes to a scope, applied in one transaction."""

    time: str
    facts: tuple[NewFact, ...] = ()
    edits: tuple[FactEdit, ...] = ()
    summary: str | None = None
    """The new rolling summary (``None`` keeps the old one)."""
    dedup_threshold: float = 0.8
    """A new fact at least this similar (Dice over text stems) to a live one is a duplicate;
    0 turns deduplication off."""
    max_facts: int = 200
    """Facts kept in the scope: retired, then stale, then least important and oldest go."""


@dataclass(frozen=True)
class MemoryResult:
    """What a MemoryUpdate did, by fact id."""

    added: tuple[int, ...] = ()
    duplicates: tuple[int, ...] = ()
    """Live facts a new fact duplicated (refreshed instead of stored again)."""
    retired: tuple[int, ...] = ()
    edited: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    """Facts deleted to keep the scope under its cap."""

    def as_data(self) -> dict[str, list[int]]:
        return {k: list(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Episode:
    """One remembered turn."""

    id: int
    turn_id: str | None
    question: str
    answer: str
    time: str
    score: float = 0.0
    """The full-text engine's score for the lookup that found it (higher is better)."""

    def as_data(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("score")
        return data


@dataclass(frozen=True)
class MemoryView:
    """All a store keeps about one scope (what the admin API shows)."""

    scope: str
    facts: list[Fact] = field(default_factory=list)
    summary: str = ""
    episodes: list[Episode] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.facts or self.summary or self.episodes)
