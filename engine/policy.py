"""The two per-hook policies: what a failure does (OnError) and whether a change applies (Mode)."""

from __future__ import annotations

from enum import StrEnum


class OnError(StrEnum):
    """What a hook's failure does outside ``tool_call`` (where a failure always blocks)."""

    IGNORE = "ignore"
    """The hook is neutral: the error is logged and recorded, the turn goes on."""
    FAIL = "fail"
    """The point is refused: blocked with a generic reason naming the hook."""


class Mode(StrEnum):
    """Whether a hook's change is applied."""

    ENFORCE = "enforce"
    """The change is applied."""
    SHADOW = "shadow"
    """The hook runs and is recorded ("would have ..."), its change is not applied."""
