"""Sessions: an agent's points with a conversation's own layer of hooks, between the agent's
hooks and the host layer's.

Order, innermost first: the agent's hooks (unless the session drops them), the session's hooks
(named from the agent's ``hooks/`` folder), then the host layer, which has the last word. A hook
set in several layers runs once, in its outermost layer (hooks are the same hook when they have
the same name, as everywhere in the engine: records, state and memos are keyed by it).

Sessions that name the same hooks share one pipeline per agent generation: it is built on first
use, rebuilt when the agent reloads (or a session hook's file changed), and its hooks are closed
when the last handle is closed and no evaluation runs on it any more.
"""

from __future__ import annotations

import time as clock
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import EventError
from engine.outcome import Outcome
from engine.pipeline import Pipeline
from engine.point_calls import PointCalls
from engine.points import Point
from engine.session_layers import Key

if TYPE_CHECKING:
    from engine.runtime import Agent


class Session(PointCalls):
    """An agent's points for one conversation, with the session's own layer of hooks.

    Made by ``Agent.session``; use it like the agent (every per-point method, ``evaluate``
    and the ``a``-forms), without ``session_id``: the handle's is used. Close it (or use it
    as a context manager) when the conversation ends; a reload of the agent is followed.
    """

    def __init__(self, agent: Agent, session_id: str, key: Key) -> None:
        self.agent, self.session_id, self.key = agent, session_id, key
        layers = agent.sessions
        layers.open(key)
        self._release = weakref.finalize(self, layers.release, key)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<Session {self.session_id!r} of {self.agent.name!r}: {self.key}{state}>"

    @property
    def hooks(self) -> tuple[str, ...]:
        return self.key[0]

    @property
    def drop_agent_hooks(self) -> bool:
        return self.key[1]

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline the next evaluation runs (the agent's live generation)."""
        base = self.agent._take()
        try:
            pipeline = self.agent.sessions.take(self.key, base)
            self.agent.sessions.give_back(pipeline)
            return pipeline
        finally:
            self.agent._give_back(base)

    def evaluate(
        self,
        point: Point | str,
        fields: Mapping[str, Any] | None = None,
        *,
        host: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        template: str | None = None,
        process: str | None = None,
        time: str | None = None,
        turn_id: str | None = None,
        replay: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Outcome:
        """``Agent.evaluate`` through the session's layers. ``session_id`` is the handle's;
        another one is an EventError (open a handle per conversation)."""
        started = clock.perf_counter()
        who = (user_id, self._own(session_id), template, process)
        base, found, event, profile_ = self.agent._begin(point, fields, who, time, turn_id, host)
        try:
            pipeline = self.agent.sessions.take(self.key, base)
            try:
                return self.agent._decide(
                    pipeline, found, event, profile_, self.session_id, replay, started
                )
            finally:
                self.agent.sessions.give_back(pipeline)
        finally:
            self.agent._give_back(base)

    async def aevaluate(
        self,
        point: Point | str,
        fields: Mapping[str, Any] | None = None,
        *,
        host: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        template: str | None = None,
        process: str | None = None,
        time: str | None = None,
        turn_id: str | None = None,
        replay: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Outcome:
        """``evaluate`` on the running event loop (see ``Agent.aevaluate``)."""
        started = clock.perf_counter()
        who = (user_id, self._own(session_id), template, process)
        base, found, event, profile_ = self.agent._begin(point, fields, who, time, turn_id, host)
        try:
            pipeline = self.agent.sessions.take(self.key, base)
            try:
                return await self.agent._adecide(
                    pipeline, found, event, profile_, self.session_id, replay, started
                )
            finally:
                self.agent.sessions.give_back(pipeline)
        finally:
            self.agent._give_back(base)

    def _own(self, session_id: str | None) -> str:
        if session_id is not None and session_id != self.session_id:
            msg = f"this handle is session {self.session_id!r}; open another for {session_id!r}"
            raise EventError([{"loc": ["session_id"], "msg": msg}])
        return self.session_id

    def close(self) -> None:
        """Release the session's layer (its hooks close once no session uses them). Safe to
        call twice."""
        self._release()

    @property
    def closed(self) -> bool:
        return not self._release.alive

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Session"]
