"""Kind memory: every field, Russian and English, on SQLite and PostgreSQL; contradiction,
dedup, caps, stale, feedback, scope fallback, isolation between users."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import backends, llm_server
from tests.backends import hook_of
from tests.llm_server import ScriptedLLM

db_url = backends.db_url
hook_agent = backends.hook_agent
file_agent = backends.file_agent
llm = llm_server.llm

FACTS_ONLY = "{{facts}}"
T1, T2 = "2026-03-14T10:00:00+00:00", "2026-03-15T10:00:00+00:00"
SAY = {
    "ru": (
        "Меня зовут Алекс, я живу в Берлине",
        "Приятно познакомиться, Алекс!",
        "Где я живу?",
        "Пользователь живёт в Берлине",
        "Я переехал в Мюнхен",
        "Пользователь переехал в Мюнхен",
    ),
    "en": (
        "My name is Alex and I live in Berlin",
        "Nice to meet you, Alex!",
        "Where do I live?",
        "The user lives in Berlin",
        "I moved to Munich",
        "The user moved to Munich",
    ),
}


def memory(**fields: object) -> str:
    return json.dumps({"kind": "memory", "name": "mem", **fields}, ensure_ascii=False)


def view(agent, scope: str = "user:u1"):  # type: ignore[no-untyped-def]
    return hook_of(agent).store.memory_view(scope)


def live_facts(agent, scope: str = "user:u1") -> list[str]:  # type: ignore[no-untyped-def]
    return [f.text for f in hook_of(agent).store.memory_facts(scope)]


def injected(out: Any) -> str:
    return "\n".join(m["content"] for m in out.messages)


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_a_stated_fact_is_recalled_for_that_user_only(hook_agent, lang: str) -> None:  # type: ignore[no-untyped-def]
    said, reply, ask, fact, _, _ = SAY[lang]
    agent = hook_agent(memory())
    agent.after_turn(said, reply, user_id="u1", session_id="s1")
    out = agent.before_user_message(ask, user_id="u1", session_id="s2")
    assert out.messages[0]["role"] == "system" and f"- {fact}" in injected(out)
    other = agent.before_user_message(ask, user_id="u2", session_id="s1")
    assert other.messages == [] and other.notices == []


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_a_contradiction_supersedes_and_retires_the_old_fact(hook_agent, lang: str) -> None:  # type: ignore[no-untyped-def]
    said, reply, ask, old, moved, new = SAY[lang]
    agent = hook_agent(memory(inject_template=FACTS_ONLY))
    agent.after_turn(said, reply, user_id="u1")
    agent.after_turn(moved, reply, user_id="u1")
    assert injected(agent.before_user_message(ask, user_id="u1")).startswith(f"- {new} (")
    facts = {f.text: f for f in view(agent).facts}
    assert facts[old].retired and facts[old].superseded_by == facts[new].id
    assert facts[new].supersedes == (facts[old].id,)


@pytest.mark.parametrize("threshold", [0.8, 0.0])
def test_dedup_threshold(hook_agent, threshold: float) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(dedup_threshold=threshold))
    for _ in range(2):
        agent.after_turn("I really like green tea", "Green tea is a fine choice!", user_id="u1")
    assert len(live_facts(agent)) == (1 if threshold else 2)


def test_max_memories_per_scope_keeps_the_most_important(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(max_memories_per_scope=2))
    agent.after_turn("Я люблю зелёный чай", "Отличный выбор, зелёный чай!", user_id="u1")
    agent.after_turn("Меня зовут Алекс, я живу в Берлине", "Приятно познакомиться!", user_id="u1")
    assert sorted(live_facts(agent)) == ["Пользователь живёт в Берлине", "Пользователя зовут Алекс"]


@pytest.mark.parametrize(
    ("said", "withdraw", "ask"),
    [
        ("I live in Berlin", "I no longer live in Berlin", "Where do I live?"),
        ("Я живу в Берлине", "Я больше не живу в Берлине", "Где я живу?"),
    ],
)
def test_stale_facts_are_not_recalled(hook_agent, said: str, withdraw: str, ask: str) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(inject_template=FACTS_ONLY))
    agent.after_turn(said, "Noted, thank you very much!", user_id="u1")
    agent.after_turn(withdraw, "Noted, thank you very much!", user_id="u1")
    assert agent.before_user_message(ask, user_id="u1").messages == []
    assert [f.stale for f in view(agent).facts] == [True]


def test_feedback_moves_the_importance_of_the_recalled_facts(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn("Меня зовут Алекс, я живу в Берлине", "Приятно познакомиться!", user_id="u1")
    out = agent.before_user_message("Где я живу?", user_id="u1")

    def city() -> float:
        return next(f.importance for f in view(agent).facts if "Берлин" in f.text)

    assert city() == pytest.approx(0.8)
    agent.feedback(out.turn_id, "like", user_id="u1")
    assert city() == pytest.approx(0.9)
    agent.feedback(out.turn_id, "dislike", user_id="u1")
    agent.feedback(out.turn_id, "dislike", user_id="u2")  # not their turn: nothing
    assert city() == pytest.approx(0.7)
    name = next(f for f in view(agent).facts if "зовут" in f.text)
    assert name.importance == pytest.approx(0.9)  # not recalled in that turn


@pytest.mark.parametrize(
    ("scope", "key"),
    [
        ({"user_id": "u7", "session_id": "s1", "template": "t"}, "user:u7"),
        ({"session_id": "s1", "template": "t"}, "session:s1"),
        ({"template": "t"}, "template:t"),
        ({}, "process:proc"),
    ],
)
def test_scope_falls_back_user_session_template_process(hook_agent, scope, key) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn("My name is Alex", "Nice to meet you, Alex!", **scope)
    assert live_facts(agent, key) == ["The user's name is Alex"]
    assert "Alex" in injected(agent.before_user_message("What is my name?", **scope))


def test_notice_counts_the_recalled_facts_and_turns(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(notice="🧠 вспомнил: {{count}}"))
    agent.after_turn("Меня зовут Алекс, я живу в Берлине", "Приятно познакомиться!", user_id="u1")
    agent.after_turn("Какая погода завтра?", "Завтра обещают солнце и тепло.", user_id="u1")
    out = agent.before_user_message("Где я живу?", user_id="u1")
    assert out.notices == ["🧠 вспомнил: 2"]  # the fact and the turn that told it
    assert sorted(out.hooks[0].extras["injected"]) == [-1, 2]  # the city fact, turn 1
    quiet = hook_agent(memory())
    assert quiet.before_user_message("Где я живу?", user_id="u1").notices == []


def test_inject_template_placeholders(hook_agent) -> None:  # type: ignore[no-untyped-def]
    template = "F[{{facts}}] E[{{episodes}}] S[{{summaries}}] M[{{memories}}]"
    agent = hook_agent(memory(inject_template=template))
    agent.after_turn("I live in Berlin", "Berlin is a great city!", user_id="u1", time=T1)
    agent.after_turn("Green is my colour", "Green is a calm colour.", user_id="u1", time=T2)
    text = injected(agent.before_user_message("Where do I live?", user_id="u1"))
    fact = "- The user lives in Berlin (2026-03-14)"
    turn = "- 2026-03-14 user: I live in Berlin | assistant: Berlin is a great city!"
    line = "- 2026-03-15: Green is my colour → Green is a calm colour."  # the other is told
    assert text.startswith(f"F[{fact}] E[{turn}] S[{line}] M[Facts:\n{fact}\n\n")
    assert f"conversations:\n{turn}\n\nSummary of earlier conversations:\n{line}]" in text


def test_summary_is_per_user_within_summary_max_chars(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(store={"summary_max_chars": 60}))
    for i in range(4):
        agent.after_turn(
            f"Question number {i} here",
            f"A long enough answer number {i}",
            user_id="u1",
            session_id=f"s{i}",
        )
    summary = view(agent).summary
    assert 0 < len(summary) <= 60 and "number 3" in summary
    off = hook_agent(memory(store={"summary_max_chars": 0}))
    off.after_turn("I live in Berlin", "Berlin is a great city!", user_id="u9")
    assert view(off, "user:u9").summary == "" and view(off, "user:u9").facts


def test_memorize_every_runs_the_memorizer_every_n_turns(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(store={"memorize_every": 2}))
    agent.after_turn("My name is Alex", "Nice to meet you, Alex!", user_id="u1")
    assert live_facts(agent) == []
    agent.after_turn("I live in Berlin", "Berlin is a great city!", user_id="u1")
    assert sorted(live_facts(agent)) == ["The user lives in Berlin", "The user's name is Alex"]


def test_max_episodes_per_scope(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(store={"max_episodes_per_scope": 2}))
    for i in range(3):
        agent.after_turn(f"Вопрос номер {i}", "Достаточно длинный ответ на вопрос", user_id="u1")
    assert [e.question for e in view(agent).episodes] == ["Вопрос номер 1", "Вопрос номер 2"]


@pytest.mark.parametrize(
    ("store", "question", "answer"),
    [
        ({"enabled": False}, "My name is Alex", "Nice to meet you, Alex!"),
        ({"min_question_chars": 40}, "Меня зовут Алекс", "Приятно познакомиться, Алекс!"),
        ({"min_answer_chars": 40}, "Меня зовут Алекс", "Приятно познакомиться, Алекс!"),
    ],
)
def test_store_thresholds_skip_memorizing(hook_agent, store, question, answer) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(store=store))
    out = agent.after_turn(question, answer, user_id="u1")
    assert view(agent).empty
    assert out.hooks[0].logs[0].startswith("not memorized")


def test_the_default_min_answer_chars_is_20(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn("My name is Alex", "Hi Alex", user_id="u1")
    assert view(agent).empty


def judge_or_memorize(judge: dict[str, Any], learned: dict[str, Any]):  # type: ignore[no-untyped-def]
    def answer(request: dict[str, Any]) -> Any:
        return learned if "known_facts" in request["messages"][1]["content"] else judge

    return answer


def test_a_live_judge_and_memorizer_get_their_prompts_and_models(
    hook_agent, llm: ScriptedLLM
) -> None:  # type: ignore[no-untyped-def]
    llm.answer = judge_or_memorize(
        {"matches": [{"id": 1, "confidence": 0.55}]},
        {
            "facts": [
                {"text": "The user is vegetarian", "importance": 0.9, "keywords": ["food", "eat"]}
            ],
            "summary": "Vegetarian user who never eats meat.",
        },
    )
    provider = {"kind": "openai", "base_url": llm.url, "timeout_s": 2}
    agent = hook_agent(
        memory(
            judge_instructions="Pick facts.",
            judge_model="judge-m",
            min_confidence=0.5,
            store={"extractor_instructions": "Extract facts.", "memorizer_model": "mem-m"},
        ),
        provider=provider,
    )
    done = agent.after_turn("I never eat meat", "Noted, no meat for you then!", user_id="u1")
    assert done.hooks[0].extras["memorizer"]["usage"]["total_tokens"] == 57
    out = agent.before_user_message("What should I eat?", user_id="u1")
    assert "- The user is vegetarian" in injected(out)
    assert "Vegetarian user who never eats meat." in injected(out)
    mem_call, judge_call = llm.requests
    assert mem_call["model"] == "mem-m" and judge_call["model"] == "judge-m"
    assert mem_call["messages"][0]["content"].startswith("Extract facts.")
    assert judge_call["messages"][0]["content"].startswith("Pick facts.")
    strict = hook_agent(memory(min_confidence=0.6), provider=provider)
    assert "vegetarian" not in injected(strict.before_user_message("What to eat?", user_id="u1"))


@pytest.mark.parametrize("backfill", [True, False])
def test_backfill_lets_the_judge_see_facts_with_weak_overlap(
    hook_agent, llm: ScriptedLLM, backfill: bool
) -> None:  # type: ignore[no-untyped-def]
    offline = hook_agent(memory())
    offline.after_turn("I have a dog named Rex", "Rex is a lovely name for a dog!", user_id="u1")
    llm.answer = lambda request: {"matches": [{"id": 1, "confidence": 0.9}]}
    agent = hook_agent(memory(backfill=backfill), provider={"kind": "openai", "base_url": llm.url})
    out = agent.before_user_message("Any ideas for the weekend?", user_id="u1")
    assert ("- The user has dog named Rex" in injected(out)) is backfill
    assert len(out.hooks[0].extras["candidates"]) == (1 if backfill else 0)


def test_db_path_puts_the_memory_in_that_file(file_agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = file_agent(memory(db_path="data/memory_test.db"))
    agent.after_turn("My name is Alex", "Nice to meet you, Alex!", user_id="u1")
    assert (tmp_path / "data/memory_test.db").exists() and live_facts(agent)


def test_db_url_puts_the_memory_in_that_database(file_agent, db_url: str) -> None:  # type: ignore[no-untyped-def]
    if "://" not in db_url:
        Path(db_url).parent.mkdir(parents=True, exist_ok=True)
        db_url = f"sqlite:///{db_url}"
    agent = file_agent(memory(db_url=db_url))
    agent.after_turn("My name is Alex", "Nice to meet you, Alex!", user_id="u1")
    assert hook_of(agent).store.url.endswith(db_url.split("://", 1)[1])
    assert live_facts(agent) == ["The user's name is Alex"]
