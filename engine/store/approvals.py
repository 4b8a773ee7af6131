"""Approvals in the SQL store: questions put to a person before a tool runs, their
resolutions (who, when, a note), and the approvals remembered per session or user."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from engine.errors import ApprovalError
from engine.store.db import Database
from engine.store.schema import approvals_remembered_table, approvals_table
from engine.store.state import utc

PENDING, APPROVED, DENIED, EXPIRED = "pending", "approved", "denied", "expired"


@dataclass(frozen=True)
class Approval:
    """One question put to a person, as the store keeps it."""

    id: str
    agent: str
    hook: str
    scope_key: str
    """Whose call it is (``session:<id>``, ``user:<id>``...): the call is found only there."""
    call_key: str
    tool: str
    input: dict[str, Any]
    message: str
    remember_scope: str | None
    """Where an approval is remembered (``session:<id>`` / ``user:<id>``); None: nowhere."""
    status: str
    """pending | approved | denied | expired."""
    created_at: str
    expires_at: str
    resolved_by: str | None = None
    resolved_at: str | None = None
    note: str | None = None
    user_id: str | None = None
    """The user whose call it is (None: none was given); forgetting them deletes it."""

    def status_at(self, now: str) -> str:
        """The status at ``now`` (ISO-8601): a pending approval past its time is expired."""
        if self.status == PENDING and (utc(now) or now) >= self.expires_at:
            return EXPIRED
        return self.status

    def to_dict(self) -> dict[str, Any]:
        """The approval as hosts see it (docs/schemas/approvals.json): every field but
        ``user_id``, which the store keeps for forgetting the user."""
        return {
            name: getattr(self, name) for name in self.__dataclass_fields__ if name != "user_id"
        }


def _approval(row: Any) -> Approval:
    data = dict(row._mapping)
    data["input"] = json.loads(data["input"])
    return Approval(**data)


class ApprovalTables(Database):
    """The ``approvals`` and ``approvals_remembered`` tables."""

    def approval_add(self, approval: Approval) -> None:
        """Keep a new pending approval."""
        row = approval.to_dict() | {
            "input": json.dumps(approval.input, sort_keys=True),
            "user_id": approval.user_id,
        }
        self._write(lambda conn: conn.execute(approvals_table.insert().values(row)))

    def approval_get(self, approval_id: str) -> Approval | None:
        """The approval with this id; None if there is none."""
        t = approvals_table
        stmt = sa.select(t).where(t.c.id == approval_id)
        row = self._read(lambda conn: conn.execute(stmt).first())
        return None if row is None else _approval(row)

    def approval_for_call(
        self, agent: str, hook: str, scope_key: str, call_key: str
    ) -> Approval | None:
        """The newest approval asked for this call in this scope; None if none was."""
        t = approvals_table
        where = (t.c.agent == agent) & (t.c.hook == hook) & (t.c.scope_key == scope_key)
        stmt = sa.select(t).where(where, t.c.call_key == call_key)
        stmt = stmt.order_by(t.c.created_at.desc()).limit(1)
        row = self._read(lambda conn: conn.execute(stmt).first())
        return None if row is None else _approval(row)

    def approvals_pending(
        self, agent: str | None = None, *, scope_key: str | None = None, now: str
    ) -> list[Approval]:
        """Approvals still waiting at ``now``, oldest first: of one agent and one scope when
        given (a session never sees another's)."""
        t = approvals_table
        stmt = sa.select(t).where(t.c.status == PENDING, t.c.expires_at > (utc(now) or now))
        if agent is not None:
            stmt = stmt.where(t.c.agent == agent)
        if scope_key is not None:
            stmt = stmt.where(t.c.scope_key == scope_key)
        rows = self._read(lambda conn: conn.execute(stmt.order_by(t.c.created_at)).all())
        return [_approval(row) for row in rows]

    def approval_resolve(
        self, approval_id: str, *, approve: bool, by: str, note: str | None, now: str
    ) -> Approval:
        """Decide a pending approval once; an approval with a ``remember_scope`` is kept for
        later calls with the same tool and input.

        Raises:
            ApprovalError: no approval has this id, its time passed, or it was decided.
        """
        moment = utc(now) or now

        def resolve(conn: sa.Connection) -> Approval:
            t = approvals_table
            row = conn.execute(sa.select(t).where(t.c.id == approval_id)).first()
            found = _refusal(None if row is None else _approval(row), approval_id, moment)
            status = APPROVED if approve else DENIED
            done = {"status": status, "resolved_by": by, "resolved_at": moment, "note": note}
            changed = conn.execute(
                t.update().where(t.c.id == approval_id, t.c.status == PENDING).values(done)
            ).rowcount
            if changed != 1:  # another resolution won the race
                raise ApprovalError(
                    f"approval {approval_id} was already resolved",
                    approval_id=approval_id,
                    cause="resolved",
                )
            resolved = replace(found, status=status, resolved_by=by, resolved_at=moment, note=note)
            if approve and resolved.remember_scope:
                _remember(conn, resolved, moment)
            return resolved

        return self._write(resolve)

    def approval_expire(self, approval_id: str) -> None:
        """Mark a pending approval whose time passed as expired (the call was denied)."""
        t = approvals_table
        stmt = t.update().where(t.c.id == approval_id, t.c.status == PENDING)
        self._write(lambda conn: conn.execute(stmt.values(status=EXPIRED)))

    def approval_close(self, approval_id: str, call_key: str | None = None) -> bool:
        """Detach a decided approval from its call key, so the next call with that key is
        asked anew (calls without an id are keyed by their input). With ``call_key``, only
        while it is still attached to that key: True for the one caller that detached it
        (of evaluations racing on one decision, exactly one takes it), False for the others.
        """
        t = approvals_table
        stmt = t.update().where(t.c.id == approval_id)
        if call_key is not None:
            stmt = stmt.where(t.c.call_key == call_key)
        closed = sa.func.substr(t.c.call_key, 1, 200) + "#" + approval_id
        changed = self._write(lambda conn: conn.execute(stmt.values(call_key=closed)).rowcount)
        return bool(changed == 1)

    def approval_remembered(
        self, agent: str, hook: str, scope: str, tool: str, input_digest: str
    ) -> str | None:
        """The id of the approval remembered for this tool and input in ``scope``; None."""
        r = approvals_remembered_table
        where = (r.c.agent == agent) & (r.c.hook == hook) & (r.c.scope == scope)
        stmt = sa.select(r.c.approval_id).where(
            where, r.c.tool == tool, r.c.input_digest == input_digest
        )
        row = self._read(lambda conn: conn.execute(stmt).first())
        return None if row is None else str(row[0])

    def approvals_forget(self, conn: sa.Connection, scope: str) -> int:
        """Delete a scope's approvals and what it remembered (with its other data); for
        ``user:<id>``, also the approvals of that user's calls in any session, and what they
        let later calls skip."""
        a, r = approvals_table, approvals_remembered_table
        gone = 0
        kind, _, user = scope.partition(":")
        if kind == "user" and user:
            theirs = sa.select(a.c.id).where(a.c.user_id == user)
            gone += conn.execute(r.delete().where(r.c.approval_id.in_(theirs))).rowcount
            gone += conn.execute(a.delete().where(a.c.user_id == user)).rowcount
        gone += conn.execute(a.delete().where(a.c.scope_key == scope)).rowcount
        gone += conn.execute(a.delete().where(a.c.remember_scope == scope)).rowcount
        return int(gone + conn.execute(r.delete().where(r.c.scope == scope)).rowcount)


def _refusal(found: Approval | None, approval_id: str, now: str) -> Approval:
    """``found`` if it may be resolved at ``now``; else the ApprovalError saying why not."""
    if found is None:
        raise ApprovalError(
            f"no approval has id {approval_id!r} (unknown, or deleted with its session's data)",
            approval_id=approval_id,
            cause="unknown",
        )
    status = found.status_at(now)
    if status == EXPIRED:
        raise ApprovalError(
            f"approval {approval_id} expired at {found.expires_at}: the call was denied; "
            "ask the tool again to put a new question",
            approval_id=approval_id,
            cause="expired",
        )
    if status != PENDING:
        raise ApprovalError(
            f"approval {approval_id} was already {status} by {found.resolved_by} at "
            f"{found.resolved_at}; the first decision stands",
            approval_id=approval_id,
            cause="resolved",
        )
    return found


def input_digest(value: dict[str, Any]) -> str:
    """A tool input's digest: the same input (key order aside), the same digest."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _remember(conn: sa.Connection, approval: Approval, now: str) -> None:
    r = approvals_remembered_table
    key = {
        "agent": approval.agent,
        "hook": approval.hook,
        "scope": approval.remember_scope,
        "tool": approval.tool,
        "input_digest": input_digest(approval.input),
    }
    conn.execute(r.delete().where(*(r.c[name] == value for name, value in key.items())))
    conn.execute(r.insert().values(key | {"approval_id": approval.id, "time": now}))
