"""Approvals in LangChain runs: a tool call waiting on a person pauses the run with an
interrupt shaped like ``HumanInTheLoopMiddleware``'s, and the person's answer, given back
with ``Command(resume=...)``, resolves the engine's approval."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_BY = "langchain"
"""Who decided, when the answer does not say (``{"type": "approve", "by": "alice"}``)."""


def approval_request(approval: Mapping[str, Any]) -> dict[str, Any]:
    """The interrupt's value: one action to review, as ``HumanInTheLoopMiddleware`` asks
    (``action_requests`` and ``review_configs``), with the engine's ``approval_id``."""
    return {
        "action_requests": [
            {
                "name": approval["tool"],
                "args": approval["input"],
                "description": approval["message"],
            }
        ],
        "review_configs": [
            {"action_name": approval["tool"], "allowed_decisions": ["approve", "reject"]}
        ],
        "approval_id": approval["id"],
    }


def decision_of(answer: Any) -> tuple[bool, str, str | None]:
    """``(approve, by, note)`` of the resume value: ``{"decisions": [{"type": "approve" |
    "reject", "message"?, "by"?}]}`` as for ``HumanInTheLoopMiddleware``, one such decision,
    or a bare ``True`` / ``False``.

    Raises:
        ValueError: the answer is none of these (an ``edit`` decision included: a person
            may approve or reject the call the policies left, not write another).
    """
    if isinstance(answer, bool):
        return answer, DEFAULT_BY, None
    if isinstance(answer, Mapping) and "decisions" in answer:
        decisions = answer["decisions"]
        if not isinstance(decisions, list) or len(decisions) != 1:
            raise ValueError("the resume value must hold one decision for the one tool call")
        answer = decisions[0]
    kind = answer.get("type") if isinstance(answer, Mapping) else None
    if kind not in ("approve", "reject"):
        raise ValueError(
            f"the resume value must be a decision of type approve or reject, got {kind!r}"
        )
    assert isinstance(answer, Mapping)
    by, note = answer.get("by"), answer.get("message")
    return (
        kind == "approve",
        by if isinstance(by, str) and by else DEFAULT_BY,
        note if isinstance(note, str) and note else None,
    )
