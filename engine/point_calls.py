"""The per-point methods of an agent (and of a session handle), sync and async.

Each is ``evaluate`` (or ``aevaluate``) with the point's fields; a class that mixes them in
provides those two.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from engine.outcome import Outcome
from engine.points import Point


class PointCalls:
    """A method per point, sync and async (``a``-prefixed), over ``evaluate``/``aevaluate``."""

    if TYPE_CHECKING:  # provided by the class that mixes these in
        evaluate: Callable[..., Outcome]
        aevaluate: Callable[..., Awaitable[Outcome]]

    def before_user_message(self, question: str, **scope: Any) -> Outcome:
        """A user message arrived. ``out.answer`` set: skip the LLM; ``out.blocked``: refuse."""
        return self.evaluate(Point.BEFORE_USER_MESSAGE, {"question": question}, **scope)

    def before_call(
        self,
        instruction: str = "",
        messages: list[dict[str, Any]] | None = None,
        tools: list[Any] | None = None,
        settings: dict[str, Any] | None = None,
        **scope: Any,
    ) -> Outcome:
        """Before an LLM request: instruction, sections, messages, tools, settings to use."""
        fields = _call_fields(instruction, messages, tools, settings)
        return self.evaluate(Point.BEFORE_CALL, fields, **scope)

    def tool_call(
        self,
        name: str,
        input: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        **scope: Any,
    ) -> Outcome:
        """Before a tool runs. ``d.blocked``: do not run it, tell the model ``d.reason``."""
        return self.evaluate(
            Point.TOOL_CALL, {"name": name, "input": input or {}, "call_id": call_id}, **scope
        )

    def tool_result(
        self,
        name: str,
        input: dict[str, Any] | None,
        result: Any,
        *,
        data: Any = None,
        call_id: str | None = None,
        **scope: Any,
    ) -> Outcome:
        """After a tool ran: ``out.result`` is what to hand the model. ``data``: the tool's
        structured data beside it (hooks see it; hand it on only with a result the hooks
        neither replaced nor withheld: ``out.result`` is ``result``, ``not out.blocked``)."""
        fields = _result_fields(name, input, result, data, call_id)
        return self.evaluate(Point.TOOL_RESULT, fields, **scope)

    def before_assistant_message(self, question: str, answer: str, **scope: Any) -> Outcome:
        """The answer is about to reach the user: ``out.answer`` is what to show."""
        return self.evaluate(
            Point.BEFORE_ASSISTANT_MESSAGE, {"question": question, "answer": answer}, **scope
        )

    def after_turn(
        self,
        question: str,
        answer: str,
        tool_calls: list[dict[str, Any]] | None = None,
        **scope: Any,
    ) -> Outcome:
        """The turn ended (hooks only hear)."""
        return self.evaluate(
            Point.AFTER_TURN,
            {"question": question, "answer": answer, "tool_calls": tool_calls or []},
            **scope,
        )

    def after_loop(self, status: str, **scope: Any) -> Outcome:
        """The agent loop ended with ``status`` (e.g. ``job_done``)."""
        return self.evaluate(Point.AFTER_LOOP, {"status": status}, **scope)

    def feedback(self, turn_id: str, rating: str, **scope: Any) -> Outcome:
        """The user rated a turn: ``like`` or ``dislike``."""
        return self.evaluate(Point.FEEDBACK, {"rating": rating}, turn_id=turn_id, **scope)

    # asyncio forms: the same calls awaited on the running loop (see ``aevaluate``)
    async def abefore_user_message(self, question: str, **scope: Any) -> Outcome:
        return await self.aevaluate(Point.BEFORE_USER_MESSAGE, {"question": question}, **scope)

    async def abefore_call(
        self,
        instruction: str = "",
        messages: list[dict[str, Any]] | None = None,
        tools: list[Any] | None = None,
        settings: dict[str, Any] | None = None,
        **scope: Any,
    ) -> Outcome:
        fields = _call_fields(instruction, messages, tools, settings)
        return await self.aevaluate(Point.BEFORE_CALL, fields, **scope)

    async def atool_call(
        self,
        name: str,
        input: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        **scope: Any,
    ) -> Outcome:
        fields = {"name": name, "input": input or {}, "call_id": call_id}
        return await self.aevaluate(Point.TOOL_CALL, fields, **scope)

    async def atool_result(
        self,
        name: str,
        input: dict[str, Any] | None,
        result: Any,
        *,
        data: Any = None,
        call_id: str | None = None,
        **scope: Any,
    ) -> Outcome:
        fields = _result_fields(name, input, result, data, call_id)
        return await self.aevaluate(Point.TOOL_RESULT, fields, **scope)

    async def abefore_assistant_message(self, question: str, answer: str, **scope: Any) -> Outcome:
        fields = {"question": question, "answer": answer}
        return await self.aevaluate(Point.BEFORE_ASSISTANT_MESSAGE, fields, **scope)

    async def aafter_turn(
        self,
        question: str,
        answer: str,
        tool_calls: list[dict[str, Any]] | None = None,
        **scope: Any,
    ) -> Outcome:
        fields = {"question": question, "answer": answer, "tool_calls": tool_calls or []}
        return await self.aevaluate(Point.AFTER_TURN, fields, **scope)

    async def aafter_loop(self, status: str, **scope: Any) -> Outcome:
        return await self.aevaluate(Point.AFTER_LOOP, {"status": status}, **scope)

    async def afeedback(self, turn_id: str, rating: str, **scope: Any) -> Outcome:
        return await self.aevaluate(Point.FEEDBACK, {"rating": rating}, turn_id=turn_id, **scope)


def _call_fields(
    instruction: str,
    messages: list[dict[str, Any]] | None,
    tools: list[Any] | None,
    settings: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "instruction": instruction,
        "messages": messages or [],
        "tools": tools or [],
        "settings": settings or {},
    }


def _result_fields(
    name: str, input: dict[str, Any] | None, result: Any, data: Any, call_id: str | None
) -> dict[str, Any]:
    fields = {"name": name, "input": input or {}, "result": result, "call_id": call_id}
    if data is not None:
        fields["data"] = data
    return fields
