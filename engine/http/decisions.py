"""The native decision routes: one point's decision, and a batch of them, for any host that
speaks HTTP. Also what the OPA-compatible routes share with them: finding the agent and the
point, turning the engine's EventError into the request's paths, and an outcome's
``changes``."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.concurrency import run_in_threadpool

from engine.errors import EngineError, EventError
from engine.http.errors import ApiError, ErrorBody, event_error, responses
from engine.http.fast import Answer, FastRoute, Params, take
from engine.http.strict import strict_json
from engine.outcome import DECISION_FIELDS, Outcome
from engine.points import Point

MAX_BATCH = 100
"""Inputs in one batch request."""
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,200}$"

_decided = operator.attrgetter(*DECISION_FIELDS)
POINTS = frozenset(p.value for p in Point)
DECISION_ERRORS = responses(401, 403, 404, 413, 422, 429, 503)


class Scope(BaseModel):
    """Whose turn it is: memory and state fall back user, session, template, process."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    user_id: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    template: str | None = Field(default=None, max_length=200)
    process: str | None = Field(default=None, max_length=200)


class BatchItem(BaseModel):
    """A point's event, whose it is, and which turn (one input of a batch)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    event: dict[str, Any] = Field(default_factory=dict)
    """The point's event fields (docs/points.md), e.g. at tool_call ``{name, input}``."""
    scope: Scope = Field(default_factory=Scope)
    turn_id: str | None = Field(default=None, max_length=200)
    """The turn this event belongs to: the ``turn_id`` a ``before_user_message`` decision
    answered; ``feedback`` needs the turn it rates."""
    time: str | None = Field(default=None, max_length=64)
    """When it happened, ISO-8601 (default: now)."""

    def options(self) -> dict[str, Any]:
        """The keyword arguments of ``Agent.evaluate`` besides the event."""
        found = self.scope.model_dump(exclude_none=True)
        if self.turn_id is not None:
            found["turn_id"] = self.turn_id
        if self.time is not None:
            found["time"] = self.time
        return found


class DecisionIn(BatchItem):
    """One decision, and whether to explain it hook by hook."""

    explain: StrictBool = False
    """Also answer ``hooks``: each hook's run (name, kind, status, change, error, time)."""


class BatchIn(BaseModel):
    """Up to 100 inputs by caller-chosen ids, decided at one point of one agent."""

    model_config = ConfigDict(extra="forbid")

    inputs: dict[Annotated[str, Field(pattern=ID_PATTERN)], BatchItem] = Field(max_length=MAX_BATCH)


class DecisionOut(BaseModel):
    """A decision. A block is a 200 too: ``blocked`` with ``reason``."""

    decision_id: str
    """The record id (correlates with ``hookengine records``)."""
    turn_id: str | None
    """The turn: given, or made at ``before_user_message`` (pass it to the turn's later
    points and to ``feedback``)."""
    blocked: bool
    reason: str | None
    changes: dict[str, Any]
    """The decided fields that differ from the event: ``input`` (tool_call), ``result``
    (tool_result), ``answer``, ``question``, ``messages``, ``notices``, ..."""
    unsupported: list[dict[str, Any]]
    """Changes the host cannot apply: ``{hook, field, host, message}``."""
    generation: int
    """The agent's reload generation that decided."""
    duration_us: int
    """The engine's time for this decision, in microseconds."""
    hooks: list[dict[str, Any]] | None = None
    """With ``explain``: each hook's run."""
    approval: dict[str, Any] | None = None
    """tool_call: a person must decide first: ``{id, message, tool, input}`` (the decision is
    a block meanwhile). Answer with ``POST /v1/approvals/{id}``, then ask again with the same
    ``call_id``."""


class BatchOut(BaseModel):
    """Per input id: its decision, or the error body saying why there is none."""

    responses: dict[str, DecisionOut | ErrorBody]


def find_agent(engine: Any, name: str) -> Any:
    """The loaded agent ``name``; 503 while none is loaded, 404 for an unknown one."""
    if not engine.agents:
        raise ApiError(503, "not_ready", "no agent is loaded yet")
    try:
        return engine.agent(name)
    except EngineError:
        known = ", ".join(engine.agents)
        message = f"no agent {name!r} (loaded: {known})"
        raise ApiError(
            404, "not_found", message, [{"loc": ["path", "agent"], "msg": message}]
        ) from None


def check_point(name: str) -> str:
    """``name`` if it is a point; else 404 naming the points there are."""
    if name not in POINTS:
        message = f"no point {name!r}; one of {', '.join(sorted(POINTS))}"
        raise ApiError(404, "not_found", message, [{"loc": ["path", "point"], "msg": message}])
    return name


def changes(outcome: Outcome, event: Mapping[str, Any]) -> dict[str, Any]:
    """The decided fields that differ from "no change". A field the point does not produce
    is None; one the event has counts when the outcome's value differs from it (a tools list
    narrowed to none included); any other counts when it is not empty."""
    found = {}
    for name, value in zip(DECISION_FIELDS, _decided(outcome), strict=True):
        if value is None or name in ("blocked", "reason"):
            continue
        if name in event:
            if value != event[name]:
                found[name] = value
        elif value != [] and value != {}:
            found[name] = value
    return found


def decision(outcome: Outcome, event: Mapping[str, Any], *, explain: bool = False) -> dict:
    """The native answer for an outcome (``DecisionOut`` as JSON data)."""
    data = {
        "decision_id": outcome.id,
        "turn_id": outcome.turn_id,
        "blocked": outcome.blocked,
        "reason": outcome.reason,
        "changes": changes(outcome, event),
        "unsupported": outcome.unsupported,
        "generation": outcome.generation,
        "duration_us": round(outcome.duration_ms * 1000),
    }
    if explain:
        data["hooks"] = [run.to_dict() for run in outcome.hooks]
    if outcome.approval is not None:
        data["approval"] = outcome.approval
    return data


@dataclass(frozen=True)
class Place:
    """Where an input's event and scope sit in the request, for error paths."""

    event: list[str | int]
    scope: list[str | int]


SINGLE = Place(["body", "event"], ["body", "scope"])
"""Where the single native route's event and scope sit."""


def evaluate(
    agent: Any,
    point: str,
    event: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    host: str | None,
    at: Place,
) -> Outcome:
    """``agent.evaluate`` (``options``: scope, turn_id, time), its EventError turned into a
    422 naming the request's paths."""
    try:
        return agent.evaluate(point, event, host=host, **options)
    except EventError as exc:
        raise relocate(exc, at) from exc


def on_loop(engine: Any) -> bool:
    """Whether single decisions run on the server's event loop: with an SQLite store, where
    what a decision reads on the loop (``host.state``) is a local file's, in microseconds (a
    state write, which may wait on the file's lock, goes to a thread: engine/batches.py).
    With PostgreSQL they run in the threadpool: there each read is a round trip
    to a server, and a slow server would hold the loop every request shares, not one thread.
    """
    return bool(getattr(engine.store, "is_sqlite", False))


async def decide_one(
    engine: Any,
    agent: Any,
    point: str,
    event: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    host: str | None,
    at: Place = SINGLE,
) -> Outcome:
    """One decision of a single route: on the event loop or in the threadpool (``on_loop``).
    On the loop it is cheaper: ``python bench/bench_http.py`` printed 0.72 ms of server CPU
    per decision against 1.03 ms in the threadpool (docs/http.md)."""
    if not on_loop(engine):
        return await run_in_threadpool(evaluate, agent, point, event, options, host=host, at=at)
    try:
        return await agent.aevaluate(point, event, host=host, **options)
    except EventError as exc:
        raise relocate(exc, at) from exc


def relocate(exc: EventError, at: Place) -> ApiError:
    """The engine's error paths as the request's: ``["input"]`` -> ``[*at.event, "input"]``,
    ``["scope", "user_id"]`` -> ``[*at.scope, "user_id"]``, ``["turn_id"]`` beside the
    scope, ``["host"]`` -> the query's."""
    fixed = []
    for error in exc.errors:
        where = list(error["loc"])
        if where[:1] == ["scope"]:
            where = [*at.scope, *where[1:]]
        elif where[:1] in (["turn_id"], ["time"]):  # beside the scope
            where = [*at.scope[:-1], *where]
        elif where[:1] == ["host"]:
            where = ["query", *where]
        else:
            where = [*at.event, *where]
        fixed.append({"loc": where, "msg": error["msg"]})
    return event_error(EventError(fixed))


def decide_batch(
    agent: Any,
    point: str,
    items: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]],
    *,
    host: str | None,
    at: Callable[[str], Place],
) -> dict[str, Outcome | ApiError]:
    """Each input's outcome, or its 422 (one bad input does not stop the others)."""
    done: dict[str, Outcome | ApiError] = {}
    for key, (event, options) in items.items():
        try:
            done[key] = evaluate(agent, point, event, options, host=host, at=at(key))
        except ApiError as exc:
            done[key] = exc
    return done


HOST_PATTERN = r"^[a-z-]{1,40}$"
AGENT_PATTERN = r"^[A-Za-z0-9_.-]{1,100}$"
POINT_PATTERN = r"^[a-z_]{1,40}$"
HostQuery = Annotated[
    str | None,
    Query(
        pattern=HOST_PATTERN,
        description="the host that applies the decision (docs/hosts.md): a change it cannot "
        "apply is listed in ``unsupported``; at tool_call it blocks",
    ),
]
AgentPath = Annotated[str, Path(pattern=AGENT_PATTERN, description="an agent")]
PointPath = Annotated[str, Path(pattern=POINT_PATTERN, description="a point")]


def fast_path(template: str) -> re.Pattern[str]:
    """A route's path (``/v1/agents/{agent}/points/{point}``) as the fast path matches it:
    ``agent`` and ``point`` as named groups with the routes' own patterns."""
    groups = {"agent": AGENT_PATTERN, "point": POINT_PATTERN}
    return re.compile(
        template.format(**{name: f"(?P<{name}>{p[1:-1]})" for name, p in groups.items()})
    )


async def answer_one(
    engine: Any, agent: str, point: str, body: DecisionIn, host: str | None
) -> dict[str, Any]:
    """The native route's answer: find the agent and the point, decide (``decide_one``)."""
    found, name = find_agent(engine, agent), check_point(point)
    outcome = await decide_one(engine, found, name, body.event, body.options(), host=host)
    return decision(outcome, body.event, explain=body.explain)


async def answer_many(
    engine: Any, agent: str, point: str, body: BatchIn, host: str | None
) -> dict[str, Any]:
    """The native batch route's answer: each input as the single route would answer it."""
    found, name = find_agent(engine, agent), check_point(point)
    items = {key: (item.event, item.options()) for key, item in body.inputs.items()}
    done = await run_in_threadpool(decide_batch, found, name, items, host=host, at=batch_place)
    answers = {
        key: result.body() if isinstance(result, ApiError) else decision(result, items[key][0])
        for key, result in done.items()
    }
    return {"responses": answers}


SINGLE_PATH = "/v1/agents/{agent}/points/{point}"
BATCH_PATH = "/v1/batch/agents/{agent}/points/{point}"


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """``POST /v1/agents/{agent}/points/{point}`` and its batch form, behind ``authorize``."""
    api = APIRouter(dependencies=[Depends(authorize), Depends(strict_json)], tags=["decide"])

    @api.post(SINGLE_PATH, response_model=DecisionOut, responses=DECISION_ERRORS)
    async def decide(
        agent: AgentPath, point: PointPath, body: DecisionIn, host: HostQuery = None
    ) -> JSONResponse:
        """Decide one point: blocks are 200s too (``blocked``, ``reason``)."""
        return JSONResponse(await answer_one(engine, agent, point, body, host))

    @api.post(BATCH_PATH, response_model=BatchOut, responses=DECISION_ERRORS)
    async def decide_many(
        agent: AgentPath, point: PointPath, body: BatchIn, host: HostQuery = None
    ) -> JSONResponse:
        """Decide up to 100 inputs at one point; each answers as the single route would."""
        return JSONResponse(await answer_many(engine, agent, point, body, host))

    return api


def fast_routes(engine: Any) -> list[FastRoute]:
    """The native routes' fast path (engine/http/fast.py)."""
    query = {"host": re.compile(HOST_PATTERN[1:-1])}

    async def one(params: Params, given: Params, body: bytes) -> Answer | None:
        taken = take(DecisionIn, body)
        if taken is None:
            return None
        return 200, await answer_one(engine, **params, body=taken, host=given.get("host"))

    async def many(params: Params, given: Params, body: bytes) -> Answer | None:
        taken = take(BatchIn, body)
        if taken is None:
            return None
        return 200, await answer_many(engine, **params, body=taken, host=given.get("host"))

    return [
        FastRoute(fast_path(SINGLE_PATH), query, one),
        FastRoute(fast_path(BATCH_PATH), query, many),
    ]


def batch_place(key: str) -> Place:
    return Place(["body", "inputs", key, "event"], ["body", "inputs", key, "scope"])
