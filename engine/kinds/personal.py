"""Which turns were answered with per-user context (recalled memory), so that a cache shared
between users never learns from them.

The memory hook marks a turn when it injects what it remembers about the user, a script hook
when it reads the user's (or the session's) state or lists the conversation's entries at any
point before the answer; the FAQ cache asks before storing the turn's answer. A turn is known
by its ``turn_id`` and, for hosts that do not pass that back at ``after_turn``, by its scope
and question. A point after ``before_user_message`` carries no question (``before_call``,
``tool_call``): the FAQ cache notes each conversation's current turn (``asked``), and a mark
made there without a question (and without the turn's id) goes to that turn. The marks live in
this process (the newest ``KEPT``): a host that sends a turn's points to different processes
must give the FAQ cache ``scope: user`` or keep memory out of its agent.
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
        self._current: OrderedDict[tuple[str, str], tuple[str | None, str]] = OrderedDict()
        """Per conversation (scope key, session id): the turn it is in (its id, question)."""
        self._kept = kept

    def asked(self, scope: str, session: str | None, turn_id: str | None, question: str) -> None:
        """Note the turn a conversation is in now (at its ``before_user_message``)."""
        with self._lock:
            key = (scope, session or "")
            self._current[key] = (turn_id, question)
            self._current.move_to_end(key)
            while len(self._current) > self._kept:
                self._current.popitem(last=False)

    def mark(
        self,
        scope: str,
        turn_id: str | None,
        question: str | None,
        why: str,
        *,
        session: str | None = None,
    ) -> None:
        """Note that this turn's answer may use per-user context (``why`` says which).
        Without ``question`` (a point that carries none), the conversation's current turn
        (``asked``) gives it, unless ``turn_id`` names another turn."""
        with self._lock:
            if not question:
                noted = self._current.get((scope, session or ""))
                if noted is not None and (turn_id is None or noted[0] in (None, turn_id)):
                    turn_id, question = turn_id or noted[0], noted[1]
            keys = _keys(scope, turn_id, question) if question else []
            if not question and turn_id:
                keys = [(scope, "t:" + turn_id)]
            for key in keys:
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
