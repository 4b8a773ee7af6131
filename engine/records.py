"""Writing records off the hot path: a background writer with a bounded queue and masking."""

from __future__ import annotations

import collections
import copy
import logging
import threading
from typing import Any

from engine.errors import EngineError
from engine.store import Record, Store

log = logging.getLogger("engine.records")

MASK = "***"


def mask_fields(record: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """``record`` with each dotted path (``event.input.password``) replaced by ``***``."""
    if not paths:
        return record
    record = copy.deepcopy(record)
    for path in paths:
        _mask(record, path.split("."))
    return record


def _mask(node: Any, parts: list[str]) -> None:
    if not parts or not isinstance(node, dict) or parts[0] not in node:
        if isinstance(node, list):
            for item in node:
                _mask(item, parts)
        return
    if len(parts) == 1:
        node[parts[0]] = MASK
    else:
        _mask(node[parts[0]], parts[1:])


class RecordWriter:
    """Writes records in batches from a background thread.

    ``submit`` only appends to a buffer: it neither blocks on I/O nor wakes the writer for
    each record (a wake-up per record costs more than the write). The writer drains the
    buffer every ``interval`` seconds, or at once when ``batch`` records are waiting.
    ``flush`` waits until everything submitted is written; ``close`` flushes and stops (the
    engine calls it on close and at exit).
    """

    def __init__(
        self, store: Store, *, retention: int = 0, batch: int = 500, interval: float = 0.05
    ) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch
        self.interval = interval
        self.written = 0
        self.errors = 0
        self._buffer: collections.deque[tuple[Record, list[str]]] = collections.deque()
        self._submitted = 0
        self._done = 0
        self._count_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._drained = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="hookengine-records", daemon=True)
        self._thread.start()

    def submit(self, record: Record, mask: list[str] | None = None) -> None:
        with self._count_lock:  # uncontended almost always: far cheaper than a wake-up
            self._submitted += 1
            self._buffer.append((record, mask or []))
        if len(self._buffer) >= self.batch:
            self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            self._drain()
            if self._stop and not self._buffer:
                return

    def _drain(self) -> None:
        while self._buffer:
            items: list[tuple[Record, list[str]]] = []
            while self._buffer and len(items) < self.batch:
                items.append(self._buffer.popleft())
            self._write(items)

    def _write(self, items: list[tuple[Record, list[str]]]) -> None:
        try:
            records = [self._masked(r, m) for r, m in items]
            self.store.add_records(records)
            self.written += len(records)
            if self.retention and self.written % 1000 < len(records):
                self.store.prune_records(self.retention)
        except (EngineError, ValueError) as exc:
            self.errors += len(items)
            log.error("could not write %d records: %s", len(items), exc)
        finally:
            with self._drained:
                self._done += len(items)
                self._drained.notify_all()

    @staticmethod
    def _masked(record: Record, mask: list[str]) -> Record:
        if not mask:
            return record
        data = mask_fields(record.model_dump(mode="json"), mask)
        return Record.model_validate(data)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every record submitted so far is written (or ``timeout``)."""
        with self._count_lock:
            target = self._submitted
        self._wake.set()
        with self._drained:
            return self._drained.wait_for(lambda: self._done >= target, timeout=timeout)

    def close(self) -> None:
        if self._thread.is_alive():
            self._stop = True
            self._wake.set()
            self._thread.join(timeout=30)
