"""Outcome: what an evaluation of a point tells the host."""

from __future__ import annotations

import copy
import operator
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.store.records import HookRun

DECISION_FIELDS = (
    "blocked",
    "reason",
    "answer",
    "question",
    "messages",
    "notices",
    "sections",
    "instruction",
    "tools",
    "settings",
    "input",
    "result",
    "appended",
)
"""What an outcome decided (no timings or ids): records keep it, replay compares it."""


@dataclass
class Outcome:
    """The merged result of a point's hooks, as the host uses it.

    Fields a point does not produce stay ``None`` (or empty). ``blocked`` with ``reason`` is a
    refusal: at ``tool_call`` the tool must not run; at ``before_user_message`` the turn is
    refused; at ``before_assistant_message`` and ``tool_result`` ``answer`` / ``result`` hold
    what to show instead.
    """

    point: str
    agent: str
    id: str
    """The record id (also when records are off, for correlating logs)."""
    turn_id: str | None = None
    blocked: bool = False
    reason: str | None = None
    answer: str | None = None
    """before_user_message: the turn's answer (skip the LLM). before_assistant_message: the
    final answer, appended text included."""
    question: str | None = None
    """before_user_message: the (possibly rewritten) question."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """before_user_message: injected messages. before_call: the messages to send."""
    notices: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    instruction: str | None = None
    tools: list[Any] | None = None
    settings: dict[str, Any] | None = None
    input: dict[str, Any] | None = None
    """tool_call: the input to run the tool with (possibly rewritten)."""
    result: Any = None
    """tool_result: the result to hand the model (possibly redacted)."""
    appended: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """UI events (status / message / citation) hooks emitted, in order."""
    shadow: list[dict[str, Any]] = field(default_factory=list)
    """What shadow hooks would have changed: ``{hook, change}`` or ``{hook, error}``."""
    failed: list[str] = field(default_factory=list)
    """Names of hooks that failed."""
    changed: bool = False
    """Whether any enforced hook changed something."""
    input_error: str | None = None
    """The event was refused at the boundary (engine/boundary.py) and no hook ran: the cause,
    naming each offending value by path. Set at every point, the after-points included."""
    unsupported: list[dict[str, str]] = field(default_factory=list)
    """Changes the host that asked cannot apply (``evaluate(..., host=)``, engine/hosts.py):
    ``{hook, field, host, message}`` each. The decision stands; the host shows what it can.
    At ``tool_call`` such a change (but a notice) also blocks the tool."""
    approval: dict[str, Any] | None = None
    """tool_call: a person must decide first (``ask``): ``{id, message, tool, input}``. The
    outcome is also a block whose reason says approval is required, so a host that cannot
    ask denies the call; one that can shows ``message`` and answers with ``Agent.resolve``,
    then evaluates the same call (same ``call_id``) again."""
    duration_ms: float = 0.0
    """Wall time of the evaluation, from the call to the outcome (not a decision: replay
    does not compare it)."""
    hooks: list[HookRun] = field(default_factory=list)
    generation: int = 0
    session: dict[str, Any] | None = None
    """Evaluated through a session with hooks of its own (``Agent.session``): its layer,
    ``{hooks, drop_agent_hooks}``; None for the agent's own pipeline."""

    @property
    def short_circuit(self) -> bool:
        """before_user_message: an answer was given; the host skips the LLM."""
        return self.point == "before_user_message" and self.answer is not None

    def hook_changed(self, name: str) -> bool:
        """Whether an enforced hook changed the field ``name`` (``input``, ``result``, ...).

        The engine's own normalising of the event (an integer past 2**53 made a string, a NaN
        made null) shows in the field too, but is no change: a host hands back its own value
        unless this says a hook changed it.
        """
        return any(h.mode == "enforce" and h.change and name in h.change for h in self.hooks)

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON data."""
        data = asdict(self)
        data["hooks"] = [h.to_dict() for h in self.hooks]
        return data

    def decision(self) -> dict[str, Any]:
        """What the outcome decided, without timings or ids: replay compares these."""
        # shallow copies: the host owns the outcome and may change its lists afterwards
        data = dict(zip(DECISION_FIELDS, _decided(self), strict=True))
        for key, value in data.items():
            if type(value) is list or type(value) is dict:
                data[key] = value.copy()
            elif isinstance(value, (list, dict)):
                data[key] = copy.copy(value)
        return data


_decided = operator.attrgetter(*DECISION_FIELDS)
