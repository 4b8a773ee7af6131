"""Kind ``inject``: add messages to the context on user messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.boundary import no_lone_surrogates
from engine.changes import Change
from engine.config.loader import HookSpec
from engine.config.models import InjectConfig
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook
from engine.points import Point

if TYPE_CHECKING:
    from engine.kinds import BuildEnv


QUESTION = "{{question}}"
CHECKED_CHARS = 100_000
"""Up to this many characters, the change is made checked (a Change: its texts are clean by
construction); a longer one goes through the pipeline's full check as a mapping."""


@dataclass
class InjectHook(SpecHook):
    """Injects ``messages`` (``{{question}}`` filled in) on the first ``first_n`` messages."""

    config: InjectConfig
    points = frozenset({Point.BEFORE_USER_MESSAGE})

    def __post_init__(self) -> None:
        super().__post_init__()
        # texts as a checked change has them, made once per build (the question is clean:
        # the boundary and the change check made it so)
        self.texts = [
            (m.role, no_lone_surrogates(m.content), m.content.count(QUESTION))
            for m in self.config.messages
        ]
        self.notice = [no_lone_surrogates(self.config.notice)] if self.config.notice else []
        self.fixed_chars = sum(len(text) for _, text, _ in self.texts)
        self.questions = sum(n for _, _, n in self.texts)

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        limit = self.config.first_n
        if limit is not None:
            seen = ctx.memo.update(f"seen:{ctx.scope_key}", lambda n: n + 1, 0)
            if seen > limit:
                return None
        question = event["question"]
        if type(question) is not str or (
            self.fixed_chars + self.questions * len(question) > CHECKED_CHARS
        ):
            return self._unchecked(question)
        messages = [
            {"role": role, "content": text.replace(QUESTION, question) if n else text}
            for role, text, n in self.texts
        ]
        return Change(messages=messages, notice=list(self.notice))

    def _unchecked(self, question: Any) -> dict[str, Any]:
        change: dict[str, Any] = {
            "messages": [
                {"role": m.role, "content": m.content.replace(QUESTION, question)}
                for m in self.config.messages
            ]
        }
        if self.config.notice:
            change["notice"] = self.config.notice
        return change


def build(spec: HookSpec, env: BuildEnv) -> InjectHook:
    """The runnable hook of a validated ``inject`` spec."""
    return InjectHook(spec, spec.config)
