"""Memory in the store: ranking, dedup, supersedes, caps, stale, recalls, isolation — on
SQLite and PostgreSQL alike."""

from __future__ import annotations

from engine.store import FactEdit, MemoryUpdate, NewFact
from engine.text import terms

T0, T1, T2 = "2025-01-01T00:00:00", "2025-01-02T00:00:00", "2025-01-03T00:00:00"


def fact(text: str, importance: float = 0.5, **kw: object) -> NewFact:
    return NewFact(text, frozenset(terms(text)), importance, **kw)  # type: ignore[arg-type]


def add(store, scope: str, *facts: NewFact, time: str = T0, **kw: object):  # type: ignore[no-untyped-def]
    return store.memory_apply(scope, MemoryUpdate(time, facts=facts, **kw))  # type: ignore[arg-type]


def test_candidates_rank_by_overlap_then_importance_then_recency(store) -> None:  # type: ignore[no-untyped-def]
    add(store, "user:u1", fact("The user likes green tea", 0.3), time=T0)
    add(store, "user:u1", fact("The user likes black tea", 0.9), time=T0)
    add(store, "user:u1", fact("The user drinks green tea with lemon", 0.3), time=T1)
    add(store, "user:u1", fact("The user has a cat", 1.0), time=T2)
    found = store.memory_candidates("user:u1", terms("green tea lemon"), limit=3, backfill=False)
    assert [f.text for f in found] == [
        "The user drinks green tea with lemon",  # 3 shared terms
        "The user likes green tea",  # 2 shared, low importance
        "The user likes black tea",  # 1 shared
    ]
    assert [f.overlap for f in found] == [3, 2, 1]


def test_backfill_fills_with_important_recent_facts(store) -> None:  # type: ignore[no-untyped-def]
    add(store, "user:u1", fact("Пользователь любит зелёный чай", 0.3))
    add(store, "user:u1", fact("У пользователя есть кошка", 0.9))
    no_fill = store.memory_candidates("user:u1", terms("чай"), limit=5, backfill=False)
    filled = store.memory_candidates("user:u1", terms("чай"), limit=5, backfill=True)
    assert [f.text for f in no_fill] == ["Пользователь любит зелёный чай"]
    assert [f.text for f in filled] == [
        "Пользователь любит зелёный чай",
        "У пользователя есть кошка",
    ]
    assert filled[1].overlap == 0


def test_russian_word_forms_match(store) -> None:  # type: ignore[no-untyped-def]
    add(store, "user:u1", fact("Пользователь работает программистом"))
    found = store.memory_candidates(
        "user:u1", terms("работа программиста"), limit=5, backfill=False
    )
    assert len(found) == 1


def test_duplicates_refresh_instead_of_adding(store) -> None:  # type: ignore[no-untyped-def]
    first = add(store, "user:u1", fact("The user lives in Berlin", 0.4))
    again = add(store, "user:u1", fact("the user lives in Berlin!", 0.7), time=T1)
    assert again.added == () and again.duplicates == first.added
    [only] = store.memory_facts("user:u1")
    assert only.importance == 0.7 and only.updated_at == T1


def test_dedup_threshold_decides_what_counts_as_a_duplicate(store) -> None:  # type: ignore[no-untyped-def]
    add(store, "user:u1", fact("The user likes green tea"))
    loose = add(store, "user:u1", fact("The user likes green tea a lot"), dedup_threshold=0.7)
    strict = add(store, "user:u1", fact("The user likes green tea a lot"), dedup_threshold=1.0)
    off = add(store, "user:u1", fact("The user likes green tea"), dedup_threshold=0.0)
    assert loose.duplicates and not loose.added
    assert strict.added and not strict.duplicates
    assert off.added


def test_supersedes_retires_the_old_fact(store) -> None:  # type: ignore[no-untyped-def]
    [berlin] = add(store, "user:u1", fact("Пользователь живёт в Берлине", key="city")).added
    result = add(
        store,
        "user:u1",
        fact("Пользователь живёт в Мюнхене", key="city", supersedes=(berlin,)),
        time=T1,
    )
    assert result.retired == (berlin,)
    live = store.memory_facts("user:u1")
    assert [f.text for f in live] == ["Пользователь живёт в Мюнхене"]
    old = next(f for f in store.memory_facts("user:u1", live_only=False) if f.id == berlin)
    assert old.retired and old.superseded_by == result.added[0]
    assert not store.memory_candidates("user:u1", terms("Берлин"), limit=5, backfill=False)


def test_supersedes_never_reaches_another_scope(store) -> None:  # type: ignore[no-untyped-def]
    [theirs] = add(store, "user:u2", fact("The user lives in Paris", key="city")).added
    result = add(store, "user:u1", fact("The user lives in Rome", key="city", supersedes=(theirs,)))
    assert result.retired == ()
    assert [f.text for f in store.memory_facts("user:u2")] == ["The user lives in Paris"]


def test_cap_drops_retired_then_stale_then_least_important_oldest(store) -> None:  # type: ignore[no-untyped-def]
    scope = "user:u1"
    ids = add(
        store,
        scope,
        fact("fact alpha", 0.9),
        fact("fact bravo", 0.2),
        fact("fact charlie", 0.2),
        fact("fact delta", 0.8),
        dedup_threshold=0,
    ).added
    store.memory_apply(scope, MemoryUpdate(T1, edits=(FactEdit(ids[3], stale=True),)))
    result = add(store, scope, fact("fact echo", 0.5), time=T2, max_facts=3, dedup_threshold=0)
    assert set(result.dropped) == {ids[3], ids[1]}  # stale first, then bravo (older id)
    assert sorted(f.text for f in store.memory_facts(scope, live_only=False)) == [
        "fact alpha",
        "fact charlie",
        "fact echo",
    ]


def test_stale_facts_are_not_recalled_but_are_shown(store) -> None:  # type: ignore[no-untyped-def]
    [tea] = add(store, "user:u1", fact("The user likes green tea")).added
    store.memory_apply("user:u1", MemoryUpdate(T1, edits=(FactEdit(tea, stale=True),)))
    assert store.memory_candidates("user:u1", terms("tea"), limit=5) == []
    assert store.memory_view("user:u1").facts[0].stale


def test_edits_rewrite_text_terms_and_importance(store) -> None:  # type: ignore[no-untyped-def]
    [tea] = add(store, "user:u1", fact("The user likes green tea")).added
    new = "The user likes oolong"
    result = store.memory_apply(
        "user:u1", MemoryUpdate(T1, edits=(FactEdit(tea, new, frozenset(terms(new)), 1.7),))
    )
    assert result.edited == (tea,)
    [found] = store.memory_candidates("user:u1", terms("oolong"), limit=5, backfill=False)
    assert found.text == new and found.importance == 1.0


def test_recalls_and_feedback_adjust_importance_within_bounds(store) -> None:  # type: ignore[no-untyped-def]
    ids = list(
        add(
            store, "user:u1", fact("fact one", 0.95), fact("fact two", 0.1), dedup_threshold=0
        ).added
    )
    store.memory_note_recall("user:u1", "turn-1", ids, T1)
    assert store.memory_recalled("user:u1", "turn-1") == sorted(ids)
    assert store.memory_recalled("user:u2", "turn-1") == []
    up = store.memory_adjust("user:u1", ids, 0.1, T2)
    assert sorted(f.importance for f in up) == [0.2, 1.0]
    down = store.memory_adjust("user:u1", ids, -0.5, T2)
    assert sorted(f.importance for f in down) == [0.0, 0.5]
    assert store.memory_adjust("user:u2", ids, 0.1, T2) == []
    assert all(f.recall_count == 1 for f in store.memory_facts("user:u1"))


def test_summary_turns_and_episodes(store) -> None:  # type: ignore[no-untyped-def]
    assert store.memory_summary("user:u1") == ""
    assert [store.memory_count_turn("user:u1", T0) for _ in range(3)] == [1, 2, 3]
    store.memory_apply("user:u1", MemoryUpdate(T0, summary="Алекс из Берлина"))
    assert store.memory_summary("user:u1") == "Алекс из Берлина"
    assert store.memory_count_turn("user:u1", T1) == 4
    for i in range(5):
        store.memory_add_episode(
            "user:u1", turn_id=f"t{i}", question=f"q{i}", answer="a", time=T0, keep=3
        )
    assert [e.turn_id for e in store.memory_episodes("user:u1")] == ["t2", "t3", "t4"]
    store.memory_add_episode("user:u1", turn_id="t5", question="q", answer="a", time=T0, keep=0)
    assert store.memory_episodes("user:u1") == []


def test_forget_removes_one_scope_only(store) -> None:  # type: ignore[no-untyped-def]
    for scope in ("user:u1", "user:u2"):
        add(store, scope, fact("The user likes tea"))
        store.memory_apply(scope, MemoryUpdate(T0, summary="s"))
        store.memory_add_episode(scope, turn_id="t", question="q", answer="a", time=T0, keep=5)
    assert store.memory_forget("user:u1") > 0
    assert store.memory_view("user:u1").empty
    view = store.memory_view("user:u2")
    assert view.facts and view.summary == "s" and view.episodes
