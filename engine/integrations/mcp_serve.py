"""The MCP gateway's transports: stdio (one client) and streamable HTTP behind a bearer token."""

from __future__ import annotations

import hmac
import threading
from typing import Any

import anyio

from engine.integrations.mcp import Gateway

STOP_GRACE_S = 0.2
"""How long a stopping gateway waits for the answer to the failing call to reach the client."""


def run_stdio(gateway: Gateway) -> None:
    """Serve the gateway on this process's stdin and stdout until the client leaves, or until
    the upstream dies (then ``gateway.failure`` says why).

    While it serves, anything written to fd 1 goes to stderr (``stdio_server`` diverts it),
    so only protocol reaches stdout. The server runs in a daemon thread: its stdin is read in
    a worker thread that no cancellation reaches, so a gateway whose upstream died returns
    here without waiting for the client to close stdin (the caller then exits).

    Raises:
        Exception: what stopped the server otherwise (an upstream that cannot start, ...).
    """
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            anyio.run(_serve_stdio, gateway)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            errors.append(exc)

    thread = threading.Thread(target=serve, name="mcp-gateway", daemon=True)
    thread.start()
    while thread.is_alive():
        if gateway.dead.wait(0.05):
            thread.join(STOP_GRACE_S)  # the failing call's answer is on its way to the client
            return
    if errors:
        raise errors[0]


async def _serve_stdio(gateway: Gateway) -> None:
    from mcp.server.stdio import stdio_server

    server = gateway.server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(gateway: Gateway, token: str, *, host: str = "127.0.0.1") -> Any:
    """The gateway as a streamable HTTP ASGI app at ``/mcp``; every request needs
    ``Authorization: Bearer <token>`` (else 401)."""
    app = gateway.server().streamable_http_app(host=host)
    return _BearerGate(app, token)


async def serve_http(gateway: Gateway, token: str, *, host: str, port: int) -> None:
    """Serve :func:`http_app` with uvicorn until stopped or the upstream dies."""
    import uvicorn

    config = uvicorn.Config(
        http_app(gateway, token, host=host), host=host, port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:

        async def stop_when_dead() -> None:
            while not gateway.dead.is_set():
                await anyio.sleep(0.05)
            await anyio.sleep(STOP_GRACE_S)
            server.should_exit = True

        tasks.start_soon(stop_when_dead)
        await server.serve()
        tasks.cancel_scope.cancel()


class _BearerGate:
    """ASGI middleware: HTTP requests without the bearer token get 401 and go no further."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="hookengine-mcp"'),
                    ],
                }
            )
            body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return hmac.compare_digest(given, self.expected)
