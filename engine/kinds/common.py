"""The shared base of built-in hooks: name, kind, version and policy come from the spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from engine.config.loader import HookSpec
from engine.kinds.base import Mode, OnError
from engine.points import Point


@dataclass
class SpecHook:
    """A hook built from a HookSpec; subclasses set ``points`` and implement ``run``."""

    spec: HookSpec
    config: Any
    points: ClassVar[frozenset[Point]] = frozenset()

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
