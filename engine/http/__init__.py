"""The admin HTTP service: ``create_app(engine)`` and ``serve(engine, host, port)``."""

from __future__ import annotations

from typing import Any

from engine.http.app import create_app


def serve(engine: Any, host: str | None = None, port: int | None = None) -> None:
    """Run the admin service until interrupted (uvicorn; 127.0.0.1 unless told otherwise).

    Args:
        engine: a loaded ``engine.Engine``.
        host: address to bind (default ``http.host`` of engine.yaml).
        port: port to bind (default ``http.port``).
    """
    import uvicorn

    http = engine.settings.http
    config = uvicorn.Config(
        create_app(engine),
        host=host or http.host,
        port=http.port if port is None else port,
        log_level="info",
    )
    uvicorn.Server(config).run()


__all__ = ["create_app", "serve"]
