"""The guarded uvicorn protocol on httptools (imported only where httptools is installed)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from engine.http.server import AdminConfig, ReadGuard

DEFAULT_MAX_HEAD = 16 * 1024
"""h11's own bound of an incomplete request head, when none is configured."""


class GuardedHttpToolsProtocol(ReadGuard, HttpToolsProtocol):
    """uvicorn's httptools protocol (a C parser: several times less CPU per request than h11)
    with the read deadline and the connection cap (``ReadGuard``), and the request head
    bounded as h11 bounds it: a head still incomplete past ``h11_max_incomplete_event_size``
    bytes is answered 400 and the connection closed (a whole head over it, arriving in one
    read, is answered 431 by ``Gate``)."""

    def __init__(
        self,
        config: AdminConfig,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.max_head_bytes = config.h11_max_incomplete_event_size or DEFAULT_MAX_HEAD
        self.head_bytes = 0
        """Bytes received since the last request's head was complete."""
        self.in_head = True

    def reading(self) -> bool:
        cycle = self.cycle
        return cycle is None or cycle.more_body or cycle.response_complete

    def started(self) -> bool:
        return self.head_bytes > 0 or (self.cycle is not None and self.cycle.more_body)

    def data_received(self, data: bytes) -> None:
        if self.in_head:
            self.head_bytes += len(data)
        super().data_received(data)
        if self.in_head and self.head_bytes > self.max_head_bytes and self.parser is not None:
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
            return
        self._watch_read()

    def on_headers_complete(self) -> None:
        self.in_head, self.head_bytes = False, 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.in_head = True
        super().on_message_complete()
