"""The HTTP app: decisions for any host (native, batch, OPA-compatible) behind ``decide``
tokens, and the admin routes (status, a scope's memory) behind ``admin`` tokens. FastAPI is
imported here and in the route modules beside it (engine/http/), nowhere else."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute, Match, Route

from engine.http import approvals, claude_code, decisions, litellm, opa, tools
from engine.http.auth import load_auth, require
from engine.http.errors import (
    ApiError,
    install_error_handlers,
    invalid_input,
    responses,
    summarize,
)
from engine.http.fast import FastRoute
from engine.http.limits import Gate
from engine.points import ID_CAP
from engine.reload_log import ReloadLog
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


class ReadyOut(BaseModel):
    """The agents loaded, each with its reload generation."""

    status: str
    agents: dict[str, int]


ADMIN_ERRORS = responses(401, 403, 404, 413, 422, 431, 503)

DECISION_PREFIXES = (
    "/v1/agents/",
    "/v1/batch/",
    "/v1/data/",
    "/v1/claude-code/",
    "/beta/litellm_basic_guardrail_api",
)
"""The decision routes: their bodies may be up to ``http.max_decision_body_bytes`` and at most
``http.max_concurrency`` of them run at once."""

RouterFactory = Callable[[Any, Callable[..., Any]], APIRouter]
ROUTERS: tuple[RouterFactory, ...] = (
    decisions.router,
    opa.router,
    litellm.router,
    claude_code.router,
    tools.router,
    approvals.router,
)
"""The decision routers, each made from the engine and the ``decide`` dependency: native,
OPA-compatible, LiteLLM's guardrail API (docs/litellm.md), Claude Code's hooks
(docs/claude-code.md), tool calls and specs (docs/tools.md); and the approval routes
(docs/builtins-approval.md)."""
FAST_ROUTES: dict[RouterFactory, Callable[[Any], list[FastRoute]]] = {
    decisions.router: decisions.fast_routes,
    opa.router: opa.fast_routes,
    claude_code.router: claude_code.fast_routes,
}
"""The fast path (engine/http/fast.py) of the decision routers that have one."""


def no_fast_routes(engine: Any) -> list[FastRoute]:
    return []


ScopePath = Annotated[
    str,
    Path(
        pattern=SCOPE_PATTERN,
        max_length=SCOPE_MAX_LENGTH,
        description="A scope key: ``user:<id>``, ``session:<id>``, "
        "``template:<name>`` or ``process:<name>``.",
    ),
]


SCOPE_KINDS = ("user", "session", "template", "process")
ScopeQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=len("template:") + ID_CAP,
        description="A scope key: ``user:<id>``, ``session:<id>``, ``template:<name>`` or "
        f"``process:<name>``; the id 1 to {ID_CAP} characters of any kind (URL-encoded), as "
        "the Python API takes it.",
    ),
]


def scope_of_query(scope: str) -> str:
    """The scope key a ``?scope=`` names, as given (the Python API's ``memory_forget`` takes
    it so too).

    Raises:
        ApiError: 422 when it is no ``<kind>:<id>`` with an id of 1 to ``ID_CAP`` characters.
    """
    kind, sep, ident = scope.partition(":")
    if sep and kind in SCOPE_KINDS and 0 < len(ident) <= ID_CAP:
        return scope
    msg = (
        "must be user:<id>, session:<id>, template:<name> or process:<name>; "
        f"the id 1 to {ID_CAP} characters"
    )
    raise ApiError(
        422, "invalid_input", f"query.scope: {msg}", [{"loc": ["query", "scope"], "msg": msg}]
    )


KEEPERS = frozenset({"memory", "faq_cache"})
"""The hook kinds that keep what they learn in a store of their own (``db_path``, ``db_url``):
a scope's data is read and forgotten there too."""


def memory_stores(engine: Any) -> list[Store]:
    """The stores memory and FAQ hooks use and the engine's own (conversation entries and
    script state live there), each once."""
    found: dict[int, Store] = {id(engine.store): engine.store}
    for name in engine.agents:
        for slot in engine.agent(name).pipeline.slots:
            store = getattr(slot.hook, "store", None)
            if slot.hook.kind in KEEPERS and store is not None:
                found.setdefault(id(store), store)
    return list(found.values())


def _without_post(routes: list[BaseRoute]) -> list[Any]:
    """The path patterns of decision-prefix routes that no route serves with POST."""
    plain = [r for r in routes if isinstance(r, Route)]
    posted = {r.path for r in plain if "POST" in (r.methods or ())}
    return [
        r.path_regex for r in plain if r.path.startswith(DECISION_PREFIXES) and r.path not in posted
    ]


def allowed_methods(routes: list[BaseRoute], request: Request) -> list[str]:
    """Every method some route serves at the request's path, and OPTIONS (answered here).

    Starlette answers a 405 from the first route whose path matched, so a path served by a
    GET route and a DELETE route said ``Allow: GET``; this takes the union of all of them,
    looking into included routers too (they are included without a prefix).
    """
    methods = {"OPTIONS"}
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            methods.update(allowed_methods(inner.routes, request))
        elif isinstance(route, Route) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


def scope_hints(exc: RequestValidationError, request: Request) -> ApiError:
    """A 422 naming each field (or 415, see ``invalid_input``); a malformed scope key says
    what a scope must be."""
    error = invalid_input(exc, request)
    for item in error.errors:
        if item["loc"] == ["path", "scope"]:
            item["msg"] = SCOPE_HINT
    return ApiError(error.status, error.code, summarize(error.errors), error.errors)


def create_app(
    engine: Any, *, no_auth: bool = False, routers: Sequence[RouterFactory] = ROUTERS
) -> FastAPI:
    """The app over a loaded Engine.

    Args:
        engine: an ``engine.Engine``.
        no_auth: decisions need no token (``hookengine serve --no-auth``, loopback only);
            the admin routes still need an admin token.
        routers: the decision routers to mount, each ``factory(engine, require("decide"))``.
    """
    http = engine.settings.http
    app = FastAPI(
        title="hookengine",
        version="1",
        description="Decisions for any host (native, batch, OPA-compatible); health, "
        "readiness, status, and what the memory hooks remember about a scope.",
    )
    app.state.auth = load_auth(http, no_auth=no_auth)
    exempt: list[Any] = []  # filled below, once the routes are in
    fast = [route for make in routers for route in FAST_ROUTES.get(make, no_fast_routes)(engine)]
    app.add_middleware(
        Gate,
        auth=app.state.auth,
        max_header_bytes=http.max_header_bytes,
        max_body_bytes=http.max_body_bytes,
        decision_max_body_bytes=http.max_decision_body_bytes,
        max_in_flight=http.max_concurrency,
        prefixes=DECISION_PREFIXES,
        exempt=exempt,
        fast=fast,
    )
    install_error_handlers(app)
    install_admin_handlers(app)
    decide = require("decide")
    made = [make(engine, decide) for make in routers]
    for router in made:
        app.include_router(router)
    exempt += _without_post([route for router in made for route in router.routes])
    app.include_router(admin_router(engine))
    return app


def install_admin_handlers(app: FastAPI) -> None:
    """Scope hints in 422s; 405 naming what is allowed; OPTIONS answered with ``Allow``."""

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return scope_hints(exc, request).response()

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc: Exception) -> Response:
        allow = ", ".join(allowed_methods(app.router.routes, request))
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        message = f"{request.method} is not allowed on {request.url.path}; allowed: {allow}"
        return ApiError(405, "method_not_allowed", message, headers={"Allow": allow}).response()


def admin_router(engine: Any) -> APIRouter:
    """Health and readiness (open), status and memory (``admin`` tokens)."""
    api = APIRouter(tags=["admin"])
    admin = [Depends(require("admin"))]

    @api.get("/v1/health", response_model=HealthOut)
    def health() -> HealthOut:
        """Whether the service is up, and the agents it serves."""
        return HealthOut(status="ok", agents=list(engine.agents))

    @api.get("/v1/ready", response_model=ReadyOut, responses=responses(503))
    def ready() -> ReadyOut:
        """Whether decisions can be asked for (200 with each agent's reload generation), or
        503 until agents are loaded."""
        names = engine.agents
        if not names:
            raise ApiError(503, "not_ready", "no agent is loaded yet")
        generations = {name: engine.agent(name).pipeline.generation for name in names}
        return ReadyOut(status="ready", agents=generations)

    reloads = ReloadLog.of(engine)  # from now on: the reloads this service ran

    @api.get("/v1/status", responses=ADMIN_ERRORS, dependencies=admin)
    def status() -> dict[str, Any]:
        """Per agent: reload generation, hook versions, last reload error (file and line);
        the reload watcher's health (alive, stalled, errors, restarts, last event); the
        sandbox pool; the record writer's counters (written, dropped by cause, last error);
        ``reloads``: the newest successful reloads (time, agent, generation, files, hash)."""
        return {**engine.status(), "reloads": reloads.entries()}

    def read(scope: str) -> MemoryOut:
        views = [store.memory_view(scope) for store in memory_stores(engine)]
        if all(v.empty for v in views):
            raise ApiError(404, "not_found", f"nothing is remembered for scope {scope!r}")
        return MemoryOut(
            scope=scope,
            facts=[FactOut(**f.as_data()) for v in views for f in v.facts],
            summary="\n".join(v.summary for v in views if v.summary),
            episodes=[EpisodeOut(**e.as_data()) for v in views for e in v.episodes],
        )

    def forget(scope: str) -> ForgetOut:
        deleted = sum(store.memory_forget(scope) for store in memory_stores(engine))
        if scope.startswith("session:"):  # the session's tool artifacts, rows and files
            deleted += engine.forget_artifacts(scope.removeprefix("session:"))
        if not deleted:
            raise ApiError(404, "not_found", f"nothing is remembered for scope {scope!r}")
        return ForgetOut(scope=scope, deleted=deleted)

    @api.get(
        "/v1/memory/{scope}", response_model=MemoryOut, responses=ADMIN_ERRORS, dependencies=admin
    )
    def read_memory(scope: ScopePath) -> MemoryOut:
        """Facts (with importance, stale and retired flags), the rolling summary, episodes."""
        return read(scope)

    @api.delete(
        "/v1/memory/{scope}", response_model=ForgetOut, responses=ADMIN_ERRORS, dependencies=admin
    )
    def forget_memory(scope: ScopePath) -> ForgetOut:
        """Forget everything remembered about a scope (a user's right to be forgotten); for a
        ``session:<id>`` scope, the session's tool artifacts too."""
        return forget(scope)

    @api.api_route("/v1/memory/", methods=["GET", "DELETE"], include_in_schema=False)
    def no_scope(request: Request) -> None:
        """A 404 in the common body, as before ``/v1/memory`` existed (not a redirect there)."""
        raise ApiError(404, "not_found", f"no route {request.url.path}")

    @api.get("/v1/memory", response_model=MemoryOut, responses=ADMIN_ERRORS, dependencies=admin)
    def read_memory_of(scope: ScopeQuery) -> MemoryOut:
        """``GET /v1/memory/{scope}`` for any id (``?scope=user:team%2Falice``): one with
        ``/``, whitespace or any other character the path form does not take."""
        return read(scope_of_query(scope))

    @api.delete("/v1/memory", response_model=ForgetOut, responses=ADMIN_ERRORS, dependencies=admin)
    def forget_memory_of(scope: ScopeQuery) -> ForgetOut:
        """``DELETE /v1/memory/{scope}`` for any id (``?scope=user:team%2Falice``): one with
        ``/``, whitespace or any other character the path form does not take."""
        return forget(scope_of_query(scope))

    return api


__all__ = ["ApiError", "create_app", "require"]
