"""Making a record safe to store: masking by path and by value, then ``engine.encoding``
over each part (scalars, event, each hook, outcome; each part its own size budget, so one
part cannot push another out). The record writer (engine/records.py) runs it on its thread.
"""

from __future__ import annotations

from typing import Any

from engine.encoding import MAX_DEPTH, encode_fields, is_clean
from engine.store import Record
from engine.store.records import HookRun

MASK = "***"
MIN_MASKED_VALUE = 4
"""Shorter masked values are masked at their path only: redacting "1" or "yes" everywhere
would garble every record and hide nothing an attacker could not guess."""
SCALARS = ("id", "time", "agent", "point", "scope", "scope_key")
_RUN_FIELDS: tuple[str, ...] = HookRun.__slots__
"""HookRun's fields (read shallowly: ``asdict`` deep-copies, and hostile values nest deep)."""


def mask_fields(record: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """``record`` with each dotted path (``event.input.password``) replaced by ``***``.

    Copies only along the masked paths (no deep copy: a hostile event may nest deeply).
    """
    for path in paths:
        record = _masked(record, path.split("."))
    return record


def _masked(node: Any, parts: list[str]) -> Any:
    if isinstance(node, list):
        return [_masked(item, parts) for item in node]
    if not parts or not isinstance(node, dict) or parts[0] not in node:
        return node
    out = dict(node)
    out[parts[0]] = MASK if len(parts) == 1 else _masked(node[parts[0]], parts[1:])
    return out


def masked_values(event: dict[str, Any], paths: list[str]) -> set[str]:
    """The text of every string and number at the ``event.`` paths (whole subtrees), at least
    ``MIN_MASKED_VALUE`` characters long: what masking by value redacts everywhere."""
    found: set[str] = set()
    for path in paths:
        if path.startswith("event."):
            _collect(event, path.split(".")[1:], found, 0)
    return {v for v in found if len(v) >= MIN_MASKED_VALUE}


def _collect(node: Any, parts: list[str], found: set[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            _collect(item, parts, found, depth + 1)
    elif isinstance(node, dict):
        if not parts:
            for item in node.values():
                _collect(item, parts, found, depth + 1)
        elif parts[0] in node:
            _collect(node[parts[0]], parts[1:], found, depth + 1)
    elif not parts and isinstance(node, str | int | float) and not isinstance(node, bool):
        found.add(str(node))


def prepare(record: Record, mask: list[str]) -> Record:
    """``record`` masked (by path, then by value) and encoded: safe to hand to any store.

    The common case (nothing to mask, nothing to change) returns ``record`` itself.
    """
    data: dict[str, Any] = {name: getattr(record, name) for name in (*SCALARS, "event")}
    data.update(hooks=record.hooks, outcome=record.outcome)
    if not mask and is_clean(data):
        return record
    data["hooks"] = [{name: getattr(run, name) for name in _RUN_FIELDS} for run in record.hooks]
    data = mask_fields(data, mask)
    redact = tuple(masked_values(record.event, mask))
    if is_clean(data, redact=redact):
        parts = data
    else:  # each part its own budget: one cannot push another out of the record
        parts = encode_fields({name: data[name] for name in SCALARS}, redact=redact)
        for name in ("event", "outcome"):
            parts[name] = encode_fields(data[name], redact=redact)
        parts["hooks"] = [encode_fields(run, redact=redact) for run in data["hooks"]]
    hooks = [HookRun(**run) for run in parts.pop("hooks")]
    return Record.model_construct(
        **parts, hooks=hooks, generation=record.generation, host=record.host
    )
