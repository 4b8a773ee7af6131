"""The engine as a Claude Code ``type: "http"`` hook target, on a real uvicorn server on loopback.

``POST /v1/claude-code/{agent}`` takes the hook input JSON and answers the decision that
``engine.integrations.claude_code.handle`` computes, behind a bearer token compared in constant
time. ``serving_app`` picks ``hookengine serve``'s own app (``engine.http.app.create_app``)
once it mounts that route, and this smallest app until then; ``Sidecar(engine, app=...)``
serves any ASGI app.
"""

from __future__ import annotations

import hmac
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from engine.integrations.claude_code import handle

ROUTE = "/v1/claude-code/{agent}"
TOKEN_ENV = "HOOKENGINE_TOKEN"
TOKEN = "e2e-decide-token"
"""The bearer token the tests' http hooks send (the CLI reads it from ``$HOOKENGINE_TOKEN``,
as ``hookengine claude-code install --http`` writes it)."""


def claude_code_app(engine: Any, *, token: str = TOKEN) -> Starlette:
    """An ASGI app with the one route ``POST /v1/claude-code/{agent}``."""
    expected = f"Bearer {token}".encode()

    async def decide(request: Request) -> JSONResponse:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return JSONResponse({"code": "unauthorized", "message": "bad token"}, status_code=401)
        payload = await request.json()
        agent = request.path_params["agent"]
        answer = await run_in_threadpool(handle, engine, agent, payload, dialect="claude")
        return JSONResponse(answer)

    return Starlette(routes=[Route(ROUTE, decide, methods=["POST"])])


def serving_app(engine: Any) -> Any:
    """``hookengine serve``'s app when it serves ``ROUTE``, else ``claude_code_app(engine)``.

    The real app reads its ``decide`` token from ``$HOOKENGINE_TOKEN`` (engine.yaml's
    ``http.tokens``), so set that variable before calling this.
    """
    from engine.http.app import create_app

    app = create_app(engine)
    if any(getattr(route, "path", None) == ROUTE for route in app.routes):
        return app
    return claude_code_app(engine)


class Sidecar:
    """Serve ``app`` (by default ``serving_app(engine)``) on 127.0.0.1; yields its base URL."""

    def __init__(self, engine: Any, *, app: Any = None) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app or claude_code_app(engine), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise RuntimeError("the sidecar did not start within 10 s")
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()
