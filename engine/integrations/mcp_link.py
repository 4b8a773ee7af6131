"""The gateway's stdio link to its upstream: it knows when the server's output ended, and turns
an answer the MCP SDK cannot read into an error for the call it answers.

The SDK reports both a closed connection and a peer's JSON-RPC error as ``MCPError``, and a
peer may send ``CONNECTION_CLOSED`` (-32000, JSON-RPC's ordinary server error) itself: only the
transport knows that the server's output really ended. An answer the SDK cannot parse
(``"result": null``, a lone surrogate escape) it logs and drops, and its caller would wait
forever; when the answer's ``id`` can still be read, this link hands the SDK an error for that
id instead, marked with ``marker`` so the gateway tells it from anything the server sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

UNREADABLE = "the upstream server's answer is not a valid MCP message"


class UpstreamLink:
    """The upstream's stdio streams, watched: ``ended`` once the server's output ended."""

    def __init__(self, params: StdioServerParameters) -> None:
        self.params = params
        self.ended = False
        """Set when the server's output ended (its process exited or closed stdout)."""
        self.marker = uuid.uuid4().hex
        """The ``data`` of the errors this link makes for unreadable answers."""

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[tuple[Any, Any]]:
        """The transport ``mcp.Client`` takes: stdio streams, the read one watched."""
        async with stdio_client(self.params) as (read, write):
            yield _WatchedStream(read, self), write

    def replace(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """An error answer for the call an unreadable answer was meant for, else ``item``."""
        if not isinstance(item, ValueError):
            return item
        answer_id = _answer_id(item)
        if answer_id is None:
            return item
        error = types.ErrorData(code=types.PARSE_ERROR, message=UNREADABLE, data=self.marker)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=answer_id, error=error))


class _WatchedStream:
    """A read stream that notes its end on the link and passes the rest through."""

    def __init__(self, inner: Any, link: UpstreamLink) -> None:
        self.inner = inner
        self.link = link

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.link.ended = True  # before the SDK wakes its callers with CONNECTION_CLOSED
            raise
        return self.link.replace(item)

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _answer_id(exc: ValueError) -> types.RequestId | None:
    """The ``id`` of the response the SDK could not parse (None: no response, or no id)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:  # noqa: BLE001 - no readable detail: the call's timeout answers it
        return None
    for error in found[:1]:
        message = error.get("input")
        if isinstance(message, str):
            try:
                message = json.loads(message)  # Python's json reads a lone surrogate escape
            except ValueError:
                return None
        if isinstance(message, dict) and "method" not in message:
            answer_id = message.get("id")
            is_id = isinstance(answer_id, str | int) and not isinstance(answer_id, bool)
            return answer_id if is_id else None
    return None
