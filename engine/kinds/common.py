"""The shared base of built-in hooks: name, kind, version and policy come from the spec."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from engine.config.loader import HookSpec
from engine.errors import StoreError
from engine.kinds.base import HookContext, Mode, OnError
from engine.points import Point

log = logging.getLogger("engine.kinds")

BOOKKEEPING_FAILURES = "bookkeeping_failures"
"""The memo key counting a hook's failed bookkeeping writes."""


def keep_books(ctx: HookContext, what: str, write: Callable[[], object]) -> None:
    """Run a bookkeeping write the hook's answer does not depend on (a hit count, which facts
    a turn recalled). A store failure does not fail the hook: it is logged, counted in the
    hook's memo under ``BOOKKEEPING_FAILURES`` and kept in the record's extras."""
    try:
        write()
    except StoreError as exc:
        failures = ctx.memo.update(BOOKKEEPING_FAILURES, lambda n: (n or 0) + 1)
        ctx.extras["bookkeeping_error"] = f"{what}: {exc}"
        log.warning("%s failed (%d failures so far); the hook went on: %s", what, failures, exc)


@dataclass
class SpecHook:
    """A hook built from a HookSpec; subclasses set ``points`` and implement ``run``."""

    spec: HookSpec
    config: Any
    points: ClassVar[frozenset[Point]] = frozenset()
    blocks: ClassVar[bool] = False
    """Whether ``run`` may wait on I/O (a store, an LLM): the async driver then runs it in a
    thread (engine/batches.py ``Blocking``); the others run on the event loop."""

    def __post_init__(self) -> None:
        # plain attributes, not properties: the pipeline reads them on every call
        self.name: str = self.spec.name
        self.kind: str = self.spec.kind
        self.version: str = self.spec.version
        self.on_error: OnError = self.config.effective_on_error
        self.mode: Mode = self.config.mode
        self.source: Path = self.spec.path

    def close(self) -> None:
        return None
