"""The engine as a Claude Code ``type: "http"`` hook target: ``hookengine serve``'s own app
(``engine.http.app.create_app``, route ``POST /v1/claude-code/{agent}``) on a real uvicorn
server on loopback. ``Sidecar(engine, app=...)`` serves any ASGI app.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

ROUTE = "/v1/claude-code/{agent}"
TOKEN_ENV = "HOOKENGINE_TOKEN"
TOKEN = "e2e-decide-token"
"""The bearer token the tests' http hooks send (the CLI reads it from ``$HOOKENGINE_TOKEN``,
as ``hookengine claude-code install --http`` writes it)."""


def serving_app(engine: Any) -> Any:
    """``hookengine serve``'s app; its ``decide`` token comes from ``$HOOKENGINE_TOKEN``
    (engine.yaml's ``http.tokens``), so set that variable before calling this."""
    from engine.http.app import create_app

    app = create_app(engine)
    assert ROUTE in app.openapi()["paths"], "the app serves no Claude Code route"
    return app


class Sidecar:
    """Serve ``app`` (by default ``serving_app(engine)``) on 127.0.0.1; yields its base URL."""

    def __init__(self, engine: Any, *, app: Any = None) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app or serving_app(engine), log_level="warning", lifespan="off")
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
