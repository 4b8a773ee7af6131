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

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def version(self) -> str:
        return self.spec.version

    @property
    def on_error(self) -> OnError:
        return self.config.effective_on_error  # type: ignore[no-any-return]

    @property
    def mode(self) -> Mode:
        return self.config.mode  # type: ignore[no-any-return]

    @property
    def source(self) -> Path:
        return self.spec.path

    def close(self) -> None:
        return None
