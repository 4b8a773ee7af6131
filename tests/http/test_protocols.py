"""Both guarded protocols, h11 (where httptools is not installed) and httptools (the ``http``
extra's), hold against slow and hostile clients alike: a slow-loris connection closed at the
read deadline, a head over the bound refused in pieces, a keep-alive connection served past
the deadline, a connection over the cap refused with 503, a decision answered whole.
tests/http/test_hostile_clients.py runs the full set on the protocol ``serve`` picks."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.http.server import GuardedH11Protocol, build_server, guarded_protocol
from engine.runtime import Engine
from tests.http.test_hostile_clients import read_response, read_until_closed, trickle
from tests.http.test_http import TOKEN, load

DECIDE = "decide-token-1"
READ_TIMEOUT_S = 1.0
SLACK_S = 4.0


def protocols() -> list[type]:
    found: list[type] = [GuardedH11Protocol]
    with contextlib.suppress(ImportError):
        from engine.http.server_httptools import GuardedHttpToolsProtocol

        found.append(GuardedHttpToolsProtocol)
    return found


@pytest.fixture(params=protocols(), ids=lambda cls: cls.__name__)
def address(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, int]]:
    monkeypatch.setenv("TEST_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("TEST_DECIDE_TOKEN", DECIDE)
    http = f"{{token_env: TEST_ADMIN_TOKEN, read_timeout_s: {READ_TIMEOUT_S}, keep_alive_s: 30, "
    http += "max_connections: 4, max_header_bytes: 4096, "
    http += "tokens: [{name: d, env: TEST_DECIDE_TOKEN, scopes: [decide]}]}"
    eng: Engine = load(tmp_path, http)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = build_server(eng, log_level="warning")
    server.config.http = request.param
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield sock.getsockname()
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        eng.close()


def connect(address: tuple[str, int]) -> socket.socket:
    return socket.create_connection(address, timeout=5)


def test_serve_picks_httptools_where_it_is_installed() -> None:
    assert guarded_protocol() is protocols()[-1]


def test_a_slow_loris_connection_is_closed_at_the_read_deadline(address: tuple[str, int]) -> None:
    with connect(address) as headers, connect(address) as body:
        headers.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        body.sendall(b"POST /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        closed = trickle({headers: b"a", body: b"b"}, for_s=READ_TIMEOUT_S + SLACK_S + 2)
        assert len(closed) == 2 and max(closed.values()) < READ_TIMEOUT_S + SLACK_S


def test_a_head_over_the_bound_in_pieces_is_refused(address: tuple[str, int]) -> None:
    refused_while_sending = False
    with connect(address) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:
            for _ in range(10):  # 0.1 s in all: well within the read deadline
                sock.sendall(b"a" * 1000)
                time.sleep(0.01)
        except OSError:
            refused_while_sending = True
        answer = read_until_closed(sock)
    # a 400 (or a reset that lost it), not the read deadline's silent close
    assert refused_while_sending or answer.startswith(b"HTTP/1.1 400")


def test_a_keep_alive_connection_is_served_past_the_deadline(address: tuple[str, int]) -> None:
    with connect(address) as sock:
        for _ in range(3):  # 1.5 s in all, past the 1 s deadline
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200")
            time.sleep(0.5)


def test_a_connection_over_the_cap_is_503(address: tuple[str, int]) -> None:
    held = [connect(address) for _ in range(4)]
    try:
        for sock in held:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200")
        with connect(address) as extra:
            assert read_until_closed(extra).startswith(b"HTTP/1.1 503")
    finally:
        for sock in held:
            sock.close()


def test_a_decision_in_pieces_is_answered_whole(address: tuple[str, int]) -> None:
    body = b'{"event": {"name": "shell", "input": {}}}'
    head = b"POST /v1/agents/a/points/tool_call HTTP/1.1\r\nHost: x\r\n"
    head += b"Authorization: Bearer %s\r\n" % DECIDE.encode()
    head += b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    with connect(address) as sock:
        for piece in (head[:20], head[20:], body[:10], body[10:]):
            sock.sendall(piece)
            time.sleep(0.05)
        answer = read_response(sock)
    assert answer.startswith(b"HTTP/1.1 200") and b'"blocked":false' in answer
