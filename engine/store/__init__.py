"""Persisted state behind one small interface: records, script state, FAQ pairs and memory.
SQLite is the embedded default; a ``postgresql://`` URL selects PostgreSQL."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from engine.store.records import LossSummary, Record, RecordLoss, RecordQuery

if TYPE_CHECKING:
    import sqlalchemy as sa

    from engine.store.approvals import Approval
    from engine.store.artifacts import ArtifactRow
    from engine.store.models import (
        Episode,
        Fact,
        FactEdit,
        FaqPair,
        MemoryResult,
        MemoryUpdate,
        MemoryView,
        NewFact,
    )

_MEMORY_AND_FAQ = frozenset(
    {"Episode", "Fact", "FactEdit", "FaqPair"}
    | {"MemoryResult", "MemoryUpdate", "MemoryView", "NewFact"}
)
"""Names of engine/store/models.py, imported on first use (PEP 562): a hook that keeps no
memory or FAQ pairs, and a one-shot ``hook_tool``, never need them."""


def __getattr__(name: str) -> Any:
    if name not in _MEMORY_AND_FAQ:
        raise AttributeError(f"module 'engine.store' has no attribute {name!r}")
    value = getattr(importlib.import_module("engine.store.models"), name)
    globals()[name] = value
    return value


class Store(Protocol):
    """The engine's persisted state. Implementations are safe to share between threads.

    Memory methods take the scope they work in and never touch another scope.
    """

    url: str

    def add_records(self, records: list[Record], *, again: bool = False) -> None:
        """Write records (one transaction). ``again``: they may be stored already (a write
        whose commit went unanswered); those are skipped, not refused."""
        ...

    def query_records(self, query: RecordQuery) -> list[Record]:
        """Records matching ``query``, newest first."""
        ...

    def prune_records(self, keep: int) -> int:
        """Delete all but the newest ``keep`` records; return how many went. The same job
        deletes script state that expired, and state not written since the oldest record
        kept (when records were pruned): state lives as long as the records around it."""
        ...

    def add_record_loss(self, loss: RecordLoss) -> None:
        """Keep one lost record's cause and error in the loss ledger."""
        ...

    def record_losses(self) -> LossSummary:
        """The loss ledger: losses per cause, the newest error and its time."""
        ...

    def file_lost(self) -> str | None:
        """Why the store's file is no longer the one it has open (deleted or replaced);
        None while it is, and for stores that are no file."""
        ...

    def reopen(self) -> None:
        """Open the store's file anew after ``file_lost`` (create and migrate it)."""
        ...

    def turn_log_put(
        self, agent: str, session_id: str, question: str, time: str, *, user_id: str | None = None
    ) -> None:
        """Keep ``question`` as the last user prompt of ``agent``'s session, sent by
        ``user_id`` (one row per session, overwritten by the next; ``memory_forget`` of
        ``session:<id>``, or of ``user:<id>`` for the user who sent it, deletes it)."""
        ...

    def turn_log_get(self, agent: str, session_id: str) -> str | None:
        """The last user prompt kept for ``agent``'s session; None if there is none."""
        ...

    def state_load(self, hook: str, scope: str, *, now: str | None = None) -> dict[str, Any]:
        """The JSON state of one hook in one scope (empty if none); keys that expired at or
        before ``now`` (the event's ISO-8601 time) are left out."""
        ...

    def state_save(
        self,
        hook: str,
        scope: str,
        writes: dict[str, Any],
        *,
        ttls: dict[str, float] | None = None,
        time: str | None = None,
    ) -> None:
        """Apply writes to one hook's state in one scope (``None`` deletes a key), atomically.
        Each row notes ``time`` (the event's) as written; a key in ``ttls`` expires that many
        seconds after ``time``, any other key written here never expires."""
        ...

    def state_forget(self, scope: str) -> int:
        """Delete every hook's state kept under ``scope``; return how many keys went."""
        ...

    def one_transaction(self) -> AbstractContextManager[None]:
        """Every write this thread makes inside goes in one transaction: all are kept, or
        none (a script call's state and entries). Raises StoreError when it cannot write."""
        ...

    # -- conversation entries --------------------------------------------------------------

    def entries_add(
        self,
        agent: str,
        session_id: str,
        entries: list[dict[str, Any]],
        *,
        user_id: str | None,
        turn: str | None,
        time: str,
        keep: int = 256,
    ) -> None:
        """Append ``{kind, data}`` entries to ``agent``'s conversation ``session_id``, stamped
        with ``turn`` and ``time``; only the newest ``keep`` of the conversation stay."""
        ...

    def entries_list(
        self, agent: str, session_id: str, kind: str | None = None, *, last: int | None = None
    ) -> list[dict[str, Any]]:
        """The conversation's entries oldest first (``{kind, data, turn, time}``), of one
        ``kind`` if given, the newest ``last`` if given."""
        ...

    def entries_forget(self, scope: str) -> int:
        """Delete the entries of ``session:<id>`` or ``user:<id>``; return how many went
        (``memory_forget`` calls it too)."""
        ...

    # -- approvals (engine/store/approvals.py) ----------------------------------------------

    def approval_add(self, approval: Approval) -> None:
        """Keep a new pending approval."""
        ...

    def approval_get(self, approval_id: str) -> Approval | None:
        """The approval with this id; None if there is none."""
        ...

    def approval_for_call(
        self, agent: str, hook: str, scope_key: str, call_key: str
    ) -> Approval | None:
        """The newest approval asked for this call in this scope; None if none was."""
        ...

    def approvals_pending(
        self, agent: str | None = None, *, scope_key: str | None = None, now: str
    ) -> list[Approval]:
        """Approvals still waiting at ``now``, oldest first (of one agent and scope)."""
        ...

    def approval_resolve(
        self, approval_id: str, *, approve: bool, by: str, note: str | None, now: str
    ) -> Approval:
        """Decide a pending approval once (ApprovalError: unknown, expired, resolved)."""
        ...

    def approval_expire(self, approval_id: str) -> None:
        """Mark a pending approval whose time passed as expired."""
        ...

    def approval_close(self, approval_id: str, call_key: str | None = None) -> bool:
        """Detach a decided approval from its call key (the next such call is asked anew);
        with ``call_key``, only if still attached to it: True for the one that detached it."""
        ...

    def approval_remembered(
        self, agent: str, hook: str, scope: str, tool: str, input_digest: str
    ) -> str | None:
        """The id of the approval remembered for this tool and input in ``scope``; None."""
        ...

    def approvals_forget(self, conn: sa.Connection, scope: str) -> int:
        """Delete a scope's approvals and what it remembered, in ``conn``'s transaction."""
        ...

    # -- FAQ pairs -------------------------------------------------------------------------

    def faq_put(
        self,
        namespace: str,
        question: str,
        answer: str,
        *,
        terms: Iterable[str],
        scope: str,
        time: str,
    ) -> int:
        """Store a pair (the same question again replaces the answer); return its id."""
        ...

    def faq_candidates(self, namespace: str, terms: Iterable[str], *, limit: int) -> list[FaqPair]:
        """Pairs sharing terms with a question, most shared first."""
        ...

    def faq_hit(self, pair_id: int, time: str) -> None:
        """Count a cache hit."""
        ...

    def faq_count(self, namespace: str) -> int:
        """How many pairs a namespace holds."""
        ...

    def faq_forget(self, scope: str) -> int:
        """Delete the pairs kept for the user ``scope`` names only (``user:<id>``); return
        how many went."""
        ...

    # -- memory ----------------------------------------------------------------------------

    def memory_recall(
        self, scope: str, lookup: Iterable[str], *, limit: int
    ) -> list[Fact | Episode]:
        """Live facts and episodes matching a lookup, best full-text match first."""
        ...

    def memory_candidates(
        self, scope: str, lookup: Iterable[str], *, limit: int, backfill: bool = True
    ) -> list[Fact]:
        """Live facts ranked by full-text score → importance → recency (backfilled to limit)."""
        ...

    def memory_facts(
        self, scope: str, *, live_only: bool = True, keyed: bool = False, limit: int | None = None
    ) -> list[Fact]:
        """A scope's facts, most important and recent first."""
        ...

    def memory_note_recall(
        self, scope: str, turn_id: str | None, fact_ids: Sequence[int], time: str
    ) -> None:
        """Remember which facts a turn recalled."""
        ...

    def memory_recalled(self, scope: str, turn_id: str) -> list[int]:
        """Ids of the facts recalled in a turn."""
        ...

    def memory_adjust(
        self, scope: str, fact_ids: Sequence[int], delta: float, time: str
    ) -> list[Fact]:
        """Change facts' importance by ``delta`` (within 0..1)."""
        ...

    def memory_count_turn(self, scope: str, time: str) -> int:
        """Count one more memorable turn; return the count so far."""
        ...

    def memory_apply(self, scope: str, update: MemoryUpdate) -> MemoryResult:
        """Apply one memorizer run in one transaction."""
        ...

    def memory_summary(self, scope: str) -> str:
        """The rolling summary ("" if none)."""
        ...

    def memory_add_episode(
        self, scope: str, *, turn_id: str | None, question: str, answer: str, time: str, keep: int
    ) -> None:
        """Keep a turn as an episode (the newest ``keep`` stay)."""
        ...

    def memory_episodes(self, scope: str, *, limit: int = 50) -> list[Episode]:
        """The newest episodes, oldest first."""
        ...

    def memory_view(self, scope: str) -> MemoryView:
        """Everything kept about a scope."""
        ...

    def memory_forget(self, scope: str) -> int:
        """Delete everything kept about a scope (memory, entries, approvals, script state,
        the last prompt of the session or of the user's sessions, the tool artifacts of the
        session or of the user's calls, the FAQ answers kept for that user only); return how
        many rows went."""
        ...

    def artifact_add(self, row: ArtifactRow) -> None:
        """Keep the row of an artifact a tool call made (its bytes are on disk already)."""
        ...

    def artifacts_of(self, session_id: str) -> list[ArtifactRow]:
        """A session's artifacts, oldest first."""
        ...

    def artifact_forget(self, session_id: str) -> int:
        """Delete a session's artifact rows; how many went."""
        ...

    def artifacts_forget(self, scope: str) -> int:
        """Delete the artifact rows of ``session:<id>``, or of ``user:<id>``'s calls in any
        session (``memory_forget`` calls it), handing them to ``on_artifacts_forgotten``."""
        ...

    def on_artifacts_forgotten(self, remove: Callable[[list[ArtifactRow]], None]) -> None:
        """Have ``remove`` delete the bytes of the artifact rows ``artifacts_forget`` deletes
        (the engine that opened the store registers its artifact folder here)."""
        ...

    def close(self) -> None: ...


def open_store(
    url_or_path: str, *, connect_timeout_s: float = 5.0, statement_timeout_s: float = 5.0
) -> Store:
    """Open (and create or migrate) the store at a SQLAlchemy URL or an SQLite file path.

    Every later call is bounded: ``connect_timeout_s`` to get a connection,
    ``statement_timeout_s`` for its statements (on SQLite, for a lock); past them it raises
    ``StoreError``.

    Raises:
        StoreError: the database cannot be reached in time, or its schema is newer than ours.
    """
    from engine.store.sql import SqlStore

    return SqlStore(
        url_or_path, connect_timeout_s=connect_timeout_s, statement_timeout_s=statement_timeout_s
    )


__all__ = [
    "Episode",
    "Fact",
    "FactEdit",
    "FaqPair",
    "LossSummary",
    "MemoryResult",
    "MemoryUpdate",
    "MemoryView",
    "NewFact",
    "Record",
    "RecordLoss",
    "RecordQuery",
    "Store",
    "open_store",
]
