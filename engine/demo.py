"""The demo: a short scripted conversation through an agent, offline, showing each hook fire."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.outcome import Outcome
from engine.runtime import Agent

# What the offline stand-in for the LLM answers, by the question it is asked.
GREETING = "Привет! Меня зовут Алекс, я живу в Берлине."
SHIPPING = "How long does shipping to Berlin take?"
CANNED = {
    GREETING: "Приятно познакомиться, Алекс! Чем могу помочь с заказом?",
    SHIPPING: ("Shipping to Berlin takes 3 to 5 working days; express delivery takes 1 to 2 days."),
    "Can you clean up my old order exports?": "I could not find",
    "Где я живу?": "Я пока не знаю, где вы живёте. Расскажете?",
    "How long does shipping to Berlin usually take?": (
        "Shipping to Berlin takes 3 to 5 working days."
    ),
}


@dataclass
class Turn:
    """One user turn of the demo: the question, and tools the stand-in LLM calls."""

    user: str
    question: str
    tools: list[tuple[str, dict[str, Any], Any]] = field(default_factory=list)


SCRIPT = [
    Turn("alex", "Привет! Меня зовут Алекс, я живу в Берлине."),
    Turn("alex", "How long does shipping to Berlin take?"),
    Turn("alex", "Где моя доставка iPhone?"),
    Turn(
        "alex",
        "Can you clean up my old order exports?",
        tools=[
            ("delete_file", {"path": "exports/2024.csv"}, None),
            ("shell", {"command": "rm -rf exports/"}, None),
            (
                "read_file",
                {"path": "exports/config.env"},
                "API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\nregion=eu",
            ),
        ],
    ),
    Turn("alex", "Где я живу?"),
    Turn("maria", "Где я живу?"),
    Turn("maria", "How long does shipping to Berlin usually take?"),
]


START = datetime(2026, 3, 14, 10, 0, tzinfo=UTC)
"""The demo's clock: turn n happens n minutes after this, so every run records the same."""
REMEMBERED = {"Где я живу?": ("Берлин", "Вы живёте в Берлине.")}
"""Questions the stand-in answers from what was injected: (a word to find, the answer)."""


def offline_answer(question: str, context: str = "") -> str:
    """The stand-in LLM: a canned answer, or one taken from the injected ``context`` (what
    memory recalled for this user) when it holds what the question asks."""
    word, answer = REMEMBERED.get(question, ("", ""))
    if word and word in context:
        return answer
    return CANNED.get(question, "Let me check that for you.")


def play(agent: Agent, say: Callable[[str], None] = print) -> list[Outcome]:
    """Play SCRIPT through ``agent``; print what each point decided; return every outcome."""
    outcomes: list[Outcome] = []

    def show(title: str, out: Outcome) -> Outcome:
        from engine.cli.render import outcome_lines

        say(f"\n--- {title}")
        say("\n".join(outcome_lines(out)))
        outcomes.append(out)
        return out

    for n, turn in enumerate(SCRIPT, 1):
        scope: dict[str, Any] = {
            "user_id": turn.user,
            "session_id": f"{turn.user}-s1",
            "time": (START + timedelta(minutes=n)).isoformat(),
        }
        say(f"\n===== turn {n}: {turn.user} says {turn.question!r}")
        first = show("user message", agent.before_user_message(turn.question, **scope))
        scope["turn_id"] = first.turn_id
        if first.blocked:
            continue
        question = first.question or turn.question
        if first.answer is not None:
            answer = first.answer
        else:
            show(
                "LLM call",
                agent.before_call(
                    "You are a shop assistant.",
                    [{"role": "user", "content": question}],
                    tools=["delete_file", "shell", "read_file"],
                    **scope,
                ),
            )
            for name, data, result in turn.tools:
                d = show(f"tool {name}", agent.tool_call(name, data, **scope))
                if not d.blocked and result is not None:
                    show(f"tool result {name}", agent.tool_result(name, d.input, result, **scope))
            context = "\n".join(str(m.get("content", "")) for m in first.messages)
            answer = offline_answer(question, context)
            shown = show("answer", agent.before_assistant_message(question, answer, **scope))
            answer = shown.answer or answer
        show("turn ended", agent.after_turn(question, answer, **scope))
        if n == 1:
            show(
                "feedback",
                agent.feedback(str(first.turn_id), "like", user_id=turn.user, time=scope["time"]),
            )
    end = (START + timedelta(minutes=len(SCRIPT) + 1)).isoformat()
    show("loop ended", agent.after_loop("job_done", user_id="alex", time=end))
    return outcomes
