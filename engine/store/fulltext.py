"""Full-text indexes of memory and FAQ pairs: SQLite FTS5 with ``bm25()``, PostgreSQL
``tsvector`` with a GIN index and ``ts_rank_cd``.

Both backends index the same pre-stemmed text: every word is stemmed by Snowball (engine/text.py,
Russian or English by its letters) before it is stored, so a word form matches on both alike,
whatever each database's own stemmer would say. The PostgreSQL column uses the ``simple``
configuration for that reason: the words arrive stemmed, it only lower-cases and splits them.

A document is one row: ``doc`` (an integer the caller chooses) and its words. Each word is
prefixed with the tag of the document's key (a memory scope or a FAQ namespace), so a lookup
only reads the postings of its own key: one scope's 100,000 facts cost another scope nothing,
and no key filter has to intersect the match. Tags are a hash: the caller still checks the key
of what it loads (a collision costs ranking, never privacy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import sqlalchemy as sa

INDEXES = ("memory_index", "faq_index")
"""The full-text tables: memory facts and episodes, FAQ questions."""
MAX_WORDS = 2000
"""Words of one document indexed (the first ones): a 100,000-character answer stays cheap."""
PG_CONFIG = "simple"
"""PostgreSQL text search configuration for already-stemmed words (see the module doc)."""
_NORMALIZE_LENGTH = 1
"""``ts_rank_cd`` normalization: divide by 1 + log(document length), as BM25 favours short
documents that match."""


def fact_doc(fact_id: int) -> int:
    """The ``memory_index`` document of a fact (facts even, episodes odd)."""
    return 2 * fact_id


def episode_doc(episode_id: int) -> int:
    """The ``memory_index`` document of an episode."""
    return 2 * episode_id + 1


def tag(key: str) -> str:
    """The word prefix of a key: a letter and 11 hex digits of its hash."""
    return "k" + hashlib.sha256(key.encode()).hexdigest()[:11]


def indexed(key: str, stems: Iterable[str]) -> str:
    """The indexed text of a document: its stems, each prefixed with the key's tag."""
    prefix = tag(key)
    words = []
    for n, word in enumerate(stems):
        if n >= MAX_WORDS:
            break
        words.append(prefix + word[:100])
    return " ".join(words)


def create(conn: sa.Connection) -> None:
    """Create the full-text tables if missing (dialect-specific DDL)."""
    sqlite = conn.dialect.name == "sqlite"
    for name in INDEXES:
        if sqlite:
            conn.execute(
                sa.text(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5("
                    "words, tokenize = 'unicode61 remove_diacritics 0')"
                )
            )
        else:
            conn.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS {name} "
                    "(doc BIGINT PRIMARY KEY, tsv TSVECTOR NOT NULL)"
                )
            )
            conn.execute(
                sa.text(f"CREATE INDEX IF NOT EXISTS ix_{name}_tsv ON {name} USING GIN (tsv)")
            )


def put(conn: sa.Connection, index: str, docs: Sequence[tuple[int, str]]) -> None:
    """Index documents ``(doc, indexed text)``, replacing any with the same ``doc``."""
    if not docs:
        return
    remove(conn, index, [doc for doc, _ in docs])
    rows = [{"doc": doc, "words": words} for doc, words in docs]
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text(f"INSERT INTO {index} (rowid, words) VALUES (:doc, :words)"), rows)
    else:
        conn.execute(
            sa.text(
                f"INSERT INTO {index} (doc, tsv) VALUES (:doc, to_tsvector('{PG_CONFIG}', :words))"
            ),
            rows,
        )


def remove(conn: sa.Connection, index: str, docs: Sequence[int]) -> None:
    """Drop documents from an index (missing ones are ignored)."""
    column = "rowid" if conn.dialect.name == "sqlite" else "doc"
    for start in range(0, len(docs), 500):
        part = [int(d) for d in docs[start : start + 500]]
        conn.execute(
            sa.text(f"DELETE FROM {index} WHERE {column} IN :docs").bindparams(
                sa.bindparam("docs", expanding=True)
            ),
            {"docs": part},
        )


def search(
    conn: sa.Connection, index: str, key: str, stems: Iterable[str], *, limit: int
) -> list[tuple[int, float]]:
    """Documents of ``key`` sharing any of ``stems``, best first: ``(doc, score)``, the score
    higher for a better match (BM25 on SQLite, cover density on PostgreSQL). Ties go to the
    newer document (the higher ``doc``)."""
    words = sorted(set(indexed(key, stems).split()))
    if not words or limit <= 0:
        return []
    if conn.dialect.name == "sqlite":
        query = " OR ".join(f'"{w}"' for w in words)
        rows = conn.execute(
            sa.text(
                f"SELECT rowid AS doc, -bm25({index}) AS score FROM {index} "
                f"WHERE {index} MATCH :q ORDER BY bm25({index}), rowid DESC LIMIT :n"
            ),
            {"q": query, "n": limit},
        )
    else:
        rows = conn.execute(
            sa.text(
                f"SELECT doc, ts_rank_cd(tsv, q, {_NORMALIZE_LENGTH}) AS score "
                f"FROM {index}, to_tsquery('{PG_CONFIG}', :q) AS q WHERE tsv @@ q "
                "ORDER BY score DESC, doc DESC LIMIT :n"
            ),
            {"q": " | ".join(words), "n": limit},
        )
    return [(int(r.doc), float(r.score)) for r in rows]


def size(conn: sa.Connection, index: str) -> int:
    """How many documents an index holds."""
    return int(conn.execute(sa.text(f"SELECT count(*) FROM {index}")).scalar() or 0)
