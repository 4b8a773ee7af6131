"""Recall latency with 10k facts in one scope, SQLite and PostgreSQL (prints p50/p99).

    .venv/bin/python bench/bench_memory.py [--facts 10000] [--queries 300] [--pg URL]

Two numbers per backend: the store's candidate query alone, and a whole memory hook's
before_user_message (candidates, offline judge, summary, recall note) through the Engine.
PostgreSQL runs in a throwaway schema; it is skipped, saying why, when unreachable.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.store import MemoryUpdate, NewFact, open_store
from engine.text import terms

SCOPE = "user:bench"
TOPICS = [
    "чай",
    "кофе",
    "город",
    "работа",
    "собака",
    "кошка",
    "спорт",
    "музыка",
    "книги",
    "кино",
    "море",
    "горы",
    "поезд",
    "tea",
    "coffee",
    "city",
    "work",
    "dog",
    "cat",
    "sport",
    "music",
    "books",
    "movies",
    "sea",
    "mountains",
    "train",
]


def fact_text(rng: random.Random, i: int) -> str:
    words = rng.sample(TOPICS, 2) + [f"w{rng.randrange(3000)}" for _ in range(3)]
    return f"Факт {i}: пользователь {' '.join(words)}"


def fill(url: str, count: int) -> None:
    rng = random.Random(7)
    store = open_store(url)
    try:
        for start in range(0, count, 500):
            facts = tuple(
                NewFact(t, frozenset(terms(t)), rng.random())
                for t in (fact_text(rng, i) for i in range(start, start + 500))
            )
            store.memory_apply(
                SCOPE,
                MemoryUpdate(
                    "2025-01-01T00:00:00", facts=facts, dedup_threshold=0, max_facts=count
                ),
            )
    finally:
        store.close()


def questions(n: int) -> list[str]:
    rng = random.Random(11)
    return [f"{' '.join(rng.sample(TOPICS, 2))} w{rng.randrange(3000)}?" for _ in range(n)]


def timed(fn: Callable[[str], object], asked: list[str]) -> tuple[float, float]:
    for q in asked[:20]:
        fn(q)  # warm caches and pools
    samples = []
    for q in asked:
        start = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


def bench(name: str, url: str, count: int, queries: int) -> None:
    started = time.perf_counter()
    fill(url, count)
    print(f"{name}: {count} facts written in {time.perf_counter() - started:.1f} s")
    asked = questions(queries)
    store = open_store(url)
    try:
        p50, p99 = timed(lambda q: store.memory_candidates(SCOPE, terms(q), limit=8), asked)
        print(f"  store candidates      p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    finally:
        store.close()
    with agent_on(url) as agent:
        p50, p99 = timed(lambda q: agent.before_user_message(q, user_id="bench"), asked)
        print(f"  hook before_user_msg  p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")


@contextmanager
def agent_on(url: str) -> Iterator[object]:
    from engine.runtime import Engine

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "config"
        (root / "agents/b/hooks").mkdir(parents=True)
        (root / "engine.yaml").write_text("records: {enabled: false}\n")
        (root / "agents/b/agent.yaml").write_text("hooks: [mem]\n")
        (root / "agents/b/hooks/mem.yaml").write_text("kind: memory\nname: mem\n")
        engine = Engine.load(root, db=url, records=False)
        try:
            yield engine.agent("b")
        finally:
            engine.close()


@contextmanager
def pg_schema(server: str) -> Iterator[str]:
    import psycopg

    schema = f"he_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{server}?options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pg", default="postgresql://root@127.0.0.1:5432/test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench("SQLite", str(Path(tmp) / "bench.db"), args.facts, args.queries)
    try:
        with pg_schema(args.pg) as url:
            bench("PostgreSQL", url, args.facts, args.queries)
    except Exception as exc:  # noqa: BLE001 - a bench reports what it could not run
        print(f"PostgreSQL: not run ({type(exc).__name__}: {exc})")


if __name__ == "__main__":
    main()
