"""The store's tables and the versioned migration that creates or upgrades them.

Each schema version lists the tables it added; opening an older store creates what is missing
and bumps ``hookengine_meta.schema_version``, all in one transaction. A store newer than this
engine is refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import sqlalchemy as sa

from engine.errors import StoreError
from engine.store import fulltext
from engine.store.version import SCHEMA_VERSION as SCHEMA_VERSION

metadata = sa.MetaData()
retired = sa.MetaData()
"""Tables an older version had and a later one dropped (kept to migrate from them)."""

meta_table = sa.Table(
    "hookengine_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# -- version 1: records and script state ------------------------------------------------------

records_table = sa.Table(
    "records",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(40), nullable=False, unique=True),
    sa.Column("time", sa.String(40), nullable=False, index=True),
    sa.Column("agent", sa.String(200), nullable=False, index=True),
    sa.Column("point", sa.String(40), nullable=False),
    sa.Column("scope_key", sa.String(300), nullable=False, index=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("data", sa.Text, nullable=False),
    # version 5: the host that asked (engine/hosts.py)
    sa.Column("host", sa.String(40), nullable=False, server_default="native"),
)

state_table = sa.Table(
    "script_state",
    metadata,
    # version 11: text (an agent's name and a hook's, joined, may pass 200 characters)
    sa.Column("hook", sa.Text, primary_key=True),
    sa.Column("scope", sa.String(300), primary_key=True),
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    # version 4: when the row was last written and when it expires (event times, UTC ISO-8601)
    sa.Column("written_at", sa.String(40)),
    sa.Column("expires_at", sa.String(40)),
    sa.Index("ix_script_state_written", "written_at"),
    sa.Index("ix_script_state_expires", "expires_at"),
)

# -- version 2: FAQ pairs and memory -----------------------------------------------------------

faq_table = sa.Table(
    "faq_pairs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # version 11: text (a user's own pairs: agent, hook and user id, past 200 characters)
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("question_key", sa.String(64), nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("terms", sa.Text, nullable=False),
    sa.Column("scope_key", sa.String(300), nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("hits", sa.Integer, nullable=False, default=0),
    sa.Column("last_hit_at", sa.String(40)),
    sa.UniqueConstraint("namespace", "question_key", name="uq_faq_question"),
)

faq_terms_table = sa.Table(  # dropped in version 6 (full-text index)
    "faq_terms",
    retired,
    sa.Column("pair_id", sa.Integer, primary_key=True),
    sa.Column("term", sa.String(100), primary_key=True),
    sa.Column("namespace", sa.String(200), nullable=False),
    sa.Index("ix_faq_terms_lookup", "namespace", "term"),
)

facts_table = sa.Table(
    "memory_facts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("scope", sa.String(300), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("key", sa.String(100)),
    sa.Column("terms", sa.Text, nullable=False),
    sa.Column("importance", sa.Float, nullable=False),
    sa.Column("stale", sa.Boolean, nullable=False, default=False),
    sa.Column("retired", sa.Boolean, nullable=False, default=False),
    sa.Column("superseded_by", sa.Integer),
    sa.Column("supersedes", sa.Text, nullable=False, default="[]"),
    sa.Column("turn_id", sa.String(64)),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("last_recalled_at", sa.String(40)),
    sa.Column("recall_count", sa.Integer, nullable=False, default=0),
    sa.Index("ix_memory_facts_rank", "scope", "retired", "stale", "importance", "updated_at"),
)

fact_terms_table = sa.Table(  # dropped in version 6 (full-text index)
    "memory_terms",
    retired,
    sa.Column("fact_id", sa.Integer, primary_key=True),
    sa.Column("term", sa.String(100), primary_key=True),
    sa.Column("scope", sa.String(300), nullable=False),
    sa.Index("ix_memory_terms_lookup", "scope", "term"),
)

summaries_table = sa.Table(
    "memory_summaries",
    metadata,
    sa.Column("scope", sa.String(300), primary_key=True),
    sa.Column("text", sa.Text, nullable=False, default=""),
    sa.Column("turns", sa.Integer, nullable=False, default=0),
    sa.Column("updated_at", sa.String(40), nullable=False),
)

episodes_table = sa.Table(
    "memory_episodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("scope", sa.String(300), nullable=False, index=True),
    sa.Column("turn_id", sa.String(64)),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("time", sa.String(40), nullable=False),
)

recalls_table = sa.Table(
    "memory_recalls",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("scope", sa.String(300), nullable=False),
    sa.Column("turn_id", sa.String(64), nullable=False),
    sa.Column("fact_id", sa.Integer, nullable=False),
    sa.Column("time", sa.String(40), nullable=False),
    sa.Index("ix_memory_recalls_turn", "scope", "turn_id"),
)

# -- version 3: the record loss ledger --------------------------------------------------------

record_losses_table = sa.Table(
    "record_losses",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("time", sa.String(40), nullable=False),
    sa.Column("cause", sa.String(40), nullable=False),
    sa.Column("record_id", sa.String(200), nullable=False),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("point", sa.String(40), nullable=False),
    sa.Column("error", sa.Text, nullable=False),
)

# -- version 5: the turn log -------------------------------------------------------------------

turn_log_table = sa.Table(
    "turn_log",
    metadata,
    sa.Column("agent", sa.String(200), primary_key=True),
    sa.Column("session_id", sa.String(300), primary_key=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("time", sa.String(40), nullable=False),
    # version 10: the user whose prompt it is (forgetting the user deletes it)
    sa.Column("user_id", sa.String(300)),
    sa.Index("ix_turn_log_user", "user_id"),
)
"""The last user prompt per agent and session: one row each, overwritten by the next."""

# -- version 7: tool artifacts ----------------------------------------------------------------

artifacts_table = sa.Table(
    "artifacts",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("session_id", sa.String(300), nullable=False, index=True),
    sa.Column("name", sa.String(300), nullable=False),
    sa.Column("file_name", sa.String(300), nullable=False),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("mime", sa.String(100), nullable=False),
    sa.Column("bytes", sa.Integer, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("tool", sa.String(200), nullable=False),
    sa.Column("call_id", sa.String(300)),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("time", sa.String(40), nullable=False),
    # version 13: the user whose call made it (forgetting the user deletes it, in any session)
    sa.Column("user_id", sa.String(300)),
    sa.Index("ix_artifacts_user", "user_id"),
)
"""A file a tool call made: the row here, its bytes under data/artifacts/<agent>/<session>/<id>/."""

# -- version 8: conversation entries ----------------------------------------------------------

entries_table = sa.Table(
    "entries",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("session_id", sa.String(300), nullable=False),
    sa.Column("user_id", sa.String(300)),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("turn", sa.String(300)),
    sa.Column("time", sa.String(40), nullable=False),
    sa.Index("ix_entries_session", "agent", "session_id", "seq"),
    sa.Index("ix_entries_user", "user_id"),
)
"""What hooks and hosts keep in a conversation (host.entries, Agent.remember): JSON per row,
stamped with the turn; the user's id is kept so that forgetting a user deletes them."""

# -- version 9: approvals --------------------------------------------------------------------

approvals_table = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("agent", sa.String(200), nullable=False),
    sa.Column("hook", sa.String(200), nullable=False),
    sa.Column("scope_key", sa.String(300), nullable=False),
    sa.Column("call_key", sa.String(300), nullable=False),
    sa.Column("tool", sa.String(200), nullable=False),
    sa.Column("input", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("remember_scope", sa.String(300)),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("expires_at", sa.String(40), nullable=False),
    sa.Column("resolved_by", sa.String(200)),
    sa.Column("resolved_at", sa.String(40)),
    sa.Column("note", sa.Text),
    # version 12: the user whose call it is (forgetting the user deletes it, in any session)
    sa.Column("user_id", sa.String(300)),
    sa.Index("ix_approvals_call", "agent", "hook", "scope_key", "call_key"),
    sa.Index("ix_approvals_pending", "agent", "status"),
    sa.Index("ix_approvals_user", "user_id"),
)
"""One row per question put to a person: pending until resolved or past ``expires_at``."""

approvals_remembered_table = sa.Table(
    "approvals_remembered",
    metadata,
    sa.Column("agent", sa.String(200), primary_key=True),
    sa.Column("hook", sa.String(200), primary_key=True),
    sa.Column("scope", sa.String(300), primary_key=True),
    sa.Column("tool", sa.String(200), primary_key=True),
    sa.Column("input_digest", sa.String(64), primary_key=True),
    sa.Column("approval_id", sa.String(40), nullable=False),
    sa.Column("time", sa.String(40), nullable=False),
)
"""Approvals kept for later calls (``remember: session | user``): the same tool with the
same input in that session or for that user is allowed without asking."""

MIGRATIONS: dict[int, tuple[sa.Table, ...]] = {
    1: (records_table, state_table),
    2: (
        faq_table,
        faq_terms_table,
        facts_table,
        fact_terms_table,
        summaries_table,
        episodes_table,
        recalls_table,
    ),
    3: (record_losses_table,),
    4: (),
    5: (turn_log_table,),
    6: (),
    7: (artifacts_table,),
    8: (entries_table,),
    9: (approvals_table, approvals_remembered_table),
    10: (),
    11: (),
    12: (),
    13: (),
}
"""The tables each schema version added, in creation order."""


def _add_state_times(conn: sa.Connection) -> None:
    """Version 4: script state rows carry ``written_at`` and ``expires_at``. Rows of an older
    store count as written at the upgrade, so their first retention window starts then."""
    t = state_table
    have = {c["name"] for c in sa.inspect(conn).get_columns(t.name)}
    for column in (t.c.written_at, t.c.expires_at):
        if column.name not in have:
            conn.execute(sa.text(f"ALTER TABLE {t.name} ADD COLUMN {column.name} VARCHAR(40)"))
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    conn.execute(t.update().where(t.c.written_at.is_(None)).values(written_at=now))
    for index in t.indexes:
        index.create(conn, checkfirst=True)


def _add_record_host(conn: sa.Connection) -> None:
    """Version 5: records name the host that asked; older records were all native calls."""
    have = {c["name"] for c in sa.inspect(conn).get_columns(records_table.name)}
    if "host" not in have:
        conn.execute(
            sa.text("ALTER TABLE records ADD COLUMN host VARCHAR(40) NOT NULL DEFAULT 'native'")
        )


def _add_user_column(conn: sa.Connection, t: sa.Table) -> None:
    """Add ``t``'s ``user_id`` column (and its indexes) to an older store; safe to run again."""
    have = {c["name"] for c in sa.inspect(conn).get_columns(t.name)}
    if "user_id" not in have:
        conn.execute(sa.text(f"ALTER TABLE {t.name} ADD COLUMN user_id VARCHAR(300)"))
    for index in t.indexes:
        index.create(conn, checkfirst=True)


def _add_turn_log_user(conn: sa.Connection) -> None:
    """Version 10: a session's last prompt names its user, so that forgetting the user
    deletes it. Rows of an older store name none (forgetting a user still finds those of the
    sessions the user's conversation entries name)."""
    _add_user_column(conn, turn_log_table)


WIDENED = ((faq_table.name, "namespace"), (state_table.name, "hook"))
"""The key columns version 11 made text (they were ``VARCHAR(200)``)."""


def _widen_keys(conn: sa.Connection) -> None:
    """Version 11: a FAQ namespace and a script's state key are text. A user's own FAQ pairs
    live in ``<agent>:<hook>@user:<id>``, and a state key is ``<agent>:<hook>``: with long
    names or ids they passed 200 characters, which PostgreSQL refused (SQLite does not
    enforce a length: nothing to change there). On PostgreSQL, widening ``varchar`` to
    ``text`` rewrites neither the table nor its indexes."""
    if conn.dialect.name != "postgresql":
        return
    for table, column in WIDENED:
        conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE TEXT"))


def _add_approval_user(conn: sa.Connection) -> None:
    """Version 12: an approval names the user whose call it is; one asked in a session is
    kept under the session, and forgetting the user must still find it. Rows of an older
    store name none (they go with their session, or with a user's scope key)."""
    _add_user_column(conn, approvals_table)


def _add_artifact_user(conn: sa.Connection) -> None:
    """Version 13: an artifact names the user whose call made it; it is kept under its
    session, and forgetting the user must still find it. Rows of an older store name none
    (they go with their session, or with the user whose conversation entries or last prompt
    name their session: engine/store/artifacts.py)."""
    _add_user_column(conn, artifacts_table)


def _full_text_search(conn: sa.Connection) -> None:
    """Version 6: memory facts and episodes and FAQ questions are found through a full-text
    index (SQLite FTS5, PostgreSQL tsvector + GIN; see engine/store/fulltext.py) instead of
    the hand-written term tables, which go. An older store's rows are indexed here, from
    their text stemmed the way new rows are. Safe to run again."""
    from engine.text import index_stems

    fulltext.create(conn)
    f, e, q = facts_table, episodes_table, faq_table
    for row in conn.execute(sa.select(f.c.id, f.c.scope, f.c.text, f.c.terms)):
        words = [*index_stems(row.text), *row.terms.split()]
        fulltext.put(
            conn, "memory_index", [(fulltext.fact_doc(row.id), fulltext.indexed(row.scope, words))]
        )
    for row in conn.execute(sa.select(e.c.id, e.c.scope, e.c.question, e.c.answer)):
        words = index_stems(f"{row.question}\n{row.answer}")
        fulltext.put(
            conn,
            "memory_index",
            [(fulltext.episode_doc(row.id), fulltext.indexed(row.scope, words))],
        )
    for row in conn.execute(sa.select(q.c.id, q.c.namespace, q.c.terms)):
        fulltext.put(
            conn, "faq_index", [(row.id, fulltext.indexed(row.namespace, row.terms.split()))]
        )
    for table in (fact_terms_table, faq_terms_table):
        table.drop(conn, checkfirst=True)


UPGRADES: dict[int, Callable[[sa.Connection], None]] = {
    4: _add_state_times,
    5: _add_record_host,
    6: _full_text_search,
    10: _add_turn_log_user,
    11: _widen_keys,
    12: _add_approval_user,
    13: _add_artifact_user,
}
"""Changes to existing tables a version made, run after its new tables are created."""
BUILDS = frozenset({6})
"""Versions whose upgrade also builds what a new store needs: a full-text index is no table
SQLAlchemy's metadata can create."""


def migrate(conn: sa.Connection, *, shown: str) -> int:
    """Create the schema, or upgrade an older one, inside the caller's transaction.

    Returns:
        The schema version the store had before (0 for a new store).

    Raises:
        StoreError: the store's schema is newer than this engine's.
    """
    meta_table.create(conn, checkfirst=True)
    found = _version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"store {shown} has schema {found}, newer than this engine's {SCHEMA_VERSION}: "
            "upgrade hookengine"
        )
    for version in range(found + 1, SCHEMA_VERSION + 1):
        for table in MIGRATIONS[version]:
            table.create(conn, checkfirst=True)
        # a new store has every column already; some upgrades build more than columns
        if version in UPGRADES and (found or version in BUILDS):
            UPGRADES[version](conn)
    if found == 0:
        conn.execute(meta_table.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
    elif found < SCHEMA_VERSION:
        conn.execute(
            meta_table.update()
            .where(meta_table.c.key == "schema_version")
            .values(value=str(SCHEMA_VERSION))
        )
    return found


def _version(conn: sa.Connection) -> int:
    row = conn.execute(
        sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
    ).first()
    return int(row[0]) if row else 0
