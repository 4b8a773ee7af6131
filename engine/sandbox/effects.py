"""How a hook's answer changes the event the next hook sees: one rule for the host and workers.

The pipeline (engine/changes.py ``apply``) applies a *checked* Change; a sandbox worker that runs
several script hooks of one point in a row applies each script's *raw* answer with
``apply_raw`` before calling the next. Both follow the rules here, so a batch run in a worker
feeds each script the same event the pipeline would have. Standard library only: workers
import this module without the rest of the engine.
"""

from __future__ import annotations

from typing import Any

VIEW_FIELDS = ("question", "instruction", "tools", "input", "result", "settings")
"""Change fields that replace (``settings``: merge into) the event field of the same name."""


def join_answer(answer: str, appended: list[str]) -> str:
    """The answer with appended texts, one paragraph each."""
    return "\n\n".join([answer, *appended]) if appended else answer


def stops(value: Any) -> bool:
    """Whether an answer ends the chain: it blocks (any ``block`` given, valid or not; the host
    decides whether it was valid), or it is not a mapping (a failure on the host's side)."""
    if value is None:
        return False
    return type(value) is not dict or value.get("block") is not None


def apply_raw(point: str, event: dict[str, Any], value: Any) -> dict[str, Any] | None:
    """The event after a script answered ``value`` (plain JSON data) at ``point``.

    Returns None when the answer cannot be applied without the host's checks (not a mapping,
    a field of the wrong shape): the worker then stops the batch and the host, which checks
    every answer, decides. ``event`` is not changed; the result shares unchanged fields.
    """
    if value is None:
        return event
    if type(value) is not dict:
        return None
    updates: dict[str, Any] = {}
    for name in VIEW_FIELDS:
        new = value.get(name)
        if new is None or name not in event:
            continue
        if name == "settings":
            if type(new) is not dict or type(event[name]) is not dict:
                return None
            updates[name] = {**event[name], **new}
        else:
            updates[name] = new
    if point == "before_call" and value.get("messages") is not None:
        updates["messages"] = value["messages"]
    if point == "before_assistant_message":
        answer, append = value.get("answer"), value.get("append")
        if type(append) is str:
            append = [append]
        if answer is not None or append:
            base = answer if answer is not None else event.get("answer")
            if type(base) is not str or not (
                append is None or (type(append) is list and all(type(a) is str for a in append))
            ):
                return None
            updates["answer"] = join_answer(base, append or [])
    return {**event, **updates} if updates else event
