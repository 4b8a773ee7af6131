# ruff: noqa: E501 - scripts read best one per line
"""Stores time out: a server that never answers, or freezes mid-session, and a locked SQLite
file fail a store call within its timeouts (StoreError), and the point's failure policy applies:
a hook whose store call failed blocks ``tool_call``, elsewhere its ``on_error`` decides.

The PostgreSQL cases put a TCP proxy in front of the real server and freeze it: the proxy stops
reading, the kernel still acknowledges, as with a server that was stopped (SIGSTOP)."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from engine.errors import StoreError
from engine.runtime import Engine
from engine.store import open_store
from tests.backends import pg_schema, write_locked
from tests.conftest import write

LANGS = ("py", "js")
BOUND_S = 10.0
"""Generous: the timeouts below are 1-2 s; without them these calls hang for good."""
FAST = "store: {connect_timeout_s: 2, statement_timeout_s: 1}\n"
COUNTER = {
    "py": "def on_{point}(event, host):\n    n = (host.state.get('n') or 0) + 1\n    host.state.set('n', n)\n    return None\n",
    "js": "function on_{point}(event, host) {{\n  var n = (host.state.get('n') || 0) + 1;\n  host.state.set('n', n);\n  return null;\n}}\n",
}


class SilentServer:
    """A loopback listener that never answers: ``backlog`` never accepts (the kernel completes
    the handshake), ``accept`` accepts and keeps quiet, ``read`` also reads what comes."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        if mode != "backlog":
            self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if select.select([self.listener, *self._held], [], [], 0.1)[0]:
                with contextlib.suppress(OSError):
                    self._take_one()

    def _take_one(self) -> None:
        if select.select([self.listener], [], [], 0)[0]:
            self._held.append(self.listener.accept()[0])
        if self.mode == "read":
            for conn in select.select(self._held, [], [], 0)[0]:
                conn.recv(65536)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        for conn in [*self._held, self.listener]:
            conn.close()


class FreezableProxy:
    """Forwards loopback connections to a PostgreSQL server until frozen."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = [self.listener]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()

    def _accept(self) -> None:
        while not self._stop.is_set():
            if not select.select([self.listener], [], [], 0.1)[0]:
                continue
            with contextlib.suppress(OSError):
                client = self.listener.accept()[0]
                upstream = socket.create_connection(self.target)
                self._sockets += [client, upstream]
                for src, dst in ((client, upstream), (upstream, client)):
                    pump = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                    self._threads.append(pump)
                    pump.start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self._stop.is_set():
                if not self.flowing.wait(0.1) or not select.select([src], [], [], 0.1)[0]:
                    continue
                data = src.recv(65536)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)

    def close(self) -> None:
        self._stop.set()
        self.flowing.set()
        for thread in self._threads:
            thread.join(2)
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def proxied_pg() -> Iterator[tuple[FreezableProxy, str]]:
    """A fresh PostgreSQL schema reached through a freezable proxy: (proxy, URL)."""
    with pg_schema() as url:
        parts = urlsplit(url)
        proxy = FreezableProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        netloc = parts.netloc.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{proxy.port}")
        try:
            yield proxy, parts._replace(netloc=netloc).geturl()
        finally:
            proxy.close()


def config(root: Path, db_url: str, hooks: dict[str, str]) -> Path:
    """A project with one agent ``a`` holding ``hooks`` ({name: yaml}), records off."""
    files = {
        "engine.yaml": f"process: t\ndb_url: '{db_url}'\n{FAST}records: {{enabled: false}}\n",
        "agents/a/agent.yaml": f"hooks: [{', '.join(hooks)}]\n",
    }
    files.update({f"agents/a/hooks/{name}.yaml": text for name, text in hooks.items()})
    return write(root / "config", files)


def counter_hook(lang: str, point: str, on_error: str = "fail") -> str:
    language = "python" if lang == "py" else "javascript"
    source = COUNTER[lang].format(point=point)
    body = "".join(f"  {line}\n" for line in source.splitlines())
    return (
        f"kind: script_hook\nname: counter\nlanguage: {language}\non_error: {on_error}\n"
        f"source: |\n{body}"
    )


def eventually(fn):  # type: ignore[no-untyped-def]
    """``fn()`` once it stops raising StoreError, within BOUND_S (a store that did not answer
    fails calls at once for connect_timeout_s)."""
    end = time.monotonic() + BOUND_S
    while True:
        try:
            return fn()
        except StoreError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    try:
        return fn(*args, **kwargs), time.monotonic() - started
    except StoreError as exc:
        return exc, time.monotonic() - started


# -- a server that never answers ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["backlog", "accept", "read"])
def test_engine_load_against_a_server_that_never_answers_fails_in_bounded_time(
    tmp_path: Path, mode: str
) -> None:
    server = SilentServer(mode)
    try:
        url = f"postgresql://nobody@127.0.0.1:{server.port}/test"
        root = config(tmp_path, url, {"counter": counter_hook("py", "tool_call")})
        error, elapsed = timed(Engine.load, root)
    finally:
        server.close()
    assert isinstance(error, StoreError), error
    assert elapsed < BOUND_S
    assert f"cannot open store postgresql+psycopg://nobody@127.0.0.1:{server.port}/test" in str(
        error
    )
    assert "timeout" in str(error.__cause__).lower()


def test_open_store_honours_its_connect_timeout(tmp_path: Path) -> None:
    server = SilentServer("accept")
    try:
        url = f"postgresql://nobody@127.0.0.1:{server.port}/test"
        error, elapsed = timed(open_store, url, connect_timeout_s=2, statement_timeout_s=1)
    finally:
        server.close()
    assert isinstance(error, StoreError) and elapsed < BOUND_S
    assert error.__cause__ is not None


# -- a server that freezes mid-session ------------------------------------------------------


@pytest.mark.postgres
def test_a_statement_past_statement_timeout_is_cancelled_by_the_server(
    proxied_pg: tuple[FreezableProxy, str],
) -> None:
    _, url = proxied_pg
    store = open_store(url, connect_timeout_s=2, statement_timeout_s=1)
    try:
        slow = lambda conn: conn.exec_driver_sql("SELECT pg_sleep(5)").all()  # noqa: E731
        error, elapsed = timed(store._read, slow)  # type: ignore[attr-defined]
        assert isinstance(error, StoreError) and elapsed < 4
        assert "statement timeout" in str(error)
        assert store.state_load("h", "s") == {}  # the connection is still good
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("when", ["during a statement", "between calls"])
def test_a_server_that_freezes_fails_the_call_within_the_deadline_and_recovers(
    proxied_pg: tuple[FreezableProxy, str], when: str
) -> None:
    proxy, url = proxied_pg
    store = open_store(url, connect_timeout_s=2, statement_timeout_s=1)
    try:
        store.state_save("h", "s", {"n": 1})
        short = lambda conn: conn.exec_driver_sql("SELECT pg_sleep(0.3)").all()  # noqa: E731
        if when == "during a statement":
            threading.Timer(0.1, proxy.freeze).start()
            error, elapsed = timed(store._read, short)  # type: ignore[attr-defined]
            assert "did not answer within 2.0 s; the connection was dropped" in str(error)
        else:
            proxy.freeze()
            error, elapsed = timed(store.state_load, "h", "s")
        assert isinstance(error, StoreError) and elapsed < BOUND_S
        assert "read failed" in str(error) and "127.0.0.1" in str(error)
        again, _ = timed(store.state_load, "h", "s")  # at once: it just did not answer
        assert "the server did not answer a moment ago" in str(again)
        proxy.thaw()
        assert eventually(lambda: store.state_load("h", "s")) == {"n": 1}
    finally:
        proxy.thaw()
        store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("lang", LANGS)
def test_a_frozen_store_blocks_tool_call_in_bounded_time_naming_the_store(
    tmp_path: Path, proxied_pg: tuple[FreezableProxy, str], lang: str
) -> None:
    proxy, url = proxied_pg
    root = config(tmp_path, url, {"counter": counter_hook(lang, "tool_call", on_error="ignore")})
    with Engine.load(root) as engine:
        agent = engine.agent("a")
        assert not agent.tool_call("shell", {"cmd": "ls"}, user_id="u1").blocked
        proxy.freeze()
        try:
            outs = [timed(agent.tool_call, "shell", {"cmd": "ls"}, user_id="u1") for _ in range(2)]
        finally:
            proxy.thaw()
        for out, elapsed in outs:
            assert elapsed < BOUND_S
            assert out.blocked and "'counter'" in (out.reason or "")
            assert "(store)" in (out.reason or "")
            (run,) = out.hooks
            assert run.cause == "store" and "StoreError: store postgresql" in (run.error or "")
        assert "did not answer within" in (outs[0][0].hooks[0].error or "")
        assert "did not answer a moment ago" in (outs[1][0].hooks[0].error or "")
        end = time.monotonic() + BOUND_S
        while agent.tool_call("shell", {"cmd": "ls"}, user_id="u1").blocked:
            assert time.monotonic() < end, "the store did not come back"
            time.sleep(0.1)


@pytest.mark.postgres
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("on_error", ["fail", "ignore"])
def test_elsewhere_a_frozen_store_follows_the_hooks_on_error(
    tmp_path: Path, proxied_pg: tuple[FreezableProxy, str], lang: str, on_error: str
) -> None:
    proxy, url = proxied_pg
    hook = counter_hook(lang, "before_user_message", on_error=on_error)
    with Engine.load(config(tmp_path, url, {"counter": hook})) as engine:
        agent = engine.agent("a")
        proxy.freeze()
        try:
            out, elapsed = timed(agent.before_user_message, "hello", user_id="u1")
        finally:
            proxy.thaw()
        assert elapsed < BOUND_S
        assert out.blocked is (on_error == "fail")
        assert out.hooks[0].cause == "store"


# -- SQLite: the busy timeout is bounded ----------------------------------------------------


def test_a_locked_sqlite_store_fails_a_write_after_its_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = open_store(str(path), statement_timeout_s=0.5)
    try:
        with write_locked(path):
            assert store.state_load("h", "s") == {}
            error, elapsed = timed(store.state_save, "h", "s", {"n": 1})
        assert isinstance(error, StoreError) and 0.4 < elapsed < BOUND_S
        assert "write failed" in str(error) and "database is locked" in str(error)
        store.state_save("h", "s", {"n": 1})
        assert store.state_load("h", "s") == {"n": 1}
    finally:
        store.close()


@pytest.mark.parametrize("lang", LANGS)
def test_a_locked_sqlite_store_blocks_tool_call_naming_the_store(tmp_path: Path, lang: str) -> None:
    db = tmp_path / "store.db"
    files = {
        "engine.yaml": "process: t\nstore: {statement_timeout_s: 0.5}\nrecords: {enabled: false}\n",
        "agents/a/agent.yaml": "hooks: [counter]\n",
        "agents/a/hooks/counter.yaml": counter_hook(lang, "tool_call"),
    }
    with Engine.load(write(tmp_path / "config", files), db=str(db)) as engine:
        agent = engine.agent("a")
        with write_locked(db):
            out, elapsed = timed(agent.tool_call, "shell", {"cmd": "ls"}, user_id="u1")
        assert elapsed < BOUND_S
        assert out.blocked and "(store)" in (out.reason or "")
        assert "database is locked" in (out.hooks[0].error or "")
        assert not agent.tool_call("shell", {"cmd": "ls"}, user_id="u1").blocked


def test_store_timeouts_are_validated_in_engine_yaml(tmp_path: Path) -> None:
    from engine.errors import ConfigError

    files = {
        "engine.yaml": "process: t\nstore: {connect_timeout_s: 0, statement_timout_s: 1}\n",
        "agents/a/agent.yaml": "hooks: []\n",
    }
    with pytest.raises(ConfigError) as caught:
        Engine.load(write(tmp_path / "config", files), db=str(tmp_path / "s.db"))
    message = str(caught.value)
    assert "engine.yaml" in message and "connect_timeout_s" in message
    assert "statement_timout_s" in message
