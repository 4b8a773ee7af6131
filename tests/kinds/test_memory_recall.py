"""Recall over everything the memory keeps: facts and whole turns (both sides, dated),
ranked by the full-text engine, filled to ``recall_budget_chars``; function words never
match; replay decides on the recorded candidates; forgetting empties the index."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.kinds.recall_message import render
from engine.providers.extract import events
from engine.replay import load_records, replay
from engine.store import Episode, Fact
from tests import backends
from tests.backends import hook_of

db_url = backends.db_url
hook_agent = backends.hook_agent

DAY1, DAY2 = "2026-02-03T09:00:00+00:00", "2026-04-20T18:30:00+00:00"


def memory(**fields: object) -> str:
    return json.dumps({"kind": "memory", "name": "mem", **fields}, ensure_ascii=False)


def injected(out: Any) -> str:
    return "\n".join(m["content"] for m in out.messages)


TOPICS = ["sales", "hiring", "budget", "travel", "pricing"]
TOPICS += ["churn", "support", "onboarding", "security", "legal"]
LUNA, REX = "Luna is a lovely name for a cat!", "Rex is a lovely name for a dog!"


def chatter(agent: Any, n: int, user: str = "u1") -> None:
    for i in range(n):
        a, b = TOPICS[i % 10], TOPICS[(i // 10 + i + 1) % 10]
        agent.after_turn(
            f"Can you rewrite the {a} paragraph {i} of the quarterly report?",
            f"Here is the {a} paragraph {i}, shorter, with the {b} numbers moved up.",
            user_id=user,
            time=DAY1,
        )


def test_what_the_assistant_said_is_recalled_with_its_date(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn(
        "Suggest a novel for my flight.",
        "I'd recommend Piranesi by Susanna Clarke; it is short.",
        user_id="u1",
        time=DAY2,
    )
    chatter(agent, 30)
    text = injected(agent.before_user_message("Which novel did you suggest?", user_id="u1"))
    assert "Piranesi by Susanna Clarke" in text and "2026-04-20" in text


def test_when_questions_get_the_date_of_the_turn(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    said = "Мы взяли из приюта собаку по кличке Бим!"
    agent.after_turn(said, "Поздравляю, отличная кличка!", user_id="u1", time=DAY1)
    chatter(agent, 10)
    text = injected(agent.before_user_message("Когда мы взяли собаку?", user_id="u1"))
    assert "Бим" in text and "2026-02-03" in text


def test_the_injection_stays_within_recall_budget_chars(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory(recall_budget_chars=600))
    chatter(agent, 40)
    out = agent.before_user_message("What about the quarterly report paragraph?", user_id="u1")
    assert 400 < len(injected(out)) <= 600
    assert len(out.hooks[0].extras["injected"]) >= 2
    wide = hook_agent(memory(recall_budget_chars=3000))
    chatter(wide, 40)
    assert len(injected(wide.before_user_message("The quarterly report?", user_id="u1"))) > 600


@pytest.mark.parametrize(
    "question", ["When did I do it?", "Who was it, where and why?", "Кто, где и когда это был?"]
)
def test_function_words_alone_recall_nothing(hook_agent, question: str) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn(
        "When I was young I did what I could, who knows why", "That is how it goes.", user_id="u1"
    )
    agent.after_turn("Кто знает, где и когда я был", "Никто не знает.", user_id="u1")
    assert agent.before_user_message(question, user_id="u1").messages == []


def test_replay_decides_on_the_recorded_candidates(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn("We adopted a cat named Luna today", LUNA, user_id="u1")
    first = agent.before_user_message("What is our cat called?", user_id="u1")
    assert "Luna" in injected(first)
    kinds = {c["kind"] for c in first.hooks[0].extras["candidates"]}
    assert kinds == {"fact", "episode"}
    agent.engine.flush()
    hook_of(agent).store.memory_forget("user:u1")  # what is remembered now: nothing
    records = [r for r in load_records(agent.engine) if r.point == "before_user_message"]
    report = replay(agent.engine, records)
    assert report.total == 1 and report.same == 1 and report.differences == []


def test_forgetting_a_scope_removes_its_index_rows(hook_agent) -> None:  # type: ignore[no-untyped-def]
    agent = hook_agent(memory())
    agent.after_turn("We adopted a cat named Luna today", LUNA, user_id="u1")
    agent.after_turn("We adopted a dog named Rex today", REX, user_id="u2")
    store = hook_of(agent).store
    assert store.memory_recall("user:u1", ["luna"], limit=10)
    with store.engine.connect() as conn:
        before = _index_rows(conn, store)
    gone = store.memory_forget("user:u1")
    with store.engine.connect() as conn:
        after = _index_rows(conn, store)
    assert before - after == 2  # the event fact and the turn
    assert gone == 2 + 3  # and the fact, the turn, the summary themselves
    assert store.memory_recall("user:u1", ["luna", "adopt"], limit=10) == []
    assert store.memory_recall("user:u2", ["rex"], limit=10)


def _index_rows(conn: Any, store: Any) -> int:
    import sqlalchemy as sa

    return int(conn.execute(sa.text("SELECT count(*) FROM memory_index")).scalar())


def test_events_are_kept_whole_with_their_speaker() -> None:
    said = "Just back from Porto, Jake and I did a food tour there. The weather was fine."
    assert [f.text for f in events(said, "user")] == [
        "user: Just back from Porto, Jake and I did a food tour there."
    ]
    advice = "Make risotto: cook the mushrooms with garlic. It takes twenty minutes."
    assert [f.text for f in events(advice, "assistant")] == [
        "assistant: Make risotto: cook the mushrooms with garlic."
    ]
    assert events("На выходных я ездил в Казань с братом.", "user")[0].text.endswith("братом.")


def test_render_fills_best_first_and_skips_what_adds_nothing() -> None:
    fact = Fact(1, "user:u1", "user: We adopted a dog named Rex", 0.5, created_at=DAY1)
    turn = Episode(3, None, "We adopted a dog named Rex", "Congratulations on Rex!", DAY1)
    other = Episode(4, None, "Long " * 200, "answer " * 200, DAY2)
    text, shown = render("{{memories}}", [fact, turn, other], "", budget=300)
    assert shown == [fact, turn] and len(text) <= 300
    assert "- user: We adopted a dog named Rex (2026-02-03)" in text
    assert (
        "- 2026-02-03 user: We adopted a dog named Rex | assistant: Congratulations on Rex!" in text
    )
    again, shown_again = render("{{facts}}", [fact, fact], "", budget=300)
    assert shown_again == [fact] and again.count("Rex") == 1
