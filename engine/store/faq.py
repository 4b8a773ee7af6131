"""FAQ pairs in the SQL store: upsert by normalized question, prefilter by shared terms."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import sqlalchemy as sa

from engine.store.db import Database, inserted_key
from engine.store.models import FaqPair
from engine.store.schema import faq_table, faq_terms_table

MAX_TERM = 100


def question_key(question: str) -> str:
    """The identity of a question: case, spacing and punctuation do not matter."""
    norm = " ".join("".join(c if c.isalnum() else " " for c in question.casefold()).split())
    return hashlib.sha256(norm.encode()).hexdigest()


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
            if words:
                conn.execute(
                    faq_terms_table.insert(),
                    [{"pair_id": new_id, "term": w, "namespace": namespace} for w in words],
                )
            return int(new_id)

        return self._write(put)

    def faq_candidates(self, namespace: str, terms: Iterable[str], *, limit: int) -> list[FaqPair]:
        """Pairs sharing terms with a question, most shared first (then most recent)."""
        words = clip_terms(terms)
        if not words:
            return []
        t, w = faq_table, faq_terms_table
        overlap = sa.func.count(w.c.term).label("overlap")
        stmt = (
            sa.select(
                t.c.id, t.c.question, t.c.answer, t.c.terms, t.c.hits, t.c.created_at, overlap
            )
            .join(w, w.c.pair_id == t.c.id)
            .where(w.c.namespace == namespace, w.c.term.in_(words))
            .group_by(t.c.id)
            .order_by(overlap.desc(), t.c.updated_at.desc(), t.c.id.desc())
            .limit(limit)
        )
        rows = self._read(lambda conn: conn.execute(stmt).all())
        return [
            FaqPair(
                id=r.id,
                question=r.question,
                answer=r.answer,
                terms=frozenset(r.terms.split()),
                hits=r.hits,
                created_at=r.created_at,
                overlap=r.overlap,
            )
            for r in rows
        ]

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
