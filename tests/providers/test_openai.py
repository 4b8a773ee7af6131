"""The OpenAI-compatible provider against a scripted server on loopback: what is sent, what
is recorded, fallback to offline on every kind of failure, and replay without a call."""

from __future__ import annotations

import pytest

from engine.config.models import ProviderSettings
from engine.providers import (
    Candidate,
    JudgeTask,
    KnownFact,
    MemorizeTask,
    Providers,
    make_providers,
)
from tests.llm_server import ScriptedLLM

TASK = JudgeTask(
    "faq",
    "Часы работы?",
    (Candidate(1, "Какие у вас часы работы?", 0.8), Candidate(2, "Где магазин?", 0.0)),
    instructions="Ты судья похожести вопросов.",
    model="judge-mini",
)


def live(llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch, **kw: object) -> Providers:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    settings = ProviderSettings(
        kind="openai", base_url=llm.url, model="main-model", api_key_env="TEST_LLM_KEY", **kw
    )  # type: ignore[arg-type]
    return make_providers(settings, live=False)


def test_make_providers_is_offline_unless_configured_or_live(llm: ScriptedLLM) -> None:
    assert make_providers(ProviderSettings(), live=False).live is None
    assert make_providers(ProviderSettings(base_url=llm.url), live=True).live is not None


def test_a_judge_call_sends_the_prompt_and_records_request_answer_usage(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.reply({"matches": [{"id": 1, "confidence": 0.93}, {"id": 99, "confidence": 1}]})
    verdict = live(llm, monkeypatch, max_tokens=64).judge(TASK)
    assert verdict.scores == {1: 0.93} and verdict.source == "openai"
    [sent] = llm.requests
    assert sent["model"] == "judge-mini" and sent["max_tokens"] == 64
    assert sent["messages"][0]["content"].startswith("Ты судья похожести вопросов.")
    assert "Часы работы?" in sent["messages"][1]["content"]
    assert llm.headers[0]["Authorization"] == "Bearer sk-test"
    call = verdict.call
    assert call["request"] == sent and call["usage"]["total_tokens"] == 57
    assert '"confidence": 0.93' in call["answer"]


def test_a_memorize_call_reads_facts_changes_and_summary(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.reply(
        {
            "facts": [
                {
                    "text": "The user lives in Munich",
                    "importance": 0.8,
                    "keywords": ["where"],
                    "supersedes": [4, 99],
                }
            ],
            "changes": [{"id": 5, "stale": True}],
            "summary": "x" * 50,
        }
    )
    task = MemorizeTask(
        (("I moved to Munich", "Nice!"),),
        (KnownFact(4, "The user lives in Berlin", "city"), KnownFact(5, "The user likes beer")),
        summary_max_chars=20,
        instructions="Extract facts.",
        model="mem-mini",
    )
    done = live(llm, monkeypatch).memorize(task)
    [fact] = done.facts
    assert fact.supersedes == (4,) and fact.keywords == ("where",)
    assert [(c.id, c.stale) for c in done.changes] == [(5, True)]
    assert done.summary == "x" * 20
    assert llm.requests[0]["model"] == "mem-mini"
    assert llm.requests[0]["messages"][0]["content"].startswith("Extract facts.")


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"content": "not json at all"}, "malformed answer"),
        ({"content": {"matches": [{"id": 1, "confidence": 7}]}}, "malformed answer"),
        ({"content": '{"matches": [', "finish_reason": "length"}, "truncated at max_tokens"),
        ({"status": 500}, "HTTP 500"),
        ({"body": {"hello": "world"}}, "not a chat completion"),
        ({"delay_s": 1.5}, "timeout"),
    ],
)
def test_failures_fall_back_to_offline_and_say_why(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch, reply: dict[str, object], why: str
) -> None:
    llm.reply(**reply)  # type: ignore[arg-type]
    verdict = live(llm, monkeypatch, timeout_s=0.5).judge(TASK)
    assert verdict.offline and verdict.scores == {1: 0.8, 2: 0.0}
    assert verdict.call["fallback"] == "offline" and why in verdict.call["error"]


def test_an_unreachable_server_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ProviderSettings(kind="openai", base_url="http://127.0.0.1:9/v1", timeout_s=1)
    verdict = make_providers(settings, live=False).judge(TASK)
    assert verdict.offline and "cannot reach" in verdict.call["error"]


def test_code_fences_around_the_json_are_tolerated(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.reply('```json\n{"matches": [{"id": 2, "confidence": 0.5}]}\n```')
    assert live(llm, monkeypatch).judge(TASK).scores == {2: 0.5}


def test_replay_reads_the_recorded_answer_without_calling(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.reply({"matches": [{"id": 2, "confidence": 0.66}]})
    first = live(llm, monkeypatch).judge(TASK)
    again = Providers().judge(TASK, recorded=first.call)  # offline now, no server asked
    assert again.scores == first.scores == {2: 0.66}
    assert again.call["replayed"] and len(llm.requests) == 1
    fell_back = {"provider": "openai", "fallback": "offline", "error": "timeout"}
    assert Providers().judge(TASK, recorded=fell_back).offline


def test_the_memorizer_falls_back_to_the_rules(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.reply(status=503)
    done = live(llm, monkeypatch).memorize(MemorizeTask((("My name is Alex", "Hi Alex"),)))
    assert [f.text for f in done.facts] == ["The user's name is Alex"]
    assert done.call["fallback"] == "offline" and "HTTP 503" in done.call["error"]
