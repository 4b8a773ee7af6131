"""One method of an Open WebUI toolkit as a tool: its arguments, reserved ones included, its
events and its result."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.tools.base import ToolContext, ToolResult, ToolSpec
from engine.tools.openwebui_specs import RESERVED

if TYPE_CHECKING:
    from engine.tools.openwebui_toolkit import Toolkit


@dataclass
class OpenWebUITool:
    """One method of a toolkit, as a tool."""

    spec: ToolSpec
    path: Path
    """The toolkit's ``.py`` file."""
    enabled: bool
    timeout_ms: int | None
    toolkit: Toolkit
    """The toolkit the method belongs to (shared by its methods: valves, user valves)."""
    method: Callable[..., Any]
    """The bound method of the toolkit's ``Tools`` instance."""
    defaulted: frozenset[str] = frozenset()
    """The ``__`` arguments left at their declared default (warned about at load)."""
    kind: str = "openwebui_tools"
    isolation: Literal["thread", "process"] = "thread"
    """Always ``thread``: a toolkit is trusted in-process code, as in Open WebUI."""

    def invoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the method on ``input`` (an async method in its own event loop).

        Raises:
            Exception: whatever the method raised (the call path makes it ``is_error``).
        """
        if not inspect.iscoroutinefunction(self.method):
            events: list[dict[str, Any]] = []
            value = _no_exit(self.method, **self._arguments(input, ctx, events))
            return self._result(value, input, ctx, events)
        return _run_coroutine(lambda: self.ainvoke(input, ctx))

    async def ainvoke(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the method on ``input``: awaited when async, in a thread when sync.

        Raises:
            Exception: whatever the method raised (the call path makes it ``is_error``).
        """
        events: list[dict[str, Any]] = []
        arguments = self._arguments(input, ctx, events)
        if inspect.iscoroutinefunction(self.method):
            try:
                value = await self.method(**arguments)
            except SystemExit as exc:
                raise _exited(exc) from exc
        else:
            value = await asyncio.to_thread(_no_exit, self.method, **arguments)
        return self._result(value, input, ctx, events)

    def close(self) -> None:
        self.toolkit.close()

    def argument_defaults(self) -> dict[str, Any]:
        """The method's defaults that are plain JSON data (not None), by argument: the call
        path puts them into the input before the ``tool_call`` hooks, so a guard sees the
        ``database="prod"`` the method would otherwise fill in unseen. A default that is not
        plain JSON (an Enum, a tuple, an object) is left to Python: its JSON form would give
        the method another value than the one it declared."""
        found: dict[str, Any] = {}
        for param in inspect.signature(self.method).parameters.values():
            if param.name.startswith("__") or param.kind not in _NAMED:
                continue
            default = param.default
            if default is inspect.Parameter.empty or default is None:
                continue
            if _plain_json(default):
                found[param.name] = default
        return found

    def _arguments(
        self, input: Mapping[str, Any], ctx: ToolContext, events: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The model's arguments the method declares, and the reserved ones it declares."""
        params = inspect.signature(self.method).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        arguments = {
            k: v for k, v in input.items() if not k.startswith("__") and (open_ended or k in params)
        }
        for name in params:
            if name in RESERVED:
                arguments[name] = self._reserved(name, ctx, events)
        return arguments

    def _reserved(self, name: str, ctx: ToolContext, events: list[dict[str, Any]]) -> Any:
        if name == "__event_emitter__":
            return _emitter(ctx, events)
        if name == "__event_call__":
            return _caller(ctx)
        if name == "__user__":
            return self._user(ctx)
        if name == "__metadata__":
            return self._metadata(ctx)
        if name in ("__messages__", "__files__"):
            return list(getattr(ctx, name.strip("_"), None) or [])
        if name == "__model__":
            return dict(getattr(ctx, "model", None) or {"id": ctx.agent})
        return {
            "__id__": self.toolkit.id,
            "__chat_id__": ctx.session_id,
            "__message_id__": ctx.call_id,
        }[name]

    def _user(self, ctx: ToolContext) -> dict[str, Any]:
        """``__user__``: ``{id, name, email, role}`` (from ``ctx.user`` where the host gives
        one) and, when the toolkit has ``UserValves``, this call's own ``valves``."""
        given = dict(getattr(ctx, "user", None) or {})
        user: dict[str, Any] = {
            "id": ctx.user_id,
            "name": given.get("name", ctx.user_id),
            "email": given.get("email", ""),
            "role": given.get("role", "user"),
        }
        if self.toolkit.user_valves_model is not None:
            user["valves"] = self.toolkit.user_valves(ctx.user_id)
        return user

    def _metadata(self, ctx: ToolContext) -> dict[str, Any]:
        return {
            "agent": ctx.agent,
            "user_id": ctx.user_id,
            "chat_id": ctx.session_id,
            "session_id": ctx.session_id,
            "message_id": ctx.call_id,
            "tool_ids": [self.toolkit.id],
            **dict(getattr(ctx, "metadata", None) or {}),
        }

    def _result(
        self,
        value: Any,
        input: Mapping[str, Any],
        ctx: ToolContext,
        events: list[dict[str, Any]],
    ) -> ToolResult:
        """What the method returned as a result: text as it is, JSON data as indented JSON
        (kept in ``data``), anything else as ``str()``; plus a citation when the toolkit's
        ``citation`` is on."""
        if isinstance(value, str):
            content, data = value, None
        elif isinstance(value, dict | list):
            content, data = json.dumps(value, indent=2, ensure_ascii=False, default=str), value
        else:
            content, data = ("" if value is None else str(value)), None
        if getattr(self.toolkit.instance, "citation", False):
            later = getattr(ctx, "after_result", None)
            if later is None:  # called directly, not through the call path: no hooks
                _record(ctx, events, self._citation(content, input))
            else:  # made from the content the tool_result hooks leave
                later.append(lambda final: self._citation(final, input))
        return ToolResult(content=content, data=data, events=events)

    def _citation(self, content: str, input: Mapping[str, Any]) -> dict[str, Any]:
        source = f"TOOL:{self.spec.name}"
        return {
            "type": "citation",
            "data": {
                "source": {"name": source},
                "document": [content],
                "metadata": [{"source": source, "parameters": dict(input)}],
            },
        }


_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON data of exactly the built-in types (a ``str`` subclass, an
    Enum member or a tuple is not: its JSON form is another value)."""
    if type(value) in (str, int, bool):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_plain_json(item) for item in value)
    if type(value) is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    return False


def _no_exit(method: Callable[..., Any], **arguments: Any) -> Any:
    """Call a sync method; its ``exit()`` becomes an error of the call, not the host's end."""
    try:
        return method(**arguments)
    except SystemExit as exc:
        raise _exited(exc) from exc


def _exited(exc: SystemExit) -> RuntimeError:
    return RuntimeError(f"the tool called exit({exc.code!r})")


def _record(ctx: ToolContext, events: list[dict[str, Any]], event: dict[str, Any]) -> None:
    events.append(event)
    if ctx.emit is not None:
        ctx.emit(event)


def _emitter(ctx: ToolContext, events: list[dict[str, Any]]) -> Callable[[Any], Any]:
    """``__event_emitter__``: each event kept in order and passed to the host's callback."""

    async def emit(event: dict[str, Any]) -> None:
        if not isinstance(event, dict):
            raise TypeError(f"__event_emitter__ takes a dict, got {type(event).__name__}")
        _record(ctx, events, event)

    return emit


def _caller(ctx: ToolContext) -> Callable[[Any], Any] | None:
    """``__event_call__``: the host's ``ask`` callback awaited, or None without one."""
    ask = ctx.ask
    if ask is None:
        return None

    async def call(event: dict[str, Any]) -> Any:
        answer = ask(event)
        return await answer if inspect.isawaitable(answer) else answer

    return call


def _run_coroutine(make: Callable[[], Any]) -> Any:
    """Run a coroutine to its end from sync code, in this thread when it has no running
    event loop, else in a helper thread (a loop cannot be nested)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1, thread_name_prefix="openwebui-tool") as helper:
        return helper.submit(lambda: asyncio.run(make())).result()
