"""The approval routes: the questions waiting on a person, and ``POST /v1/approvals/{id}``
answering one (a token with the ``approve`` or the ``admin`` scope: never the ``decide``
token of the host whose call waits, which the agent it runs may be able to read)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.concurrency import run_in_threadpool

from engine import approvals
from engine.errors import ApprovalError
from engine.http.auth import Auth, Token, api_key, bearer, token_of
from engine.http.errors import ApiError, responses

STATUS = {"unknown": (404, "approval_not_found"), "expired": (410, "approval_expired")}
"""The answer to each refusal of ``ApprovalError.cause``; ``resolved`` is 409."""
ApprovalId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="An approval id.")]


class ResolutionIn(BaseModel):
    """A person's answer to one approval."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    approve: StrictBool
    """true: the call may run; false: it is denied."""
    by: str | None = Field(default=None, min_length=1, max_length=200)
    """Who decided (recorded); default: the name of the caller's token."""
    note: str | None = Field(default=None, max_length=2000)
    """Why (recorded, and shown to the model in a denial's reason)."""


class ApprovalOut(BaseModel):
    """An approval as the store keeps it."""

    id: str
    agent: str
    scope_key: str
    tool: str
    input: dict[str, Any]
    message: str
    remember_scope: str | None
    """Where approving also lets later calls of this tool with this input run unasked
    (``session:<id>``, ``user:<id>``); null: this call only. The person sees what "approve"
    means before deciding."""
    status: str
    """pending | approved | denied | expired."""
    created_at: str
    expires_at: str
    resolved_by: str | None
    resolved_at: str | None
    note: str | None


async def approve_or_admin(
    request: Request,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    _key: Annotated[str | None, Depends(api_key)],
) -> Token | None:
    """Admit a token with the ``approve`` scope, or else one with ``admin``."""
    auth: Auth = request.app.state.auth
    given = token_of(request.headers)
    try:
        return auth.check("approve", given)
    except ApiError as refused:
        if refused.status not in (403, 503):
            raise
        return auth.check("admin", given)


def router(engine: Any, authorize: Callable[..., Any]) -> APIRouter:
    """The approval routes (``authorize``, the ``decide`` dependency, is not used: they admit
    ``approve`` and ``admin`` tokens)."""
    del authorize
    api = APIRouter(tags=["approvals"])

    @api.post(
        "/v1/approvals/{approval_id}",
        response_model=ApprovalOut,
        responses=responses(401, 403, 404, 409, 410, 422, 503),
    )
    def resolve(
        approval_id: ApprovalId,
        body: ResolutionIn,
        token: Annotated[Token | None, Depends(approve_or_admin)],
    ) -> dict[str, Any]:
        """Approve or deny a pending approval, once; who decided and when are recorded."""
        by = body.by or (token.name if token is not None else None)
        if by is None:
            raise ApiError(
                422,
                None,
                "by: say who decides",
                [{"loc": ["body", "by"], "msg": "required without a token"}],
            )
        found = engine.store.approval_get(approval_id)
        agent = found.agent if found is not None else ""
        try:
            done = approvals.resolve(
                engine.store, agent, approval_id, body.approve, by=by, note=body.note
            )
        except ApprovalError as exc:
            status, code = STATUS.get(exc.cause, (409, "approval_resolved"))
            raise ApiError(status, code, str(exc)) from exc
        return done.to_dict()

    @api.get(
        "/v1/approvals",
        response_model=list[ApprovalOut],
        responses=responses(401, 403, 422, 503),
    )
    async def waiting(
        _token: Annotated[Token | None, Depends(approve_or_admin)],
        agent: Annotated[str, Query(min_length=1, max_length=200)],
        session_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        user_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    ) -> list[dict[str, Any]]:
        """The approvals of an agent still waiting, oldest first (one session's when given)."""
        found = await run_in_threadpool(
            approvals.pending, engine.store, agent, session_id=session_id, user_id=user_id
        )
        return [a.to_dict() for a in found]

    return api
