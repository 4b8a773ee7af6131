"""The memory hook's injected message: recalled facts and turns and summary lines, best
first, within a budget of characters."""

from __future__ import annotations

from collections.abc import Callable

from engine.store import Episode, Fact
from engine.text import content_tokens, fill, terms, tokens

Recalled = Fact | Episode
"""What a recall finds: a remembered fact, or a whole remembered turn."""

EPISODE_SIDE_CHARS = 400
"""Characters of each side of a recalled turn shown (cut at a word, marked with …)."""
NOTHING_NEW = 0.9
"""An item whose content words are already this much in the message is left out."""


def _day(time: str) -> str:
    return time[:10]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _line(found: Recalled) -> str:
    if isinstance(found, Fact):
        day = _day(found.created_at or found.updated_at)
        return f"- {found.text} ({day})" if day else f"- {found.text}"
    said = _clip(found.question, EPISODE_SIDE_CHARS)
    answered = _clip(found.answer, EPISODE_SIDE_CHARS)
    return f"- {_day(found.time)} user: {said} | assistant: {answered}"


def _sections(facts: list[str], episodes: list[str], summary: list[str]) -> dict[str, str]:
    listed = {
        "facts": "\n".join(facts),
        "episodes": "\n".join(episodes),
        "summaries": "\n".join(summary),
    }
    headed = [
        f"{heading}\n{listed[name]}"
        for name, heading in (
            ("facts", "Facts:"),
            ("episodes", "From earlier conversations:"),
            ("summaries", "Summary of earlier conversations:"),
        )
        if listed[name]
    ]
    return {**listed, "memories": "\n\n".join(headed)}


def _adds_something(line: str, message: str) -> bool:
    words = set(content_tokens(line))
    if not words:
        return False
    known = set(tokens(message))
    return len(words & known) / len(words) < NOTHING_NEW


def render(
    template: str,
    found: list[Recalled],
    summary: str,
    *,
    budget: int,
    asked: set[str] | None = None,
) -> tuple[str, list[Recalled]]:
    """The injected message and what went into it.

    ``{{facts}}`` lists facts, ``{{episodes}}`` whole turns (both sides, with their date),
    ``{{summaries}}`` lines of the rolling summary, ``{{memories}}`` all three with headings.
    ``found`` goes in best first while the whole message stays within ``budget`` characters
    (an item that adds no new words is skipped); then the summary's lines, those sharing
    terms with the question first, then the newest, shown in their order (with nothing else
    recalled, only when a line shares a term). Nothing to show: an empty message.
    """
    facts: list[str] = []
    episodes: list[str] = []
    shown: list[Recalled] = []

    def message(lines: list[str]) -> str:
        return fill(template, **_sections(facts, episodes, lines)).strip()

    for item in found:
        line = _line(item)
        if not _adds_something(line, "\n".join(facts + episodes)):
            continue
        into = facts if isinstance(item, Fact) else episodes
        into.append(line)
        if len(message([])) > budget:
            into.pop()
            continue
        shown.append(item)
    shows_summary = "{{summaries}}" in template or "{{memories}}" in template
    told = "\n".join(facts + episodes)
    lines = _summary_lines(summary, asked or set(), message, budget, told) if shows_summary else []
    if not shown and not any(asked and asked & terms(line) for line in lines):
        lines = []  # a summary alone goes in only when it speaks of the question
    if not (shown or lines):
        return "", []
    return message(lines), shown


def _summary_lines(
    summary: str, asked: set[str], message: Callable[[list[str]], str], budget: int, told: str
) -> list[str]:
    lines = [line for line in summary.splitlines() if line.strip() and _adds_something(line, told)]
    order = sorted(
        range(len(lines)), key=lambda i: (len(asked & terms(lines[i])) > 0, i), reverse=True
    )
    kept: list[int] = []
    for i in order:
        trial = sorted([*kept, i])
        if len(message([lines[j] for j in trial])) <= budget:
            kept = trial
    return [lines[i] for i in kept]
