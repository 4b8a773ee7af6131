"""Writing records off the hot path: a background writer that masks, encodes and counts losses.

Everything that makes a record safe to store runs on the writer thread, not the caller's:
masking by path and by value, then ``engine.encoding`` over each part (scalars, event, each
hook, outcome; each part its own size budget, so one part cannot push another out).
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.encoding import MAX_DEPTH, encode_fields, escape_text, is_clean
from engine.errors import StoreError
from engine.store import Record, Store
from engine.store.records import HookRun, RecordLoss

log = logging.getLogger("engine.records")

MASK = "***"
MIN_MASKED_VALUE = 4
"""Shorter masked values are masked at their path only: redacting "1" or "yes" everywhere
would garble every record and hide nothing an attacker could not guess."""
SCALARS = ("id", "time", "agent", "point", "scope", "scope_key")
_RUN_FIELDS: tuple[str, ...] = HookRun.__slots__
"""HookRun's fields (read shallowly: ``asdict`` deep-copies, and hostile values nest deep)."""


class Cause:
    """Why a record was dropped (the keys of ``health()["dropped"]``)."""

    ENCODE = "encode"
    """It could not be made into storable JSON (even after ``engine.encoding``)."""
    STORE = "store"
    """The store refused it, written alone after its batch failed."""
    UNAVAILABLE = "unavailable"
    """The store was down: it took neither the record nor the note of its loss (the rest of
    that batch is counted here without trying each)."""


def mask_fields(record: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """``record`` with each dotted path (``event.input.password``) replaced by ``***``.

    Copies only along the masked paths (no deep copy: a hostile event may nest deeply).
    """
    for path in paths:
        record = _masked(record, path.split("."))
    return record


def _masked(node: Any, parts: list[str]) -> Any:
    if isinstance(node, list):
        return [_masked(item, parts) for item in node]
    if not parts or not isinstance(node, dict) or parts[0] not in node:
        return node
    out = dict(node)
    out[parts[0]] = MASK if len(parts) == 1 else _masked(node[parts[0]], parts[1:])
    return out


def masked_values(event: dict[str, Any], paths: list[str]) -> set[str]:
    """The text of every string and number at the ``event.`` paths (whole subtrees), at least
    ``MIN_MASKED_VALUE`` characters long: what masking by value redacts everywhere."""
    found: set[str] = set()
    for path in paths:
        if path.startswith("event."):
            _collect(event, path.split(".")[1:], found, 0)
    return {v for v in found if len(v) >= MIN_MASKED_VALUE}


def _collect(node: Any, parts: list[str], found: set[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            _collect(item, parts, found, depth + 1)
    elif isinstance(node, dict):
        if not parts:
            for item in node.values():
                _collect(item, parts, found, depth + 1)
        elif parts[0] in node:
            _collect(node[parts[0]], parts[1:], found, depth + 1)
    elif not parts and isinstance(node, str | int | float) and not isinstance(node, bool):
        found.add(str(node))


def prepare(record: Record, mask: list[str]) -> Record:
    """``record`` masked (by path, then by value) and encoded: safe to hand to any store.

    The common case (nothing to mask, nothing to change) returns ``record`` itself.
    """
    data: dict[str, Any] = {name: getattr(record, name) for name in (*SCALARS, "event")}
    data.update(hooks=record.hooks, outcome=record.outcome)
    if not mask and is_clean(data):
        return record
    data["hooks"] = [{name: getattr(run, name) for name in _RUN_FIELDS} for run in record.hooks]
    data = mask_fields(data, mask)
    redact = tuple(masked_values(record.event, mask))
    if is_clean(data, redact=redact):
        parts = data
    else:  # each part its own budget: one cannot push another out of the record
        parts = encode_fields({name: data[name] for name in SCALARS}, redact=redact)
        for name in ("event", "outcome"):
            parts[name] = encode_fields(data[name], redact=redact)
        parts["hooks"] = [encode_fields(run, redact=redact) for run in data["hooks"]]
    hooks = [HookRun(**run) for run in parts.pop("hooks")]
    return Record.model_construct(**parts, hooks=hooks, generation=record.generation)


@dataclass
class Health:
    """The writer's counters; ``dropped`` by cause (see ``Cause``)."""

    written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_error_at: str | None = None


class RecordWriter:
    """Writes records in batches from a background thread.

    ``submit`` only appends to a buffer: it neither blocks on I/O nor wakes the writer for
    each record (a wake-up per record costs more than the write). The writer drains the
    buffer every ``interval`` seconds, or at once when ``batch`` records are waiting.
    ``flush`` waits until everything submitted is written; ``close`` flushes and stops (the
    engine calls it on close and at exit).

    A batch the store refuses is written again record by record, so one bad record is the
    only loss; each loss is counted by cause (``health()``), kept in the store's loss ledger
    when the store takes it (``hookengine status`` reads it), and logged once per burst.
    """

    def __init__(
        self, store: Store, *, retention: int = 0, batch: int = 500, interval: float = 0.05
    ) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch
        self.interval = interval
        self._health = Health()
        self._burst = 0
        """Records lost since the last fully written batch (0: no failure burst open)."""
        self._buffer: collections.deque[tuple[Record, list[str]]] = collections.deque()
        self._submitted = 0
        self._done = 0
        self._count_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._drained = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="hookengine-records", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        return self._health.written

    def submit(self, record: Record, mask: list[str] | None = None) -> None:
        with self._count_lock:  # uncontended almost always: far cheaper than a wake-up
            self._submitted += 1
            self._buffer.append((record, mask or []))
        if len(self._buffer) >= self.batch:
            self._wake.set()

    def health(self) -> dict[str, Any]:
        """``{queued, written, dropped: {cause: n}, last_error, last_error_at}``."""
        with self._count_lock:
            h = self._health
            return {
                "queued": self._submitted - self._done,
                "written": h.written,
                "dropped": dict(h.dropped),
                "last_error": h.last_error,
                "last_error_at": h.last_error_at,
            }

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
            try:
                self._write(items)
            finally:
                with self._drained, self._count_lock:
                    self._done += len(items)
                    self._drained.notify_all()

    def _write(self, items: list[tuple[Record, list[str]]]) -> None:
        lost_before = self._burst
        records: list[Record] = []
        for record, mask in items:
            try:
                records.append(prepare(record, mask))
            except Exception as exc:  # noqa: BLE001 - the writer is an edge: count, never die
                self._lose(record, Cause.ENCODE, exc)
        try:
            self.store.add_records(records)
        except Exception as exc:  # noqa: BLE001 - retried one by one: each loss counted there
            for i, record in enumerate(records):
                if not self._write_one(record):  # down: trying the rest would only wait
                    for rest in records[i + 1 :]:
                        self._lose(rest, Cause.UNAVAILABLE, exc, note=False)
                    break
        else:
            self._count_written(len(records))
        if self._burst == lost_before:
            self._end_burst()

    def _write_one(self, record: Record) -> bool:
        """Write ``record`` alone; False when the store is down (it took neither the record
        nor the note of its loss)."""
        try:
            self.store.add_records([record])
        except Exception as exc:  # noqa: BLE001 - any refusal is this record's loss
            return self._lose(record, _cause_of(exc), exc)
        self._count_written(1)
        return True

    def _count_written(self, n: int) -> None:
        with self._count_lock:
            self._health.written += n
            written = self._health.written
        if self.retention and n and written % 1000 < n:
            try:
                self.store.prune_records(self.retention)
            except StoreError as exc:
                log.error("could not prune records to %d: %s", self.retention, exc)

    def _lose(self, record: Record, cause: str, exc: BaseException, *, note: bool = True) -> bool:
        """Count ``record`` as lost (and note it in the store's ledger unless ``note`` is
        False); False when the store took not even the note, so it is down."""
        # the driver's "[parameters: ...]" would copy the record's content into status
        text = f"{type(exc).__name__}: {exc}".split("\n[parameters:", 1)[0]
        message = escape_text(text[:1000])
        at = datetime.now(UTC).isoformat(timespec="milliseconds")
        noted = note and self._note(
            RecordLoss(at, cause, str(record.id), str(record.agent), str(record.point), message)
        )
        if not noted and cause == Cause.STORE:
            cause = Cause.UNAVAILABLE
        with self._count_lock:
            h = self._health
            h.dropped[cause] = h.dropped.get(cause, 0) + 1
            h.last_error, h.last_error_at = message, at
        if not self._burst:
            log.error(
                "record %s (agent %r, %s) dropped (%s): %s; further losses are counted in "
                "status() until writes succeed again",
                record.id, record.agent, record.point, cause, message,
            )  # fmt: skip
        self._burst += 1
        return noted

    def _note(self, loss: RecordLoss) -> bool:
        try:
            self.store.add_record_loss(loss)
        except Exception as exc:  # noqa: BLE001 - store down: the counters remain
            log.debug("record loss not kept in the store: %s", exc)
            return False
        return True

    def _end_burst(self) -> None:
        if self._burst:
            log.warning("records are written again; %d were dropped in the burst", self._burst)
            self._burst = 0

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


def _cause_of(exc: BaseException) -> str:
    """``encode`` when the record could not be serialised, else ``store``."""
    if isinstance(exc, StoreError):
        return Cause.STORE
    return Cause.ENCODE if isinstance(exc, ValueError | TypeError | RecursionError) else Cause.STORE
