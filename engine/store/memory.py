"""Memory in the SQL store: facts and episodes with a full-text index, summaries, recalls.

Every method takes the scope it works in and touches nothing outside it: a fact id from
another scope is ignored, which keeps one user's memory out of another's turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from engine.store import fulltext
from engine.store.db import Database, inserted_key
from engine.store.faq import clip_terms
from engine.store.lazy import turn_log_row, turn_log_user
from engine.store.models import (
    Episode,
    Fact,
    FactEdit,
    MemoryResult,
    MemoryUpdate,
    MemoryView,
    NewFact,
)
from engine.store.schema import (
    entries_table,
    episodes_table,
    facts_table,
    recalls_table,
    summaries_table,
    turn_log_table,
)
from engine.text import dice, index_stems, terms

RECALLS_KEPT = 2000
"""Recall notes kept per scope (feedback on older turns finds nothing)."""
INDEX = "memory_index"
NEAR_SHOWN = 50
"""Facts near a new one that deduplication compares it with."""

_F = facts_table
_LIVE = sa.and_(_F.c.retired.is_(False), _F.c.stale.is_(False))
_RANK = (_F.c.importance.desc(), _F.c.updated_at.desc(), _F.c.id.desc())


def _fact(row: Any, overlap: int = 0, score: float = 0.0) -> Fact:
    return Fact(
        id=row.id,
        scope=row.scope,
        text=row.text,
        importance=float(row.importance),
        terms=frozenset(row.terms.split()),
        key=row.key,
        stale=bool(row.stale),
        retired=bool(row.retired),
        superseded_by=row.superseded_by,
        supersedes=tuple(json.loads(row.supersedes or "[]")),
        turn_id=row.turn_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_recalled_at=row.last_recalled_at,
        recall_count=row.recall_count,
        overlap=overlap,
        score=score,
    )


def _episode(row: Any, score: float = 0.0) -> Episode:
    return Episode(row.id, row.turn_id, row.question, row.answer, row.time, score)


def _fact_words(text: str, words: Iterable[str]) -> list[str]:
    """What a fact is indexed by: its text's stems, then its index terms (keywords)."""
    return [*index_stems(text), *clip_terms(words)]


def ranked(found: list[Fact | Episode]) -> list[Fact | Episode]:
    """Recall order: the engine's score; on a tie the more important (an episode weighs as a
    fact of importance 0.5), then the newer (updated, or the turn's time), then the higher id.
    """

    def key(item: Fact | Episode) -> tuple[float, float, str, int]:
        if isinstance(item, Fact):
            return (item.score, item.importance, item.updated_at, item.id)
        return (item.score, 0.5, item.time, item.id)

    return sorted(found, key=key, reverse=True)


def keep_newest(conn: sa.Connection, table: sa.Table, scope: str, keep: int) -> None:
    """Delete all but the newest ``keep`` rows of ``table`` in ``scope`` (by ``id``)."""
    cutoff = conn.execute(
        sa.select(table.c.id)
        .where(table.c.scope == scope)
        .order_by(table.c.id.desc())
        .offset(keep)
        .limit(1)
    ).scalar()
    if cutoff is not None:
        conn.execute(table.delete().where(table.c.scope == scope, table.c.id <= cutoff))


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


class MemoryTables(Database):
    """Memory methods of the store."""

    # -- recall ----------------------------------------------------------------------------

    def memory_recall(
        self, scope: str, lookup: Iterable[str], *, limit: int
    ) -> list[Fact | Episode]:
        """Live facts and episodes sharing terms with a lookup, best first (see ``ranked``),
        each with its ``score``: one full-text query over both."""
        words = clip_terms(lookup)
        if not words:
            return []

        def find(conn: sa.Connection) -> list[Fact | Episode]:
            hits = fulltext.search(conn, INDEX, scope, words, limit=limit)
            scores = dict(hits)
            facts = self._facts_by_doc(conn, scope, scores, set(words))
            episodes = self._episodes_by_doc(conn, scope, scores)
            return ranked([*facts, *episodes])

        return self._read(find)

    def _facts_by_doc(
        self, conn: sa.Connection, scope: str, scores: dict[int, float], asked: set[str]
    ) -> list[Fact]:
        ids = [doc // 2 for doc in scores if doc % 2 == 0]
        if not ids:
            return []
        # by primary key only: offered the scope index, the planner scans the whole scope
        rows = conn.execute(sa.select(_F).where(_F.c.id.in_(ids)))
        return [
            _fact(r, len(asked & set(r.terms.split())), scores[fulltext.fact_doc(r.id)])
            for r in rows
            if r.scope == scope and not (r.retired or r.stale)
        ]

    def _episodes_by_doc(
        self, conn: sa.Connection, scope: str, scores: dict[int, float]
    ) -> list[Episode]:
        ids = [doc // 2 for doc in scores if doc % 2 == 1]
        if not ids:
            return []
        e = episodes_table
        rows = conn.execute(sa.select(e).where(e.c.id.in_(ids)))  # see _facts_by_doc
        return [_episode(r, scores[fulltext.episode_doc(r.id)]) for r in rows if r.scope == scope]

    def memory_candidates(
        self, scope: str, lookup: Iterable[str], *, limit: int, backfill: bool = True
    ) -> list[Fact]:
        """Live facts ranked by the full-text score → importance → recency.

        With ``backfill``, fill up to ``limit`` with the most important recent facts that
        share no term (``overlap`` 0), so a judge can still pick them.
        """
        words = clip_terms(lookup)

        def find(conn: sa.Connection) -> list[Fact]:
            found = self._matching_facts(conn, scope, words, limit) if words else []
            if backfill and len(found) < limit:
                found += self._backfill(conn, scope, [f.id for f in found], limit - len(found))
            return found

        return self._read(find)

    def _matching_facts(
        self, conn: sa.Connection, scope: str, words: list[str], limit: int
    ) -> list[Fact]:
        # episodes share the index: ask for more documents than facts wanted
        hits = fulltext.search(conn, INDEX, scope, words, limit=4 * limit)
        facts = self._facts_by_doc(conn, scope, dict(hits), set(words))
        return [f for f in ranked(list(facts)) if isinstance(f, Fact)][:limit]

    def _backfill(self, conn: sa.Connection, scope: str, skip: list[int], limit: int) -> list[Fact]:
        stmt = sa.select(_F).where(_F.c.scope == scope, _LIVE)
        if skip:
            stmt = stmt.where(_F.c.id.not_in(skip))
        return [_fact(r) for r in conn.execute(stmt.order_by(*_RANK).limit(limit))]

    def memory_facts(
        self, scope: str, *, live_only: bool = True, keyed: bool = False, limit: int | None = None
    ) -> list[Fact]:
        """A scope's facts, most important and recent first (all of them unless live_only;
        only those with a ``key`` when keyed)."""
        stmt = sa.select(_F).where(_F.c.scope == scope)
        if live_only:
            stmt = stmt.where(_LIVE)
        if keyed:
            stmt = stmt.where(_F.c.key.is_not(None))
        stmt = stmt.order_by(*_RANK).limit(limit)
        return self._read(lambda conn: [_fact(r) for r in conn.execute(stmt)])

    def memory_note_recall(
        self, scope: str, turn_id: str | None, fact_ids: Sequence[int], time: str
    ) -> None:
        """Remember which facts a turn recalled (feedback on the turn adjusts them)."""
        if not fact_ids:
            return

        def note(conn: sa.Connection) -> None:
            conn.execute(
                _F.update()
                # written so no index serves the scope test: by primary key (_facts_by_doc)
                .where(sa.func.coalesce(_F.c.scope, "") == scope, _F.c.id.in_(fact_ids))
                .values(last_recalled_at=time, recall_count=_F.c.recall_count + 1)
            )
            if turn_id:
                conn.execute(
                    recalls_table.insert(),
                    [
                        {"scope": scope, "turn_id": turn_id, "fact_id": i, "time": time}
                        for i in fact_ids
                    ],
                )
                self._prune_recalls(conn, scope)

        self._write(note)

    def _prune_recalls(self, conn: sa.Connection, scope: str) -> None:
        keep_newest(conn, recalls_table, scope, RECALLS_KEPT)

    def memory_recalled(self, scope: str, turn_id: str) -> list[int]:
        """Ids of the facts recalled in a turn of this scope."""
        r = recalls_table
        stmt = sa.select(r.c.fact_id).where(r.c.scope == scope, r.c.turn_id == turn_id).distinct()
        return sorted(self._read(lambda conn: list(conn.execute(stmt).scalars())))

    def memory_adjust(
        self, scope: str, fact_ids: Sequence[int], delta: float, time: str
    ) -> list[Fact]:
        """Add ``delta`` to the importance of facts (kept within 0..1); return them changed."""

        def adjust(conn: sa.Connection) -> list[Fact]:
            self.lock_scope(conn, scope)
            rows = conn.execute(
                sa.select(_F).where(_F.c.scope == scope, _F.c.id.in_(fact_ids))
            ).all()
            for row in rows:
                conn.execute(
                    _F.update()
                    .where(_F.c.id == row.id)
                    .values(importance=_clamp(row.importance + delta), updated_at=time)
                )
            ids = [row.id for row in rows]
            return [_fact(r) for r in conn.execute(sa.select(_F).where(_F.c.id.in_(ids)))]

        return self._write(adjust) if fact_ids else []

    # -- memorize --------------------------------------------------------------------------

    def memory_count_turn(self, scope: str, time: str) -> int:
        """Count one more memorable turn in a scope; returns the count so far."""

        def bump(conn: sa.Connection) -> int:
            self.lock_scope(conn, scope)
            s = summaries_table
            turns = conn.execute(sa.select(s.c.turns).where(s.c.scope == scope)).scalar()
            if turns is None:
                conn.execute(s.insert().values(scope=scope, text="", turns=1, updated_at=time))
                return 1
            conn.execute(s.update().where(s.c.scope == scope).values(turns=turns + 1))
            return int(turns) + 1

        return self._write(bump)

    def memory_apply(self, scope: str, update: MemoryUpdate) -> MemoryResult:
        """Apply a memorizer's run: edits, new facts (deduplicated; supersedes retire),
        the summary, then the cap. One transaction; writers of a scope take turns."""

        def apply(conn: sa.Connection) -> MemoryResult:
            self.lock_scope(conn, scope)
            edited = [e.id for e in update.edits if self._edit(conn, scope, e, update.time)]
            added, dups, retired = [], [], []
            for new in update.facts:
                dup = self._duplicate_of(conn, scope, new, update.dedup_threshold)
                if dup is not None:
                    self._refresh(conn, dup, new, update.time)
                    dups.append(dup)
                    continue
                fact_id = self._insert(conn, scope, new, update.time)
                added.append(fact_id)
                retired += self._retire(conn, scope, new.supersedes, fact_id, update.time)
            if update.summary is not None:
                self._set_summary(conn, scope, update.summary, update.time)
            dropped = self._cap(conn, scope, update.max_facts)
            return MemoryResult(
                tuple(added), tuple(dups), tuple(retired), tuple(edited), tuple(dropped)
            )

        return self._write(apply)

    def _edit(self, conn: sa.Connection, scope: str, edit: FactEdit, time: str) -> bool:
        values: dict[str, Any] = {"updated_at": time}
        if edit.text is not None:
            values["text"] = edit.text
        if edit.importance is not None:
            values["importance"] = _clamp(edit.importance)
        if edit.stale is not None:
            values["stale"] = edit.stale
        done = conn.execute(
            _F.update()
            .where(_F.c.scope == scope, _F.c.id == edit.id, _F.c.retired.is_(False))
            .values(**values)
        )
        if done.rowcount and edit.terms is not None:
            conn.execute(
                _F.update().where(_F.c.id == edit.id).values(terms=" ".join(clip_terms(edit.terms)))
            )
        if done.rowcount and (edit.terms is not None or edit.text is not None):
            row = conn.execute(sa.select(_F.c.text, _F.c.terms).where(_F.c.id == edit.id)).one()
            self._index(conn, scope, edit.id, _fact_words(row.text, row.terms.split()))
        return bool(done.rowcount)

    def _duplicate_of(
        self, conn: sa.Connection, scope: str, new: NewFact, threshold: float
    ) -> int | None:
        mine = terms(new.text)
        if threshold <= 0 or not mine:
            return None
        hits = fulltext.search(conn, INDEX, scope, clip_terms(mine), limit=NEAR_SHOWN)
        near = [doc // 2 for doc, _ in hits if doc % 2 == 0]
        found = conn.execute(
            sa.select(_F.c.id, _F.c.text, _F.c.scope, _F.c.retired).where(_F.c.id.in_(near))
        )  # see _facts_by_doc
        rows = [r for r in found if r.scope == scope and not r.retired]
        best: tuple[float, int] | None = None
        for row in rows:
            if row.id in new.supersedes:
                continue  # a correction is never a duplicate of what it corrects
            score = dice(mine, terms(row.text))
            if score >= threshold and (best is None or score > best[0]):
                best = (score, row.id)
        return best[1] if best else None

    def _refresh(self, conn: sa.Connection, fact_id: int, new: NewFact, time: str) -> None:
        conn.execute(
            _F.update()
            .where(_F.c.id == fact_id)
            .values(
                importance=sa.func.max(_F.c.importance, new.importance)
                if self.is_sqlite
                else sa.func.greatest(_F.c.importance, new.importance),
                stale=False,
                updated_at=time,
            )
        )

    def _insert(self, conn: sa.Connection, scope: str, new: NewFact, time: str) -> int:
        words = clip_terms(new.terms)
        fact_id = int(
            inserted_key(
                conn.execute(
                    _F.insert().values(
                        scope=scope,
                        text=new.text,
                        key=new.key,
                        terms=" ".join(words),
                        importance=_clamp(new.importance),
                        stale=False,
                        retired=False,
                        supersedes=json.dumps(list(new.supersedes)),
                        turn_id=new.turn_id,
                        created_at=time,
                        updated_at=time,
                        recall_count=0,
                    )
                )
            )
        )
        self._index(conn, scope, fact_id, _fact_words(new.text, words), new=True)
        return fact_id

    def _index(
        self, conn: sa.Connection, scope: str, fact_id: int, words: list[str], *, new: bool = False
    ) -> None:
        doc = fulltext.fact_doc(fact_id)
        fulltext.put(conn, INDEX, [(doc, fulltext.indexed(scope, words))], new=new)

    def _retire(
        self, conn: sa.Connection, scope: str, ids: Sequence[int], by: int, time: str
    ) -> list[int]:
        if not ids:
            return []
        where = (_F.c.scope == scope) & _F.c.id.in_(ids) & _F.c.retired.is_(False)
        found: list[int] = list(conn.execute(sa.select(_F.c.id).where(where)).scalars())
        conn.execute(
            _F.update().where(where).values(retired=True, superseded_by=by, updated_at=time)
        )
        return found

    def _set_summary(self, conn: sa.Connection, scope: str, text: str, time: str) -> None:
        s = summaries_table
        done = conn.execute(s.update().where(s.c.scope == scope).values(text=text, updated_at=time))
        if not done.rowcount:
            conn.execute(s.insert().values(scope=scope, text=text, turns=0, updated_at=time))

    def _cap(self, conn: sa.Connection, scope: str, keep: int) -> list[int]:
        order = (
            _F.c.retired.desc(),
            _F.c.stale.desc(),
            _F.c.importance.asc(),
            _F.c.updated_at.asc(),
            _F.c.id.asc(),
        )
        total = (
            conn.execute(
                sa.select(sa.func.count()).select_from(_F).where(_F.c.scope == scope)
            ).scalar()
            or 0
        )
        if total <= keep:
            return []
        ids: list[int] = list(
            conn.execute(
                sa.select(_F.c.id).where(_F.c.scope == scope).order_by(*order).limit(total - keep)
            ).scalars()
        )
        self._delete_facts(conn, ids)
        return ids

    def _delete_facts(self, conn: sa.Connection, ids: list[int]) -> None:
        for chunk in range(0, len(ids), 500):
            part = ids[chunk : chunk + 500]
            fulltext.remove(conn, INDEX, [fulltext.fact_doc(i) for i in part])
            conn.execute(recalls_table.delete().where(recalls_table.c.fact_id.in_(part)))
            conn.execute(_F.delete().where(_F.c.id.in_(part)))

    # -- summary, episodes, the whole scope --------------------------------------------------

    def memory_summary(self, scope: str) -> str:
        """The scope's rolling summary ("" if none)."""
        s = summaries_table
        stmt = sa.select(s.c.text).where(s.c.scope == scope)
        return str(self._read(lambda conn: conn.execute(stmt).scalar()) or "")

    def memory_add_episode(
        self, scope: str, *, turn_id: str | None, question: str, answer: str, time: str, keep: int
    ) -> None:
        """Keep a turn as an episode; only the newest ``keep`` episodes of a scope stay."""
        e = episodes_table

        def add(conn: sa.Connection) -> None:
            if keep > 0:
                new_id = inserted_key(
                    conn.execute(
                        e.insert().values(
                            scope=scope,
                            turn_id=turn_id,
                            question=question,
                            answer=answer,
                            time=time,
                        )
                    )
                )
                words = fulltext.indexed(scope, index_stems(f"{question}\n{answer}"))
                fulltext.put(conn, INDEX, [(fulltext.episode_doc(int(new_id)), words)], new=True)
            self._keep_episodes(conn, scope, keep)

        self._write(add)

    def _keep_episodes(self, conn: sa.Connection, scope: str, keep: int) -> None:
        """Delete all but the newest ``keep`` episodes of a scope, and their index rows."""
        e = episodes_table
        cutoff = conn.execute(
            sa.select(e.c.id)
            .where(e.c.scope == scope)
            .order_by(e.c.id.desc())
            .offset(keep)
            .limit(1)
        ).scalar()
        if cutoff is None:
            return
        where = (e.c.scope == scope) & (e.c.id <= cutoff)
        gone: list[int] = list(conn.execute(sa.select(e.c.id).where(where)).scalars())
        fulltext.remove(conn, INDEX, [fulltext.episode_doc(i) for i in gone])
        conn.execute(e.delete().where(where))

    def memory_episodes(self, scope: str, *, limit: int = 50) -> list[Episode]:
        """The newest episodes of a scope, oldest first."""
        e = episodes_table
        stmt = (
            sa.select(e.c.id, e.c.turn_id, e.c.question, e.c.answer, e.c.time)
            .where(e.c.scope == scope)
            .order_by(e.c.id.desc())
            .limit(limit)
        )
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return [_episode(r) for r in reversed(rows)]

    def memory_view(self, scope: str) -> MemoryView:
        """Everything kept about a scope: all facts (retired and stale too), summary, episodes."""
        return MemoryView(
            scope,
            self.memory_facts(scope, live_only=False),
            self.memory_summary(scope),
            self.memory_episodes(scope, limit=10_000),
        )

    def memory_forget(self, scope: str) -> int:
        """Delete everything kept about a scope; returns how many rows went."""

        def forget(conn: sa.Connection) -> int:
            self.lock_scope(conn, scope)
            gone = self._unindex_scope(conn, scope)
            for table in (
                recalls_table,
                facts_table,
                episodes_table,
                summaries_table,
            ):
                gone += conn.execute(table.delete().where(table.c.scope == scope)).rowcount
            gone += conn.execute(turn_log_table.delete().where(_last_prompts(scope))).rowcount
            return gone

        return int(self._write(forget))

    def _unindex_scope(self, conn: sa.Connection, scope: str) -> int:
        """Drop a scope's facts and episodes from the full-text index; return how many."""
        f, e = facts_table, episodes_table
        facts: list[int] = list(conn.execute(sa.select(f.c.id).where(f.c.scope == scope)).scalars())
        episodes: list[int] = list(
            conn.execute(sa.select(e.c.id).where(e.c.scope == scope)).scalars()
        )
        docs = [fulltext.fact_doc(i) for i in facts] + [fulltext.episode_doc(i) for i in episodes]
        fulltext.remove(conn, INDEX, docs)
        return len(docs)


def _last_prompts(scope: str) -> sa.ColumnElement[bool]:
    """The turn log rows ``scope`` owns: a session's last prompt; for a user, the last
    prompt of each session they sent it in (rows written before schema 10 name no user: those
    of the sessions the user's conversation entries name). Other scopes own none."""
    t, kind, value = turn_log_table, *scope.partition(":")[::2]
    if kind == "session" and value:
        return t.c.session_id == turn_log_row("", value)[1]
    if kind != "user" or not value:
        return sa.false()
    e = entries_table
    theirs = sa.select(e.c.agent, e.c.session_id).where(e.c.user_id == value)
    unnamed = t.c.user_id.is_(None) & sa.tuple_(t.c.agent, t.c.session_id).in_(theirs)
    return (t.c.user_id == turn_log_user(value)) | unnamed
