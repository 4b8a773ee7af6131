"""The HTTP service's one error body, ``{code, message, errors: [{loc, msg}]}``, and the
handlers that turn every refusal into it.

::

    ApiError(status, code, message, errors)   raised by routes and dependencies
    RequestValidationError                      -> 422 invalid_input, errors by path
                                                   (415 if the body was not sent as JSON)
    StarletteHTTPException (404, 405, ...)      -> its status, the code of that status
    EventError (engine.errors)                  -> 422 invalid_input, the engine's errors
    StoreError (engine.errors)                  -> 503 store_unavailable

``code`` is a stable snake_case word a client may branch on; ``message`` is a sentence for
people; ``errors`` lists each offending field by its path (empty when no field is to blame).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import EventError, StoreError
from engine.jsontext import MAX_DEPTH

log = logging.getLogger("engine.http")

CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "too_many_requests",
    431: "headers_too_large",
    503: "not_ready",
}
"""The code a status gets when whoever refused named none."""
JSON_TYPE = re.compile(r"^\s*application/([a-z0-9.+-]*\+)?json\s*(;|$)", re.IGNORECASE)
"""A Content-Type FastAPI reads as JSON: application/json, application/<x>+json."""


class ErrorItem(BaseModel):
    """One offending field."""

    loc: list[str | int]
    """Its path: ``["body", "event", "name"]``, ``["path", "agent"]``."""
    msg: str


class ErrorBody(BaseModel):
    """Every error the service answers."""

    code: str
    """Stable snake_case: unauthorized, forbidden, not_found, body_too_large, invalid_input,
    too_many_requests, not_ready, ..."""
    message: str
    errors: list[ErrorItem]


class ApiError(Exception):
    """A refusal a route or dependency raises; answered as the common error body.

    Args:
        status: the HTTP status.
        code: the stable snake_case code (default: the status's own, see ``CODES``).
        message: a sentence saying what went wrong.
        errors: each offending field as ``{"loc": [...], "msg": ...}``.
        headers: extra response headers (``WWW-Authenticate``, ``Retry-After``, ``Allow``).
    """

    def __init__(
        self,
        status: int,
        code: str | None = None,
        message: str = "",
        errors: Sequence[Mapping[str, Any]] = (),
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code or CODES.get(status, "error")
        self.message = message or self.code.replace("_", " ")
        self.errors = [{"loc": list(e["loc"]), "msg": str(e["msg"])} for e in errors]
        self.headers = dict(headers or {})
        super().__init__(f"{status} {self.code}: {self.message}")

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "errors": self.errors}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers or None)


def error_json(status: int, message: str, code: str | None = None) -> bytes:
    """The error body as bytes, for the ASGI middlewares that answer before FastAPI."""
    body = ApiError(status, code, message).body()
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a route: each status documented with ``ErrorBody``."""
    return {s: {"model": ErrorBody, "description": CODES.get(s, "error")} for s in statuses}


def invalid_input(exc: RequestValidationError, request: Request | None = None) -> ApiError:
    """FastAPI's validation failure as a 422 naming each field by its path; a 415 when the
    body was not read as JSON because the request did not say it is JSON."""
    errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
    unread = any(e["loc"] == ("body",) and e["type"] != "missing" for e in exc.errors())
    if request is not None and unread:  # a body was sent, and not read as JSON
        kind = request.headers.get("content-type", "")
        if not JSON_TYPE.match(kind):
            got = repr(kind) if kind else "none"
            msg = f"the body must be JSON, sent as Content-Type: application/json (got {got})"
            where = [{"loc": ["header", "content-type"], "msg": msg}]
            return ApiError(415, "unsupported_media_type", msg, where)
    return ApiError(422, "invalid_input", summarize(errors), errors)


def event_error(exc: EventError, prefix: Sequence[str | int] = ()) -> ApiError:
    """The engine's refusal of a call as a 422, each path under ``prefix``."""
    errors = [{"loc": [*prefix, *e["loc"]], "msg": e["msg"]} for e in exc.errors]
    return ApiError(422, "invalid_input", summarize(errors), errors)


def summarize(errors: Sequence[Mapping[str, Any]]) -> str:
    """``a.b: msg; c: msg`` (the first five; then how many more)."""
    shown = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:5]]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "") or "invalid input"


def install_error_handlers(app: FastAPI) -> None:
    """Answer every refusal on ``app`` with the common error body."""

    @app.exception_handler(ApiError)
    async def refused(request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return invalid_input(exc, request).response()

    @app.exception_handler(EventError)
    async def wrong_event(request: Request, exc: EventError) -> JSONResponse:
        return event_error(exc).response()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        cause = exc.__cause__
        if exc.status_code == 400 and cause is not None and _unparsable(cause):
            return unparsable(cause).response()
        message = exc.detail if isinstance(exc.detail, str) else CODES.get(exc.status_code, "")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.url.path}"
        return ApiError(exc.status_code, None, message, headers=exc.headers).response()

    @app.exception_handler(StoreError)
    async def store_down(request: Request, exc: StoreError) -> JSONResponse:
        return store_unavailable(request.url.path, exc).response()


def _unparsable(cause: BaseException) -> bool:
    """Whether FastAPI's 400 hides JSON too deep or an integer too long (not a bad byte)."""
    return isinstance(cause, RecursionError | ValueError) and not isinstance(
        cause, UnicodeDecodeError
    )


def unparsable(cause: BaseException) -> ApiError:
    """The 422 of a JSON body FastAPI's own parsing failed on with more than a syntax error:
    nested too deep for Python's parser, or an integer too long to convert. The strict
    reading (engine/jsontext.py) would have said the same, but FastAPI reads the body first
    and would answer a bare ``400``."""
    if isinstance(cause, RecursionError):
        message = f"nested deeper than {MAX_DEPTH} levels"
    else:  # Python's own words: "Exceeds the limit (4300 digits) for integer string ..."
        message = str(cause).split(";")[0][:200]
    return ApiError(422, "invalid_input", message, [{"loc": ["body"], "msg": message}])


def store_unavailable(path: str, exc: StoreError) -> ApiError:
    """The 503 for a store that failed under a request on ``path`` (logged, not shown)."""
    log.error("store error on %s: %s", path, exc)
    return ApiError(503, "store_unavailable", "the store is not available")
