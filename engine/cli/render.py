"""Human-readable rendering of outcomes and records for the command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from engine.outcome import Outcome

MAX_TEXT = 160


def short(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def outcome_lines(out: Outcome, *, verbose: bool = True) -> list[str]:
    """What fired, what changed, how long it took: one outcome as lines."""
    lines = [f"{out.point}  (agent {out.agent}, record {out.id[:8]})"]
    for run in out.hooks if verbose else []:
        status = run.status if run.mode == "enforce" else f"{run.status}, shadow"
        line = f"  {run.name} ({run.kind} {run.version}) {status} in {run.duration_ms:.2f} ms"
        lines.append(line)
        if run.error:
            lines.append(f"    error [{run.cause}]: {short(run.error)}")
        for key, value in (run.change or {}).items():
            lines.append(f"    {key}: {short(value)}")
        lines += [f"    log: {short(entry)}" for entry in run.logs]
    lines += _decision_lines(out)
    return lines


def approval_line(approval: Any) -> str:
    """A waiting approval as one line: its id, the question, the call, when it expires.

    The person decides from this line: the input is shown whole (a long command's end is
    where the dangerous part hides) and every character they would not see as written
    (a newline, a bidi override) escaped, in the question too."""
    from engine.kinds.approval import visible

    shown = visible(json.dumps(approval.input, ensure_ascii=False, sort_keys=True))
    kept = getattr(approval, "remember_scope", None)
    remembered = f"; approving also allows it later in {visible(kept)}" if kept else ""
    return (
        f"  {approval.id}  {visible(approval.message)}  [{visible(approval.tool)} {shown}; "
        f"expires {approval.expires_at}{remembered}]"
    )


def _decision_lines(out: Outcome) -> list[str]:
    lines = []
    if out.blocked:
        lines.append(f"  => BLOCKED: {out.reason}")
    if out.approval is not None:
        lines.append(f"  => ASK a person: approval {out.approval['id']}")
    if out.point == "before_user_message":
        if out.answer is not None:
            lines.append(f"  => answer (LLM skipped): {short(out.answer)}")
        for m in out.messages:
            lines.append(f"  => inject {m['role']}: {short(m['content'])}")
    elif out.point == "tool_call" and not out.blocked:
        lines.append(f"  => run the tool with input {short(out.input)}")
    elif out.point == "tool_result":
        lines.append(f"  => result: {short(out.result)}")
    elif out.point == "before_assistant_message":
        lines.append(f"  => answer: {short(out.answer)}")
    elif out.point == "before_call":
        lines += [f"  => section: {short(s)}" for s in out.sections]
    lines += [f"  => notice: {short(n)}" for n in out.notices]
    lines += [f"  => ui event: {short(e)}" for e in out.events]
    lines += [
        f"  => shadow {s['hook']} would have: {short(s.get('change') or s.get('error'))}"
        for s in out.shadow
    ]
    if len(lines) == 0:
        lines.append("  => no change")
    return lines


@contextmanager
def progress_bar(
    label: str, *, force: bool = False, unit: str = "records"
) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on stderr when it is a terminal (or
    with ``force``); on a pipe it draws nothing, so logs and CI output stay clean."""
    if not (force or sys.stderr.isatty()):
        yield lambda _done, _total: None
        return
    from tqdm import tqdm

    bar: Any = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=label, unit=f" {unit}", file=sys.stderr, leave=True)
        bar.update(done - bar.n)

    try:
        yield advance
    finally:
        if bar is not None:
            bar.close()
