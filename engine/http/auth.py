"""Bearer tokens with scopes (``decide``, ``admin``) and ``require(scope)``, the FastAPI
dependency every protected route uses.

A token comes from ``Authorization: Bearer <token>`` or ``x-api-key: <token>`` (LiteLLM sends
the latter). It is compared with every configured token, in constant time, and never logged.
Missing or wrong: 401. Right but without the scope: 403. No token has the scope at all: 503
(the route is disabled, fail closed), unless the app runs with ``--no-auth`` for ``decide``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from engine.http.errors import ApiError

SCOPES = ("decide", "approve", "admin")

bearer = HTTPBearer(auto_error=False, description="a token from http.tokens (or the admin token)")
api_key = APIKeyHeader(
    name="x-api-key", auto_error=False, description="the same, as LiteLLM sends it"
)


@dataclass(frozen=True)
class Token:
    """A configured token: its name (for logs and status), digest and scopes."""

    name: str
    digest: bytes
    scopes: frozenset[str]


def digest(secret: str) -> bytes:
    # Compared as digests: equal length whatever the token's, so the time says nothing of it.
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Auth:
    """The tokens an app accepts; ``open_scopes`` need none (``--no-auth``: decide, approve)."""

    tokens: tuple[Token, ...]
    open_scopes: frozenset[str] = frozenset()
    admin_env: str = "HOOKENGINE_ADMIN_TOKEN"

    def match(self, given: str) -> Token | None:
        """The token equal to ``given``; every token is compared, in constant time."""
        wanted = digest(given)
        found = None
        for token in self.tokens:
            if hmac.compare_digest(wanted, token.digest) and found is None:
                found = token
        return found

    def has(self, scope: str) -> bool:
        return any(scope in t.scopes for t in self.tokens)

    def check(self, scope: str, given: str | None) -> Token | None:
        """The caller's token if it may use ``scope``; else raise the refusal.

        Raises:
            ApiError: 503 no token has ``scope``; 401 missing or wrong; 403 not in scope.
        """
        if scope in self.open_scopes:
            return None
        if not self.has(scope):
            where = f"${self.admin_env} or http.token" if scope == "admin" else "http.tokens"
            raise ApiError(503, "auth_not_configured", f"no {scope} token configured ({where})")
        token = self.match(given) if given else None
        if token is None:
            raise ApiError(
                401,
                "unauthorized",
                "missing or wrong token (Authorization: Bearer or x-api-key)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if scope not in token.scopes:
            raise ApiError(403, "forbidden", f"token {token.name!r} may not {scope}")
        return token


def load_auth(http: Any, *, no_auth: bool = False) -> Auth:
    """The tokens of engine.yaml's ``http`` section, read from their environment variables:
    ``tokens`` with their scopes, and the legacy ``token_env``/``token`` as an admin token.
    A token whose variable is unset or empty is not configured."""
    tokens = []
    legacy = os.environ.get(http.token_env, "") or http.token
    if legacy:
        tokens.append(Token("admin", digest(legacy), frozenset({"admin"})))
    for spec in getattr(http, "tokens", ()):
        secret = os.environ.get(spec.env, "")
        if secret:
            tokens.append(Token(spec.name, digest(secret), frozenset(spec.scopes)))
    opened = frozenset({"decide", "approve"}) if no_auth else frozenset()
    return Auth(tuple(tokens), opened, http.token_env)


def token_of(headers: Mapping[str, str]) -> str | None:
    """The token a request carries: ``Authorization: Bearer <token>``, else ``x-api-key``."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value:
        return value
    return headers.get("x-api-key") or None


def require(scope: str) -> Callable[..., Awaitable[Token | None]]:
    """A FastAPI dependency admitting callers whose token has ``scope`` (``decide``, ``admin``).

    It reads the app's ``Auth`` from ``request.app.state.auth`` and raises ``ApiError``
    (401, 403, or 503 when no token has the scope), answered as the common error body.
    """
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; one of {', '.join(SCOPES)}")

    async def authorize(  # async: a check of microseconds needs no thread hop
        request: Request,
        _bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        _key: Annotated[str | None, Depends(api_key)],
    ) -> Token | None:
        # The two security dependencies put both ways in the OpenAPI document; the token is
        # read by token_of, as the TokenGate middleware reads it, so both agree.
        auth: Auth = request.app.state.auth
        return auth.check(scope, token_of(request.headers))

    return authorize
