"""The HTTP service: ``create_app(engine)`` and ``serve(engine, host, port)``."""

from __future__ import annotations

from typing import Any

from engine.http.app import create_app


def serve(
    engine: Any, host: str | None = None, port: int | None = None, *, no_auth: bool = False
) -> None:
    """Run the service until interrupted (uvicorn; 127.0.0.1 unless told otherwise), with
    the read deadline, connection cap and header bound of ``http`` in engine.yaml.

    Args:
        engine: a loaded ``engine.Engine``.
        host: address to bind (default ``http.host`` of engine.yaml).
        port: port to bind (default ``http.port``).
        no_auth: decisions need no token (the caller checks the address is loopback).
    """
    from engine.http.server import build_server

    build_server(engine, host, port, no_auth=no_auth).run()


__all__ = ["create_app", "serve"]
