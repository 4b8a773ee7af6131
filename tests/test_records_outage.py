"""Records through store faults (issue 9, item 2): an outage, a full disk, PostgreSQL gone for
a while, the SQLite file deleted or replaced under a running engine.

Each test calls agents as a host would (``Engine.load`` + ``tool_call``) and asserts the
count: every acknowledged record is written, or counted as dropped with a cause; nothing
hangs (every wait is bounded); writes resume within ``RECOVERY_S`` of the fault's end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import sqlalchemy as sa

from engine.cli.cmd_ops import records_lines
from engine.errors import StoreError, StoreUnavailableError
from engine.outcome import Outcome
from engine.records import RecordWriter
from engine.runtime import Engine
from engine.store import Record, RecordQuery, open_store
from tests.backends import db_url, pg_schema
from tests.conftest import write
from tests.http.test_http import run_server
from tests.test_records_hostile import script_hook

__all__ = ["db_url"]

RECOVERY_S = RecordWriter.RETRY_MAX_S + 3.0
"""Records flow again within this long after a fault ends: the longest back-off, plus slack
for a loaded machine."""


def config(root: Path, records: str = "{}") -> Path:
    return write(
        root,
        {
            "engine.yaml": f"process: proc\nscripts: {{workers: 2}}\nrecords: {records}\n",
            "agents/py/agent.yaml": "hooks: [py]\n",
            "agents/py/hooks/py.yaml": script_hook("py"),
            "agents/js/agent.yaml": "hooks: [js]\n",
            "agents/js/hooks/js.yaml": script_hook("js"),
            "agents/plain/agent.yaml": "hooks: [ctx]\n",
            "agents/plain/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
        },
    )


def calls(
    engine: Engine, n: int, *, start: int = 0, pad: int = 0, blocked: bool = False
) -> list[Outcome]:
    """``n`` ordinary calls through the Python, JavaScript and plain agents; none blocked
    unless ``blocked`` (script hooks read their state: a store that is down fails them, and
    ``tool_call`` fails closed; the record of a blocked call is written all the same)."""
    agents = [engine.agent(a) for a in ("py", "js", "plain")]
    outs = [
        agents[i % 3].tool_call("read", {"n": i, "pad": "x" * pad}, user_id=f"u{i % 3}")
        for i in range(start, start + n)
    ]
    assert blocked or not any(o.blocked for o in outs)
    return outs


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``check`` until it holds; the seconds it took. Fails (never hangs) past ``timeout``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - start


def health(engine: Engine) -> dict[str, Any]:
    assert engine.writer is not None
    return engine.writer.health()


def settled(engine: Engine) -> bool:
    h = health(engine)
    return h["queued"] == 0 and h["store_reachable"]


def accounted(engine: Engine, acknowledged: int) -> dict[str, int]:
    """Assert that every acknowledged record is written or dropped with a cause; the drops."""
    h = health(engine)
    assert h["queued"] == 0 and h["buffered"] == 0
    assert h["written"] + sum(h["dropped"].values()) == acknowledged
    return dict(h["dropped"])


def stored_ids(engine: Engine) -> list[str]:
    """Every stored record id, oldest first."""
    return [r.id for r in engine.store.query_records(RecordQuery(limit=100_000, oldest_first=True))]


class Outage:
    """A store that refuses every write while ``down`` (records and loss notes alike), with
    a plain ``StoreError`` (the writer finds out that it is down: the loss note fails too)
    or, with ``says_so``, the ``StoreUnavailableError`` the SQL store raises for the driver's
    operational errors."""

    def __init__(
        self, engine: Engine, monkeypatch: pytest.MonkeyPatch, *, says_so: bool = False
    ) -> None:
        self.add_records, self.add_loss = engine.store.add_records, engine.store.add_record_loss
        self.error = StoreUnavailableError if says_so else StoreError
        self.down, self.attempts = False, 0
        self.answer_lost = False
        """Writes go through while ``down``, and fail after their commit."""
        self.again: list[bool] = []
        """``again`` of each ``add_records`` call."""
        monkeypatch.setattr(engine.store, "add_records", self._records)
        monkeypatch.setattr(engine.store, "add_record_loss", self._loss)

    def _fail(self) -> None:
        if self.down:
            self.attempts += 1
            raise self.error("store: write failed: connection refused (test outage)")

    def _records(self, records: list[Record], *, again: bool = False) -> None:
        self.again.append(again)
        if self.answer_lost and self.down:  # committed, but the answer never came back
            self.add_records(records, again=again)
        self._fail()
        self.add_records(records, again=again)

    def _loss(self, loss: Any) -> None:
        self._fail()
        self.add_loss(loss)


@pytest.fixture
def engine(tmp_path: Path, db_url: str) -> Iterator[Engine]:
    eng = Engine.load(config(tmp_path / "config"), db=db_url)
    yield eng
    eng.close()


# -- an outage of the store --------------------------------------------------------------------


@pytest.mark.parametrize("says_so", [False, True], ids=["found_out", "says_so"])
def test_an_outage_keeps_every_record_in_order_and_writes_it_when_the_store_is_back(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, says_so: bool
) -> None:
    before = calls(engine, 6)
    engine.flush()
    outage = Outage(engine, monkeypatch, says_so=says_so)
    outage.down = True
    with caplog.at_level(logging.WARNING, logger="engine.records"):
        during = calls(engine, 30, start=6)
        assert engine.flush(timeout=0.3) is False  # kept, not written, not dropped
        wait_until(lambda: health(engine)["retries"] >= 3, 10, "retries with back-off")
        h = health(engine)
        assert h["store_reachable"] is False and h["down_since"] and h["dropped"] == {}
        assert h["queued"] == 30 and h["buffered"] == 30 and h["written"] == 6
        assert "connection refused (test outage)" in h["last_error"]
        # per attempt: the batch, its first record alone and that one's loss note; or only
        # the batch when the store says it cannot write
        assert outage.attempts <= (1 if says_so else 3) * (h["retries"] + 1)
        outage.down = False
        took = wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
    after = calls(engine, 3, start=36)
    engine.flush()
    assert accounted(engine, 39) == {} and took < RECOVERY_S
    assert stored_ids(engine) == [o.id for o in before + during + after]  # in order
    messages = [r.getMessage() for r in caplog.records]
    assert sum("the store is down" in m for m in messages) == 1
    assert sum("the store is back" in m for m in messages) == 1


@pytest.mark.parametrize("says_so", [False, True], ids=["found_out", "says_so"])
def test_records_whose_commit_went_unanswered_are_written_once_and_not_counted_lost(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, says_so: bool
) -> None:
    outage = Outage(engine, monkeypatch, says_so=says_so)
    outage.down = outage.answer_lost = True
    outs = calls(engine, 12)
    wait_until(lambda: health(engine)["retries"] >= 2, 10, "retries")
    outage.down = False
    wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
    # without ``again`` the retry would hit the stored ids and count them as store losses
    assert accounted(engine, 12) == {}
    assert health(engine)["written"] == 12
    assert stored_ids(engine) == [o.id for o in outs]  # each once
    assert outage.again[0] is False and outage.again[-1] is True


def test_records_past_buffer_max_are_dropped_as_overflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = config(tmp_path / "config", "{buffer_max: 8}")
    with Engine.load(root, db=str(tmp_path / "store.db")) as engine:
        outage = Outage(engine, monkeypatch)
        outage.down = True
        kept = calls(engine, 8)
        lost = calls(engine, 5, start=8)  # acknowledged, but past the bound
        h = health(engine)
        assert h["dropped"] == {"overflow": 5} and h["queued"] == 8
        assert "buffer is full (8 records" in h["last_error"]
        outage.down = False
        wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
        assert accounted(engine, 13) == {"overflow": 5}
        assert stored_ids(engine) == [o.id for o in kept]
        assert not {o.id for o in lost} & set(stored_ids(engine))


def test_records_waiting_past_retry_s_expire_oldest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = config(tmp_path / "config", "{retry_s: 0.6}")
    with Engine.load(root, db=str(tmp_path / "store.db")) as engine:
        outage = Outage(engine, monkeypatch)
        outage.down = True
        old = calls(engine, 7)
        wait_until(lambda: health(engine)["dropped"].get("expired") == 7, 10, "expiry")
        young = calls(engine, 4, start=7)
        outage.down = False
        wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
        assert accounted(engine, 11) == {"expired": 7}
        assert stored_ids(engine) == [o.id for o in young]
        assert not {o.id for o in old} & set(stored_ids(engine))


@pytest.mark.parametrize("fault", ["refused", "unopenable_file"])
def test_closing_on_a_store_that_stays_down_drops_the_rest_as_unavailable_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    db = tmp_path / "data" / "store.db"
    engine = Engine.load(config(tmp_path / "config"), db=str(db))
    assert engine.writer is not None
    monkeypatch.setattr(engine.writer, "CLOSE_GRACE_S", 0.5)
    if fault == "refused":
        Outage(engine, monkeypatch).down = True
    else:  # the store's file vanished and its folder is now a file: nothing can reopen it
        shutil.rmtree(db.parent)
        db.parent.write_text("not a folder")
    # With the file gone, a hook's state read may open a new connection, fail and block its
    # call (fail closed); each call is recorded (and dropped) all the same.
    calls(engine, 9, blocked=fault == "unopenable_file")
    wait_until(lambda: not health(engine)["store_reachable"], 10, "the outage noticed")
    start = time.monotonic()
    engine.close()
    assert time.monotonic() - start < 5  # 0 hangs: the grace, then the drop
    h = engine.writer.health()
    assert h["dropped"] == {"unavailable": 9} and h["queued"] == 0 and h["written"] == 0


def test_an_outage_shows_in_status_the_cli_lines_and_http(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKENGINE_ADMIN_TOKEN", "t0ken-for-status")
    outage = Outage(engine, monkeypatch)
    outage.down = True
    calls(engine, 4)
    wait_until(lambda: not health(engine)["store_reachable"], 10, "the outage noticed")
    auth = {"Authorization": "Bearer t0ken-for-status"}
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(contextlib.contextmanager(run_server)(engine))
        client = stack.enter_context(httpx.Client(base_url=base, timeout=10))
        down = client.get("/v1/status", headers=auth).json()["records"]
        lines = records_lines(engine.status()["records"])
        outage.down = False
        wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
        up = client.get("/v1/status", headers=auth).json()["records"]
    assert down["store_reachable"] is False and down["buffered"] == 4 and down["queued"] == 4
    assert "test outage" in down["last_error"] and down["down_since"]
    assert lines[0].startswith("records: 0 dropped, 0 written, 4 queued, 4 held for retry")
    assert (
        lines[1].startswith("    store DOWN since ")
        and "kept (at most 50000, for 120 s)" in lines[1]
    )
    assert up["store_reachable"] is True and up["written"] == 4 and up["down_since"] is None


# -- a full disk -------------------------------------------------------------------------------


def mount_tmpfs(folder: Path) -> bool:
    """Mount a 16 MB tmpfs at ``folder``; False without the right (or the tool) to mount.

    The store's WAL holds the whole test's records (about 2 MB: below the autocheckpoint, the
    database file stays one page), and more when a loaded machine writes them in many small
    transactions (each commit appends its own copy of the pages it touched). A 2 MB disk
    filled up again after the filler was freed, and recovery never came."""
    command = ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)]
    try:
        return subprocess.run(command, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Callable[[bool], None]]:
    """A 16 MB tmpfs at ``folder``; yields ``full(on)``: fill it to the last byte, or free it.

    Without the right to mount, SQLite's own cap (``PRAGMA max_page_count``) makes the same
    SQLITE_FULL error, set on every connection of the store at ``folder/store.db``.
    """
    folder.mkdir(parents=True)
    mounted = mount_tmpfs(folder)
    filler = folder / "filler"

    def full(on: bool) -> None:
        if not on:
            filler.unlink(missing_ok=True)
            return
        with contextlib.suppress(OSError), open(filler, "wb") as f:  # ENOSPC: the disk is full
            while True:
                f.write(b"\0" * 4096)
                f.flush()

    try:
        yield full if mounted else cap_pages
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)


_capped: dict[str, Engine] = {}


def cap_pages(on: bool) -> None:
    """The fallback of ``small_disk``: cap the store's pages at what it holds now."""
    engine = _capped["engine"]
    store: Any = engine.store
    cap = "PRAGMA max_page_count = {}"

    def connect(dbapi_conn: Any, _record: Any) -> None:
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(cap.format(pages if on else 1 << 30))

    sa.event.listen(store.engine, "connect", connect)
    store.engine.dispose()


def test_a_full_disk_holds_records_until_space_is_freed(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as full:
        engine = Engine.load(config(tmp_path / "config"), db=str(tmp_path / "disk" / "store.db"))
        _capped["engine"] = engine
        try:
            before = calls(engine, 30, pad=2000)
            engine.flush()
            full(True)
            during = calls(engine, 300, start=30, pad=2000)
            wait_until(lambda: not health(engine)["store_reachable"], 10, "the full disk noticed")
            error = health(engine)["last_error"]
            assert "full" in error, error  # SQLITE_FULL: "database or disk is full"
            full(False)
            took = wait_until(lambda: settled(engine), RECOVERY_S, "recovery after freeing")
            engine.flush()
            assert accounted(engine, 330) == {} and took < RECOVERY_S
            assert stored_ids(engine) == [o.id for o in before + during]
        finally:
            engine.close()
            _capped.clear()


# -- PostgreSQL down for a while ---------------------------------------------------------------


class Proxy:
    """A TCP proxy on loopback in front of a PostgreSQL server; ``cut()`` closes every
    connection and refuses new ones (the server looks down) until ``mend()``."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.down = False
        self.closed = False
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            upstream = socket.create_connection(self.target, timeout=5)
            with self.lock:
                self.pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                ready, _, _ = select.select([a, b], [], [], 0.5)
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        raise OSError("closed")
                    (b if src is a else a).sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.close()

    def cut(self) -> None:
        self.down = True
        with self.lock:
            for pair in self.pairs:
                for s in pair:
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
            self.pairs.clear()

    def mend(self) -> None:
        self.down = False

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()


def through(proxy: Proxy, url: str) -> str:
    parts = urlsplit(url)
    user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))


@pytest.mark.postgres
def test_postgresql_down_for_a_while_loses_no_record(tmp_path: Path) -> None:
    with pg_schema() as url:
        target = urlsplit(url)
        proxy = Proxy(target.hostname or "127.0.0.1", target.port or 5432)
        engine = Engine.load(config(tmp_path / "config"), db=through(proxy, url))
        try:
            before = calls(engine, 20)
            engine.flush()
            proxy.cut()
            during = calls(engine, 60, start=20, blocked=True)
            wait_until(lambda: not health(engine)["store_reachable"], 10, "the outage noticed")
            time.sleep(2.0)  # down for a while: several back-offs
            more = calls(engine, 60, start=80, blocked=True)
            assert sum(o.blocked for o in more) == 40  # the script hooks' calls fail closed
            assert health(engine)["retries"] >= 2 and health(engine)["dropped"] == {}
            proxy.mend()
            took = wait_until(lambda: settled(engine), RECOVERY_S, "recovery")
            engine.flush()
            assert accounted(engine, 140) == {} and took < RECOVERY_S
            assert stored_ids(engine) == [o.id for o in before + during + more]
        finally:
            engine.close()
            proxy.close()


# -- the SQLite file deleted or replaced -------------------------------------------------------


def remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["file", "file_and_journal", "folder"])
def test_a_deleted_store_file_is_noticed_reported_and_a_new_one_opened(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "data" / "store.db"
    with Engine.load(config(tmp_path / "config"), db=str(db)) as engine:
        calls(engine, 9)
        engine.flush()
        with caplog.at_level(logging.ERROR, logger="engine.records"):
            if how == "file":
                db.unlink()
            elif how == "folder":
                shutil.rmtree(db.parent)
            else:
                remove_store(db)
            # Until the writer opens a new file, a hook's state read may open a new, empty
            # one and fail, which blocks its call (fail closed); every call is recorded.
            later = calls(engine, 12, start=9, blocked=True)
            wait_until(lambda: settled(engine) and db.exists(), RECOVERY_S, "a new file")
            engine.flush()
        h = health(engine)
        assert h["file_replaced"] == 1 and "was deleted while the engine had it open" in (
            h["file_notice"] or ""
        )
        assert accounted(engine, 21) == {}
        # what was written before is gone with the file; everything after is in the new one
        assert stored_ids(engine) == [o.id for o in later]
        with contextlib.closing(open_store(str(db))) as fresh:  # type: ignore[type-var]
            assert len(fresh.query_records(RecordQuery(limit=100))) == 12
        assert any("records now go to a new file" in r.getMessage() for r in caplog.records)
        assert "    store file: " in "\n".join(records_lines(engine.status()["records"]))


def test_a_replaced_store_file_is_noticed_and_records_go_to_the_replacement(
    tmp_path: Path,
) -> None:
    db = tmp_path / "data" / "store.db"
    spare = tmp_path / "spare.db"
    with Engine.load(config(tmp_path / "config"), db=str(spare)) as other:
        kept = calls(other, 1)  # the replacement's own content
    with Engine.load(config(tmp_path / "config"), db=str(db)) as engine:
        old = calls(engine, 5)
        engine.flush()
        # e.g. a backup restored over the live file; the old file's -wal stays at the path
        os.replace(spare, db)
        assert Path(f"{db}-wal").exists()
        later = calls(engine, 7, start=5)
        wait_until(lambda: settled(engine), RECOVERY_S, "the replacement opened")
        engine.flush()
        h = health(engine)
        assert h["file_replaced"] == 1 and "was replaced by another file" in h["file_notice"]
        assert accounted(engine, 12) == {}
        # the old file's -wal was not read into the replacement: its content is intact
        assert stored_ids(engine) == [o.id for o in kept + later]
        assert not {o.id for o in old} & set(stored_ids(engine))


def test_an_idle_writer_notices_a_deleted_file_without_a_record_to_write(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    with Engine.load(config(tmp_path / "config"), db=str(db)) as engine:
        calls(engine, 2)
        engine.flush()
        db.unlink()
        wait_until(
            lambda: health(engine)["file_replaced"] == 1,
            RecordWriter.IDLE_CHECK_S + RECOVERY_S,
            "the idle check",
        )
        assert db.exists() and health(engine)["file_notice"]


def test_a_vanished_file_that_cannot_be_reopened_is_an_outage_until_it_can(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "data" / "store.db"
    with Engine.load(config(tmp_path / "config"), db=str(db)) as engine:
        calls(engine, 3)
        engine.flush()
        with caplog.at_level(logging.ERROR, logger="engine.records"):
            shutil.rmtree(db.parent)
            db.parent.write_text("a file where the store's folder was")  # no new file there
            later = calls(engine, 10, start=3)
            wait_until(lambda: health(engine)["retries"] >= 3, 10, "retries")
            h = health(engine)
            assert h["store_reachable"] is False and h["buffered"] == 10 and h["dropped"] == {}
            assert "a new file could not be opened" in h["file_notice"]
            assert h["file_replaced"] == 0
            db.parent.unlink()
            took = wait_until(lambda: settled(engine), RECOVERY_S, "reopened")
        engine.flush()
        assert accounted(engine, 13) == {} and took < RECOVERY_S
        assert health(engine)["file_replaced"] == 1
        assert stored_ids(engine) == [o.id for o in later]
        notices = [r.getMessage() for r in caplog.records if "store file" in r.getMessage()]
        assert len(notices) == 2  # once failing (not at each retry), once reopened
        assert "could not be opened" in notices[0] and "new file at that path" in notices[1]
