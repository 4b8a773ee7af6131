"""Kind ``approval``: a person decides whether a tool call runs (a third outcome, ``ask``).

The hook blocks the call while it waits, with a reason that says approval is required, and
keeps the question in its record's extras (``approval``: id, message, tool, input, status):
the pipeline lifts it to ``Outcome.approval``. A host that can ask shows the question and
answers with ``Agent.resolve``; one that cannot sees a deny whose reason says why. Everything
lives in the store (engine/store/approvals.py), so any process on the same store may resolve.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from engine.config.loader import HookSpec
from engine.config.models import ApprovalConfig
from engine.errors import ConfigError, Problem
from engine.kinds.base import HookContext, Mode
from engine.kinds.common import SpecHook
from engine.points import Point, Scope
from engine.store.approvals import APPROVED, EXPIRED, PENDING, Approval, input_digest
from engine.store.state import utc

if TYPE_CHECKING:
    from engine.kinds import BuildEnv
    from engine.sandbox import CompiledScript, Limits, WorkerPool

REQUIRED = "approval required"
"""How the reason of a call that waits on a person begins."""
_FIELD = re.compile(r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}")


@dataclass
class Condition:
    """The ``when:`` script, compiled in the sandbox: ``when(event, host)`` says whether to
    ask (it sees the event as the hooks before it left it)."""

    pool: WorkerPool
    script: CompiledScript
    limits: Limits
    owner: str

    def holds(self, event: dict[str, Any]) -> bool:
        from engine.sandbox.limits import BatchCall, config_key

        call = BatchCall(
            self.script, "on_tool_call", {}, config_key({}), {}, self.limits, self.owner
        )
        result = self.pool.call_batch(Point.TOOL_CALL.value, event, [call])[0]
        if isinstance(result, Exception):
            raise result
        return bool(result.value and result.value.get("ask"))


@dataclass
class ApprovalHook(SpecHook):
    """Asks about calls of matching tools (when ``when`` holds) and answers as decided."""

    config: ApprovalConfig
    condition: Condition | None = None
    points = frozenset({Point.TOOL_CALL})
    runs_last = True
    """At tool_call it runs after every other hook, host layer included (engine/pipeline.py)."""
    blocks = True

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        tool, args = event["name"], event.get("input") or {}
        if not any(fnmatchcase(tool, glob) for glob in self.config.tools):
            return None
        if ctx.replay is not None:
            return _replayed(ctx)
        if self.condition is not None and not self.condition.holds(event):
            return None
        if self.mode is Mode.SHADOW:  # what it would ask; nobody is asked, nothing is kept
            return {"block": f"{REQUIRED}: {render(self.config.message, event)}"}
        remembered = self._remembered(ctx, tool, args)
        if remembered is not None:
            ctx.extras["approval"] = {"id": remembered, "status": "remembered"}
            return None
        key = _call_key(event, args, ctx.scope.user_id)
        found = ctx.store.approval_for_call(ctx.agent, self.name, whose(ctx.scope), key)
        if found is None:
            found = self._ask(event, ctx, tool, args)
        status = found.status_at(event["time"])
        if status == EXPIRED and found.status == PENDING:
            ctx.store.approval_expire(found.id)
        # without a call id the decision was for this one call: the next is asked anew.
        # Evaluations racing on one decision: only the one that detaches it takes it, the
        # others put a new question (an approval runs the call once, not once each)
        once = status != PENDING and key.startswith("input:")
        if once and not ctx.store.approval_close(found.id, key):
            found = self._ask(event, ctx, tool, args)
            status = PENDING
        return _answer(ctx, found, status)

    def _remembered(self, ctx: HookContext, tool: str, args: dict[str, Any]) -> str | None:
        scope = _remember_scope(self.config.remember, ctx)
        if scope is None:
            return None
        return ctx.store.approval_remembered(ctx.agent, self.name, scope, tool, input_digest(args))

    def _ask(
        self, event: dict[str, Any], ctx: HookContext, tool: str, args: dict[str, Any]
    ) -> Approval:
        # the event's time, but never later than the clock: a host's time ahead (a skewed
        # clock, a year 2999) would stretch timeout_s, and the person, who resolves by the
        # clock, could approve long after the call should have been denied
        clock = datetime.now(UTC).isoformat(timespec="microseconds")
        now = min(utc(event["time"]) or event["time"], clock)
        expires = datetime.fromisoformat(now) + timedelta(seconds=self.config.timeout_s)
        approval = Approval(
            id=uuid.uuid4().hex,
            agent=ctx.agent,
            hook=self.name,
            scope_key=whose(ctx.scope),
            call_key=_call_key(event, args, ctx.scope.user_id),
            tool=tool,
            input=args,
            message=render(self.config.message, event),
            remember_scope=_remember_scope(self.config.remember, ctx),
            status=PENDING,
            created_at=now,
            expires_at=utc(expires.isoformat()) or expires.isoformat(),
            user_id=ctx.scope.user_id,
        )
        ctx.store.approval_add(approval)
        return approval

    def close(self) -> None:
        if self.condition is not None:
            self.condition.pool.release(self.condition.script)


def whose(scope: Scope) -> str:
    """Whose calls an approval belongs to: the session's when there is one (two sessions of
    one user never see each other's questions), else the scope's key."""
    return f"session:{scope.session_id}" if scope.session_id else scope.key()


def _call_key(event: dict[str, Any], args: dict[str, Any], user_id: str | None) -> str:
    """What makes two evaluations the same call: the host's call id, else tool and input.

    Either way the key holds the digest of the tool, the input and the user: a decision is
    only ever found for the very call that was put to the person, so a host (or a model
    choosing its call ids) reusing an approved call id for another tool, another input or
    another user of the session is asked anew instead of running it."""
    what = input_digest({"tool": event["name"], "input": args, "user": user_id})
    call_id = event.get("call_id")
    if not call_id:
        return f"input:{what}"
    # a long id is kept as its digest: the column holds 300 characters (3 + 200 + 1 + 64)
    shown = call_id if len(call_id) <= 200 else f"#{input_digest({'id': call_id})}"
    return f"id:{shown}@{what}"


def _remember_scope(remember: str, ctx: HookContext) -> str | None:
    value = {"session": ctx.scope.session_id, "user": ctx.scope.user_id}.get(remember)
    return f"{remember}:{value}" if value else None


def _answer(ctx: HookContext, approval: Approval, status: str) -> dict[str, Any] | None:
    """The change for ``approval`` at ``status``, the question and its answer kept in the
    record's extras (``approval``), where the pipeline and replay read them."""
    ctx.extras["approval"] = {
        "id": approval.id,
        "message": approval.message,
        "tool": approval.tool,
        "input": approval.input,
        "status": status,
        "resolved_by": approval.resolved_by,
        "resolved_at": approval.resolved_at,
        "note": approval.note,
    }
    return _change(approval.message, status, approval.resolved_by, approval.note)


def _change(message: str, status: str, by: str | None, note: str | None) -> dict[str, Any] | None:
    if status == APPROVED:
        return None
    if status == PENDING:
        return {"block": f"{REQUIRED}: {message}"}
    if status == EXPIRED:
        return {"block": f"{REQUIRED}, and none came in time: the call was denied"}
    why = f": {note}" if note else ""
    return {"block": f"denied by {by}{why}"}


def _replayed(ctx: HookContext) -> dict[str, Any] | None:
    """During replay: the decision the record holds, not the store's state today."""
    assert ctx.replay is not None
    recorded = ctx.replay.get("approval")
    if not recorded or recorded.get("status") == "remembered":
        if recorded:
            ctx.extras["approval"] = dict(recorded)
        return None
    ctx.extras["approval"] = dict(recorded)
    status = recorded["status"]
    return _change(recorded["message"], status, recorded.get("resolved_by"), recorded.get("note"))


def render(template: str, event: dict[str, Any]) -> str:
    """The message with ``{{tool}}``, ``{{input}}``, ``{{input.<key>}}``, ``{{call_id}}``."""
    args = event.get("input") or {}

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "tool":
            return visible(str(event["name"]))
        if name == "call_id":
            return visible(str(event.get("call_id") or ""))
        if name == "input":
            return visible(json.dumps(args, ensure_ascii=False, sort_keys=True))
        if name.startswith("input.") and name[6:] in args:
            value = args[name[6:]]
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return visible(shown)
        return match.group(0)

    return _FIELD.sub(field, template)


_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Character categories that a person reading the question would not see as written:
controls (a newline pushing the rest of a command out of a one-line prompt, a carriage
return or escape sequence redrawing it), format characters (bidi overrides reordering what
is shown, zero-width characters), separators, surrogates, unassigned and private ones."""
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """``text`` with each character a person would not see as written escaped (``\\n``,
    ``\\u202e``), so what the question shows is what will run."""
    if text.isprintable():  # the common case: nothing hidden (spaces are printable too)
        return text
    return "".join(_escaped(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in text)


def _escaped(ch: str) -> str:
    code = ord(ch)
    return _ESCAPES.get(ch) or (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")


def build(spec: HookSpec, env: BuildEnv) -> ApprovalHook:
    """The runnable hook of a validated ``approval`` spec; its ``when:`` script compiled.

    Raises:
        ScriptCompileError: the ``when:`` script does not compile.
        ConfigError: it defines no ``when(event, host)`` function.
    """
    config: ApprovalConfig = spec.config
    condition = None
    if config.when is not None:
        condition = _condition(spec, env, config)
    return ApprovalHook(spec, config, condition)


_WRAPPERS = {
    "python": "\n\ndef on_tool_call(event, host):\n    return {'ask': bool(when(event, host))}\n",
    "javascript": "\n;function on_tool_call(event, host) { return {ask: !!when(event, host)}; }\n",
}
"""Appended to a ``when:`` script: the sandbox calls ``on_<point>`` functions that answer a
mapping; the author writes ``when(event, host)`` answering true or false. Appended, so the
author's line numbers stay as written."""
_DEFINES_WHEN = {
    "python": re.compile(r"^def\s+when\s*\(", re.MULTILINE),
    "javascript": re.compile(r"\bfunction\s+when\s*\(|\bwhen\s*=", re.MULTILINE),
}


def _condition(spec: HookSpec, env: BuildEnv, config: ApprovalConfig) -> Condition:
    from engine.sandbox import Language, Limits

    assert config.when is not None
    language, source = config.when.language, config.when.source
    if not _DEFINES_WHEN[language].search(source):
        line = spec.line("when")
        raise ConfigError(
            [Problem(spec.shown, line, "when", "the script defines no when(event, host) function")]
        )
    pool = env.sandbox()
    script = pool.compile(
        source + _WRAPPERS[language], filename=f"{spec.shown}:when", language=Language(language)
    )
    pool.hold(script)
    settings = env.settings.scripts
    limits = Limits(timeout_ms=settings.timeout_ms, memory_mb=settings.memory_mb)
    return Condition(pool, script, limits, f"{spec.shown}:{config.name}:when")
