"""Kind ``inject``: add messages to the context on user messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.config.loader import HookSpec
from engine.config.models import InjectConfig
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook
from engine.points import Point

if TYPE_CHECKING:
    from engine.kinds import BuildEnv


@dataclass
class InjectHook(SpecHook):
    """Injects ``messages`` (``{{question}}`` filled in) on the first ``first_n`` messages."""

    config: InjectConfig
    points = frozenset({Point.BEFORE_USER_MESSAGE})

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        limit = self.config.first_n
        if limit is not None:
            seen = ctx.memo.update(f"seen:{ctx.scope_key}", lambda n: n + 1, 0)
            if seen > limit:
                return None
        question = event["question"]
        change: dict[str, Any] = {
            "messages": [
                {"role": m.role, "content": m.content.replace("{{question}}", question)}
                for m in self.config.messages
            ]
        }
        if self.config.notice:
            change["notice"] = self.config.notice
        return change


def build(spec: HookSpec, env: BuildEnv) -> InjectHook:
    """The runnable hook of a validated ``inject`` spec."""
    return InjectHook(spec, spec.config)
