"""The HTTP service's uvicorn server, held against slow and hostile clients: a deadline to
read each request, a connection cap, a bounded request head, query strings kept out of the
access log. uvicorn is imported here and in server_httptools.py (its httptools protocol),
nowhere else in ``engine/``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from engine.http.errors import error_json

# h11 states in which the peer is still sending a request (its head, or its body).
_READING = (h11.IDLE, h11.SEND_BODY)
_BUSY = error_json(503, "too many connections open; retry later", "too_many_connections")
_TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY)
)


class AdminConfig(uvicorn.Config):
    """``uvicorn.Config`` plus what the guarded protocols enforce."""

    def __init__(
        self, app: Any, *, read_timeout_s: float, max_connections: int, **options: Any
    ) -> None:
        # No websockets: the admin API has none, and an upgrade would hand the transport to
        # a protocol this deadline does not follow.
        options.setdefault("http", guarded_protocol())
        super().__init__(app, ws="none", **options)
        self.read_timeout_s = read_timeout_s
        self.max_connections = max_connections


class ReadGuard:
    """A read deadline and a connection cap, for a uvicorn HTTP protocol.

    uvicorn arms no timer while a request is being read: its keep-alive timer starts only
    after a response and stops at the first byte of the next request, so a client sending
    one header byte every few seconds holds its connection forever. Here a deadline starts
    when the connection opens, or when a response ends, and stops only once the whole
    request (line, headers, body) has arrived; more bytes do not extend it. Both refusals
    are logged on ``uvicorn.error``, which ``serve`` shows with the server's own messages.

    The protocol says whether the peer is still sending a request (``reading``) and whether
    a new one has begun (``started``), and calls ``_watch_read`` as its state changes.
    """

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    logger: logging.Logger
    client: tuple[str, int] | None
    timeout_keep_alive_handler: Callable[[], None]

    def __init__(
        self,
        config: AdminConfig,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)  # type: ignore[call-arg]
        self.read_timeout_s = config.read_timeout_s
        self.max_connections = config.max_connections
        self.read_deadline: asyncio.TimerHandle | None = None
        self.answered = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if not self._over_cap():
            self._watch_read()

    def on_response_complete(self) -> None:
        self.answered += 1
        super().on_response_complete()  # type: ignore[misc]
        self._watch_read()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def reading(self) -> bool:
        raise NotImplementedError

    def started(self) -> bool:
        raise NotImplementedError

    def _over_cap(self) -> bool:
        """Refuse the connection just made if it is one too many; whether it was."""
        if len(self.connections) <= self.max_connections:
            return False
        self.connections.discard(self)
        self.logger.warning(
            "refused a connection from %s: %d connections open (http.max_connections)",
            _peer(self.client),
            len(self.connections),
        )
        self.transport.write(_TOO_MANY)
        self.transport.close()
        return True

    def _watch_read(self) -> None:
        """Arm the deadline while a request is being read; stop it once it has all come."""
        if not self.reading() or self.transport.is_closing():
            self._stop_deadline()
        elif self.read_deadline is None:
            self.read_deadline = self.loop.call_later(self.read_timeout_s, self._read_too_slow)

    def _stop_deadline(self) -> None:
        if self.read_deadline is not None:
            self.read_deadline.cancel()
            self.read_deadline = None

    def _read_too_slow(self) -> None:
        self.read_deadline = None
        if self.answered and not self.started() and not self.transport.get_write_buffer_size():
            # An idle keep-alive connection owing nothing either way: closed quietly, as
            # uvicorn's own keep-alive timer closes one; only hostile-looking ones are logged.
            self.timeout_keep_alive_handler()
            return
        self.logger.info(
            "closed a connection from %s: no whole request within %s s",
            _peer(self.client),
            self.read_timeout_s,
        )
        # abort, not close: close would wait to flush to a peer that may not be reading.
        self.transport.abort()


class GuardedH11Protocol(ReadGuard, H11Protocol):
    """uvicorn's h11 protocol with the read deadline and the connection cap (``ReadGuard``);
    the request head is bounded by h11 itself (``h11_max_incomplete_event_size``). Used where
    httptools is not installed."""

    def reading(self) -> bool:
        return self.conn.their_state in _READING

    def started(self) -> bool:
        return bool(self.conn.trailing_data[0]) or self.conn.their_state is h11.SEND_BODY

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_read()


def guarded_protocol() -> type[asyncio.Protocol]:
    """The guarded protocol on httptools when it is installed (the ``http`` extra brings it),
    else on h11."""
    try:
        from engine.http.server_httptools import GuardedHttpToolsProtocol
    except ImportError:
        return GuardedH11Protocol
    return GuardedHttpToolsProtocol


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "?"


class StripQuery(logging.Filter):
    """Drops the query string from uvicorn's access log lines: a query may carry a secret
    (``?token=``), and an access log is read by more people than the admin token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def _without_query(arg: object) -> object:
    # uvicorn logs the path quoted, or from 0.55 as the raw request target's path: either
    # way a '?' inside the path is %3F, so the first '?' starts the query.
    return arg.partition("?")[0] if isinstance(arg, str) else arg


def strip_access_log_queries() -> None:
    """Install ``StripQuery`` on uvicorn's access logger (once)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, StripQuery) for f in access.filters):
        access.addFilter(StripQuery())


def build_server(
    engine: Any,
    host: str | None = None,
    port: int | None = None,
    *,
    log_level: str = "info",
    no_auth: bool = False,
) -> uvicorn.Server:
    """The admin server over a loaded Engine, limits from ``http`` in engine.yaml.

    Args:
        engine: a loaded ``engine.Engine``.
        host: address to bind (default ``http.host``).
        port: port to bind (default ``http.port``).
        log_level: uvicorn's log level.
        no_auth: decisions need no token (``create_app``).

    Returns:
        A ``uvicorn.Server``; ``run()`` it (or ``run(sockets=[...])``).
    """
    from engine.http.app import create_app

    http = engine.settings.http
    config = AdminConfig(
        create_app(engine, no_auth=no_auth),
        read_timeout_s=http.read_timeout_s,
        max_connections=http.max_connections,
        host=host or http.host,
        port=http.port if port is None else port,
        timeout_keep_alive=http.keep_alive_s,
        h11_max_incomplete_event_size=http.max_header_bytes,
        log_level=log_level,
    )
    strip_access_log_queries()
    return uvicorn.Server(config)
