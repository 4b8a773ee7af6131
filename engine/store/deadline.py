"""Client-side deadlines for store calls: a frozen database server cannot stall a caller.

PostgreSQL's ``statement_timeout`` is enforced by the server: a server that accepted the TCP
connection and then froze (stopped, swapped out, behind a dead proxy) never sends the error,
and the kernel keeps acknowledging our packets, so neither TCP keepalives nor
``tcp_user_timeout`` fire. The connections here are psycopg connections whose every wait for
the socket is bounded by the deadline of the store call running on this thread; past it, the
connection is dropped (the pool replaces it) and the call fails.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import errors as pg_errors

_current = threading.local()

MIN_WAIT_S = 0.05
"""A wait started with no time left still polls the socket this long: an answer already
there is taken."""


class NoAnswer(psycopg.OperationalError):
    """The server did not answer before the store call's deadline."""


def is_no_answer(exc: BaseException | None) -> bool:
    """Whether a driver error means the server did not answer in time (not that it refused)."""
    return isinstance(exc, (NoAnswer, pg_errors.ConnectionTimeout))


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Bound every database wait on this thread, inside the block, to ``seconds`` from now."""
    previous = getattr(_current, "at", None)
    _current.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _current.at = previous


def remaining() -> float | None:
    """Seconds left before this thread's deadline (None: no deadline is set)."""
    at: float | None = getattr(_current, "at", None)
    return None if at is None else at - time.monotonic()


class BoundedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose waits end at the thread's deadline."""

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        left = remaining()
        if left is None:
            return super().wait(gen, interval, timeout)
        bound = max(MIN_WAIT_S, left)
        try:
            return super().wait(gen, interval, bound if timeout is None else min(timeout, bound))
        except pg_errors._WaitTimeout as exc:
            # the protocol is mid-message: the connection cannot be used again
            self.pgconn.finish()
            raise NoAnswer(
                f"the server did not answer within {bound:.1f} s; the connection was dropped"
            ) from exc


def connect(connect_timeout_s: float, cargs: Any, cparams: dict[str, Any]) -> BoundedConnection:
    """Open a bounded connection, within ``connect_timeout_s`` (or the URL's own
    ``connect_timeout`` if shorter) and the thread's deadline.

    Raises:
        psycopg.OperationalError: the deadline has passed, or the server did not complete the
            start-up in time.
    """
    limit = min(connect_timeout_s, float(cparams.get("connect_timeout") or math.inf))
    left = remaining()
    if left is not None:
        if left <= 0:
            raise NoAnswer("the server did not answer in time, and no time is left to reconnect")
        limit = min(limit, left)
    # libpq counts whole seconds (and psycopg at least 2)
    params = {**cparams, "connect_timeout": max(1, math.ceil(limit))}
    return BoundedConnection.connect(*cargs, **params)
