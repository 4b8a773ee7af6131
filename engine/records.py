"""Writing records off the hot path: a background writer that rides out store outages and
counts every loss by cause.

The evaluating thread hands over a record's raw parts (``Draft``); building the record and
everything that makes it safe to store (engine/masking.py) run on the writer thread, not the
caller's.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engine.encoding import escape_text
from engine.errors import StoreError, StoreUnavailableError
from engine.masking import prepare
from engine.store import Record, Store
from engine.store.records import HookRun, RecordLoss

if TYPE_CHECKING:
    from engine.outcome import Outcome
    from engine.points import Scope

log = logging.getLogger("engine.records")


@dataclass
class Draft:
    """A record's raw parts, as an evaluation hands them to the writer; ``build`` makes the
    Record on the writer's thread. ``decision`` is a snapshot taken by the caller (the host
    owns the outcome and may change its lists afterwards). Reads like the Record it becomes:
    other attributes are the built record's."""

    id: str
    agent: str
    point: str
    time: str
    generation: int
    event: dict[str, Any]
    scope: Scope
    hooks: list[HookRun]
    decision: dict[str, Any]
    heard: dict[str, Any]
    """The outcome's ``events``, ``shadow``, ``failed``, ``duration_ms`` (and
    ``input_error``, ``unsupported`` and ``session`` when set)."""
    host: str = "native"
    """The host that asked (engine/hosts.py)."""

    @classmethod
    def of(
        cls, outcome: Outcome, event: dict[str, Any], scope: Scope, *, host: str = "native"
    ) -> Draft:
        heard = {
            "events": outcome.events,
            "shadow": outcome.shadow,
            "failed": outcome.failed,
            "duration_ms": round(outcome.duration_ms, 4),
        }
        if outcome.input_error is not None:
            heard["input_error"] = outcome.input_error
        if outcome.unsupported:
            heard["unsupported"] = outcome.unsupported
        if outcome.session is not None:
            heard["session"] = outcome.session
        return cls(
            outcome.id,
            outcome.agent,
            outcome.point,
            event.get("time") or "",
            outcome.generation,
            event,
            scope,
            outcome.hooks,
            outcome.decision(),
            heard,
            host,
        )

    def build(self) -> Record:
        """The record of these parts."""
        return Record.model_construct(
            id=self.id,
            time=self.time,
            agent=self.agent,
            point=self.point,
            scope=self.scope.model_dump(),
            scope_key=self.scope.key(),
            event=self.event,
            hooks=self.hooks,
            outcome={**self.decision, **self.heard},
            generation=self.generation,
            host=self.host,
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.build(), name)


class Cause:
    """Why a record was dropped (the keys of ``health()["dropped"]``)."""

    ENCODE = "encode"
    """It could not be made into storable JSON (even after ``engine.encoding``)."""
    STORE = "store"
    """The store refused it, written alone after its batch failed."""
    UNAVAILABLE = "unavailable"
    """The engine closed while the store was down (after ``RecordWriter.CLOSE_GRACE_S`` of
    trying): the records still waiting."""
    OVERFLOW = "overflow"
    """``buffer_max`` records were already waiting (the store down or too slow)."""
    EXPIRED = "expired"
    """It waited ``retry_s`` for a store that stayed down."""


@dataclass
class Health:
    """The writer's counters; ``dropped`` by cause (see ``Cause``)."""

    written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_error_at: str | None = None
    down_since: str | None = None
    """When the store stopped taking records (None: it takes them)."""
    retries: int = 0
    """Failed attempts since ``down_since``."""
    file_replaced: int = 0
    """Times the store's file vanished (deleted or replaced) and a new one was opened."""
    file_notice: str | None = None
    """What happened to the store's file last, and what the writer did."""


class FileCheck(enum.Enum):
    """What ``RecordWriter._check_file`` found."""

    SAME = "same"
    """The store's file is the one it has open (or the store is no file)."""
    REOPENED = "reopened"
    """The file had vanished; a new one is open at the path."""
    FAILED = "failed"
    """The file had vanished and no new one could be opened: an outage."""


Item = tuple[Record | Draft, list[str], float]
"""A submitted record (or its parts), its mask, and when it was submitted (``time.monotonic``)."""
Held = tuple[Record, float]
"""A prepared record the store did not take yet, and when it was submitted. It may be stored
all the same (a commit whose answer was lost), so it is written ``again`` (see Store)."""


class RecordWriter:
    """Writes records in batches from a background thread, riding out store outages.

    ``submit`` only appends to a buffer: it neither blocks on I/O nor wakes the writer for
    each record (a wake-up per record costs more than the write). The writer drains the
    buffer every ``interval`` seconds, or at once when ``batch`` records are waiting.
    ``flush`` waits until everything submitted is written or dropped; ``close`` flushes and
    stops (the engine calls it on close and at exit).

    A batch the store refuses is written again record by record, so one bad record is the
    only loss. When the store says it cannot write now (``StoreUnavailableError``: down, disk
    full), or takes neither a record nor the note of its loss, it is down:
    the writer keeps the rest, in order, and tries again with back-off (``RETRY_FIRST_S``
    doubling up to ``RETRY_MAX_S``). Records are dropped only past the buffer's bounds:
    ``overflow`` past ``buffer_max`` records waiting, ``expired`` after ``retry_s`` seconds,
    ``unavailable`` when the engine closes on a store that stays down for ``CLOSE_GRACE_S``.
    Before and after each batch the writer checks that the store's file is still the one it
    has open; a deleted or replaced file is reopened (see ``_check_file``). Every loss is
    counted by cause (``health()``), kept in the store's loss ledger when the store takes it
    (``hookengine status`` reads it), and logged once per burst.
    """

    RETRY_FIRST_S = 0.1
    RETRY_MAX_S = 2.0
    """The longest wait between attempts: records flow again at most this long after the
    store is back."""
    CLOSE_GRACE_S = 5.0
    """How long ``close`` keeps trying a store that is down before it drops what is left."""
    IDLE_CHECK_S = 1.0
    """How often an idle writer checks the store's file (a busy one checks every batch)."""

    def __init__(
        self,
        store: Store,
        *,
        retention: int = 0,
        batch: int = 500,
        interval: float = 0.05,
        buffer_max: int = 50_000,
        retry_s: float = 120.0,
    ) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch
        self.interval = interval
        self.buffer_max = buffer_max
        self.retry_s = retry_s
        self._health = Health()
        self._burst = 0
        """Records lost since the last fully written batch (0: no failure burst open)."""
        self._overflowing = False
        self._file_failing = False
        """A vanished file could not be reopened yet (logged once until it is)."""
        self._buffer: collections.deque[Item] = collections.deque()
        self._held: collections.deque[Held] = collections.deque()
        """Prepared records a store that is down did not take, oldest first (writer only)."""
        self._backoff = 0.0
        """The wait before the next attempt (0: the store is up)."""
        self._retried = False
        """The batch being written holds records written before (``Held``)."""
        self._submitted = 0
        self._done = 0
        self._count_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._stop_at = 0.0
        self._checked_at = time.monotonic()
        self._halt = threading.Event()
        self._drained = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="hookengine-records", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        return self._health.written

    def submit(self, record: Record | Draft, mask: list[str] | None = None) -> None:
        with self._count_lock:  # uncontended almost always: far cheaper than a wake-up
            self._submitted += 1
            if self._submitted - self._done > self.buffer_max:
                self._overflow(record)
                return
            self._buffer.append((record, mask or [], time.monotonic()))
        if len(self._buffer) >= self.batch:
            self._wake.set()

    def _overflow(self, record: Record | Draft) -> None:
        """Drop ``record``: the buffer is full (the caller holds ``_count_lock``)."""
        h = self._health
        h.dropped[Cause.OVERFLOW] = h.dropped.get(Cause.OVERFLOW, 0) + 1
        h.last_error = f"the record buffer is full ({self.buffer_max} records waiting)"
        h.last_error_at = _now()
        self._done += 1
        if not self._overflowing:
            self._overflowing = True
            log.error(
                "record %s (agent %r, %s) dropped (overflow): %s; further losses are counted "
                "in status() until writes succeed again",
                record.id, record.agent, record.point, h.last_error,
            )  # fmt: skip

    def health(self) -> dict[str, Any]:
        """``{queued, buffered, written, dropped: {cause: n}, last_error, last_error_at,
        store_reachable, down_since, retries, buffer_max, retry_s, file_replaced,
        file_notice}``."""
        with self._count_lock:
            h = self._health
            queued = self._submitted - self._done
            return {
                "queued": queued,
                "buffered": queued if h.down_since is not None else 0,
                "written": h.written,
                "dropped": dict(h.dropped),
                "last_error": h.last_error,
                "last_error_at": h.last_error_at,
                "store_reachable": h.down_since is None,
                "down_since": h.down_since,
                "retries": h.retries,
                "buffer_max": self.buffer_max,
                "retry_s": self.retry_s,
                "file_replaced": h.file_replaced,
                "file_notice": h.file_notice,
            }

    # -- the writer thread -----------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            if self._backoff:
                self._pause(self._backoff)
            else:
                self._wake.wait(self.interval)
                self._wake.clear()
            self._drain()
            if self._stop and not self._buffer and not self._held:
                return

    def _pause(self, seconds: float) -> None:
        """Wait before the next attempt at a store that is down; ``close`` cuts it short
        (not ``flush``: waiting callers must not make the writer hammer the store)."""
        if self._stop:
            seconds = min(seconds, max(0.0, self._stop_at + self.CLOSE_GRACE_S - _clock()))
            time.sleep(seconds)
        else:
            self._halt.wait(seconds)

    def _drain(self) -> None:
        """Write what was buffered when the drain began, and then only full batches: the
        few records submitted meanwhile wait for the next round (``interval``, or a flush or
        close, which wake the writer at once). A writer that chased every record wrote
        batches of a handful while the host was busy, each paying its own transaction
        (``bench/bench_perf.py`` prints the writer's CPU per record)."""
        if not self._buffer and not self._held:
            if _clock() - self._checked_at >= self.IDLE_CHECK_S:
                self._check_file()
            return
        owed = len(self._buffer)
        while self._held or (self._buffer and (owed > 0 or self._due())):
            if self._backoff:
                self._expire()
            if self._check_file() == FileCheck.FAILED:
                self._went_down()
                return
            waiting = len(self._buffer)
            batch = self._next_batch()
            owed -= waiting - len(self._buffer)
            rest = self._write(batch)
            if rest:
                self._held.extendleft(reversed(rest))
                if len(rest) < len(batch) or self._check_file() != FileCheck.REOPENED:
                    self._went_down()
                    return
                continue  # the file vanished under the batch: write it to the new one
            self._came_back()
        self._overflowing = False

    def _due(self) -> bool:
        """Whether records that came in during a drain are written in it too: a full batch
        waits, or the engine is closing."""
        return len(self._buffer) >= self.batch or self._stop

    def _next_batch(self) -> list[Held]:
        """Up to ``batch`` records: the held ones first (they are older), then new ones
        prepared (masked, encoded); a record that cannot be prepared is lost here."""
        batch: list[Held] = []
        self._retried = bool(self._held)
        while self._held and len(batch) < self.batch:
            batch.append(self._held.popleft())
        while self._buffer and len(batch) < self.batch:
            record, mask, at = self._buffer.popleft()
            try:
                built = record.build() if type(record) is Draft else record
                batch.append((prepare(built, mask), at))  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - the writer is an edge: count, never die
                self._lose(record, Cause.ENCODE, exc)
                self._resolve(1)
        return batch

    def _write(self, batch: list[Held]) -> list[Held]:
        """Write ``batch``; return what the store did not take: from the first record a
        store that is down failed on, or the whole batch when the store's file vanished
        under it (the records went to the lost file: nothing is counted yet)."""
        records = [record for record, _ in batch]
        again = self._retried
        lost_before = self._burst
        try:
            self.store.add_records(records, again=again)
        except StoreUnavailableError as exc:  # no record's fault: all of them wait
            self._error(exc)
            return batch
        except Exception:  # noqa: BLE001 - retried one by one: each loss counted there
            for i, record in enumerate(records):
                if not self._write_one(record, again=again):  # down: the rest would wait
                    return batch[i:]
        else:
            if self._file_lost():
                return batch
            self._count_written(len(records))
            if self._burst == lost_before:
                self._end_burst()  # before flush() can return: its caller reads the log
            self._resolve(len(records))
            return []
        if self._burst == lost_before:
            self._end_burst()
        return []

    def _write_one(self, record: Record, *, again: bool) -> bool:
        """Write ``record`` alone, or count it lost when the store refuses it; False when
        the store is down (it took neither the record nor the note of its loss)."""
        try:
            self.store.add_records([record], again=again)
        except StoreUnavailableError as exc:
            self._error(exc)
            return False
        except Exception as exc:  # noqa: BLE001 - a refusal is this record's loss
            if not self._lose(record, _cause_of(exc), exc, down_ok=True):
                self._error(exc)
                return False
        else:
            self._count_written(1)
        self._resolve(1)
        return True

    def _expire(self) -> None:
        """Drop what waited past ``retry_s`` for a store that is down, oldest first."""
        cutoff = _clock() - self.retry_s
        while self._held and self._held[0][1] < cutoff:
            self._count_drop(self._held.popleft()[0], Cause.EXPIRED)
        while self._buffer and self._buffer[0][2] < cutoff:
            self._count_drop(self._buffer.popleft()[0], Cause.EXPIRED)

    def _give_up(self) -> None:
        """The engine closes and the store stayed down: drop the rest as ``unavailable``."""
        while self._held:
            self._count_drop(self._held.popleft()[0], Cause.UNAVAILABLE)
        while self._buffer:
            self._count_drop(self._buffer.popleft()[0], Cause.UNAVAILABLE)

    def _count_drop(self, record: Record | Draft, cause: str) -> None:
        """Count ``record`` lost while the store is down (no note: it would not take it)."""
        with self._count_lock:
            self._health.dropped[cause] = self._health.dropped.get(cause, 0) + 1
        self._resolve(1)
        if not self._burst:
            log.error(
                "record %s (agent %r, %s) dropped (%s) while the store is down; further "
                "losses are counted in status() until writes succeed again",
                record.id, record.agent, record.point, cause,
            )  # fmt: skip
        self._burst += 1

    def _went_down(self) -> None:
        with self._count_lock:
            h = self._health
            if h.down_since is None:
                h.down_since = _now()
                log.error(
                    "the store is down (%s); records are kept (at most %d, for %g s) and "
                    "written when it is back",
                    h.last_error, self.buffer_max, self.retry_s,
                )  # fmt: skip
            h.retries += 1
        self._backoff = min(self.RETRY_MAX_S, max(self.RETRY_FIRST_S, self._backoff * 2))
        if self._stop and _clock() >= self._stop_at + self.CLOSE_GRACE_S:
            self._give_up()

    def _came_back(self) -> None:
        if not self._backoff:
            return
        self._backoff = 0.0
        with self._count_lock:
            h = self._health
            log.warning(
                "the store is back after %d failed attempts since %s; %d records waiting",
                h.retries, h.down_since, self._submitted - self._done,
            )  # fmt: skip
            h.down_since, h.retries = None, 0
            self._overflowing = False

    def _file_lost(self) -> bool:
        """Whether the store's file vanished (the check itself never stops the writer)."""
        try:
            return self.store.file_lost() is not None
        except Exception as exc:  # noqa: BLE001 - an edge: log, go on writing
            log.debug("could not check the store file: %s", exc)
            return False

    def _check_file(self) -> FileCheck:
        """Check that the store's file is still the one it has open. A deleted or replaced
        file is reopened: records then go to a new file at the configured path, where
        operators and ``hookengine records`` look; one that cannot be opened is an outage
        (tried again at each attempt, logged once until it opens)."""
        self._checked_at = _clock()
        try:
            lost = self.store.file_lost()
        except Exception as exc:  # noqa: BLE001 - an edge: log, go on writing
            log.debug("could not check the store file: %s", exc)
            return FileCheck.SAME
        if lost is None:
            return FileCheck.SAME
        try:
            self.store.reopen()
        except Exception as exc:  # noqa: BLE001 - kept and retried as an outage
            self._error(exc)
            self._file_notice(f"{lost}; a new file could not be opened: {_text(exc)}", False)
            return FileCheck.FAILED
        self._file_notice(f"{lost}; records now go to a new file at that path", True)
        return FileCheck.REOPENED

    def _file_notice(self, notice: str, reopened: bool) -> None:
        with self._count_lock:
            self._health.file_notice = f"{_now()}: {notice}"
            self._health.file_replaced += reopened
        if reopened or not self._file_failing:
            log.error("%s", notice)
        self._file_failing = not reopened

    def _resolve(self, n: int) -> None:
        """``n`` more records are written or counted lost: wake ``flush``."""
        with self._drained, self._count_lock:
            self._done += n
            self._drained.notify_all()

    def _count_written(self, n: int) -> None:
        with self._count_lock:
            self._health.written += n
            written = self._health.written
        if self.retention and n and written % 1000 < n:
            try:
                self.store.prune_records(self.retention)
            except StoreError as exc:
                log.error("could not prune records to %d: %s", self.retention, exc)

    def _error(self, exc: BaseException) -> None:
        with self._count_lock:
            self._health.last_error, self._health.last_error_at = _text(exc), _now()

    def _lose(
        self, record: Record | Draft, cause: str, exc: BaseException, *, down_ok: bool = False
    ) -> bool:
        """Count ``record`` as lost and note it in the store's ledger; False (nothing
        counted) when ``down_ok`` and the store took not even the note, so it is down."""
        message, at = _text(exc), _now()
        noted = self._note(
            RecordLoss(at, cause, str(record.id), str(record.agent), str(record.point), message)
        )
        if not noted and down_ok and cause == Cause.STORE:
            return False
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
        return True

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
        """Wait until every record submitted so far is written or dropped (or ``timeout``).

        Returns:
            True when they are; False on timeout (a store that is down keeps records up to
            ``retry_s``: ``health()`` shows them waiting).
        """
        with self._count_lock:
            target = self._submitted
        self._wake.set()
        with self._drained:
            return self._drained.wait_for(lambda: self._done >= target, timeout=timeout)

    def close(self) -> None:
        """Write what is left and stop; a store that is down gets ``CLOSE_GRACE_S`` more."""
        if self._thread.is_alive():
            self._stop_at = _clock()
            self._stop = True
            self._halt.set()
            self._wake.set()
            self._thread.join(timeout=self.CLOSE_GRACE_S + 30)


def _clock() -> float:
    return time.monotonic()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _text(exc: BaseException) -> str:
    """An error as status shows it: cut, escaped, without the driver's parameter dump
    (that would copy a record's content into status)."""
    text = f"{type(exc).__name__}: {exc}".split("\n[parameters:", 1)[0]
    return escape_text(text[:1000])


def _cause_of(exc: BaseException) -> str:
    """``encode`` when the record could not be serialised, else ``store``."""
    if isinstance(exc, StoreError):
        return Cause.STORE
    return Cause.ENCODE if isinstance(exc, ValueError | TypeError | RecursionError) else Cause.STORE
