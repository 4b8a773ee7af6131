"""Kind ``faq_cache``: answer repeated or similar questions from stored (question, answer) pairs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.config.loader import HookSpec
from engine.config.models import FaqCacheConfig
from engine.kinds import BuildEnv
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook, keep_books
from engine.kinds.personal import PersonalTurns, shared
from engine.points import Point
from engine.providers import Candidate, Judgement, JudgeTask, Providers
from engine.providers.extract import tells_about_user
from engine.store import FaqPair, Store
from engine.store.faq import PERSONAL
from engine.text import dice, fill, terms

DEFAULT_HINT = (
    "A similar question was answered before; use this answer if it fits.\n"
    "Question: {{question}}\nAnswer: {{answer}}"
)
HITS_KEPT = 1000
"""Turns remembered as cache hits (so after_turn does not store them again)."""


@dataclass
class FaqCacheHook(SpecHook):
    """On a user message: prefilter stored questions by shared stems, let the judge compare
    the best ``max_candidates``, and on a confident match answer (``short_circuit``) or
    inject a hint. After a turn: store the new pair if it passes the thresholds."""

    config: FaqCacheConfig
    store: Store
    providers: Callable[[], Providers]
    personal: PersonalTurns
    """Turns answered with per-user context: never learned for everyone."""
    points = frozenset({Point.BEFORE_USER_MESSAGE, Point.AFTER_TURN})
    blocks = True
    """It waits on the store and may ask an LLM: the async driver runs it in a thread."""

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        if point is Point.BEFORE_USER_MESSAGE:
            # hooks that read per-user data later in the turn (before_call, tool_call) mark
            # this turn, which their events do not name by its question
            self.personal.asked(
                ctx.scope_key, ctx.scope.session_id, event.get("turn_id"), event["question"]
            )
            return self.lookup(event, ctx)
        self.remember(event, ctx)
        return None

    def namespace(self, ctx: HookContext) -> str:
        """Pairs are kept per agent and hook: two agents may answer the same question apart."""
        return f"{ctx.agent}:{self.name}"

    def own_namespace(self, ctx: HookContext) -> str | None:
        """With ``scope: user``, the namespace of this user's personal pairs (None without a
        user, or with ``scope: global``)."""
        if self.config.scope != "user" or not ctx.scope.user_id:
            return None
        return f"{self.namespace(ctx)}{PERSONAL}{ctx.scope.user_id}"

    def namespaces(self, ctx: HookContext) -> list[str]:
        """Where a lookup searches: the user's own pairs first, then the shared ones."""
        own = self.own_namespace(ctx)
        return [own, self.namespace(ctx)] if own else [self.namespace(ctx)]

    # -- before_user_message ---------------------------------------------------------------

    def lookup(self, event: dict[str, Any], ctx: HookContext) -> Any:
        question = event["question"]
        asked = terms(question)
        pairs = self._candidates(asked, ctx)
        if not pairs:
            return None
        verdict = self._judge(question, asked, pairs, ctx)
        hit = self._best(pairs, verdict)
        if hit is None:
            return None
        pair, confidence = hit
        ctx.extras["hit"] = {"id": pair.id, "question": pair.question, "confidence": confidence}
        self._note_hit(event, pair, ctx)
        return self._change(question, pair)

    def _candidates(self, asked: set[str], ctx: HookContext) -> list[FaqPair]:
        """The stored pairs a lookup considers. They go into the record, and a replay takes
        them from there: it decides on what the store held then, not on what it holds now."""
        if ctx.replay is not None:
            return [
                FaqPair(p["id"], p["question"], p["answer"], frozenset(p["terms"]))
                for p in ctx.replay.get("pairs", [])
            ]
        if not asked:
            return []
        pairs = self._lookup(asked, ctx)
        if pairs:
            ctx.extras["pairs"] = [
                {"id": p.id, "question": p.question, "answer": p.answer, "terms": sorted(p.terms)}
                for p in pairs
            ]
        return pairs

    def _lookup(self, asked: set[str], ctx: HookContext) -> list[FaqPair]:
        limit = self.config.max_candidates
        found = [
            p
            for ns in self.namespaces(ctx)
            for p in self.store.faq_candidates(ns, asked, limit=limit)
        ]
        return found[:limit]

    def _judge(
        self, question: str, asked: set[str], pairs: list[FaqPair], ctx: HookContext
    ) -> Judgement:
        candidates = tuple(Candidate(p.id, p.question, dice(asked, p.terms)) for p in pairs)
        task = JudgeTask(
            "faq", question, candidates, self.config.judge_instructions, self.config.judge_model
        )
        verdict = self.providers().judge(task, recorded=(ctx.replay or {}).get("judge"))
        ctx.extras["candidates"] = [
            {"id": c.id, "question": c.text, "overlap": c.fallback} for c in candidates
        ]
        ctx.extras["judge"] = verdict.call
        return verdict

    def _best(self, pairs: list[FaqPair], verdict: Judgement) -> tuple[FaqPair, float] | None:
        # the overlap score is a weaker signal than a judge: it has its own bar
        bar = self.config.fallback_score if verdict.offline else self.config.min_confidence
        scored = [(verdict.scores.get(p.id, 0.0), -i, p) for i, p in enumerate(pairs)]
        score, _, pair = max(scored, key=lambda s: (s[0], s[1]))
        return (pair, score) if score >= bar and score > 0 else None

    def _note_hit(self, event: dict[str, Any], pair: FaqPair, ctx: HookContext) -> None:
        turn = event.get("turn_id")
        if turn:
            ctx.memo.update("hits", lambda hits: _keep_last({**(hits or {}), turn: pair.id}))
        if ctx.replay is None:
            keep_books(ctx, "counting the hit", lambda: self.store.faq_hit(pair.id, event["time"]))

    def _change(self, question: str, pair: FaqPair) -> dict[str, Any]:
        if self.config.short_circuit:
            change: dict[str, Any] = {"answer": pair.answer}
            if self.config.hit_notice:
                change["notice"] = self.config.hit_notice
            return change
        hint = fill(
            self.config.hint_template or DEFAULT_HINT,
            question=pair.question,
            answer=pair.answer,
            asked=question,
        )
        return {"messages": [{"role": "system", "content": hint}]}

    # -- after_turn ------------------------------------------------------------------------

    def remember(self, event: dict[str, Any], ctx: HookContext) -> None:
        why_not = self._why_not_store(event, ctx)
        if why_not:
            ctx.logs.append(f"not stored: {why_not}")
            return
        question, answer = event["question"].strip(), event["answer"].strip()
        namespace = self.namespace(ctx)
        personal = self._personal(event, ctx)
        if personal:
            own = self.own_namespace(ctx)
            if own is None:
                ctx.logs.append(
                    f"not stored: the answer may use per-user context ({personal}); "
                    "scope: user would keep it for this user"
                )
                return
            namespace = own
        pair_id = self.store.faq_put(
            namespace,
            question,
            answer,
            terms=terms(question),
            scope=ctx.scope_key,
            time=event["time"],
        )
        ctx.extras["stored"] = pair_id
        if namespace != self.namespace(ctx):
            ctx.extras["stored_for"] = f"user:{ctx.scope.user_id}"

    def _personal(self, event: dict[str, Any], ctx: HookContext) -> str | None:
        """Why this turn's answer may use per-user context, or None: a hook marked the turn
        (recalled memory, the user's script state), or the user's message tells something
        about them (asked without a memory hook in the agent, too)."""
        question = event["question"]
        marked = self.personal.used(ctx.scope_key, event.get("turn_id"), question)
        if marked:
            return marked
        if tells_about_user(question):
            return "the message tells something about the user"
        return None

    def _why_not_store(self, event: dict[str, Any], ctx: HookContext) -> str | None:
        rules = self.config.store
        question, answer = event["question"].strip(), event["answer"].strip()
        if not rules.enabled:
            return "store.enabled is false"
        if len(question) < rules.min_question_chars:
            return f"question shorter than {rules.min_question_chars} characters"
        if len(answer) < rules.min_answer_chars:
            return f"answer shorter than {rules.min_answer_chars} characters"
        if ctx.replay is not None:
            return "replay"
        if _pop_hit(event.get("turn_id"), ctx) or self._is_cached(question, answer, ctx):
            return "the answer came from the cache"
        if not terms(question):
            return "the question has no words to match on"
        return None

    def _is_cached(self, question: str, answer: str, ctx: HookContext) -> bool:
        pairs = self._lookup(terms(question), ctx)
        return any(p.answer.strip() == answer for p in pairs)


def _pop_hit(turn: str | None, ctx: HookContext) -> bool:
    """Whether this turn was answered from the cache (forgetting it: one turn, one answer)."""
    if not turn:
        return False
    found: list[int | None] = []

    def pop(hits: dict[str, int] | None) -> dict[str, int]:
        rest = dict(hits or {})
        found.append(rest.pop(turn, None))
        return rest

    ctx.memo.update("hits", pop)
    return found[0] is not None


def _keep_last(hits: dict[str, int]) -> dict[str, int]:
    return dict(list(hits.items())[-HITS_KEPT:])


def build(spec: HookSpec, env: BuildEnv) -> FaqCacheHook:
    """Make a faq_cache hook: its store from ``db_url`` / ``db_path``, the engine's providers."""
    config: FaqCacheConfig = spec.config
    store = env.store_for(config.db_url, config.db_path)
    return FaqCacheHook(spec, config, store, env.providers, shared(env.extra))
