"""Kind escalate: off-topic keywords (RU/EN word forms), suppression, unhelpful answers,
min_answer_chars, reminders on the next turn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.runtime import Agent, Engine

CONTACT = "Напишите нам: ✉️ help@example.com"


def make(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], **fields: Any
) -> Agent:
    lines = [
        f"{k}: {v!r}" if isinstance(v, (bool, int)) else f"{k}: {v}" for k, v in fields.items()
    ]
    text = 'kind: escalate\nname: esc\nmessage: "' + CONTACT + '"\n' + "\n".join(lines) + "\n"
    text = text.replace("True", "true").replace("False", "false")
    root = project({"agents/a/agent.yaml": "hooks: [esc]\n", "agents/a/hooks/esc.yaml": text})
    return load(root).agent("a")


@pytest.mark.parametrize(
    "question",
    [
        "Где моя доставка?",  # the keyword itself
        "Сколько стоит доставку?",  # another word form
        "Когда будет ДОСТАВКОЙ?",  # case and form
        "Do you sell iPhones?",  # English plural
        "iphone screen broken",
    ],
)
def test_off_topic_keywords_match_word_forms(project, load, question: str) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, off_topic_keywords="[iphone, доставка]", suppress_on_off_topic=True)
    out = agent.before_user_message(question, user_id="u1")
    assert out.answer == CONTACT and out.short_circuit


@pytest.mark.parametrize(
    "question", ["Как оформить возврат?", "What is your return policy?", "phone case"]
)
def test_on_topic_questions_pass(project, load, question: str) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, off_topic_keywords="[iphone, доставка]", suppress_on_off_topic=True)
    out = agent.before_user_message(question, user_id="u1")
    assert out.answer is None and not out.changed


def test_without_suppression_the_contact_is_appended_to_the_answer(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, off_topic_keywords="[доставка]", suppress_on_off_topic=False)
    assert agent.before_user_message("Где доставка?", user_id="u1").answer is None
    out = agent.before_assistant_message(
        "Где доставка?", "Мы этим не занимаемся, увы.", user_id="u1"
    )
    assert out.answer == "Мы этим не занимаемся, увы.\n\n" + CONTACT


@pytest.mark.parametrize(
    "answer",
    [
        "К сожалению, я не нашёл ответа на ваш вопрос в базе.",
        "НЕТ ИНФОРМАЦИИ по этому поводу, извините пожалуйста.",
        "Sorry, I could not find anything about that, unfortunately.",
    ],
)
def test_empty_answer_patterns_append_the_contact(project, load, answer: str) -> None:  # type: ignore[no-untyped-def]
    agent = make(
        project, load, empty_answer_patterns='["не нашёл", "нет информации", "could not find"]'
    )
    out = agent.before_assistant_message("q", answer, user_id="u1")
    assert out.answer == answer + "\n\n" + CONTACT
    assert out.appended == [CONTACT]


def test_min_answer_chars(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, min_answer_chars=30)
    assert agent.before_assistant_message("q", "Нет.", user_id="u1").appended == [CONTACT]
    long = "Возврат оформляется в личном кабинете за пять минут."
    assert agent.before_assistant_message("q", long, user_id="u1").answer == long


def test_min_answer_chars_zero_is_off(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, min_answer_chars=0)
    assert agent.before_assistant_message("q", "", user_id="u1").appended == []


def test_remind_next_turn_reminds_once_in_the_same_scope(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, min_answer_chars=10, remind_next_turn=True)
    good = "Вот подробный ответ на ваш вопрос."
    agent.before_user_message("q1", user_id="u1")
    assert agent.before_assistant_message("q1", "нет", user_id="u1").appended == [CONTACT]
    agent.before_user_message("q2", user_id="u1")
    agent.before_user_message("q2", user_id="u2")
    assert agent.before_assistant_message("q2", good, user_id="u2").appended == []
    out = agent.before_assistant_message("q2", good, user_id="u1")
    assert out.appended == [CONTACT] and out.notices == ["escalation reminder"]
    agent.before_user_message("q3", user_id="u1")
    assert agent.before_assistant_message("q3", good, user_id="u1").appended == []


def test_without_remind_next_turn_there_is_no_reminder(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, min_answer_chars=10)
    agent.before_user_message("q1", user_id="u1")
    agent.before_assistant_message("q1", "нет", user_id="u1")
    agent.before_user_message("q2", user_id="u1")
    assert agent.before_assistant_message("q2", "Подробный ответ тут.", user_id="u1").appended == []


def test_the_contact_is_not_appended_twice(project, load) -> None:  # type: ignore[no-untyped-def]
    agent = make(project, load, min_answer_chars=1000)
    answer = "Коротко. " + CONTACT
    assert agent.before_assistant_message("q", answer, user_id="u1").answer == answer
