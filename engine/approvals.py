"""Resolving approvals: what ``Agent.resolve``, the HTTP route and the CLI share."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from engine.errors import ApprovalError, EventError
from engine.points import Scope
from engine.store import Store
from engine.store.approvals import Approval

log = logging.getLogger("engine.approvals")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def resolve(
    store: Store, agent: str, approval_id: str, approve: bool, *, by: str, note: str | None
) -> Approval:
    """Decide ``agent``'s pending approval ``approval_id`` once, recording who and when.

    Raises:
        ApprovalError: unknown id (or another agent's), expired, or already resolved.
        StoreError: the store could not be read or written.
    """
    if not isinstance(approve, bool):
        raise TypeError(f"approve must be True or False, got {type(approve).__name__}")
    if not by or not isinstance(by, str):
        raise ValueError("by: say who decides (a user name or id)")
    found = store.approval_get(approval_id)
    if found is None or found.agent != agent:
        raise ApprovalError(
            f"agent {agent!r} has no approval with id {approval_id!r}",
            approval_id=approval_id,
            cause="unknown",
        )
    done = store.approval_resolve(approval_id, approve=approve, by=by, note=note, now=_now())
    # quoted: ``by`` is the caller's text (an HTTP body's), and a newline in it must not
    # forge a line of the log
    log.info("approval %r of agent %r: %s by %r", approval_id, agent, done.status, by)
    return done


def pending(
    store: Store, agent: str, *, session_id: str | None = None, user_id: str | None = None
) -> list[Approval]:
    """``agent``'s approvals still waiting: of one session (or user) when given, else all.

    Raises:
        EventError: ``session_id`` or ``user_id`` is given but empty (an empty id names no
            session: it must not read as "every session").
    """
    wrong = [
        {"loc": [name], "msg": "must be non-empty text"}
        for name, value in (("session_id", session_id), ("user_id", user_id))
        if value is not None and (not isinstance(value, str) or not value)
    ]
    if wrong:
        raise EventError(wrong)
    scope = None
    if session_id or user_id:
        from engine.kinds.approval import whose

        scope = whose(Scope(session_id=session_id, user_id=user_id))
    return store.approvals_pending(agent, scope_key=scope, now=_now())
