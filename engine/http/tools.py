"""Tool routes: ``POST /v1/agents/{agent}/tools/{name}/call`` and ``GET /v1/agents/{agent}/tools``
(decide tokens: a host's agent loop calls them), ``GET /v1/artifacts/{session}/{id}`` (admin).
A call goes through ``Agent.acall_tool``, the one guarded path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from engine.http.auth import require
from engine.http.decisions import AgentPath, find_agent
from engine.http.errors import ApiError, responses

ToolPath = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="a tool's name")]
FormatQuery = Annotated[str, Query(description="openai-chat, openai-responses, anthropic or mcp")]


class ToolCallIn(BaseModel):
    """One tool call."""

    model_config = ConfigDict(extra="forbid")

    input: dict[str, Any] = Field(default_factory=dict)
    """The tool's input (checked against its schema after the tool_call hooks)."""
    user_id: str | None = None
    session_id: str | None = None
    """Artifacts the call makes belong to this session."""
    call_id: str | None = None


class ToolResultOut(BaseModel):
    """What the call gave back (``is_error``: it was blocked, refused or failed; ``content``
    says why)."""

    content: str
    data: Any = None
    artifacts: list[dict[str, Any]]
    events: list[dict[str, Any]]
    is_error: bool


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The tool routes: calls and specs behind ``authorize``, artifacts behind admin."""
    api = APIRouter(tags=["tools"])
    decide = [Depends(authorize)]

    @api.post(
        "/v1/agents/{agent}/tools/{name}/call",
        response_model=ToolResultOut,
        responses=responses(401, 403, 404, 413, 422, 429, 503),
        dependencies=decide,
    )
    async def call(agent: AgentPath, name: ToolPath, body: ToolCallIn) -> ToolResultOut:
        """Call a tool through the agent's hooks; a 200 even when the result is an error
        (the model is meant to read it)."""
        found = find_agent(engine, agent)
        result = await found.acall_tool(
            name,
            body.input,
            user_id=body.user_id,
            session_id=body.session_id,
            call_id=body.call_id,
        )
        return ToolResultOut(**vars(result))

    @api.get(
        "/v1/agents/{agent}/tools",
        response_model=list[dict[str, Any]],
        responses=responses(401, 403, 404, 422, 503),
        dependencies=decide,
    )
    async def specs(agent: AgentPath, format: FormatQuery = "openai-chat") -> Any:
        """The agent's enabled tools, in one model API's format."""
        found = find_agent(engine, agent)
        try:
            return found.tool_specs(format)
        except ValueError as exc:
            raise ApiError(
                422, None, str(exc), [{"loc": ["query", "format"], "msg": str(exc)}]
            ) from None

    @api.get(
        "/v1/artifacts/{session}/{artifact}",
        responses=responses(401, 403, 404, 422),
        dependencies=[Depends(require("admin"))],
    )
    def artifact(
        session: Annotated[str, Path(max_length=300)],
        artifact: Annotated[str, Path(pattern=r"^[A-Za-z0-9]{1,40}$")],
    ) -> Response:
        """An artifact's bytes, with its MIME type."""
        found = engine.artifact_store.read(session, artifact)
        if found is None or found[0].id != artifact:
            message = f"no artifact {artifact!r} in session {session!r}"
            raise ApiError(404, "not_found", message)
        row, data = found
        headers = {"X-Artifact-Name": row.file_name.encode("ascii", "replace").decode()}
        return Response(data, media_type=row.mime, headers=headers)

    return api
