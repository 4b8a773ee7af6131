"""Conversation entries from the host's side: ``Agent.remember`` and ``Agent.entries``.

Entries are what a hook or the host keeps in a conversation for later turns (a mode, a
summary, a cut): JSON, stamped with the turn, kept in the store per agent and session, capped
per entry and per conversation with the same caps scripts have (engine/sandbox/limits.py).
"""

from __future__ import annotations

from typing import Any

from engine.errors import EventError
from engine.sandbox.limits import Limits
from engine.sandbox.values import InvalidValue, check_json, json_size
from engine.store import Store

CAPS = Limits()
"""The caps an entry the host adds is held to: those of a script's ``host.entries.add``."""


def check_entry(session_id: Any, kind: Any, data: Any, *, caps: Limits = CAPS) -> None:
    """Refuse an entry the store would not keep whole.

    Raises:
        EventError: ``session_id`` or ``kind`` not non-empty text (``kind`` of at most
            ``max_entry_kind_chars``), or ``data`` not JSON within ``max_depth`` and
            ``max_entry_bytes``; ``errors`` names each by ``loc``.
    """
    errors: list[dict[str, Any]] = []
    if type(session_id) is not str or not session_id:
        errors.append({"loc": ["session_id"], "msg": "must be non-empty text"})
    if type(kind) is not str or not kind:
        errors.append({"loc": ["kind"], "msg": "must be non-empty text"})
    elif len(kind) > caps.max_entry_kind_chars:
        errors.append(
            {"loc": ["kind"], "msg": f"is longer than {caps.max_entry_kind_chars} characters"}
        )
    try:
        check_json(data, max_depth=caps.max_depth, what="data")
        if json_size(data) > caps.max_entry_bytes:
            raise InvalidValue(f"data: larger than {caps.max_entry_bytes} bytes")
    except InvalidValue as exc:
        errors.append({"loc": ["data"], "msg": str(exc).removeprefix("data: ")})
    if errors:
        raise EventError(errors)


def remember(
    store: Store,
    agent: str,
    session_id: str,
    kind: str,
    data: Any,
    *,
    user_id: str | None,
    turn_id: str | None,
    time: str,
) -> None:
    """Check one entry and append it to ``agent``'s conversation ``session_id``.

    Raises:
        EventError: the entry is not one the store keeps (``check_entry``).
        StoreError: the store could not write it.
    """
    check_entry(session_id, kind, data)
    entry = {"kind": kind, "data": data}
    store.entries_add(
        agent,
        session_id,
        [entry],
        user_id=user_id,
        turn=turn_id,
        time=time,
        keep=CAPS.max_entries,
    )


def listed(
    store: Store, agent: str, session_id: str, kind: str | None, *, last: int | None
) -> list[dict[str, Any]]:
    """The conversation's entries oldest first, as ``Agent.entries`` returns them.

    Raises:
        EventError: ``last`` is not a whole number >= 0.
        StoreError: the store could not be read.
    """
    if last is not None and not (type(last) is int and last >= 0):
        raise EventError([{"loc": ["last"], "msg": "must be a whole number >= 0"}])
    if last == 0:
        return []
    return store.entries_list(agent, session_id, kind, last=last)
