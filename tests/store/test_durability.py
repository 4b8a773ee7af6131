"""Durability: a writer SIGKILLed mid-burst loses no acknowledged write and leaves a
consistent store; four processes writing to one store at once lose nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

import engine
from engine.store import fulltext, open_store
from engine.store.schema import facts_table

REPO = Path(engine.__file__).resolve().parent.parent

WRITER = """
import sys
from engine.store import MemoryUpdate, NewFact, open_store
url, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(url)
for i in range(count):
    text = f"fact {tag} {i}"
    update = MemoryUpdate("2025-01-01T00:00:00", facts=(
        NewFact(text, frozenset({tag, f"n{i}", "shared"})),), dedup_threshold=0,
        max_facts=10**9)
    done = store.memory_apply("user:shared", update)
    print(text, done.added[0], flush=True)  # acknowledged: the transaction committed
store.close()
"""

pytestmark = pytest.mark.slow


def writer(url: str, tag: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, tag, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def stored(url: str) -> dict[str, int]:
    """text -> id of every fact, after checking each is indexed and no index row is orphaned."""
    store = open_store(url)
    try:
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            if store.is_sqlite:  # type: ignore[attr-defined]
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            facts = dict(conn.execute(sa.select(facts_table.c.text, facts_table.c.id)).all())
            column = "rowid" if store.is_sqlite else "doc"  # type: ignore[attr-defined]
            docs = conn.execute(sa.text(f"SELECT {column} FROM memory_index")).scalars().all()
            shared = fulltext.search(conn, "memory_index", "user:shared", ["shared"], limit=10**6)
    finally:
        store.close()
    expected = {fulltext.fact_doc(i) for i in facts.values()}
    assert set(docs) == expected, "index rows without facts, or facts without"
    assert {doc for doc, _ in shared} == expected
    return facts


def test_a_killed_writer_loses_no_acknowledged_write(db_url: str) -> None:
    open_store(db_url).close()  # created before the writer starts
    proc = writer(db_url, "k", 100_000)
    acked: list[tuple[str, int]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        text, _, fact_id = line.rstrip("\n").rpartition(" ")
        acked.append((text, int(fact_id)))
        if len(acked) >= 150:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    facts = stored(db_url)
    assert all(facts.get(text) == fact_id for text, fact_id in acked)
    assert len(facts) >= len(acked)


def test_four_processes_writing_at_once_lose_nothing(db_url: str) -> None:
    open_store(db_url).close()
    count = 60
    procs = [writer(db_url, f"p{n}", count) for n in range(4)]
    outputs: dict[int, tuple[str, str]] = {}

    def drain(n: int, proc: subprocess.Popen[str]) -> None:
        outputs[n] = proc.communicate(timeout=120)

    threads = [threading.Thread(target=drain, args=(n, p)) for n, p in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, proc in enumerate(procs):
        assert proc.returncode == 0, outputs[n][1][-2000:]
    facts = stored(db_url)
    expected = {f"fact p{n} {i}" for n in range(4) for i in range(count)}
    assert set(facts) == expected


def test_threads_sharing_one_store_lose_nothing(db_url: str) -> None:
    from engine.store import MemoryUpdate, NewFact

    store = open_store(db_url)

    def work(n: int) -> None:
        for i in range(20):
            store.memory_apply(
                f"user:t{n % 2}",
                MemoryUpdate(
                    "t",
                    facts=(NewFact(f"thread {n} fact {i}", frozenset({f"a{n}", f"b{i}", "c"})),),
                    dedup_threshold=0,
                ),
            )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        total = sum(len(store.memory_facts(f"user:t{k}")) for k in range(2))
        assert total == 160
    finally:
        store.close()
