"""Which turns were answered with per-user context (recalled memory), so that a cache shared
between users never learns from them.

The memory hook marks a turn when it injects what it remembers about the user; the FAQ cache
asks before storing the turn's answer. A turn is known by its ``turn_id`` and, for hosts that
do not pass that back at ``after_turn``, by its scope and question. The marks live in this
process (the newest ``KEPT``): a host that sends a turn's points to different processes must
give the FAQ cache ``scope: user`` or keep memory out of its agent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from engine.text import question_key

KEPT = 10_000
"""Turns remembered (the oldest marks go first)."""


class PersonalTurns:
    """A bounded, thread-safe set of turns that used per-user context."""

    def __init__(self, kept: int = KEPT) -> None:
        self._lock = threading.Lock()
        self._turns: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._kept = kept

    def mark(self, scope: str, turn_id: str | None, question: str, why: str) -> None:
        """Note that this turn's answer may use per-user context (``why`` says which)."""
        with self._lock:
            for key in _keys(scope, turn_id, question):
                self._turns[key] = why
                self._turns.move_to_end(key)
            while len(self._turns) > self._kept:
                self._turns.popitem(last=False)

    def used(self, scope: str, turn_id: str | None, question: str) -> str | None:
        """Why this turn is personal, or None when nothing marked it."""
        with self._lock:
            for key in _keys(scope, turn_id, question):
                if key in self._turns:
                    return self._turns[key]
        return None


def _keys(scope: str, turn_id: str | None, question: str) -> list[tuple[str, str]]:
    keys = [(scope, "q:" + question_key(question))]
    if turn_id:
        keys.append((scope, "t:" + turn_id))
    return keys


def shared(extra: dict[str, object]) -> PersonalTurns:
    """The engine's one ledger (kept in ``BuildEnv.extra``, so every hook sees the same)."""
    found = extra.get("personal_turns")
    if not isinstance(found, PersonalTurns):
        found = PersonalTurns()
        extra["personal_turns"] = found
    return found
