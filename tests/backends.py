"""Store backends for tests: SQLite in a temp folder and PostgreSQL in a throwaway schema.

The PostgreSQL server is the one on 127.0.0.1:5432 (database ``test``), or
``HOOKENGINE_TEST_PG_URL``. Each test gets its own schema (dropped afterwards), so parallel
runs never collide. An unreachable server fails the test when ``CI`` is set and skips it,
saying why, otherwise.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from urllib.parse import quote

import pytest

CANDIDATES = ("postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test")


@cache
def pg_server() -> tuple[str | None, str]:
    """The first reachable server URL, or None and why none is."""
    import psycopg

    urls = (
        [os.environ["HOOKENGINE_TEST_PG_URL"]]
        if os.environ.get("HOOKENGINE_TEST_PG_URL")
        else list(CANDIDATES)
    )
    reasons = []
    for url in urls:
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url, ""
        except psycopg.Error as exc:
            reasons.append(f"{url}: {str(exc).strip().splitlines()[0]}")
    return None, "; ".join(reasons)


def require_pg() -> str:
    """The server URL; fails (in CI) or skips (elsewhere) the test when there is none."""
    url, why = pg_server()
    if url is None:
        message = f"PostgreSQL is not reachable ({why})"
        if os.environ.get("CI"):
            pytest.fail(message + " — CI must run the PostgreSQL tests", pytrace=False)
        pytest.skip(message + " — PostgreSQL tests NOT run")
    return url


@contextmanager
def pg_schema() -> Iterator[str]:
    """A URL whose connections work in a fresh schema; the schema is dropped afterwards."""
    import psycopg

    server = require_pg()
    schema = f"he_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in server else "?"
    try:
        yield f"{server}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store location on each backend: an SQLite path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "data" / "store.db")
        return
    with pg_schema() as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[object]:
    """An open store on each backend, closed after the test."""
    from engine.store import open_store

    opened = open_store(db_url)
    yield opened
    opened.close()


def _agents(tmp_path: Path, db_url: str | None) -> Iterator[object]:
    import json

    from engine.runtime import Engine

    engines: list[Engine] = []

    def make(hook_yaml: str, *, provider: dict[str, object] | None = None) -> object:
        root = tmp_path / f"config{len(engines)}"
        (root / "agents/a/hooks").mkdir(parents=True)
        settings = "process: proc\n"
        if provider:
            settings += f"provider: {json.dumps(provider)}\n"
        (root / "engine.yaml").write_text(settings, encoding="utf-8")
        (root / "agents/a/agent.yaml").write_text("hooks: [h]\n", encoding="utf-8")
        (root / "agents/a/hooks/h.yaml").write_text(hook_yaml, encoding="utf-8")
        engine = Engine.load(root, db=db_url)
        engines.append(engine)
        return engine.agent("a")

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def hook_agent(tmp_path: Path, db_url: str) -> Iterator[object]:
    """``hook_agent(hook_yaml, provider=None)``: an agent ``a`` with that one hook (plus
    ``engine.yaml``'s ``provider:`` mapping), every store on this test's backend."""
    yield from _agents(tmp_path, db_url)


@pytest.fixture
def file_agent(tmp_path: Path) -> Iterator[object]:
    """Like ``hook_agent``, but stores are where the config says (``db_path`` files under
    tmp_path, the project folder)."""
    yield from _agents(tmp_path, None)


def hook_of(agent: object) -> object:
    """The agent's first hook (the one under test)."""
    return agent.pipeline.slots[0].hook  # type: ignore[attr-defined]


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection holds the database's write lock (reads still go on in WAL mode)."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()
