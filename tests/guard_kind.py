"""A test-only hook kind ``test_guard`` (blocks listed tools), registered by a fixture."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import Field

from engine import kinds
from engine.config import models
from engine.config.models import HookBase
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook
from engine.points import Point

GATE = threading.Event()
"""Hooks with ``gated: true`` wait for this before answering (in-flight tests)."""
ENTERED = threading.Event()
"""Set when a gated hook started waiting."""
CLOSED: list[str] = []
"""Versions of guard hooks closed, in order."""


class GuardConfig(HookBase):
    """Blocks tool calls whose name is in ``forbidden``."""

    kind: Literal["test_guard"]
    forbidden: list[str] = Field(default_factory=list)
    """Tool names to block."""
    gated: bool = False
    """Wait for GATE before answering."""
    say_version: bool = True
    """Name the hook's version in the block reason."""


@dataclass
class GuardHook(SpecHook):
    config: GuardConfig
    points = frozenset({Point.TOOL_CALL})

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        if self.config.gated:
            ENTERED.set()
            GATE.wait(10)
        if event["name"] in self.config.forbidden:
            said = f" (version {self.version})" if self.config.say_version else ""
            return {"block": f"{event['name']} is forbidden{said}"}
        return None

    def close(self) -> None:
        CLOSED.append(self.version)


def build(spec: Any, env: Any) -> GuardHook:
    """The kinds table imports this module for ``kind: test_guard`` (while the fixture is on)."""
    return GuardHook(spec, spec.config)


@pytest.fixture
def guard_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make ``kind: test_guard`` loadable and buildable for one test."""
    monkeypatch.setitem(models.KINDS, "test_guard", GuardConfig)
    monkeypatch.setitem(kinds.MODULES, "test_guard", __name__)
    GATE.clear()
    ENTERED.clear()
    CLOSED.clear()
    yield
    GATE.set()
