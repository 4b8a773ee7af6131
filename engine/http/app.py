"""The admin HTTP app: health, and a scope's memory to read or forget (bearer token, fail
closed). FastAPI is imported here and nowhere else."""

from __future__ import annotations

import hmac
import logging
import os
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute, Match, Route

from engine.errors import StoreError
from engine.http.limits import BodyLimit, HeadLimit
from engine.store import Store

log = logging.getLogger("engine.http")

# Written without shorthand classes (\s, \w): Python's re, pydantic's Rust regex and the
# ECMA regex an OpenAPI client uses read those differently (U+001C is \s to Python only).
# Explicit escapes mean the same to all three, so the document states what is enforced.
# Excluded from ids: C0 and C1 controls, space, DEL, '/', the no-break and typographic
# spaces, zero-width and direction marks, line and paragraph separators, the BOM.
SCOPE_PATTERN = (
    r"^(user|session|template|process):"
    r"[^\u0000-\u0020\u007f-\u00a0/\u1680\u2000-\u200f\u2028-\u202f\u205f-\u206f"
    r"\u3000\ufeff]{1,200}$"
)
SCOPE_MAX_LENGTH = len("template:") + 200
SCOPE_HINT = (
    "must be user:<id>, session:<id>, template:<name> or process:<name>; the id 1 to 200 "
    "characters without '/', whitespace or control characters"
)


class Problem(BaseModel):
    """An error: what went wrong, in a sentence."""

    detail: str


class FactOut(BaseModel):
    """A remembered fact."""

    id: int
    text: str
    importance: float = Field(ge=0, le=1)
    stale: bool
    """Withdrawn or outdated: kept, never recalled."""
    retired: bool
    """Superseded by a newer fact (``superseded_by``): kept, never recalled."""
    key: str | None
    superseded_by: int | None
    supersedes: list[int]
    created_at: str
    updated_at: str
    last_recalled_at: str | None
    recall_count: int


class EpisodeOut(BaseModel):
    """A remembered turn."""

    id: int
    turn_id: str | None
    question: str
    answer: str
    time: str


class MemoryOut(BaseModel):
    """Everything remembered about one scope."""

    scope: str
    facts: list[FactOut]
    summary: str
    """The rolling summary (one per scope)."""
    episodes: list[EpisodeOut]


class ForgetOut(BaseModel):
    """What DELETE removed."""

    scope: str
    deleted: int
    """Rows deleted (facts, their index, summary, episodes, recall notes)."""


class HealthOut(BaseModel):
    status: str
    agents: list[str]


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "No bearer token, or the wrong one."},
    404: {"model": Problem, "description": "Nothing is remembered for this scope."},
    413: {"model": Problem, "description": "The request body is too large."},
    431: {"model": Problem, "description": "The request line and headers are too large."},
    422: {"model": Problem, "description": "A malformed scope key."},
    503: {"model": Problem, "description": "No admin token configured, or the store is down."},
}

ScopePath = Annotated[
    str,
    Path(
        pattern=SCOPE_PATTERN,
        max_length=SCOPE_MAX_LENGTH,
        description="A scope key: ``user:<id>``, ``session:<id>``, "
        "``template:<name>`` or ``process:<name>``.",
    ),
]


bearer = HTTPBearer(auto_error=False, description="the admin token (http.token_env)")


class TokenCheck:
    """The admin dependency: 503 when no token is configured (fail closed), 401 when the
    request's bearer token is missing or wrong (compared in constant time)."""

    def __init__(self, token: str, token_env: str) -> None:
        self.token = token
        self.token_env = token_env

    def __call__(
        self,
        creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> None:
        if not self.token:
            raise HTTPException(
                503,
                f"admin API disabled: no token configured (set ${self.token_env} or http.token)",
            )
        given = creds.credentials if creds else ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )


def memory_stores(engine: Any) -> list[Store]:
    """The stores memory hooks use (each once), or the engine's store when there are none."""
    found: dict[int, Store] = {}
    for name in engine.agents:
        for slot in engine.agent(name).pipeline.slots:
            store = getattr(slot.hook, "store", None)
            if slot.hook.kind == "memory" and store is not None:
                found.setdefault(id(store), store)
    return list(found.values()) or [engine.store]


def allowed_methods(routes: list[BaseRoute], request: Request) -> list[str]:
    """Every method some route serves at the request's path, and OPTIONS (answered here).

    Starlette answers a 405 from the first route whose path matched, so a path served by a
    GET route and a DELETE route said ``Allow: GET``; this takes the union of all of them.
    """
    methods = {"OPTIONS"}
    for route in routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


def describe_invalid(exc: RequestValidationError) -> str:
    """A 422's detail in compiler style: ``path.scope: <what a scope must be> (got '...')``."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        what = SCOPE_HINT if error["loc"][-1] == "scope" else error["msg"]
        got = repr(error.get("input"))
        got = got if len(got) <= 60 else got[:60] + "...'"
        problems.append(f"{field}: {what} (got {got})")
    return "; ".join(problems)


def admin_token(engine: Any) -> str:
    """The configured admin token ("" when none: the admin API then refuses every call)."""
    http = engine.settings.http
    return os.environ.get(http.token_env, "") or http.token


def create_app(engine: Any) -> FastAPI:
    """The admin app over a loaded Engine.

    Args:
        engine: an ``engine.Engine``; its memory hooks' stores are what the API reads.
    """
    http = engine.settings.http
    token = admin_token(engine)
    app = FastAPI(
        title="hookengine admin",
        version="1",
        description="Health, and what the memory hooks remember about a scope.",
    )
    app.add_middleware(BodyLimit, max_bytes=http.max_body_bytes)
    app.add_middleware(HeadLimit, max_bytes=http.max_header_bytes)
    authorize = TokenCheck(token, http.token_env)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": describe_invalid(exc)}, status_code=422)

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc: Exception) -> Response:
        allow = ", ".join(allowed_methods(app.router.routes, request))
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        detail = f"{request.method} is not allowed on {request.url.path}; allowed: {allow}"
        return JSONResponse({"detail": detail}, status_code=405, headers={"Allow": allow})

    @app.exception_handler(StoreError)
    async def store_down(request: Request, exc: StoreError) -> JSONResponse:
        log.error("store error on %s: %s", request.url.path, exc)
        return JSONResponse({"detail": "the store is not available"}, status_code=503)

    @app.get("/v1/health", response_model=HealthOut)
    def health() -> HealthOut:
        """Whether the service is up, and the agents it serves."""
        return HealthOut(status="ok", agents=list(engine.agents))

    @app.get("/v1/status", responses=ERRORS, dependencies=[Depends(authorize)])
    def status() -> dict[str, Any]:
        """Per agent: reload generation, hook versions, last reload error (file and line);
        the reload watcher's health (alive, stalled, errors, restarts, last event); the
        sandbox pool; the record writer's counters (written, dropped by cause, last error)."""
        return dict(engine.status())

    @app.get(
        "/v1/memory/{scope}",
        response_model=MemoryOut,
        responses=ERRORS,
        dependencies=[Depends(authorize)],
    )
    def read_memory(scope: ScopePath) -> MemoryOut:
        """Facts (with importance, stale and retired flags), the rolling summary, episodes."""
        views = [store.memory_view(scope) for store in memory_stores(engine)]
        if all(v.empty for v in views):
            raise HTTPException(404, f"nothing is remembered for scope {scope!r}")
        return MemoryOut(
            scope=scope,
            facts=[FactOut(**f.as_data()) for v in views for f in v.facts],
            summary="\n".join(v.summary for v in views if v.summary),
            episodes=[EpisodeOut(**e.as_data()) for v in views for e in v.episodes],
        )

    @app.delete(
        "/v1/memory/{scope}",
        response_model=ForgetOut,
        responses=ERRORS,
        dependencies=[Depends(authorize)],
    )
    def forget_memory(scope: ScopePath) -> ForgetOut:
        """Forget everything remembered about a scope (a user's right to be forgotten)."""
        deleted = sum(store.memory_forget(scope) for store in memory_stores(engine))
        if not deleted:
            raise HTTPException(404, f"nothing is remembered for scope {scope!r}")
        return ForgetOut(scope=scope, deleted=deleted)

    return app
