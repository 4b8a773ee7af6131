"""Kind ``delegate``: another agent as a tool.

A call asks one turn of the target agent, in a conversation of its own: the session
``<session>.<tool>`` of the same store, through that agent's hooks (``before_user_message``
... ``after_turn``), so a refusal or an answer from its hooks is the tool's answer. The turn
runs through the host's turn runner (``Engine.set_turn_runner`` / ``set_aturn_runner``), or
``run_turn`` / ``arun_turn`` here (the configured provider; offline: a deterministic answer).

Delegation nests at most ``MAX_DEPTH`` levels (the next level is an ``is_error`` result naming
the chain), and a cycle between agents is a load error naming it (``delegate_problems``).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config.loader import show
from engine.config.models import Int
from engine.errors import Problem, fix_for, phrase, unknown_field
from engine.providers.tasks import ProviderError
from engine.tools.base import NAME_PATTERN, LoadContext, Tool, ToolLoadError, ToolResult, ToolSpec

log = logging.getLogger("engine.tools")

MAX_DEPTH = 3
"""Delegations one inside another: ``a -> b -> c -> d`` is 3; one more is refused."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "request": {"type": "string", "minLength": 1, "description": "what to ask the agent"}
    },
    "required": ["request"],
    "additionalProperties": False,
}
"""The input every delegate tool takes."""

TurnRunner = Callable[..., str]
"""``fn(agent, request, *, session_id, user_id) -> answer``: one turn of ``agent``."""
ATurnRunner = Callable[..., Awaitable[str]]
"""The same, awaited."""


class DelegateConfig(BaseModel):
    """tools/<name>.yaml of ``kind: delegate``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    kind: Literal["delegate"]
    name: str = Field(pattern=NAME_PATTERN)
    """The tool's name as models see it (and the end of the sub-conversation's session)."""
    agent: str = Field(min_length=1)
    """The agent of this engine that answers."""
    description: str = Field(min_length=1)
    """What the agent is good for, for the model."""
    instruction: str = ""
    """The instruction the built-in runner gives the agent's model (``before_call``)."""
    enabled: bool = True
    """false: validated, never offered nor called."""
    timeout_ms: Int | None = Field(default=None, gt=0)
    """The whole sub-turn's time limit (default: engine.yaml ``tools.timeout_ms``)."""


@dataclass
class DelegateTool:
    """A loaded delegate tool of agent ``owner``: ``invoke`` asks agent ``target``."""

    spec: ToolSpec
    path: Path
    owner: str
    target: str
    engine: Any
    instruction: str = ""
    enabled: bool = True
    timeout_ms: int | None = None
    shown: str = ""
    line: int | None = None
    kind: str = "delegate"
    isolation: Literal["thread", "process"] = "thread"

    def invoke(self, input: Mapping[str, Any], ctx: Any) -> ToolResult:
        """One turn of the target agent on ``input["request"]`` (see the module docstring)."""
        opened = self._open(ctx)
        if isinstance(opened, ToolResult):
            return opened
        chain, session = opened
        agent, request = self.engine.agent(self.target), str(input["request"])
        with _entered(self.engine, session, chain):
            answer = self._run(agent, request, session, ctx.user_id)
        return self._answered(answer, chain, session)

    async def ainvoke(self, input: Mapping[str, Any], ctx: Any) -> ToolResult:
        """``invoke`` on the running event loop (the host's async runner is awaited there)."""
        opened = self._open(ctx)
        if isinstance(opened, ToolResult):
            return opened
        chain, session = opened
        agent, request = self.engine.agent(self.target), str(input["request"])
        with _entered(self.engine, session, chain):
            answer = await self._arun(agent, request, session, ctx.user_id)
        return self._answered(answer, chain, session)

    def close(self) -> None:
        """Nothing is held between calls."""

    def _open(self, ctx: Any) -> tuple[tuple[str, ...], str] | ToolResult:
        """The chain of agents this call makes and its session, or the refusal."""
        if self.engine is None:
            why = "an engine whose agents answer (it was loaded outside one)"
            return ToolResult(f"tool {self.spec.name!r} needs {why}", is_error=True)
        if not ctx.session_id:
            why = f"a session_id (its conversation is <session>.{self.spec.name})"
            return ToolResult(f"tool {self.spec.name!r} needs {why}", is_error=True)
        chain = (*chain_of(self.engine, ctx.session_id, ctx.agent), self.target)
        if len(chain) - 1 > MAX_DEPTH:
            shown = " -> ".join(chain)
            message = (
                f"delegation too deep: {shown} is {len(chain) - 1} levels (at most {MAX_DEPTH})"
            )
            return ToolResult(f"tool {self.spec.name!r} was not called: {message}", is_error=True)
        return chain, f"{ctx.session_id}.{self.spec.name}"

    def _run(self, agent: Any, request: str, session: str, user_id: str | None) -> str:
        import asyncio  # only where a delegate runs: not at engine start-up

        sync, async_ = self.engine.turn_runner, self.engine.aturn_runner
        if sync is not None:
            return sync(agent, request, session_id=session, user_id=user_id)
        if async_ is not None:
            return asyncio.run(
                _awaited(async_(agent, request, session_id=session, user_id=user_id))
            )
        return run_turn(
            agent, request, session_id=session, user_id=user_id, instruction=self.instruction
        )

    async def _arun(self, agent: Any, request: str, session: str, user_id: str | None) -> str:
        import asyncio  # only where a delegate runs: not at engine start-up

        sync, async_ = self.engine.turn_runner, self.engine.aturn_runner
        scope: dict[str, Any] = {"session_id": session, "user_id": user_id}
        if async_ is not None:
            return await async_(agent, request, **scope)
        if sync is not None:
            return await asyncio.to_thread(sync, agent, request, **scope)
        return await arun_turn(
            agent, request, session_id=session, user_id=user_id, instruction=self.instruction
        )

    def _answered(self, answer: Any, chain: tuple[str, ...], session: str) -> ToolResult:
        if not isinstance(answer, str):
            got = type(answer).__name__
            message = f"tool {self.spec.name!r}: the turn runner answered a {got}, not text"
            return ToolResult(message, is_error=True)
        data = {"agent": self.target, "session_id": session, "chain": list(chain)}
        return ToolResult(answer, data={**data, "depth": len(chain) - 1})


async def _awaited(value: Awaitable[str]) -> str:
    return await value


# -- the chain of delegations in flight -----------------------------------------------------

_chains: weakref.WeakKeyDictionary[Any, dict[str, tuple[tuple[str, ...], int]]] = (
    weakref.WeakKeyDictionary()
)
"""Per engine: sub-conversation session -> (the chain of agents that reached it, the calls in
it). A session's key, not a context variable: the host's runner may call the sub-agent's
tools from any thread or task, as long as it passes the session it was given."""
_chains_lock = threading.Lock()


def chain_of(engine: Any, session_id: str, agent: str) -> tuple[str, ...]:
    """The agents whose delegations led to ``session_id`` (just ``agent`` at the top)."""
    with _chains_lock:
        found = _chains.get(engine, {}).get(session_id)
    return found[0] if found else (agent,)


@contextmanager
def _entered(engine: Any, session: str, chain: tuple[str, ...]) -> Iterator[None]:
    with _chains_lock:
        live = _chains.setdefault(engine, {})
        live[session] = (chain, live.get(session, (chain, 0))[1] + 1)
    try:
        yield
    finally:
        with _chains_lock:
            _, calls = live[session]
            if calls > 1:
                live[session] = (chain, calls - 1)
            else:
                del live[session]


# -- the built-in turn runner ----------------------------------------------------------------


def run_turn(
    agent: Any,
    request: str,
    *,
    session_id: str,
    user_id: str | None = None,
    instruction: str = "",
) -> str:
    """One turn of ``agent`` through its points, answered by the configured provider (offline:
    ``offline_answer``). A block at ``before_user_message``, ``before_call`` or
    ``before_assistant_message`` answers its reason; an answer from a hook skips the model."""
    scope: dict[str, Any] = {"session_id": session_id, "user_id": user_id}
    first = agent.before_user_message(request, **scope)
    scope["turn_id"] = first.turn_id
    if first.blocked:
        return refusal(first)
    question = first.question or request
    answer = first.answer
    if answer is None:
        messages = [*first.messages, {"role": "user", "content": question}]
        call = agent.before_call(instruction, messages, **scope)
        if call.blocked:
            return refusal(call)
        answer = ask_model(agent, call, instruction, messages)
        shown = agent.before_assistant_message(question, answer, **scope)
        if shown.blocked:
            return refusal(shown)
        answer = shown.answer or answer
    agent.after_turn(question, answer, **scope)
    return answer


async def arun_turn(
    agent: Any,
    request: str,
    *,
    session_id: str,
    user_id: str | None = None,
    instruction: str = "",
) -> str:
    """``run_turn`` awaited (the provider's HTTP call runs in a thread)."""
    import asyncio  # only where a delegate runs: not at engine start-up

    scope: dict[str, Any] = {"session_id": session_id, "user_id": user_id}
    first = await agent.abefore_user_message(request, **scope)
    scope["turn_id"] = first.turn_id
    if first.blocked:
        return refusal(first)
    question = first.question or request
    answer = first.answer
    if answer is None:
        messages = [*first.messages, {"role": "user", "content": question}]
        call = await agent.abefore_call(instruction, messages, **scope)
        if call.blocked:
            return refusal(call)
        answer = await asyncio.to_thread(ask_model, agent, call, instruction, messages)
        shown = await agent.abefore_assistant_message(question, answer, **scope)
        if shown.blocked:
            return refusal(shown)
        answer = shown.answer or answer
    await agent.aafter_turn(question, answer, **scope)
    return answer


def refusal(out: Any) -> str:
    """What a blocked point answers: its reason (or its answer, a hook's canned refusal)."""
    return str(out.answer or out.reason or f"agent {out.agent!r} refused the request")


def ask_model(agent: Any, call: Any, instruction: str, messages: list[dict[str, Any]]) -> str:
    """The model's answer to the request ``before_call`` shaped: the configured
    OpenAI-compatible provider, or (none configured, or it failed) ``offline_answer``."""
    system = "\n\n".join(part for part in [call.instruction or instruction, *call.sections] if part)
    shown = call.messages or messages
    live = agent.engine.providers().live
    if live is not None:
        request = {
            "model": live.endpoint.model,
            "messages": [{"role": "system", "content": system}, *shown] if system else shown,
            "max_tokens": live.endpoint.max_tokens,
            "temperature": 0,
        }
        try:
            answer = live.complete(request).get("answer")
            if isinstance(answer, str) and answer.strip():
                return answer
        except ProviderError as exc:
            log.warning("agent %s: delegate turn fell back to offline: %s", agent.name, exc)
    return offline_answer(agent.name, system, shown)


def offline_answer(agent: str, system: str, messages: list[dict[str, Any]]) -> str:
    """The offline stand-in for a model: deterministic, naming the agent, the request (the last
    user message) and what the hooks showed it (the instruction's sections, other messages)."""
    texts = [str(m.get("content", "")) for m in messages if isinstance(m, Mapping)]
    request = texts[-1] if texts else ""
    context = [t for t in [system, *texts[:-1]] if t]
    answer = f"{agent} (offline) was asked: {request}"
    return answer + (f"\nIt was shown: {' | '.join(context)[:2000]}" if context else "")


# -- loading and the whole-engine checks -----------------------------------------------------


def load_delegate(path: Path, data: dict[str, Any], ctx: LoadContext) -> list[Tool]:
    """Validate the YAML; one tool (its target is checked once every agent is loaded:
    ``delegate_problems``).

    Raises:
        ToolLoadError: every problem, with file, line and field.
    """
    shown = show(path)
    try:
        config = DelegateConfig.model_validate(data)
    except ValidationError as exc:
        raise ToolLoadError(_problems(exc, shown, path, ctx)) from None
    default_ms = ctx.settings.tools.timeout_ms
    spec = ToolSpec(config.name, config.description, INPUT_SCHEMA)
    tool = DelegateTool(
        spec=spec,
        path=path,
        owner=ctx.agent,
        target=config.agent,
        engine=getattr(ctx, "engine", None),
        instruction=config.instruction,
        enabled=config.enabled,
        timeout_ms=config.timeout_ms or default_ms,
        shown=shown,
        line=ctx.line(path, "agent"),
    )
    return [tool]


def _problems(exc: ValidationError, shown: str, path: Path, ctx: LoadContext) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc: list[str | int] = list(err["loc"])
        if err["type"] == "extra_forbidden":
            message, hint = unknown_field(str(loc[-1]), list(DelegateConfig.model_fields))
        else:
            message, hint = phrase(err), fix_for(err)
        field_name = ".".join(str(part) for part in loc) or None
        problems.append(Problem(shown, ctx.line(path, *loc), field_name, message, hint))
    return problems


@dataclass(frozen=True)
class Edge:
    """Agent ``owner`` delegates to ``target`` through ``tool`` (declared in ``shown``)."""

    owner: str
    target: str
    tool: str
    shown: str
    line: int | None
    enabled: bool = True


@dataclass
class _Search:
    edges: dict[str, list[Edge]]
    done: set[str] = field(default_factory=set)
    cycles: list[list[Edge]] = field(default_factory=list)

    def visit(self, agent: str, path: list[Edge]) -> None:
        if agent in self.done:
            return
        on_path = [e.owner for e in path] + [agent]
        for edge in self.edges.get(agent, []):
            if edge.target in on_path:
                self.cycles.append([*path[on_path.index(edge.target) :], edge])
            elif edge.target not in self.done:
                self.visit(edge.target, [*path, edge])
        if not path:
            self.done.add(agent)


def edges_of(tools_by_agent: Mapping[str, Any]) -> list[Edge]:
    """Every delegate tool of every agent's ``ToolSet`` (enabled or not) as an edge."""
    return [
        Edge(owner, t.target, t.spec.name, t.shown, t.line, t.enabled)
        for owner, tools in tools_by_agent.items()
        for t in [*tools.tools.values(), *tools.disabled.values()]
        if getattr(t, "kind", None) == "delegate"
    ]


def delegate_problems(tools_by_agent: Mapping[str, Any]) -> list[Problem]:
    """The delegate tools' problems across agents: a target that is no agent of the engine,
    and each cycle of enabled delegations, named as its chain (``a -> b -> a``)."""
    edges = edges_of(tools_by_agent)
    known = sorted(tools_by_agent)
    problems = [
        Problem(e.shown, e.line, "agent", f"no agent {e.target!r}", f"agents: {', '.join(known)}")
        for e in edges
        if e.target not in tools_by_agent
    ]
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        if edge.enabled and edge.target in tools_by_agent:
            graph.setdefault(edge.owner, []).append(edge)
    search = _Search(graph)
    for agent in sorted(graph):
        search.visit(agent, [])
    seen: set[frozenset[Edge]] = set()
    for cycle in search.cycles:
        if frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            problems.append(_cycle_problem(cycle))
    return problems


def _cycle_problem(cycle: list[Edge]) -> Problem:
    chain = " -> ".join([cycle[0].owner, *(e.target for e in cycle)])
    tools = ", ".join(f"{e.owner}'s {e.tool!r}" for e in cycle)
    message = f"delegation cycle {chain} (through {tools})"
    hint = "an agent may not reach itself through delegate tools: remove one of them"
    first = cycle[0]
    return Problem(first.shown, first.line, "agent", message, hint)
