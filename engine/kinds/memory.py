"""Kind ``memory``: long-term memory per user that survives sessions.

Before a message it recalls facts (stemmed overlap, pre-ranked relevance → importance →
recency), lets the judge pick, and injects them with the rolling summary. After a turn the
memorizer learns facts, corrects or retires old ones and rolls the summary. Feedback on a turn
moves the importance of the facts that turn recalled. Everything is keyed by the event's scope
(user → session → template → process), so one user's memory never reaches another's turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.config.loader import HookSpec
from engine.config.models import MemoryConfig
from engine.kinds import BuildEnv
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook, keep_books
from engine.points import Point
from engine.providers import (
    Candidate,
    Judgement,
    JudgeTask,
    KnownFact,
    Memorization,
    MemorizeTask,
    Providers,
)
from engine.store import Fact, FactEdit, MemoryUpdate, NewFact, Store
from engine.text import coverage, fill, terms

DEFAULT_TEMPLATE = (
    "What you remember about this user (use it when it helps; do not recite "
    "it unasked):\n{{memories}}"
)
WEAK_OVERLAP = 0.5
"""With ``backfill: false``, candidates covering less of the question than this are skipped."""
KNOWN_SHOWN = 30
"""Stored facts related to a turn that the memorizer is shown (besides every keyed fact)."""
LIKE, DISLIKE = 0.1, -0.2
"""Importance change of the recalled facts on feedback: a dislike weighs more than a like."""


@dataclass
class MemoryHook(SpecHook):
    """Recall before a message, memorize after a turn, learn from feedback."""

    config: MemoryConfig
    store: Store
    providers: Callable[[], Providers]
    points = frozenset({Point.BEFORE_USER_MESSAGE, Point.AFTER_TURN, Point.FEEDBACK})
    blocks = True
    """It waits on the store and may ask an LLM: the async driver runs it in a thread."""

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        if point is Point.BEFORE_USER_MESSAGE:
            return self.recall(event, ctx)
        if point is Point.AFTER_TURN:
            self.memorize(event, ctx)
        else:
            self.feedback(event, ctx)
        return None

    # -- before_user_message ---------------------------------------------------------------

    def recall(self, event: dict[str, Any], ctx: HookContext) -> Any:
        question, scope = event["question"], ctx.scope_key
        picked = self._pick(question, ctx)
        summary = self._summary(scope, ctx)
        template = self.config.inject_template or DEFAULT_TEMPLATE
        if picked and event.get("turn_id") and ctx.replay is None:
            ids = [f.id for f in picked]
            keep_books(
                ctx,
                "noting the recalled facts",
                lambda: self.store.memory_note_recall(scope, event["turn_id"], ids, event["time"]),
            )
        if not picked and not (summary and _shows_summary(template)):
            return None
        change: dict[str, Any] = {
            "messages": [{"role": "system", "content": render(template, picked, summary)}]
        }
        if self.config.notice and picked:
            change["notice"] = fill(self.config.notice, count=str(len(picked)))
        return change

    def _summary(self, scope: str, ctx: HookContext) -> str:
        """The rolling summary; recorded, and taken from the record on replay."""
        if ctx.replay is not None:
            return str(ctx.replay.get("summary", ""))
        summary = self.store.memory_summary(scope)
        if summary:
            ctx.extras["summary"] = summary
        return summary

    def _facts(self, asked: set[str], ctx: HookContext) -> list[Fact]:
        """The stored facts a recall considers. A replay takes them from the record (the
        candidates the judge saw): it decides on what was remembered then, not now."""
        if ctx.replay is not None:
            return [
                Fact(
                    c["id"],
                    ctx.scope_key,
                    c["text"],
                    c["importance"],
                    terms=frozenset(c["terms"]),
                    updated_at=c["updated_at"],
                )
                for c in ctx.replay.get("candidates", [])
            ]
        return self.store.memory_candidates(
            ctx.scope_key, asked, limit=self.config.max_candidates, backfill=self.config.backfill
        )

    def _pick(self, question: str, ctx: HookContext) -> list[Fact]:
        asked = terms(question)
        facts = self._facts(asked, ctx)
        if not self.config.backfill:
            facts = [f for f in facts if coverage(asked, f.terms) >= WEAK_OVERLAP]
        verdict = self._judge(question, asked, facts, ctx)
        bar = self.config.min_confidence
        scored = [(verdict.scores.get(f.id, 0.0), f) for f in facts]
        picked = [f for score, f in scored if score >= bar and score > 0]
        ctx.extras["picked"] = [f.id for f in picked]
        return picked

    def _judge(
        self, question: str, asked: set[str], facts: list[Fact], ctx: HookContext
    ) -> Judgement:
        candidates = tuple(Candidate(f.id, f.text, coverage(asked, f.terms)) for f in facts)
        ctx.extras["candidates"] = [
            {
                "id": f.id,
                "text": f.text,
                "overlap": round(c.fallback, 4),
                "importance": f.importance,
                "updated_at": f.updated_at,
                "terms": sorted(f.terms),
            }
            for f, c in zip(facts, candidates, strict=True)
        ]
        task = JudgeTask(
            "memory", question, candidates, self.config.judge_instructions, self.config.judge_model
        )
        verdict = self.providers().judge(task, recorded=(ctx.replay or {}).get("judge"))
        ctx.extras["judge"] = verdict.call
        return verdict

    # -- after_turn ------------------------------------------------------------------------

    def memorize(self, event: dict[str, Any], ctx: HookContext) -> None:
        why_not = self._why_not_memorize(event, ctx)
        if why_not:
            ctx.logs.append(f"not memorized: {why_not}")
            return
        rules, scope, time = self.config.store, ctx.scope_key, event["time"]
        question, answer = event["question"].strip(), event["answer"].strip()
        self.store.memory_add_episode(
            scope,
            turn_id=event.get("turn_id"),
            question=question,
            answer=answer,
            time=time,
            keep=rules.max_episodes_per_scope,
        )
        turns = self.store.memory_count_turn(scope, time)
        if turns % rules.memorize_every:
            ctx.logs.append(
                f"memorizer runs every {rules.memorize_every} turns (this is turn {turns})"
            )
            return
        learned = self._learn(event, ctx)
        result = self.store.memory_apply(scope, self._update(learned, event))
        ctx.extras["memorized"] = result.as_data()

    def _why_not_memorize(self, event: dict[str, Any], ctx: HookContext) -> str | None:
        rules = self.config.store
        if not rules.enabled:
            return "store.enabled is false"
        if len(event["question"].strip()) < rules.min_question_chars:
            return f"question shorter than {rules.min_question_chars} characters"
        if len(event["answer"].strip()) < rules.min_answer_chars:
            return f"answer shorter than {rules.min_answer_chars} characters"
        if ctx.replay is not None:
            return "replay"
        return None

    def _learn(self, event: dict[str, Any], ctx: HookContext) -> Memorization:
        rules, scope = self.config.store, ctx.scope_key
        question, answer = event["question"].strip(), event["answer"].strip()
        turns: list[tuple[str, str]] = []
        if rules.memorize_every > 1 and rules.max_episodes_per_scope > 0:
            turns = [
                (e.question, e.answer)
                for e in self.store.memory_episodes(scope, limit=rules.memorize_every)
            ]
        if not turns or turns[-1] != (question, answer):
            turns.append((question, answer))
        task = MemorizeTask(
            tuple(turns),
            self._known(scope, f"{question} {answer}"),
            self.store.memory_summary(scope),
            rules.summary_max_chars,
            rules.extractor_instructions,
            rules.memorizer_model,
        )
        learned = self.providers().memorize(task, recorded=(ctx.replay or {}).get("memorizer"))
        ctx.extras["memorizer"] = learned.call
        return learned

    def _known(self, scope: str, text: str) -> tuple[KnownFact, ...]:
        """The facts the memorizer sees: every keyed one (contradictions are found by key)
        and the live facts nearest to the turn."""
        near = self.store.memory_candidates(scope, terms(text), limit=KNOWN_SHOWN, backfill=False)
        keyed = self.store.memory_facts(scope, keyed=True, limit=self.config.max_memories_per_scope)
        seen: dict[int, Fact] = {f.id: f for f in [*keyed, *near]}
        return tuple(KnownFact(f.id, f.text, f.key, f.importance) for f in seen.values())

    def _update(self, learned: Memorization, event: dict[str, Any]) -> MemoryUpdate:
        turn = event.get("turn_id")
        facts = tuple(
            NewFact(
                f.text,
                frozenset(terms(f.text) | terms(" ".join(f.keywords))),
                f.importance,
                f.key,
                f.supersedes,
                turn,
            )
            for f in learned.facts
        )
        edits = tuple(
            FactEdit(
                c.id, c.text, frozenset(terms(c.text)) if c.text else None, c.importance, c.stale
            )
            for c in learned.changes
        )
        keep_summary = self.config.store.summary_max_chars > 0
        return MemoryUpdate(
            event["time"],
            facts,
            edits,
            learned.summary if keep_summary else None,
            self.config.dedup_threshold,
            self.config.max_memories_per_scope,
        )

    # -- feedback --------------------------------------------------------------------------

    def feedback(self, event: dict[str, Any], ctx: HookContext) -> None:
        turn = event.get("turn_id")
        if not turn or ctx.replay is not None:
            return
        ids = self.store.memory_recalled(ctx.scope_key, turn)
        delta = LIKE if event["rating"] == "like" else DISLIKE
        changed = self.store.memory_adjust(ctx.scope_key, ids, delta, event["time"])
        ctx.extras["feedback"] = {"facts": [f.id for f in changed], "delta": delta}


def _shows_summary(template: str) -> bool:
    return "{{summaries}}" in template or "{{memories}}" in template


def render(template: str, facts: list[Fact], summary: str) -> str:
    """The injected message: ``{{facts}}`` a list, ``{{summaries}}`` the rolling summary,
    ``{{memories}}`` both with headings."""
    listed = "\n".join(f"- {f.text}" for f in facts)
    parts = []
    if listed:
        parts.append(f"Facts:\n{listed}")
    if summary:
        parts.append(f"Summary of earlier conversations:\n{summary}")
    return fill(template, facts=listed, summaries=summary, memories="\n\n".join(parts)).strip()


def build(spec: HookSpec, env: BuildEnv) -> MemoryHook:
    """Make a memory hook: its store from ``db_url`` / ``db_path``, the engine's providers."""
    config: MemoryConfig = spec.config
    return MemoryHook(spec, config, env.store_for(config.db_url, config.db_path), env.providers)
