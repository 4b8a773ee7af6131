"""FAQ pairs in the store, on SQLite and PostgreSQL."""

from __future__ import annotations

from engine.text import terms

T0 = "2025-01-01T00:00:00"


def put(store, question: str, answer: str, ns: str = "a:faq") -> int:  # type: ignore[no-untyped-def]
    return int(store.faq_put(ns, question, answer, terms=terms(question), scope="user:u1", time=T0))


def test_candidates_share_stems_most_first(store) -> None:  # type: ignore[no-untyped-def]
    put(store, "Какие у вас часы работы?", "С 9 до 18")
    put(store, "Где ваш магазин?", "На Ленина, 1")
    put(store, "What are your opening hours?", "9 to 6")
    found = store.faq_candidates("a:faq", terms("Часы работы магазина"), limit=5)
    assert [p.question for p in found] == ["Какие у вас часы работы?", "Где ваш магазин?"]
    assert [p.overlap for p in found] == [2, 1]
    assert store.faq_candidates("a:faq", terms("opening hour"), limit=5)[0].answer == "9 to 6"


def test_the_same_question_replaces_its_answer(store) -> None:  # type: ignore[no-untyped-def]
    first = put(store, "What are your opening hours?", "9 to 6")
    second = put(store, "what are your OPENING hours", "10 to 7")
    assert first == second and store.faq_count("a:faq") == 1
    assert store.faq_candidates("a:faq", terms("hours"), limit=1)[0].answer == "10 to 7"


def test_namespaces_are_apart_and_limit_holds(store) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        put(store, f"delivery question {i}", "answer", ns="a:faq")
    put(store, "delivery question", "other", ns="b:faq")
    assert len(store.faq_candidates("a:faq", terms("delivery"), limit=4)) == 4
    assert [p.answer for p in store.faq_candidates("b:faq", terms("delivery"), limit=9)] == [
        "other"
    ]


def test_hits_are_counted(store) -> None:  # type: ignore[no-untyped-def]
    pair = put(store, "Do you ship abroad?", "Yes")
    store.faq_hit(pair, T0)
    store.faq_hit(pair, T0)
    assert store.faq_candidates("a:faq", terms("ship"), limit=1)[0].hits == 2
