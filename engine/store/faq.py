"""FAQ pairs in the SQL store: upsert by normalized question, prefilter by a full-text
search of the questions (engine/store/fulltext.py)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from engine.store import fulltext
from engine.store.db import Database, inserted_key
from engine.store.models import FaqPair
from engine.store.schema import faq_table
from engine.text import question_key

INDEX = "faq_index"
PERSONAL = "@user:"
"""What joins a hook's namespace and a user's id in the namespace of that user's own pairs."""
FORGOTTEN = "forgotten"
"""The ``scope_key`` of a shared pair whose teacher was forgotten."""
MAX_TERM = 100


def clip_terms(terms: Iterable[str]) -> list[str]:
    """Terms as stored: sorted, each cut to the column size, duplicates dropped."""
    return sorted({t[:MAX_TERM] for t in terms if t})


class FaqTables(Database):
    """FAQ methods of the store; pairs live in a namespace (the hook's name)."""

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
        """Store a pair; the same question again replaces its answer. Returns the pair's id."""
        words = clip_terms(terms)
        key = question_key(question)

        def put(conn: sa.Connection) -> int:
            self.lock_scope(conn, f"faq:{namespace}")
            t = faq_table
            found = conn.execute(
                sa.select(t.c.id).where(t.c.namespace == namespace, t.c.question_key == key)
            ).scalar()
            if found is not None:
                conn.execute(
                    t.update()
                    .where(t.c.id == found)
                    .values(answer=answer, question=question, updated_at=time)
                )
                return int(found)
            new_id = inserted_key(
                conn.execute(
                    t.insert().values(
                        namespace=namespace,
                        question_key=key,
                        question=question,
                        answer=answer,
                        terms=" ".join(words),
                        scope_key=scope,
                        created_at=time,
                        updated_at=time,
                        hits=0,
                    )
                )
            )
            indexed = fulltext.indexed(namespace, words)
            fulltext.put(conn, INDEX, [(int(new_id), indexed)], new=True)
            return int(new_id)

        return self._write(put)

    def faq_candidates(self, namespace: str, terms: Iterable[str], *, limit: int) -> list[FaqPair]:
        """Pairs whose questions share terms with a question, best full-text match first
        (then the most recently updated)."""
        words = clip_terms(terms)
        if not words:
            return []
        t = faq_table

        def find(conn: sa.Connection) -> list[FaqPair]:
            scores = dict(fulltext.search(conn, INDEX, namespace, words, limit=limit))
            if not scores:
                return []
            found = conn.execute(sa.select(t).where(t.c.id.in_(list(scores))))
            rows = [r for r in found if r.namespace == namespace]  # by primary key only
            rows.sort(key=lambda r: (scores[r.id], r.updated_at, r.id), reverse=True)
            return [
                FaqPair(
                    id=r.id,
                    question=r.question,
                    answer=r.answer,
                    terms=frozenset(r.terms.split()),
                    hits=r.hits,
                    created_at=r.created_at,
                    overlap=len(set(words) & set(r.terms.split())),
                )
                for r in rows
            ]

        return self._read(find)

    def faq_forget(self, scope: str) -> int:
        """Delete the pairs kept for one user only (``scope: user``: the namespace
        ``<agent>:<hook>@user:<id>``, stored by that user), with their index rows; return how
        many went. Pairs learned for everyone hold no per-user context and stay, but no longer
        name the user who taught them (their ``scope_key`` becomes ``FORGOTTEN``)."""
        kind, _, user = scope.partition(":")
        if kind != "user" or not user:
            return 0
        t, suffix = faq_table, f"{PERSONAL}{user}"

        def forget(conn: sa.Connection) -> int:
            rows = conn.execute(
                sa.select(t.c.id, t.c.namespace).where(t.c.scope_key == scope)
            ).all()
            ids = [int(r.id) for r in rows if r.namespace.endswith(suffix)]
            shared = [int(r.id) for r in rows if not r.namespace.endswith(suffix)]
            fulltext.remove(conn, INDEX, ids)
            for start in range(0, len(ids), 500):
                conn.execute(t.delete().where(t.c.id.in_(ids[start : start + 500])))
            for start in range(0, len(shared), 500):
                chunk = shared[start : start + 500]
                conn.execute(t.update().where(t.c.id.in_(chunk)).values(scope_key=FORGOTTEN))
            return len(ids)

        return int(self._write(forget))

    def faq_hit(self, pair_id: int, time: str) -> None:
        """Count a cache hit on a pair."""
        t = faq_table
        self._write(
            lambda conn: conn.execute(
                t.update().where(t.c.id == pair_id).values(hits=t.c.hits + 1, last_hit_at=time)
            )
        )

    def faq_count(self, namespace: str) -> int:
        """How many pairs a namespace holds."""
        t = faq_table
        stmt = sa.select(sa.func.count()).select_from(t).where(t.c.namespace == namespace)
        return int(self._read(lambda conn: conn.execute(stmt).scalar() or 0))
