"""Records: what one evaluation of a point decided, and how to ask for them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict


@dataclass(slots=True)
class HookRun:
    """One hook's part in an evaluation (a plain dataclass: one is made per hook per call)."""

    name: str
    kind: str
    version: str
    mode: str = "enforce"
    layer: str = "agent"
    """``agent``, ``session`` (a session's own hooks, engine/session.py) or ``host``: they
    run in that order, the host layer last."""
    status: str = "decided"
    """``decided`` (ran, change or none), ``failed``, or ``skipped`` (after a block)."""
    duration_ms: float = 0.0
    change: dict[str, Any] | None = None
    error: str | None = None
    cause: str | None = None
    """For failures: ``error``, ``store``, ``timeout``, ``memory``, ``invalid_result``,
    ``crashed``, ``plugin``."""
    logs: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RecordLoss:
    """A record the writer could not store: kept in the loss ledger so that every process
    (``hookengine status``) sees it, not only the engine that lost it."""

    time: str
    cause: str
    """``encode`` or ``store`` (see engine/records.py ``Cause``)."""
    record_id: str
    agent: str
    point: str
    error: str


@dataclass(frozen=True)
class LossSummary:
    """The loss ledger in short: losses per cause, and the newest one's error and time."""

    dropped: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_error_at: str | None = None

    def as_data(self) -> dict[str, Any]:
        return asdict(self)


class Record(BaseModel):
    """One evaluation of one point."""

    model_config = ConfigDict(extra="forbid")

    id: str
    time: str
    agent: str
    point: str
    scope: dict[str, Any]
    scope_key: str
    event: dict[str, Any]
    hooks: list[HookRun]
    outcome: dict[str, Any]
    generation: int = 0
    """The agent's reload generation when it was evaluated."""
    host: str = "native"
    """The host that asked for the decision (engine/hosts.py); records written before hosts
    were recorded read as ``native``."""


class RecordQuery(BaseModel):
    """A filter on records; every field optional."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    """A record id, or its first characters (``hookengine records`` shows eight)."""
    agent: str | None = None
    point: str | None = None
    scope: str | None = None
    """A scope key (``user:u1``), or a bare id (``u1``): the records whose scope key is that
    id's under any kind (``user:u1``, ``session:u1``, ...), matched exactly."""
    host: str | None = None
    """The host that asked (``native``, ``claude-code``, ...)."""
    since: str | None = None
    until: str | None = None
    limit: int = 50
    oldest_first: bool = False
