"""``POST /v1/claude-code/{agent}``: the target of Claude Code's (and Codex's) ``type: "http"``
hooks. It answers exactly what ``hookengine claude-code hook`` prints for the same input
(engine/integrations/claude_code.py), so a hook input that is not JSON, an unknown agent or a
failing engine is the event's fail-closed answer (a deny at PreToolUse) with a 200: the
host blocks whether or not its ``onFailure`` setting would have."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from engine.http.decisions import AgentPath, fast_path
from engine.http.errors import responses
from engine.http.fast import Answer, FastRoute, Params
from engine.http.strict import parse_strict
from engine.integrations.claude_code import PREFIX, failure_output, handle

Dialect = Annotated[
    Literal["claude", "codex"],
    Query(description="``codex`` answers under Codex's hook output schemas"),
]


PATH = "/v1/claude-code/{agent}"


async def answer_hook(engine: Any, agent: str, body: bytes, dialect: str) -> dict[str, Any]:
    """The hook's answer to ``body`` (a hook input that is not JSON is the event's
    fail-closed answer)."""
    try:
        payload = parse_strict(body)
    except ValueError as exc:
        message = f"{PREFIX}the hook input is not JSON: {exc}"
        return failure_output(None, message, dialect=dialect)
    return await run_in_threadpool(handle, engine, agent, payload, dialect=dialect)


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The Claude Code hook route behind ``authorize`` (a ``decide`` token)."""
    api = APIRouter(dependencies=[Depends(authorize)], tags=["claude-code"])

    @api.post(
        PATH,
        response_model=dict[str, Any],
        responses=responses(401, 403, 413, 422, 429),
        openapi_extra={"requestBody": {"content": {"application/json": {"schema": {}}}}},
    )
    async def hook(agent: AgentPath, request: Request, dialect: Dialect = "claude") -> Any:
        """The hook's answer for one hook input (``{}`` when there is nothing to say)."""
        return JSONResponse(await answer_hook(engine, agent, await request.body(), dialect))

    return api


def fast_routes(engine: Any) -> list[FastRoute]:
    """The hook route's fast path (engine/http/fast.py); the body is read whatever its
    Content-Type, as the route reads it."""

    async def hook(params: Params, given: Params, body: bytes) -> Answer:
        dialect = given.get("dialect", "claude")
        return 200, await answer_hook(engine, params["agent"], body, dialect)

    query = {"dialect": re.compile("claude|codex")}
    return [FastRoute(fast_path(PATH), query, hook, json_body=False)]
