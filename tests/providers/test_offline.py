"""The offline provider: rule-based facts in Russian and English, contradictions, summary."""

from __future__ import annotations

import pytest

from engine.providers import (
    Candidate,
    JudgeTask,
    KnownFact,
    MemorizeTask,
    OfflineProvider,
)
from engine.providers.offline import roll_summary

offline = OfflineProvider()


def learn(text: str, known: tuple[KnownFact, ...] = ()):  # type: ignore[no-untyped-def]
    return offline.memorize(MemorizeTask(((text, "ok"),), known))


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        (
            "Меня зовут Алекс, я живу в Берлине",
            [("Пользователя зовут Алекс", "name"), ("Пользователь живёт в Берлине", "city")],
        ),
        (
            "My name is Alex and I live in Berlin",
            [("The user's name is Alex", "name"), ("The user lives in Berlin", "city")],
        ),
        (
            "мне 30 лет и я работаю программистом",
            [("Пользователю 30 лет", "age"), ("Пользователь работает программистом", "job")],
        ),
        (
            "I'm 25 years old. I work as a nurse",
            [("The user is 25 years old", "age"), ("The user works as a nurse", "job")],
        ),
        ("Я люблю зелёный чай", [("Пользователь любит зелёный чай", None)]),
        ("I really like green tea", [("The user likes green tea", None)]),
        ("Я живу в Нижнем Новгороде с женой", [("Пользователь живёт в Нижнем Новгороде", "city")]),
        ("Привет, как дела?", []),
        ("What is the weather in Berlin?", []),
    ],
)
def test_first_person_statements_become_facts(text: str, facts: list[tuple[str, str]]) -> None:
    assert [(f.text, f.key) for f in learn(text).facts] == facts


def test_the_clause_words_are_keywords_so_word_forms_recall_it() -> None:
    [city] = learn("я живу в Берлине").facts
    assert "живу" in city.keywords and "где" in city.keywords


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Пользователь живёт в Берлине", "Я переехал в Мюнхен"),
        ("The user lives in Berlin", "I moved to Munich"),
    ],
)
def test_a_new_value_for_a_key_supersedes_the_old_fact(old: str, new: str) -> None:
    known = (KnownFact(7, old, "city"), KnownFact(8, "Пользователя зовут Алекс", "name"))
    [moved] = learn(new, known).facts
    assert moved.supersedes == (7,)


def test_the_same_value_again_supersedes_nothing() -> None:
    known = (KnownFact(7, "Пользователь живёт в Берлине", "city"),)
    [again] = learn("Я живу в Берлине", known).facts
    assert again.supersedes == ()


@pytest.mark.parametrize(
    ("known", "text"),
    [
        ("The user lives in Berlin", "I no longer live in Berlin"),
        ("Пользователь живёт в Берлине", "Я больше не живу в Берлине"),
    ],
)
def test_a_withdrawn_statement_marks_the_fact_stale(known: str, text: str) -> None:
    done = learn(text, (KnownFact(3, known, "city"),))
    assert done.facts == () and [(c.id, c.stale) for c in done.changes] == [(3, True)]


def test_the_summary_rolls_within_its_limit_newest_kept() -> None:
    summary = ""
    for i in range(20):
        summary = roll_summary(summary, ((f"вопрос {i}", f"ответ {i}"),), 80)
        assert len(summary) <= 80
    assert summary.endswith("- вопрос 19 → ответ 19")
    assert roll_summary("old", (("q", "a"),), 0) == ""
    assert len(roll_summary("", (("x" * 500, "y"),), 50)) <= 50


def test_the_offline_judge_answers_the_overlap_scores() -> None:
    task = JudgeTask("faq", "q", (Candidate(1, "a", 0.75), Candidate(2, "b", 0.1)))
    verdict = offline.judge(task)
    assert verdict.scores == {1: 0.75, 2: 0.1} and verdict.offline
