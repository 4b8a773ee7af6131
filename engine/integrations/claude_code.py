"""Claude Code and Codex hooks: one hook event in, the engine's decision as the hook's JSON out.

Five hook events map onto points (docs/claude-code.md has the whole table):

==================  ======================  ==================================================
hook event          point                   what the hook prints
==================  ======================  ==================================================
UserPromptSubmit    before_user_message     block / answer: ``decision: block`` with the text;
                                            injected messages: ``additionalContext``
PreToolUse          tool_call               block: ``permissionDecision: deny``; a rewrite:
                                            ``updatedInput`` (never ``allow``); an approval:
                                            ``permissionDecision: ask`` (Claude Code only)
PostToolUse         tool_result             a changed result: ``updatedToolOutput`` in the
                                            shape of ``tool_response``
Stop                after_turn              nothing (the turn's question is the session's
                                            last prompt)
SessionEnd          after_loop              nothing
==================  ======================  ==================================================

This module imports only the standard library at import time: the ``hookengine-hook``
forwarder uses its failure answers without loading the engine.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing itself is not imported: the forwarder's start-up counts
if TYPE_CHECKING:
    from typing import Any, Literal

    from engine.outcome import Outcome
    from engine.runtime import Agent, Engine

    Dialect = Literal["claude", "codex"]

DIALECTS: tuple[Dialect, ...] = ("claude", "codex")
HOST_OF: dict[str, str] = {"claude": "claude-code", "codex": "codex"}
"""The engine's host profile (engine/hosts.py) for each dialect."""

POINT_OF: dict[str, str] = {
    "UserPromptSubmit": "before_user_message",
    "PreToolUse": "tool_call",
    "PostToolUse": "tool_result",
    "Stop": "after_turn",
    "SessionEnd": "after_loop",
}
"""The point each handled hook event evaluates."""

PREFIX = "hookengine: "
"""Starts every text the hook writes itself, so the user sees where it came from."""


class PayloadError(Exception):
    """The hook payload is not what the event needs; ``errors`` as ``[{loc, msg}]``."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))


def handle(engine: Engine, agent: str, payload: Any, *, dialect: str = "claude") -> dict[str, Any]:
    """The JSON object a Claude Code (or Codex) hook prints for ``payload``; may be ``{}``.

    Never raises: a bad payload, an unknown agent or an engine failure becomes the event's
    fail-closed answer (``failure_output``): a deny at PreToolUse. Safe to call from several
    threads at once (each call is one ``Agent.evaluate``).

    Args:
        engine: the loaded engine.
        agent: the agent whose hooks decide.
        payload: the hook input JSON, as parsed.
        dialect: ``claude`` (Claude Code) or ``codex`` (Codex's hook output schemas).
    """
    event = event_name(payload)
    try:
        if dialect not in DIALECTS:
            raise PayloadError([{"loc": ["dialect"], "msg": "must be claude or codex"}])
        if event not in POINT_OF:
            return _not_handled(event)
        return _ANSWER[event](engine.agent(agent), payload, dialect)
    except Exception as exc:  # noqa: BLE001 - the edge: a failure is the fail-closed answer
        _log_failure(agent, event, exc)
        return failure_output(payload, describe(exc), dialect=dialect)


def event_name(payload: Any) -> str | None:
    """The payload's ``hook_event_name`` if it is text, else None."""
    name = payload.get("hook_event_name") if isinstance(payload, Mapping) else None
    return name if isinstance(name, str) else None


def failure_output(payload: Any, message: str, *, dialect: str = "claude") -> dict[str, Any]:
    """The answer to ``payload`` when no decision could be made: fail closed where the event
    guards.

    PreToolUse (or a payload whose event cannot be read: it may be a tool call) is a deny;
    UserPromptSubmit is ``decision: block`` (the prompt is refused); PostToolUse withholds
    the unchecked output (``updatedToolOutput`` with the message in the tool's shape; in the
    Codex dialect an MCP tool's ``updatedMCPToolOutput``, else ``decision: block``, all Codex
    can do); Stop and SessionEnd only warn the user.
    """
    event = event_name(payload)
    text = message if message.startswith(PREFIX) else PREFIX + message
    if event == "UserPromptSubmit":
        return {"decision": "block", "reason": text, "systemMessage": text}
    if event == "PostToolUse":
        return {**_withheld(payload, text, dialect), "systemMessage": text}
    if event in ("Stop", "SessionEnd"):
        return {"systemMessage": text}
    return {**_deny(text), "systemMessage": text}


def _withheld(payload: Mapping[str, Any], text: str, dialect: str) -> dict[str, Any]:
    """A PostToolUse answer that keeps the tool's output from the model, saying ``text``."""
    shaped = in_shape(payload.get("tool_response"), text)
    name = payload.get("tool_name")
    if dialect != "codex":
        output = {"hookEventName": "PostToolUse", "updatedToolOutput": shaped}
    elif isinstance(name, str) and name.startswith("mcp__"):
        output = {"hookEventName": "PostToolUse", "updatedMCPToolOutput": shaped}
    else:
        return {"decision": "block", "reason": text + _CODEX_OUTPUT}
    return {"decision": "block", "reason": text, "hookSpecificOutput": output}


def describe(exc: BaseException) -> str:
    """One line for the user and the model naming what failed (never the payload's values)."""
    from engine.errors import EventError

    if isinstance(exc, (PayloadError, EventError)):
        return PREFIX + f"the hook input is not valid: {_cut(str(exc))}"
    return PREFIX + f"the policy check failed ({type(exc).__name__}: {_cut(str(exc))})"


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# -- one function per event -------------------------------------------------------------------


def _user_prompt(agent: Agent, payload: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    prompt = _text(payload, "prompt")
    out = _evaluate(agent, "before_user_message", {"question": prompt}, payload, dialect)
    if out.blocked or out.answer is not None:
        return _with_message(
            {"decision": "block", "reason": _reason(out) if out.blocked else out.answer}, out
        )
    answer: dict[str, Any] = {}
    context = _context(out.messages)
    if context:
        answer["hookSpecificOutput"] = {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": context,
        }
    return _with_message(answer, out)


def _tool_call(agent: Agent, payload: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    fields = _tool_fields(payload)
    out = _evaluate(agent, "tool_call", fields, payload, dialect)
    if out.approval is not None and dialect == "claude":
        return _with_message(_ask(out, fields["input"]), out)
    if out.blocked:
        return _with_message(_deny(_reason(out)), out)
    if not out.hook_changed("input") or out.input == fields["input"]:
        return _with_message({}, out)
    if dialect == "codex":  # Codex applies updatedInput only with "allow", which skips approval
        return _with_message(_deny(_CODEX_REWRITE), out)
    rewrite = {"hookEventName": "PreToolUse", "updatedInput": out.input}
    return _with_message({"hookSpecificOutput": rewrite}, out)


def _tool_result(agent: Agent, payload: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    fields = _tool_fields(payload)
    if "tool_response" not in payload:
        raise PayloadError([{"loc": ["tool_response"], "msg": "is missing"}])
    response = fields["result"] = payload["tool_response"]
    out = _evaluate(agent, "tool_result", fields, payload, dialect)
    if not out.blocked and (not out.hook_changed("result") or out.result == response):
        return _with_message({}, out)
    shaped = in_shape(response, out.result)
    if dialect == "claude":
        output = {"hookEventName": "PostToolUse", "updatedToolOutput": shaped}
        return _with_message({"hookSpecificOutput": output}, out)
    # the engine lists a result change as unsupported by Codex: said here, in Codex's terms
    if fields["name"].startswith("mcp__"):
        output = {"hookEventName": "PostToolUse", "updatedMCPToolOutput": shaped}
        return _with_message({"hookSpecificOutput": output}, out, said="result")
    why = _reason(out) if out.blocked else "a policy hook changed this tool's output"
    text = PREFIX + why + _CODEX_OUTPUT
    answer = {"decision": "block", "reason": text, "systemMessage": text}
    return _with_message(answer, out, said="result")


def _stop(agent: Agent, payload: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    session = _optional(payload, "session_id", str)
    answer = _optional(payload, "last_assistant_message", str) or ""
    question = (agent.last_prompt(session) if session else None) or ""
    fields: dict[str, Any] = {"question": question, "answer": answer, "tool_calls": []}
    return _with_message({}, _evaluate(agent, "after_turn", fields, payload, dialect))


def _session_end(agent: Agent, payload: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    status = _optional(payload, "reason", str) or "session_end"
    out = _evaluate(agent, "after_loop", {"status": status}, payload, dialect)
    return _with_message({}, out)


_ANSWER = {
    "UserPromptSubmit": _user_prompt,
    "PreToolUse": _tool_call,
    "PostToolUse": _tool_result,
    "Stop": _stop,
    "SessionEnd": _session_end,
}

_CODEX_REWRITE = (
    PREFIX + "a policy hook rewrote this call's input; Codex applies a rewrite only by "
    "approving the call outright, so the call is refused instead"
)
_CODEX_OUTPUT = (
    "; Codex cannot replace a built-in tool's output, so do not use or repeat the output above"
)


# -- shared pieces ----------------------------------------------------------------------------


def _evaluate(
    agent: Agent, point: str, fields: dict[str, Any], payload: Mapping[str, Any], dialect: str
) -> Outcome:
    """Evaluate ``point`` for the hook's session (and turn, when the host names one)."""
    return agent.evaluate(
        point,
        fields,
        host=HOST_OF[dialect],
        session_id=_optional(payload, "session_id", str),
        turn_id=_optional(payload, "prompt_id", str) or _optional(payload, "turn_id", str),
    )


def _tool_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    errors = []
    name, data = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(name, str) or not name:
        wanted = _wanted("non-empty text", name, "tool_name" in payload)
        errors.append({"loc": ["tool_name"], "msg": wanted})
    if not isinstance(data, Mapping):
        errors.append(
            {"loc": ["tool_input"], "msg": _wanted("an object", data, "tool_input" in payload)}
        )
    call_id = payload.get("tool_use_id")
    if call_id is not None and not isinstance(call_id, str):
        errors.append({"loc": ["tool_use_id"], "msg": _wanted("text", call_id, True)})
    if errors or not isinstance(data, Mapping):
        raise PayloadError(errors)
    return {"name": name, "input": dict(data), "call_id": call_id}


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise PayloadError([{"loc": [key], "msg": _wanted("text", value, key in payload)}])
    return value


def _optional(payload: Mapping[str, Any], key: str, kind: type) -> Any:
    """``payload[key]`` when it has the right type; metadata of another type is ignored."""
    value = payload.get(key)
    return value if isinstance(value, kind) else None


def _wanted(what: str, value: Any, present: bool) -> str:
    if not present:
        return "is missing"
    shown = "null" if value is None else type(value).__name__
    return f"must be {what}, not {shown}"


def _deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _ask(out: Outcome, given: dict[str, Any]) -> dict[str, Any]:
    """``permissionDecision: ask``: Claude Code puts the approval's message to the person in
    its own permission prompt (with the input the policies left, when they changed it)."""
    assert out.approval is not None
    answer = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": out.approval["message"],
    }
    if out.approval["input"] != given:
        answer["updatedInput"] = out.approval["input"]
    return {"hookSpecificOutput": answer}


def _reason(out: Outcome) -> str:
    return out.reason or PREFIX + "blocked by policy"


def _context(messages: list[dict[str, Any]]) -> str:
    """Injected messages as one text for ``additionalContext`` (a system message as is)."""
    parts = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else str(content)
        parts.append(text if role == "system" else f"{role}: {text}")
    return "\n\n".join(parts)


def _with_message(answer: dict[str, Any], out: Outcome, *, said: str = "") -> dict[str, Any]:
    """Add the outcome's notices and the changes the host could not apply as
    ``systemMessage`` (shown to the user); ``said``: a field the answer already speaks of."""
    lines = list(out.notices)
    lines += [PREFIX + u["message"] for u in out.unsupported if u["field"] != said]
    if out.input_error and not out.blocked:
        lines.append(PREFIX + out.input_error)
    if lines:
        previous = answer.get("systemMessage")
        answer["systemMessage"] = "\n".join([previous, *lines] if previous else lines)
    return answer


def in_shape(original: Any, new: Any) -> Any:
    """``new`` in the shape of the tool's ``original`` response.

    A hook that kept the shape (redacted inside Bash's ``{stdout, stderr, ...}``) is taken as
    is. One that replaced an object with text (``"[withheld]"``) gets the object back with that
    text in its first text field (``stdout`` for Bash) and every other text emptied, so no
    unredacted text survives; flags and numbers are kept.
    """
    if not isinstance(original, Mapping) or isinstance(new, Mapping):
        return new
    text = new if isinstance(new, str) else _json_text(new)
    shaped = {key: _blank(value) for key, value in original.items()}
    main = "stdout" if isinstance(original.get("stdout"), str) else None
    main = main or next((k for k, v in original.items() if isinstance(v, str)), None)
    shaped[main or "output"] = text
    return shaped


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        return ""
    if isinstance(value, Mapping):
        return {key: _blank(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_blank(item) for item in value]
    return value


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _not_handled(event: str | None) -> dict[str, Any]:
    if event is None:  # cannot tell which event this is: it may be a tool call
        raise PayloadError([{"loc": ["hook_event_name"], "msg": "is missing or not text"}])
    known = ", ".join(POINT_OF)
    return {"systemMessage": PREFIX + f"{event[:100]} hooks are not handled (only {known})"}


def _log_failure(agent: str, event: str | None, exc: BaseException) -> None:
    import logging

    logging.getLogger(__name__).warning(
        "claude-code hook for agent %r at %s failed: %s", agent, event, describe(exc)
    )
