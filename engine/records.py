"""Writing records off the hot path: a background writer with a bounded queue and masking."""

from __future__ import annotations

import copy
import logging
import queue
import threading
from typing import Any

from engine.errors import EngineError
from engine.store import Record, Store

log = logging.getLogger("engine.records")

MASK = "***"
_STOP = object()


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

    ``submit`` never blocks the caller for I/O; ``flush`` waits until everything submitted is
    written; ``close`` flushes and stops (the engine calls it on close and at exit).
    """

    def __init__(self, store: Store, *, retention: int = 0, batch: int = 200) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch
        self.written = 0
        self.errors = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=100_000)
        self._pending = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="hookengine-records",
                                        daemon=True)
        self._thread.start()

    def submit(self, record: Record, mask: list[str] | None = None) -> None:
        with self._cond:
            self._pending += 1
        self._queue.put((record, mask or []))

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            items = [item]
            while len(items) < self.batch:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(i is _STOP for i in items)
            self._write([i for i in items if i is not _STOP])
            if stop:
                return

    def _write(self, items: list[tuple[Record, list[str]]]) -> None:
        if not items:
            return
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
            with self._cond:
                self._pending -= len(items)
                self._cond.notify_all()

    @staticmethod
    def _masked(record: Record, mask: list[str]) -> Record:
        if not mask:
            return record
        data = mask_fields(record.model_dump(mode="json"), mask)
        return Record.model_validate(data)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every submitted record is written (or ``timeout``); True if drained."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout=timeout)

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout=30)
