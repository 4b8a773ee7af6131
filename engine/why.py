"""Why a record decided what it did: the event as the hooks saw it, each hook's part, and the
hook that decided."""

from __future__ import annotations

import json
from typing import Any

from engine.store.records import HookRun, Record


def deciding_hooks(record: Record) -> tuple[list[str], str]:
    """The hooks that decided ``record``'s outcome, and how they did, in one phrase."""
    return deciders(record.hooks, record.outcome)


def deciders(hooks: list[HookRun], outcome: dict[str, Any]) -> tuple[list[str], str]:
    """The hooks that decided an outcome (``Outcome.decision()`` or a record's), and how.

    A block is decided by the first enforced hook whose change blocks, else by the first
    enforced hook that failed (a failure refuses at ``tool_call``, and elsewhere by its
    ``on_error``). Otherwise every enforced hook that changed something decided together.
    """
    enforced = [run for run in hooks if run.mode == "enforce"]
    if outcome.get("input_error"):
        return [], f"refused before any hook ran: {outcome['input_error']}"
    if outcome.get("blocked"):
        for run in enforced:
            if run.change and run.change.get("block"):
                return [run.name], f"blocked by {run.name}: {outcome.get('reason')}"
        failed = [run.name for run in enforced if run.status == "failed"]
        if failed:
            return failed[:1], f"blocked because {failed[0]} failed: {outcome.get('reason')}"
        return [], f"blocked: {outcome.get('reason')}"
    changers = [run.name for run in enforced if run.change]
    failed = [f"{run.name} failed ({run.cause}), ignored" for run in enforced if run.error]
    if changers:
        return changers, "; ".join([f"changed by {', '.join(changers)}", *failed])
    return [], "; ".join(failed or ["no hook changed anything: allowed as asked"])


def explain_record(record: Record) -> dict[str, Any]:
    """``record`` as JSON data for ``hookengine explain <record-id> --json``."""
    deciders, summary = deciding_hooks(record)
    return {
        "id": record.id,
        "time": record.time,
        "agent": record.agent,
        "point": record.point,
        "host": record.host,
        "generation": record.generation,
        "scope": record.scope,
        "event": record.event,
        "hooks": [_hook_data(run, run.name in deciders) for run in record.hooks],
        "decided_by": deciders,
        "summary": summary,
        "outcome": record.outcome,
    }


def _hook_data(run: HookRun, decided: bool) -> dict[str, Any]:
    return {
        "name": run.name,
        "kind": run.kind,
        "version": run.version,
        "mode": run.mode,
        "layer": run.layer,
        "status": run.status,
        "duration_ms": run.duration_ms,
        "change": run.change,
        "error": run.error,
        "cause": run.cause,
        "logs": run.logs,
        "decided": decided,
    }


def record_lines(record: Record) -> list[str]:
    """The explanation of one record as the command line prints it."""
    data = explain_record(record)
    lines = [
        f"record {record.id}",
        f"  {record.time}  agent {record.agent}  {record.point}  {record.scope_key}  "
        f"generation {record.generation}  host {record.host}",
        "event (as the hooks saw it):",
    ]
    lines += [f"  {key}: {_text(value)}" for key, value in record.event.items()]
    lines.append("hooks, in the order they ran:" if record.hooks else "hooks: none ran")
    for n, hook in enumerate(data["hooks"], 1):
        lines += _hook_lines(n, hook)
    lines.append(f"=> {data['summary']}")
    return lines


def _hook_lines(n: int, hook: dict[str, Any]) -> list[str]:
    mode = "" if hook["mode"] == "enforce" else f", {hook['mode']}"
    mark = "  <- decided" if hook["decided"] else ""
    lines = [
        f"  {n}. {hook['name']} ({hook['kind']} {hook['version']}{mode}, {hook['layer']}) "
        f"{hook['status']} in {hook['duration_ms']:.2f} ms{mark}"
    ]
    if hook["error"]:
        lines.append(f"       error [{hook['cause']}]: {_text(hook['error'])}")
    for key, value in (hook["change"] or {}).items():
        lines.append(f"       {key}: {_text(value)}")
    lines += [f"       log: {_text(entry)}" for entry in hook["logs"]]
    return lines


def _text(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["deciders", "deciding_hooks", "explain_record", "record_lines"]
