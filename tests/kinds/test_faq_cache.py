"""Kind faq_cache: every field, Russian and English, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import backends, llm_server
from tests.backends import hook_of
from tests.llm_server import ScriptedLLM

db_url = backends.db_url
hook_agent = backends.hook_agent
file_agent = backends.file_agent
llm = llm_server.llm

PAIRS = {
    "ru": (
        "Какие у вас часы работы?",
        "Мы работаем с 9 до 18 без выходных.",
        "Часы работы у вас какие?",
        "Где купить слона?",
    ),
    "en": (
        "What are your opening hours?",
        "We are open from 9 to 6 every day.",
        "Your opening hours, please?",
        "Where can I buy an elephant?",
    ),
}


def faq(**fields: object) -> str:
    base = {"kind": "faq_cache", "name": "faq"}
    return json.dumps({**base, **fields}, ensure_ascii=False)


def count(agent) -> int:  # type: ignore[no-untyped-def]
    return int(hook_of(agent).store.faq_count("a:faq"))


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_a_similar_question_is_answered_from_the_cache(hook_agent, lang: str) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, other = PAIRS[lang]
    agent = hook_agent(faq(hit_notice="⚡ Отвечено из кэша FAQ"))
    agent.after_turn(question, answer, user_id="u1")
    out = agent.before_user_message(similar, user_id="u2")
    assert out.answer == answer and out.short_circuit
    assert out.notices == ["⚡ Отвечено из кэша FAQ"]
    assert agent.before_user_message(other, user_id="u2").answer is None


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_without_short_circuit_the_answer_is_a_hint(hook_agent, lang: str) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS[lang]
    agent = hook_agent(
        faq(
            short_circuit=False,
            hit_notice="cached",
            hint_template="Подсказка — {{question}} => {{answer}}",
        )
    )
    agent.after_turn(question, answer)
    out = agent.before_user_message(similar)
    assert out.answer is None and out.notices == []
    assert out.messages == [{"role": "system", "content": f"Подсказка — {question} => {answer}"}]


def test_an_empty_hint_template_uses_the_default_hint(hook_agent) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS["en"]
    agent = hook_agent(faq(short_circuit=False))
    agent.after_turn(question, answer)
    [message] = agent.before_user_message(similar).messages
    assert question in message["content"] and answer in message["content"]


def test_fallback_score_is_the_bar_without_a_judge(hook_agent) -> None:  # type: ignore[no-untyped-def]
    question, answer, _, _ = PAIRS["ru"]
    strict = hook_agent(faq(fallback_score=0.95))
    strict.after_turn(question, answer)
    assert strict.before_user_message("Часы работы магазина?").answer is None
    assert strict.before_user_message("какие у вас ЧАСЫ работы").answer == answer
    loose = hook_agent(faq(fallback_score=0.5))
    assert loose.before_user_message("Часы работы магазина?").answer == answer


def test_max_candidates_bounds_what_the_judge_sees(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(faq(max_candidates=2))
    for i in range(5):
        agent.after_turn(f"delivery question number {i}", f"delivery answer {i}")
    out = agent.before_user_message("delivery question")
    assert len(out.hooks[0].extras["candidates"]) == 2


def test_min_confidence_is_the_bar_for_the_judge(hook_agent, llm: ScriptedLLM) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS["en"]
    provider = {"kind": "openai", "base_url": llm.url, "timeout_s": 2}
    llm.answer = lambda req: {"matches": [{"id": 1, "confidence": 0.65}]}
    high = hook_agent(
        faq(min_confidence=0.7, judge_instructions="Judge strictly.", judge_model="tiny-judge"),
        provider=provider,
    )
    high.after_turn(question, answer)
    out = high.before_user_message(similar)
    assert out.answer is None
    call = out.hooks[0].extras["judge"]
    assert call["usage"]["total_tokens"] == 57 and call["model"] == "tiny-judge"
    assert llm.requests[0]["messages"][0]["content"].startswith("Judge strictly.")
    low = hook_agent(faq(min_confidence=0.6), provider=provider)
    assert low.before_user_message(similar).answer == answer


def test_a_failing_judge_falls_back_to_overlap_and_is_recorded(
    hook_agent, llm: ScriptedLLM
) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS["ru"]
    agent = hook_agent(faq(), provider={"kind": "openai", "base_url": llm.url})
    agent.after_turn(question, answer)
    out = agent.before_user_message(similar)  # the script is empty: HTTP 500
    assert out.answer == answer
    assert out.hooks[0].extras["judge"]["fallback"] == "offline"


def test_replay_uses_the_recorded_judge_answer(hook_agent, llm: ScriptedLLM) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS["en"]
    llm.reply({"matches": [{"id": 1, "confidence": 0.9}]})
    agent = hook_agent(faq(), provider={"kind": "openai", "base_url": llm.url})
    agent.after_turn(question, answer)
    first = agent.before_user_message(similar)
    again = agent.evaluate(
        "before_user_message", {"question": similar}, replay={"faq": first.hooks[0].extras}
    )
    assert again.answer == first.answer == answer and len(llm.requests) == 1


@pytest.mark.parametrize(
    ("fields", "question", "answer", "stored"),
    [
        ({}, "Do you ship to Spain?", "Yes, in 3 to 5 days.", 1),
        ({"store": {"enabled": False}}, "Do you ship to Spain?", "Yes, in 3 to 5 days.", 0),
        ({"store": {"min_question_chars": 30}}, "Доставка в Испанию?", "Да, за 3–5 дней.", 0),
        ({"store": {"min_answer_chars": 30}}, "Доставка в Испанию?", "Да, за 3–5 дней.", 0),
        ({"store": {"min_question_chars": 5, "min_answer_chars": 5}}, "Доставка?", "Да, есть.", 1),
    ],
)
def test_store_thresholds_decide_what_is_kept(hook_agent, fields, question, answer, stored) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(faq(**fields))
    agent.after_turn(question, answer)
    assert count(agent) == stored


def test_a_cache_hit_is_not_stored_again(hook_agent) -> None:  # type: ignore[no-untyped-def]
    question, answer, similar, _ = PAIRS["ru"]
    agent = hook_agent(faq())
    agent.after_turn(question, answer)
    out = agent.before_user_message(similar)
    agent.after_turn(similar, out.answer, turn_id=out.turn_id)
    agent.after_turn("Часы работы у вас такие?", answer)  # no turn id: the answer tells
    assert count(agent) == 1


def test_db_path_puts_the_pairs_in_that_file(file_agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = file_agent(faq(db_path="data/faq_test.db"))
    agent.after_turn(*PAIRS["en"][:2])
    assert (tmp_path / "data/faq_test.db").exists() and count(agent) == 1
