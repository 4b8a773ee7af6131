"""The OPA-compatible decision routes: an OPA client (the ``@open-policy-agent/opa`` SDK,
``opa-java``, plain ``curl``) asks the engine as it would ask OPA for a document.

``POST /v1/data/hookengine/{agent}/{point}`` with ``{input}`` answers ``{decision_id,
result}``; ``result`` is always set (an OPA client treats a missing one as "undefined" and
the SDK throws). The input is the point's event, plus optional ``scope``, ``turn_id`` and
``time``. The batch form follows EOPA's: ``POST /v1/batch/data/hookengine/{agent}/{point}``
with ``{inputs: {id: input}}`` answers ``{batch_decision_id, responses}``; 200 when every
input was decided, 207 when some were not (those carry ``http_status_code: "500"``, the
only failure the SDK reads, and the error's ``code`` and ``message``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from engine.http.decisions import (
    DECISION_ERRORS,
    ID_PATTERN,
    MAX_BATCH,
    AgentPath,
    BatchItem,
    Place,
    PointPath,
    changes,
    check_point,
    decide_batch,
    decide_one,
    fast_path,
    find_agent,
    strict_json,
)
from engine.http.errors import ApiError, summarize
from engine.http.fast import Answer, FastRoute, Params, take
from engine.outcome import Outcome

HOST = "opa"


class OpaIn(BaseModel):
    """OPA's request: the input document."""

    model_config = ConfigDict(extra="forbid")

    input: dict[str, Any]
    """The point's event fields, and optionally ``scope: {user_id, session_id, template,
    process}``, ``turn_id`` and ``time``."""


class OpaResult(BaseModel):
    """The decision as an OPA document: ``allow`` is what a plain OPA client checks."""

    allow: bool
    turn_id: str | None
    blocked: bool
    reason: str | None
    changes: dict[str, Any]
    unsupported: list[dict[str, Any]]
    approval: dict[str, Any] | None = None
    """tool_call: a person must decide first (``allow`` is false meanwhile): ``{id, message,
    tool, input}``; answer with ``POST /v1/approvals/{id}``."""


class OpaOut(BaseModel):
    decision_id: str
    result: OpaResult


class OpaBatchIn(BaseModel):
    """EOPA's batch request: up to 100 inputs by caller-chosen ids."""

    model_config = ConfigDict(extra="forbid")

    inputs: dict[Annotated[str, Field(pattern=ID_PATTERN)], dict[str, Any]] = Field(
        max_length=MAX_BATCH
    )


class OpaBatchOut(BaseModel):
    batch_decision_id: str
    responses: dict[str, dict[str, Any]]
    """Per id: ``{http_status_code: "200", decision_id, result}`` or ``{http_status_code:
    "500", code, message, errors: [{code, message}]}``."""


SINGLE = Place(["body", "input"], ["body", "input", "scope"])


def batch_place(key: str) -> Place:
    return Place(["body", "inputs", key], ["body", "inputs", key, "scope"])


BATCH_MIXED: dict[int | str, dict[str, Any]] = {
    207: {"model": OpaBatchOut, "description": "some inputs failed"}
}


CALL_KEYS = ("scope", "turn_id", "time")
"""Keys of an OPA input that are not event fields: they go to ``Agent.evaluate`` beside it."""


def split_input(data: Mapping[str, Any], at: Place) -> tuple[dict[str, Any], dict[str, Any]]:
    """The event of an OPA input, and ``Agent.evaluate``'s options from its ``scope``,
    ``turn_id`` and ``time`` (422 naming a malformed one)."""
    event = dict(data)
    call = {key: event.pop(key) for key in CALL_KEYS if event.get(key) is not None}
    try:
        item = BatchItem.model_validate({"event": event, **call})
    except ValidationError as exc:
        base = at.scope[:-1]
        errors = [{"loc": [*base, *e["loc"]], "msg": e["msg"]} for e in exc.errors()]
        raise ApiError(422, "invalid_input", summarize(errors), errors) from exc
    return event, item.options()


def result(outcome: Outcome, event: Mapping[str, Any]) -> dict[str, Any]:
    found = {
        "allow": not outcome.blocked,
        "turn_id": outcome.turn_id,
        "blocked": outcome.blocked,
        "reason": outcome.reason,
        "changes": changes(outcome, event),
        "unsupported": outcome.unsupported,
    }
    if outcome.approval is not None:
        found["approval"] = outcome.approval
    return found


def failed(error: ApiError) -> dict[str, Any]:
    """A batch input that got no decision, as the OPA SDK reads a failed one."""
    items = [
        {"code": error.code, "message": f"{'.'.join(map(str, e['loc']))}: {e['msg']}"}
        for e in error.errors
    ]
    return {
        "http_status_code": "500",
        "code": error.code,
        "message": error.message,
        "errors": items,
    }


DATA_PATH = "/v1/data/hookengine/{agent}/{point}"
BATCH_PATH = "/v1/batch/data/hookengine/{agent}/{point}"


async def answer_data(engine: Any, agent: str, point: str, body: OpaIn) -> dict[str, Any]:
    """The data route's answer: ``{decision_id, result}``."""
    found, name = find_agent(engine, agent), check_point(point)
    event, scope = split_input(body.input, SINGLE)
    outcome = await decide_one(engine, found, name, event, scope, host=HOST, at=SINGLE)
    return {"decision_id": outcome.id, "result": result(outcome, event)}


async def answer_batch(
    engine: Any, agent: str, point: str, body: OpaBatchIn
) -> tuple[int, dict[str, Any]]:
    """The batch route's status (200, or 207 if some input failed) and answer."""
    found, name = find_agent(engine, agent), check_point(point)
    items, answers = {}, {}
    for key, data in body.inputs.items():
        try:
            items[key] = split_input(data, batch_place(key))
        except ApiError as exc:
            answers[key] = failed(exc)
    done = await run_in_threadpool(decide_batch, found, name, items, host=HOST, at=batch_place)
    for key, outcome in done.items():
        if isinstance(outcome, ApiError):
            answers[key] = failed(outcome)
        else:
            answers[key] = {
                "http_status_code": "200",
                "decision_id": outcome.id,
                "result": result(outcome, items[key][0]),
            }
    answers = {key: answers[key] for key in body.inputs}
    status = 207 if any(a["http_status_code"] != "200" for a in answers.values()) else 200
    return status, {"batch_decision_id": str(uuid.uuid4()), "responses": answers}


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The OPA data API and EOPA's batch form under ``hookengine/{agent}/{point}``."""
    api = APIRouter(dependencies=[Depends(authorize), Depends(strict_json)], tags=["opa"])

    @api.post(DATA_PATH, response_model=OpaOut, responses=DECISION_ERRORS)
    async def data(agent: AgentPath, point: PointPath, body: OpaIn) -> JSONResponse:
        """Decide one point as OPA answers a data query: ``{decision_id, result}``."""
        return JSONResponse(await answer_data(engine, agent, point, body))

    @api.post(BATCH_PATH, response_model=OpaBatchOut, responses={**BATCH_MIXED, **DECISION_ERRORS})
    async def batch(agent: AgentPath, point: PointPath, body: OpaBatchIn) -> JSONResponse:
        """Decide up to 100 inputs (EOPA's batch API): 200, or 207 if some failed."""
        status, answer = await answer_batch(engine, agent, point, body)
        return JSONResponse(answer, status_code=status)

    return api


def fast_routes(engine: Any) -> list[FastRoute]:
    """The OPA routes' fast path (engine/http/fast.py)."""

    async def data(params: Params, given: Params, body: bytes) -> Answer | None:
        taken = take(OpaIn, body)
        return None if taken is None else (200, await answer_data(engine, **params, body=taken))

    async def batch(params: Params, given: Params, body: bytes) -> Answer | None:
        taken = take(OpaBatchIn, body)
        return None if taken is None else await answer_batch(engine, **params, body=taken)

    return [
        FastRoute(fast_path(DATA_PATH), {}, data),
        FastRoute(fast_path(BATCH_PATH), {}, batch),
    ]
