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
                # fastupdate off: a new row goes into the index tree at once, instead of a
                # pending list every lookup reads through until the next vacuum
                sa.text(
                    f"CREATE INDEX IF NOT EXISTS ix_{name}_tsv ON {name} "
                    "USING GIN (tsv) WITH (fastupdate = off)"
                )
            )


def put(
    conn: sa.Connection, index: str, docs: Sequence[tuple[int, str]], *, new: bool = False
) -> None:
    """Index documents ``(doc, indexed text)``, replacing any with the same ``doc`` (``new``:
    the caller just created them, there is nothing to replace)."""
    if not docs:
        return
    if not new:
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


COMMON = 500
"""A word found in more documents of its key than this is common: a search ranks the
documents that have one of the query's rarer words, and takes common words into their score;
documents with only common words come after them, newest first. Ranking every document that
has a word of a large scope's everyday vocabulary would cost time in proportion to the scope;
this way a lookup reads at most ``COMMON`` + 1 postings of each common word."""


def search(
    conn: sa.Connection, index: str, key: str, stems: Iterable[str], *, limit: int
) -> list[tuple[int, float]]:
    """Documents of ``key`` sharing any of ``stems``, best first: ``(doc, score)``, the score
    higher for a better match (BM25 on SQLite, cover density on PostgreSQL). Ties go to the
    newer document (the higher ``doc``). Documents with only common words (see ``COMMON``)
    follow the ranked ones with score 0."""
    words = sorted(set(indexed(key, stems).split()))
    if not words or limit <= 0:
        return []
    if conn.dialect.name != "sqlite":
        # the GIN index, always: the planner's estimates for a tsquery make a sequential scan
        # look cheap, and it reads the whole table (every scope) for a word in 10 documents
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    counts = _counts(conn, index, words, COMMON + 1)
    common = [w for w in words if counts[w] > COMMON]
    rare = [w for w in words if w not in common]
    found = _ranked(conn, index, rare, common, limit) if rare else []
    if len(found) < limit and common:
        seen = {doc for doc, _ in found}
        newest = _newest(conn, index, common, limit + len(seen))
        found += [(doc, 0.0) for doc in newest if doc not in seen][: limit - len(found)]
    return found


def _ranked(
    conn: sa.Connection, index: str, rare: list[str], common: list[str], limit: int
) -> list[tuple[int, float]]:
    """Documents with a rare word, ranked on all the words."""
    if conn.dialect.name == "sqlite":
        match = _fts_or(rare)
        if common:  # the common words only score the documents the rare ones found
            match = f"({match}) AND ({_fts_or(rare + common)})"
        rows = conn.execute(
            sa.text(
                f"SELECT rowid AS doc, -bm25({index}) AS score FROM {index} "
                f"WHERE {index} MATCH :q ORDER BY bm25({index}), rowid DESC LIMIT :n"
            ),
            {"q": match, "n": limit},
        )
    else:
        rows = conn.execute(
            sa.text(
                f"SELECT doc, ts_rank_cd(tsv, r, {_NORMALIZE_LENGTH}) AS score "
                f"FROM {index}, to_tsquery('{PG_CONFIG}', :q) AS q, "
                f"to_tsquery('{PG_CONFIG}', :all) AS r WHERE tsv @@ q "
                "ORDER BY score DESC, doc DESC LIMIT :n"
            ),
            {"q": " | ".join(rare), "all": " | ".join(rare + common), "n": limit},
        )
    return [(int(r.doc), float(r.score)) for r in rows]


def _newest(conn: sa.Connection, index: str, words: list[str], limit: int) -> list[int]:
    """The newest documents with any of ``words``."""
    if conn.dialect.name == "sqlite":
        stmt = f"SELECT rowid FROM {index} WHERE {index} MATCH :q ORDER BY rowid DESC LIMIT :n"
        params = {"q": _fts_or(words), "n": limit}
    else:
        stmt = (
            f"SELECT doc FROM {index} WHERE tsv @@ to_tsquery('{PG_CONFIG}', :q) "
            "ORDER BY doc DESC LIMIT :n"
        )
        params = {"q": " | ".join(words), "n": limit}
    found: list[int] = list(conn.execute(sa.text(stmt), params).scalars())
    return [int(d) for d in found]


def _counts(conn: sa.Connection, index: str, words: list[str], cap: int) -> dict[str, int]:
    """How many documents have each of ``words``, each counted up to ``cap`` (on PostgreSQL
    in one statement: one round trip, however many words)."""
    if conn.dialect.name == "sqlite":
        inner = f"SELECT 1 FROM {index} WHERE {index} MATCH :q LIMIT :n"
        stmt = sa.text(f"SELECT count(*) FROM ({inner}) AS s")
        return {
            w: int(conn.execute(stmt, {"q": _fts_or([w]), "n": cap}).scalar() or 0) for w in words
        }
    rows = conn.execute(
        sa.text(
            f"SELECT w, (SELECT count(*) FROM (SELECT 1 FROM {index} "
            f"WHERE tsv @@ to_tsquery('{PG_CONFIG}', w) LIMIT :n) AS s) AS found "
            "FROM unnest(CAST(:words AS text[])) AS w"
        ),
        {"words": words, "n": cap},
    )
    return {r.w: int(r.found) for r in rows}


def _fts_or(words: list[str]) -> str:
    return " OR ".join(f'"{w}"' for w in words)


def size(conn: sa.Connection, index: str) -> int:
    """How many documents an index holds."""
    return int(conn.execute(sa.text(f"SELECT count(*) FROM {index}")).scalar() or 0)
