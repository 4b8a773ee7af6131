"""What a reload attempt did (``ReloadEvent``) and each agent's reload state, as status data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.errors import Problem


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ReloadEvent:
    """What one reload attempt of one agent did."""

    agent: str
    ok: bool
    """False: refused, the last good version stays."""
    generation: int
    """The generation running after the attempt."""
    time: str
    swapped: bool = False
    """True when a new pipeline went live (False on no change or refusal)."""
    changes: tuple[str, ...] = ()
    """What changed, one line each (hooks added, removed, fields changed)."""
    problems: tuple[Problem, ...] = ()
    files: tuple[str, ...] = ()
    """The changed files that caused the attempt."""

    def lines(self) -> list[str]:
        """The event as the dev prompt and the log show it."""
        if not self.ok:
            head = f"reload of {self.agent} refused; generation {self.generation} stays live:"
            return [head, *(f"  {p}" for p in self.problems)]
        if not self.swapped:
            return [f"{self.agent}: no change (generation {self.generation})"]
        return [
            f"reloaded {self.agent}: generation {self.generation}",
            *(f"  {c}" for c in self.changes),
        ]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["problems"] = [_problem_data(p) for p in self.problems]
        return data


def _problem_data(p: Problem) -> dict[str, Any]:
    return {"file": p.path, "line": p.line, "field": p.field, "message": p.message, "text": str(p)}


@dataclass
class AgentState:
    """Reload bookkeeping of one agent, as ``status()`` shows it."""

    loaded_at: str
    reloads: int = 0
    error: ReloadEvent | None = None
    """The latest attempt's refusal; cleared by a good reload."""
    last_error: ReloadEvent | None = None


def error_data(event: ReloadEvent | None) -> dict[str, Any] | None:
    if event is None:
        return None
    first = event.problems[0] if event.problems else None
    return {
        "time": event.time,
        "file": first.path if first else None,
        "line": first.line if first else None,
        "message": str(first) if first else "reload failed",
        "problems": [str(p) for p in event.problems],
    }


__all__ = ["AgentState", "ReloadEvent", "error_data", "now_iso"]
