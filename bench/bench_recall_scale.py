"""Recall latency at scale: 10k and 100k facts and episodes in one scope, and a FAQ cache of
1k and 10k pairs, on SQLite and PostgreSQL (prints p50/p99 and the 10x growth ratios).

    .venv/bin/python bench/bench_recall_scale.py [--sizes 10000 100000] [--faq 1000 10000]
                                                 [--queries 200] [--pg URL] [--only sqlite]

Half of each size are facts (written through ``memory_apply``, 500 per transaction), half
episodes (written through ``memory_add_episode``'s statements, 1,000 per transaction, so the
fill takes minutes, not hours). Facts have the shape of bench/bench_memory.py's: two of 26
topic words (each topic word in ~8% of facts, as in the measurement of the term index this
replaces) and three of 3,000 rare words; episodes take the same words in a question and an
answer. Each query asks for two topics and one rare word.

Four numbers per size and backend: the store's ``memory_recall`` (one full-text query and the
rows it finds) and a whole memory hook's ``before_user_message`` (recall, offline judge,
summary, render to the budget), p50 and p99; then ``faq_candidates`` and a faq_cache lookup.
PostgreSQL runs in a throwaway schema; it is skipped, saying why, when unreachable.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from bench.bench_memory import TOPICS, pg_schema
from engine.store import MemoryUpdate, NewFact, fulltext, open_store
from engine.store.db import inserted_key
from engine.store.schema import episodes_table
from engine.text import index_stems, terms

SCOPE = "user:bench"
AGENT = "b"


def fact_text(rng: random.Random, i: int) -> str:
    words = rng.sample(TOPICS, 2) + [f"w{rng.randrange(3000)}" for _ in range(3)]
    return f"Факт {i}: пользователь {' '.join(words)}"


def episode(rng: random.Random, i: int) -> tuple[str, str]:
    a, b = rng.sample(TOPICS, 2)
    return (
        f"Вопрос {i} про {a} и w{rng.randrange(3000)}?",
        f"Ответ про {b}, w{rng.randrange(3000)} и w{rng.randrange(3000)}.",
    )


def fill_memory(url: str, count: int) -> None:
    rng = random.Random(7)
    store = open_store(url)
    try:
        for start in range(0, count // 2, 500):
            facts = tuple(
                NewFact(t, frozenset(terms(t)), rng.random())
                for t in (fact_text(rng, i) for i in range(start, start + 500))
            )
            update = MemoryUpdate("2025-01-01T00:00:00", facts, dedup_threshold=0, max_facts=count)
            store.memory_apply(SCOPE, update)
        for start in range(0, count // 2, 1000):
            turns = [episode(rng, i) for i in range(start, start + 1000)]
            store._write(lambda conn, turns=turns: _episodes(conn, turns))  # type: ignore[attr-defined]
    finally:
        store.close()


def _episodes(conn: object, turns: list[tuple[str, str]]) -> None:
    for question, answer in turns:
        new = inserted_key(
            conn.execute(  # type: ignore[attr-defined]
                episodes_table.insert().values(
                    scope=SCOPE, question=question, answer=answer, time="2025-01-01T00:00:00"
                )
            )
        )
        words = fulltext.indexed(SCOPE, index_stems(f"{question}\n{answer}"))
        fulltext.put(conn, "memory_index", [(fulltext.episode_doc(int(new)), words)], new=True)  # type: ignore[arg-type]


def index_bytes(conn: sa.Connection) -> int:
    """The memory index's size on disk: its FTS5 shadow tables, or its table and indexes."""
    if conn.dialect.name == "sqlite":
        stmt = "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'memory_index%'"
    else:
        stmt = "SELECT pg_total_relation_size('memory_index')"
    return int(conn.execute(sa.text(stmt)).scalar() or 0)


def fill_faq(url: str, count: int) -> None:
    rng = random.Random(9)
    store = open_store(url)
    try:
        for i in range(count):
            question = f"{' '.join(rng.sample(TOPICS, 2))} w{rng.randrange(3000)} номер {i}?"
            store.faq_put(
                f"{AGENT}:faq",
                question,
                f"ответ {i}",
                terms=terms(question),
                scope="global",
                time="t",
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


@contextmanager
def agent_on(url: str, hook: str) -> Iterator[object]:
    from engine.runtime import Engine

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "config"
        (root / f"agents/{AGENT}/hooks").mkdir(parents=True)
        (root / "engine.yaml").write_text("process: bench\n")
        (root / f"agents/{AGENT}/agent.yaml").write_text("hooks: [h]\n")
        (root / f"agents/{AGENT}/hooks/h.yaml").write_text(hook)
        engine = Engine.load(root, db=url, records=False)
        try:
            yield engine.agent(AGENT)
        finally:
            engine.close()


def measure_memory(url: str, count: int, asked: list[str]) -> dict[str, tuple[float, float]]:
    started = time.perf_counter()
    fill_memory(url, count)
    print(f"  {count} facts+episodes written in {time.perf_counter() - started:.0f} s")
    store = open_store(url)
    try:
        lookup = timed(lambda q: store.memory_recall(SCOPE, terms(q), limit=30), asked)
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            docs = fulltext.size(conn, "memory_index")
            print(f"  index: {docs} documents, {index_bytes(conn) / 2**20:.1f} MiB")
    finally:
        store.close()
    with agent_on(url, "kind: memory\nname: mem\n") as agent:
        hook = timed(lambda q: agent.before_user_message(q, user_id="bench"), asked)  # type: ignore[attr-defined]
    return {"store memory_recall": lookup, "memory hook": hook}


def measure_faq(url: str, count: int, asked: list[str]) -> dict[str, tuple[float, float]]:
    started = time.perf_counter()
    fill_faq(url, count)
    print(f"  {count} FAQ pairs written in {time.perf_counter() - started:.0f} s")
    store = open_store(url)
    try:
        lookup = timed(lambda q: store.faq_candidates(f"{AGENT}:faq", terms(q), limit=5), asked)
    finally:
        store.close()
    hook_yaml = "kind: faq_cache\nname: faq\nstore: {enabled: false}\n"
    with agent_on(url, hook_yaml) as agent:
        hook = timed(lambda q: agent.before_user_message(q, user_id="bench"), asked)  # type: ignore[attr-defined]
    return {"store faq_candidates": lookup, "faq_cache hook": hook}


def report(name: str, sizes: list[int], rows: dict[int, dict[str, tuple[float, float]]]) -> None:
    for what in rows[sizes[0]]:
        cells = "   ".join(
            f"{n:>6}: p50 {rows[n][what][0]:6.2f} p99 {rows[n][what][1]:6.2f}" for n in sizes
        )
        ratio = rows[sizes[-1]][what][0] / rows[sizes[0]][what][0]
        print(f"  {name:<10} {what:<22} {cells}   p50 x{ratio:.2f} for x{sizes[-1] // sizes[0]}")


def run_backend(name: str, make_url: Callable[[], Iterator[str]], args: argparse.Namespace) -> None:
    asked = questions(args.queries)
    print(f"{name}:")
    memory: dict[int, dict[str, tuple[float, float]]] = {}
    for size in args.sizes:
        with make_url() as url:  # type: ignore[attr-defined]
            memory[size] = measure_memory(url, size, asked)
    faq: dict[int, dict[str, tuple[float, float]]] = {}
    for size in args.faq:
        with make_url() as url:  # type: ignore[attr-defined]
            faq[size] = measure_faq(url, size, asked)
    report(name, args.sizes, memory)
    report(name, args.faq, faq)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--faq", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pg", default="postgresql://root@127.0.0.1:5432/test")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()

    @contextmanager
    def sqlite() -> Iterator[str]:
        with tempfile.TemporaryDirectory() as tmp:
            yield str(Path(tmp) / "bench.db")

    if args.only != "postgres":
        run_backend("SQLite", sqlite, args)
    if args.only != "sqlite":
        try:
            run_backend("PostgreSQL", lambda: pg_schema(args.pg), args)
        except Exception as exc:  # noqa: BLE001 - a bench reports what it could not run
            print(f"PostgreSQL: not run ({type(exc).__name__}: {exc})")


if __name__ == "__main__":
    main()
