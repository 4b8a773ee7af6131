"""``POST /v1/claude-code/{agent}``: the target of Claude Code's (and Codex's) ``type: "http"``
hooks. It answers exactly what ``hookengine claude-code hook`` prints for the same input
(engine/integrations/claude_code.py), so a hook input that is not JSON, an unknown agent or a
failing engine is the event's fail-closed answer (a deny at PreToolUse) with a 200: the
host blocks whether or not its ``onFailure`` setting would have."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from engine.http.decisions import AgentPath
from engine.http.errors import responses
from engine.http.strict import parse_strict
from engine.integrations.claude_code import PREFIX, failure_output, handle

Dialect = Annotated[
    Literal["claude", "codex"],
    Query(description="``codex`` answers under Codex's hook output schemas"),
]


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The Claude Code hook route behind ``authorize`` (a ``decide`` token)."""
    api = APIRouter(dependencies=[Depends(authorize)], tags=["claude-code"])

    @api.post(
        "/v1/claude-code/{agent}",
        response_model=dict[str, Any],
        responses=responses(401, 403, 413, 422, 429),
        openapi_extra={"requestBody": {"content": {"application/json": {"schema": {}}}}},
    )
    async def hook(agent: AgentPath, request: Request, dialect: Dialect = "claude") -> Any:
        """The hook's answer for one hook input (``{}`` when there is nothing to say)."""
        try:
            payload = parse_strict(await request.body())
        except ValueError as exc:
            message = f"{PREFIX}the hook input is not JSON: {exc}"
            return JSONResponse(failure_output(None, message, dialect=dialect))
        answer = await run_in_threadpool(handle, engine, agent, payload, dialect=dialect)
        return JSONResponse(answer)

    return api
