"""bench/bench_recall.py keeps measuring what the docs claim: the shipped conversation set is
the one its generator makes, and on two of its users (one English, one Russian) the memory
hook recalls at least as much as BM25 over the raw turns and carries every "when" date."""

from __future__ import annotations

from pathlib import Path

from bench.bench_recall import BUDGET, bm25_turns, last_n, memory_hook, score
from bench.bench_recall_data import OUT, as_data, generate, load


def test_the_shipped_set_is_the_generated_one_and_has_the_promised_shape() -> None:
    import json

    shipped = json.loads(OUT.read_text(encoding="utf-8"))
    assert shipped == json.loads(json.dumps(as_data(generate(shipped["seed"]), shipped["seed"])))
    users = load()
    assert len(users) >= 5 and {u.lang for u in users} == {"en", "ru"}
    for user in users:
        assert len(user.turns) >= 300
        assert {t.speaker for t in user.turns} == {"user", "assistant"}
        assert (
            len({t.session for t in user.turns}) > 1 and len({t.time[:10] for t in user.turns}) > 1
        )
        assert {q.kind for q in user.questions} == {"single", "multi", "date"}
        ids = {t.id for t in user.turns}
        assert all(set(q.evidence) <= ids for q in user.questions)


def test_the_memory_hook_recalls_at_least_as_well_as_bm25_over_raw_turns(tmp_path: Path) -> None:
    users = [u for u in load() if u.id in ("en1", "ru1")]
    answer, close = memory_hook(str(tmp_path / "store.db"), {})
    try:
        memory = score(users, answer, BUDGET)
    finally:
        close()
    bm25 = score(users, bm25_turns(BUDGET), BUDGET)
    recent = score(users, last_n(BUDGET), BUDGET)
    assert memory["all"] >= bm25["all"] and memory["all"] >= 0.7
    assert memory["date carried"] == 1.0
    assert recent["all"] < 0.3  # the set is not one the last turns answer
