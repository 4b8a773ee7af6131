"""Kind ``memory``: long-term memory per user that survives sessions.

Before a message it recalls facts and whole earlier turns (episodes) through the store's
full-text engine (its score, then importance, then recency), lets a live judge pick, and
injects the best of them with lines of the rolling summary, up to ``recall_budget_chars``.
After a turn the memorizer learns facts, corrects or retires old ones and rolls the summary.
Feedback on a turn moves the importance of the facts that turn recalled. Everything is keyed
by the event's scope (user → session → template → process), so one user's memory never
reaches another's turn.
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
from engine.kinds.personal import PersonalTurns, shared
from engine.kinds.recall_message import Recalled, render
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
from engine.providers.extract import tells_about_user
from engine.store import Episode, Fact, FactEdit, MemoryUpdate, NewFact, Store
from engine.text import coverage, fill, terms

DEFAULT_TEMPLATE = (
    "What you remember about this user (use it when it helps; do not recite "
    "it unasked):\n{{memories}}"
)
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
    personal: PersonalTurns
    """Turns this hook injected memory into (a shared FAQ cache must not learn them)."""
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
        text, shown = render(
            template,
            picked,
            summary,
            budget=self.config.recall_budget_chars,
            asked=terms(question),
        )
        ctx.extras["injected"] = [_candidate_id(x) for x in shown]
        facts = [x.id for x in shown if isinstance(x, Fact)]
        if facts and event.get("turn_id") and ctx.replay is None:
            keep_books(
                ctx,
                "noting the recalled facts",
                lambda: self.store.memory_note_recall(
                    scope, event["turn_id"], facts, event["time"]
                ),
            )
        if tells_about_user(question):
            why = f"the message tells memory hook {self.name} about the user"
            self.personal.mark(scope, event.get("turn_id"), question, why)
        if not text:
            return None
        self.personal.mark(scope, event.get("turn_id"), question, f"memory hook {self.name}")
        change: dict[str, Any] = {"messages": [{"role": "system", "content": text}]}
        if self.config.notice and shown:
            change["notice"] = fill(self.config.notice, count=str(len(shown)))
        return change

    def _summary(self, scope: str, ctx: HookContext) -> str:
        """The rolling summary; recorded, and taken from the record on replay."""
        if ctx.replay is not None:
            return str(ctx.replay.get("summary", ""))
        summary = self.store.memory_summary(scope)
        if summary:
            ctx.extras["summary"] = summary
        return summary

    def _found(self, asked: set[str], ctx: HookContext) -> list[Recalled]:
        """The stored facts and episodes a recall considers, best first. A replay takes them
        from the record (the candidates the judge saw): it decides on what was remembered
        then, not now."""
        if ctx.replay is not None:
            return [_from_record(c, ctx.scope_key) for c in ctx.replay.get("candidates", [])]
        limit = self.config.max_candidates
        found: list[Recalled] = list(self.store.memory_recall(ctx.scope_key, asked, limit=limit))
        # backfilled facts match no term: only a live judge may pick them, offline they never go in
        live = self.providers().live is not None
        if self.config.backfill and live and len(found) < limit:
            seen = {x.id for x in found if isinstance(x, Fact)}
            more = self.store.memory_candidates(ctx.scope_key, (), limit=limit, backfill=True)
            found += [f for f in more if f.id not in seen][: limit - len(found)]
        return found

    def _pick(self, question: str, ctx: HookContext) -> list[Recalled]:
        """What may be injected, best first: offline, whatever the full-text engine matched;
        with a live judge, what it is confident enough about."""
        asked = terms(question)
        found = self._found(asked, ctx)
        verdict = self._judge(question, asked, found, ctx)
        if verdict.offline:
            picked = [x for x in found if x.score > 0 or _covers(asked, x)]
        else:
            bar = self.config.min_confidence
            picked = [
                x
                for x in found
                if (s := verdict.scores.get(_candidate_id(x), 0.0)) >= bar and s > 0
            ]
        ctx.extras["picked"] = [_candidate_id(x) for x in picked]
        return picked

    def _judge(
        self, question: str, asked: set[str], found: list[Recalled], ctx: HookContext
    ) -> Judgement:
        candidates = tuple(
            Candidate(_candidate_id(x), _plain(x), coverage(asked, _terms(x))) for x in found
        )
        ctx.extras["candidates"] = [
            _as_record(x, c.fallback) for x, c in zip(found, candidates, strict=True)
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
        turns: list[tuple[str, str, str]] = []
        if rules.memorize_every > 1 and rules.max_episodes_per_scope > 0:
            turns = [
                (e.question, e.answer, e.time)
                for e in self.store.memory_episodes(scope, limit=rules.memorize_every)
            ]
        if not turns or turns[-1][:2] != (question, answer):
            turns.append((question, answer, event["time"]))
        task = MemorizeTask(
            tuple((q, a) for q, a, _ in turns),
            self._known(scope, f"{question} {answer}"),
            self.store.memory_summary(scope),
            rules.summary_max_chars,
            rules.extractor_instructions,
            rules.memorizer_model,
            tuple(t for _, _, t in turns),
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


def _candidate_id(found: Recalled) -> int:
    """The id a judge sees: a fact's own id; an episode's, negated (they never collide)."""
    return found.id if isinstance(found, Fact) else -found.id


def _terms(found: Recalled) -> frozenset[str]:
    if isinstance(found, Fact):
        return found.terms
    return frozenset(terms(f"{found.question} {found.answer}"))


def _covers(asked: set[str], found: Recalled) -> bool:
    """A recorded candidate (no engine score) still counts when it shares a term."""
    return bool(asked & _terms(found))


def _plain(found: Recalled) -> str:
    """The candidate's text as a judge reads it."""
    if isinstance(found, Fact):
        return found.text
    return f"user: {found.question}\nassistant: {found.answer}"


def _as_record(found: Recalled, overlap: float) -> dict[str, Any]:
    """A candidate as the record keeps it (and a replay reads it back)."""
    if isinstance(found, Fact):
        return {
            "kind": "fact",
            "id": found.id,
            "text": found.text,
            "overlap": round(overlap, 4),
            "score": round(found.score, 6),
            "importance": found.importance,
            "created_at": found.created_at,
            "updated_at": found.updated_at,
            "terms": sorted(found.terms),
        }
    return {
        "kind": "episode",
        "id": found.id,
        "question": found.question,
        "answer": found.answer,
        "time": found.time,
        "overlap": round(overlap, 4),
        "score": round(found.score, 6),
    }


def _from_record(data: dict[str, Any], scope: str) -> Recalled:
    """A recorded candidate back (records from before episodes were recalled hold facts)."""
    if data.get("kind") == "episode":
        return Episode(
            data["id"], None, data["question"], data["answer"], data["time"], data["score"]
        )
    return Fact(
        data["id"],
        scope,
        data["text"],
        data["importance"],
        terms=frozenset(data["terms"]),
        created_at=data.get("created_at", ""),
        updated_at=data["updated_at"],
        score=data.get("score", 0.0),
    )


def build(spec: HookSpec, env: BuildEnv) -> MemoryHook:
    """Make a memory hook: its store from ``db_url`` / ``db_path``, the engine's providers."""
    config: MemoryConfig = spec.config
    store = env.store_for(config.db_url, config.db_path)
    return MemoryHook(spec, config, store, env.providers, shared(env.extra))
