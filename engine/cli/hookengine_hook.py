"""``hookengine-hook``: forward one Claude Code / Codex hook event to ``hookengine serve``.

Reads the hook's JSON on stdin, POSTs it to ``$HOOKENGINE_URL`` (for example
``http://127.0.0.1:8765/v1/claude-code/demo``, ``?dialect=codex`` for Codex) with
``$HOOKENGINE_TOKEN`` as a bearer token, and prints the answer.

It runs once per hook event, so its start-up is most of its cost: it imports the standard
library's ``socket`` and ``json`` and nothing of the engine's runtime (no pydantic,
SQLAlchemy or YAML), and speaks the one HTTP/1.1 request it needs itself, because
``http.client`` alone loads ``ssl`` and the ``email`` package (``ssl`` is loaded for an
``https://`` URL only). Proxy variables are not used: the service is meant to be local.

It always exits 0 with JSON. When the service cannot answer (down, slow, a refusal, an
answer that is not a JSON object) it prints the event's failure answer: a deny at
PreToolUse, a block at UserPromptSubmit and PostToolUse, a warning elsewhere.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from engine.integrations.claude_code import failure_output

TYPE_CHECKING = False  # typing is not imported at run time: start-up counts
if TYPE_CHECKING:
    from typing import Any

TIMEOUT_S = 20.0
"""Seconds to wait for the service (``$HOOKENGINE_TIMEOUT`` overrides it)."""

MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""A longer answer is refused (the event's failure answer)."""


class ServiceError(Exception):
    """The service gave no usable answer; the message says why (never the token)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hookengine-hook`` console script (it takes no arguments)."""
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    # ASCII escapes: any text, a lone surrogate included, prints under any locale
    sys.stdout.write(json.dumps(forward(raw, payload)) + "\n")
    return 0


def forward(raw: bytes, payload: Any) -> dict[str, Any]:
    """The service's answer to ``raw``, or the event's failure answer naming what failed."""
    url = os.environ.get("HOOKENGINE_URL", "")
    dialect = "codex" if "dialect=codex" in url.partition("?")[2] else "claude"

    def fail(message: str) -> dict[str, Any]:
        return failure_output(payload, message, dialect=dialect)

    try:
        status, body = post(url, raw, token=os.environ.get("HOOKENGINE_TOKEN"), timeout=_timeout())
    except ServiceError as exc:
        return fail(str(exc))
    except OSError as exc:  # refused, unreachable, timed out, reset, TLS
        reason = exc.strerror or str(exc) or type(exc).__name__
        message = f"the policy service at {_origin(url)} did not answer ({reason[:200]})"
        return fail(message)
    if status != 200:
        return fail(f"the policy service answered HTTP {status}{_detail(body)}")
    try:
        answer = json.loads(body)
    except ValueError:
        return fail("the policy service's answer is not JSON")
    if not isinstance(answer, dict):
        return fail("the policy service's answer is not an object")
    return answer


def post(url: str, body: bytes, *, token: str | None, timeout: float) -> tuple[int, bytes]:
    """POST ``body`` as JSON to ``url``; the status and the body of the answer.

    Raises:
        ServiceError: the URL or token is unusable, or the answer is not HTTP.
        OSError: the connection failed or timed out.
    """
    scheme, host, port, target = _split(url)
    if token and any(c in token for c in "\r\n"):
        raise ServiceError("HOOKENGINE_TOKEN holds a line break")
    head = [
        f"POST {target} HTTP/1.1",
        f"Host: {host if ':' not in host else f'[{host}]'}:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if token:
        head.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + body
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as plain:
        conn = _tls(plain, host) if scheme == "https" else plain
        conn.sendall(request)
        return _parse(_read_all(conn, deadline))


def _split(url: str) -> tuple[str, str, int, str]:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ServiceError("HOOKENGINE_URL is not set to an http(s) URL")
    authority, slash, path = rest.partition("/")
    target = slash + path if slash else "/"
    hostport = authority.rsplit("@", 1)[-1]
    if hostport.startswith("["):  # an IPv6 literal: [::1]:8765
        host, _, tail = hostport[1:].partition("]")
        port_text = tail.removeprefix(":")
    else:
        host, _, port_text = hostport.partition(":")
    if not host or (port_text and not port_text.isdigit()) or any(c in target for c in " \r\n"):
        raise ServiceError(f"HOOKENGINE_URL is not a valid URL ({_origin(url)})")
    return scheme, host, int(port_text) if port_text else (443 if scheme == "https" else 80), target


def _tls(plain: socket.socket, host: str) -> socket.socket:
    import ssl  # only for https: loading it costs as much as the rest of the start-up

    return ssl.create_default_context().wrap_socket(plain, server_hostname=host)


def _read_all(conn: socket.socket, deadline: float) -> bytes:
    """Everything until the service closes, within the deadline (a slow drip times out)."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        conn.settimeout(left)
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ServiceError("the policy service's answer is too long")
    return b"".join(chunks)


def _parse(data: bytes) -> tuple[int, bytes]:
    """Status and body of an HTTP/1.x response read to the end of the connection."""
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ServiceError("the policy service's answer is not HTTP")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return int(parts[1]), _unchunk(body)
    length = headers.get("content-length", "")
    if length.isdigit() and len(body) < int(length):
        # a connection that closed early: what arrived may still parse as JSON (``{}``: allow)
        raise ServiceError("the policy service's answer ended before its Content-Length")
    return int(parts[1]), body[: int(length)] if length.isdigit() else body


def _unchunk(body: bytes) -> bytes:
    out: list[bytes] = []
    rest = body
    while True:
        size_line, sep, rest = rest.partition(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise ServiceError("the policy service's answer is not valid HTTP") from None
        if not sep or size == 0:
            return b"".join(out)
        if len(rest) < size:
            raise ServiceError("the policy service's answer ended inside a chunk")
        out.append(rest[:size])
        rest = rest[size + 2 :]


def _timeout() -> float:
    try:
        value = float(os.environ.get("HOOKENGINE_TIMEOUT", TIMEOUT_S))
    except ValueError:
        return TIMEOUT_S
    return value if value > 0 else TIMEOUT_S


def _detail(body: bytes) -> str:
    """The service's error message (its ``{code, message, errors}`` body), if it has one."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return f": {str(message)[:300]}" if message else ""


def _origin(url: str) -> str:
    """The URL's scheme, host and port (no user info, path or query)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].rsplit('@', 1)[-1]}"[:200]


if __name__ == "__main__":
    sys.exit(main())
