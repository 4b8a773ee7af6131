"""Host profiles: per host and point, the change fields that host can apply.

A host is the program that asks for a decision and enforces it. Python callers of the engine
(``native``) and OPA clients (``opa``: the whole outcome comes back as data) can apply every
change a point accepts. Claude Code, Codex and LiteLLM speak fixed hook protocols that carry
only some of them: Claude Code has no event before an LLM request, Codex cannot replace a
shell command's output, LiteLLM's guardrail answer holds texts and a block. The table below is
the single reference (docs/hosts.md shows it); ``Agent.evaluate(..., host=)`` reads it:

- at ``tool_call`` a change to the tool's input the host cannot apply blocks the tool, naming
  the hook, the field and the host: the host would otherwise run the tool with the input the
  policy rewrote;
- elsewhere, and for a notice at ``tool_call``, the fields the host cannot apply go to
  ``outcome.unsupported`` (and the record): the decision stands, the host cannot show all of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from engine.errors import EventError
from engine.points import ACCEPTED, Point, suggest


@dataclass(frozen=True)
class HostProfile:
    """What one host can apply: per point, the change fields it carries to its user."""

    name: str
    applies: MappingProxyType[Point, frozenset[str]]
    """Per point, the change fields the host applies (a point left out: none)."""
    notes: MappingProxyType[Point, str]
    """Per point, how the host applies them (its hook event and output fields)."""
    approval: str | None = None
    """How the host puts ``Outcome.approval`` (a tool call waiting on a person) to its
    user; None: it has no such concept, and the call is denied with a reason saying that
    approval is required."""

    def supports(self, point: str | Point, field: str) -> bool:
        """Whether this host applies ``field`` of a change at ``point``."""
        found = point if isinstance(point, Point) else _POINTS.get(point)
        fields = self.applies.get(found) if found is not None else None
        return fields is not None and field in fields

    def unsupported(self, point: Point, given: dict[str, Any]) -> list[str]:
        """The fields of a change (``Change.given()``) this host cannot apply, in order."""
        applies = self.applies.get(point, frozenset())
        return [name for name in given if name not in applies]

    @property
    def applies_all(self) -> bool:
        """Whether the host applies every change field every point accepts."""
        return all(self.applies.get(p, frozenset()) >= ACCEPTED[p] for p in Point)


_POINTS: dict[str, Point] = {p.value: p for p in Point}


def _profile(
    name: str, table: dict[Point, tuple[set[str], str]], approval: str | None = None
) -> HostProfile:
    applies = {point: frozenset(fields) for point, (fields, _) in table.items()}
    notes = {point: note for point, (_, note) in table.items() if note}
    for point, fields in applies.items():
        extra = fields - ACCEPTED[point]
        if extra:  # a profile names only fields the point takes at all
            raise ValueError(f"host {name}: {point} takes no {sorted(extra)}")
    return HostProfile(name, MappingProxyType(applies), MappingProxyType(notes), approval)


_EVERYTHING = {point: (set(fields), "") for point, fields in ACCEPTED.items()}

_CLAUDE_CODE = {
    Point.BEFORE_USER_MESSAGE: (
        {"block", "answer", "messages", "notice"},
        "UserPromptSubmit: block and answer as decision block with the reason (the model is "
        "not asked); messages as hookSpecificOutput.additionalContext; notice as "
        "systemMessage. The prompt itself cannot be rewritten.",
    ),
    Point.TOOL_CALL: (
        {"block", "input", "notice"},
        "PreToolUse: block as permissionDecision deny with its reason; input as updatedInput "
        "(the whole object); notice as systemMessage.",
    ),
    Point.TOOL_RESULT: (
        {"result", "notice"},
        "PostToolUse: result as updatedToolOutput, in the tool response's own shape; a "
        "withheld result as decision block; notice as systemMessage.",
    ),
    Point.AFTER_TURN: (set(), "Stop, with the session's last prompt as the question."),
    Point.AFTER_LOOP: (set(), "SessionEnd."),
}

_CODEX = {
    Point.BEFORE_USER_MESSAGE: (
        {"block", "answer", "messages", "notice"},
        "UserPromptSubmit: block and answer as decision block with the reason; messages as "
        "hookSpecificOutput.additionalContext; notice as systemMessage.",
    ),
    Point.TOOL_CALL: (
        {"block", "input", "notice"},
        "PreToolUse: block as permissionDecision deny (no top-level decision); input as "
        "updatedInput; notice as systemMessage.",
    ),
    Point.TOOL_RESULT: (
        {"notice"},
        "PostToolUse: only an MCP tool's output can be replaced (updatedMCPToolOutput), not "
        "a shell command's: a result change is unsupported; a withheld result is decision "
        "block; notice as systemMessage.",
    ),
    Point.AFTER_TURN: (set(), "Stop, with the session's last prompt as the question."),
    Point.AFTER_LOOP: (set(), "SessionEnd (Codex reads no output from it)."),
}

_LITELLM = {
    Point.BEFORE_USER_MESSAGE: (
        {"block", "answer", "question"},
        "request: block and answer as action BLOCKED; a rewritten question as texts.",
    ),
    Point.BEFORE_CALL: ({"block"}, "request, after before_user_message: BLOCKED."),
    Point.BEFORE_ASSISTANT_MESSAGE: (
        {"answer", "append"},
        "response: the final answer (appended text included) as GUARDRAIL_INTERVENED texts.",
    ),
    Point.TOOL_CALL: ({"block"}, "tool_calls: BLOCKED; the arguments cannot be rewritten."),
}

_MCP = {
    Point.TOOL_CALL: (
        {"block", "input"},
        "tools/call, before the upstream server runs the tool: block as a CallToolResult with "
        "isError holding the reason (the upstream is not called); input as the call's "
        "arguments, checked against the tool's inputSchema (a misfit blocks the call).",
    ),
    Point.TOOL_RESULT: (
        {"result"},
        "tools/call, after: result as the CallToolResult returned ({content, "
        "structuredContent, isError}), checked against the tool's outputSchema; a withheld "
        "result as isError.",
    ),
}

_LANGCHAIN = {
    Point.BEFORE_USER_MESSAGE: (
        {"block", "answer", "question", "messages"},
        "before_agent: block and answer end the run (jump_to end) with an AIMessage, the model "
        "is not asked; a rewritten question replaces the HumanMessage (same id); injected "
        "messages join each model request of the run (system ones the system message).",
    ),
    Point.BEFORE_CALL: (
        {"sections", "instruction", "messages", "tools", "settings", "block"},
        "wrap_model_call: request.override(system_message=, messages=, tools=, "
        "model_settings=); block as an AIMessage with the reason, the model is not called.",
    ),
    Point.TOOL_CALL: (
        {"block", "input"},
        "wrap_tool_call: block as an error ToolMessage with the reason; input as "
        "request.override(tool_call=).",
    ),
    Point.TOOL_RESULT: ({"result"}, "wrap_tool_call: the ToolMessage's content replaced."),
    Point.BEFORE_ASSISTANT_MESSAGE: (
        {"answer", "append"},
        "after_model: the final AIMessage replaced by one with the same id.",
    ),
    Point.AFTER_TURN: (set(), "after_agent."),
}

_OPENAI_AGENTS = {
    Point.BEFORE_USER_MESSAGE: (
        {"block", "answer", "question", "messages", "notice"},
        "run(): block and answer end the turn (no model call); a rewritten question and "
        "injected messages change the input; notices in Turn.notices. input_guardrail trips "
        "on block, answer and a rewrite and cannot inject messages.",
    ),
    Point.BEFORE_CALL: (
        {"sections", "instruction", "messages", "block"},
        "call_model_input_filter: ModelInputData(input, instructions); a block raises "
        "ModelCallBlocked. The filter cannot change tools or model settings.",
    ),
    Point.TOOL_CALL: (
        {"block", "input"},
        "tool input guardrail: block as reject_content(reason); input only through "
        "guard_tools' invoker (tool_guardrails and MCP servers block a rewrite).",
    ),
    Point.TOOL_RESULT: (
        {"result"},
        "tool output guardrail: a replaced or withheld result as reject_content(text).",
    ),
    Point.BEFORE_ASSISTANT_MESSAGE: (
        {"answer", "append", "notice"},
        "run(): the final output replaced; output_guardrail trips on a changed answer.",
    ),
    Point.AFTER_TURN: (set(), "run(), after the answer."),
}

HOSTS: MappingProxyType[str, HostProfile] = MappingProxyType(
    {
        "native": _profile("native", _EVERYTHING, "Outcome.approval; Agent.resolve"),
        "opa": _profile("opa", _EVERYTHING, "result.approval; POST /v1/approvals/{id}"),
        "litellm": _profile("litellm", _LITELLM),
        "claude-code": _profile(
            "claude-code", _CLAUDE_CODE, "PreToolUse permissionDecision ask (its own prompt)"
        ),
        "codex": _profile("codex", _CODEX),
        "mcp": _profile("mcp", _MCP),
        "langchain": _profile(
            "langchain", _LANGCHAIN, "wrap_tool_call: an interrupt (HumanInTheLoopMiddleware)"
        ),
        "openai-agents": _profile(
            "openai-agents", _OPENAI_AGENTS, "needs_approval: the run's interruptions"
        ),
    }
)
"""Every host the engine knows, by name."""


def profile(name: str) -> HostProfile:
    """The profile of host ``name``.

    Raises:
        EventError: no host has that name (``loc`` ``["host"]``, with a suggestion).
    """
    found = HOSTS.get(name) if isinstance(name, str) else None
    if found is not None:
        return found
    if not isinstance(name, str):
        raise EventError([{"loc": ["host"], "msg": f"must be text, not {type(name).__name__}"}])
    hint = suggest(name, list(HOSTS))
    msg = f"unknown host {name[:100]!r} (known: {', '.join(HOSTS)})"
    raise EventError(
        [{"loc": ["host"], "msg": msg + (f"; did you mean {hint!r}?" if hint else "")}]
    )


def unsupported_entry(host: str, hook: str, field: str, point: Point) -> dict[str, str]:
    """One ``outcome.unsupported`` item: a hook's change field the host cannot apply."""
    return {
        "hook": hook,
        "field": field,
        "host": host,
        "message": f"hook {hook!r} changed {field!r}, which {host} cannot apply at {point.value}",
    }


def input_block_reason(host: str, hook: str, field: str) -> str:
    """The block reason at ``tool_call`` when the host cannot apply a hook's ``field``."""
    return (
        f"hook {hook!r} changed the tool's {field!r}, which {host} cannot apply; "
        "the tool was not run"
    )
