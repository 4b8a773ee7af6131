"""Kind ``escalate``: hand the user a human contact when the agent cannot help."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.config.loader import HookSpec
from engine.config.models import EscalateConfig
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook
from engine.points import Point

if TYPE_CHECKING:
    from engine.kinds import BuildEnv
from engine.text import find_phrases


@dataclass
class EscalateHook(SpecHook):
    """Off-topic questions (before_user_message) and unhelpful answers
    (before_assistant_message) get the contact message; optionally once more next turn."""

    config: EscalateConfig
    points = frozenset({Point.BEFORE_USER_MESSAGE, Point.BEFORE_ASSISTANT_MESSAGE})

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        if point is Point.BEFORE_USER_MESSAGE:
            return self._on_question(event["question"], ctx)
        return self._on_answer(event["answer"], ctx)

    def is_off_topic(self, question: str) -> bool:
        return bool(find_phrases(question, self.config.off_topic_keywords))

    def did_not_help(self, answer: str) -> bool:
        text = answer.casefold()
        if any(p.casefold() in text for p in self.config.empty_answer_patterns):
            return True
        return len(answer.strip()) < self.config.min_answer_chars

    def _on_question(self, question: str, ctx: HookContext) -> Any:
        turn = ctx.memo.update(f"turn:{ctx.scope_key}", lambda n: n + 1, 0)
        if not self.is_off_topic(question):
            return None
        self._remember(ctx, turn)
        if self.config.suppress_on_off_topic:
            return {"answer": self.config.message.strip(), "notice": "escalated: off-topic"}
        ctx.memo.update(f"pending:{ctx.scope_key}", lambda _: turn)
        return None

    def _on_answer(self, answer: str, ctx: HookContext) -> Any:
        key = ctx.scope_key
        turn = ctx.memo.get(f"turn:{key}", 0)
        message = self.config.message.strip()
        reminder = ctx.memo.get(f"remind:{key}")
        remind_now = reminder is not None and reminder < turn
        if remind_now:
            ctx.memo.pop(f"remind:{key}")
        pending = ctx.memo.pop(f"pending:{key}") == turn
        escalate = pending or self.did_not_help(answer)
        if escalate:
            self._remember(ctx, turn)
        if not (escalate or remind_now) or message in answer:
            return None
        why = "escalated: the answer did not help" if escalate else "escalation reminder"
        if pending:
            why = "escalated: off-topic"
        return {"append": message, "notice": why}

    def _remember(self, ctx: HookContext, turn: int) -> None:
        if self.config.remind_next_turn:
            ctx.memo.update(f"remind:{ctx.scope_key}", lambda _: turn)


def build(spec: HookSpec, env: BuildEnv) -> EscalateHook:
    """The runnable hook of a validated ``escalate`` spec."""
    return EscalateHook(spec, spec.config)
