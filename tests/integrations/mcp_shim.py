"""A stdio relay in front of an MCP server that logs the method of every message it passes on.

``python mcp_shim.py LOG [--die-on METHOD] -- CMD ARGS...`` runs CMD, relays this process's
stdin to it and its stdout back, appending each client message's ``method`` (one a line) to
LOG. With ``--die-on``, the relay and CMD end when that method arrives, unanswered: an
upstream server that dies mid-call. Tests count ``tools/call`` lines: calls that reached CMD.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading


def main(argv: list[str]) -> int:
    log_path, rest = argv[0], argv[1:]
    die_on = None
    if rest[:1] == ["--die-on"]:
        die_on, rest = rest[1], rest[2:]
    command = rest[1:] if rest[:1] == ["--"] else rest
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    threading.Thread(target=_copy, args=(child.stdout, sys.stdout.buffer), daemon=True).start()
    with open(log_path, "a", encoding="utf-8") as log:
        for line in sys.stdin.buffer:
            method = _method(line)
            if method:
                log.write(_entry(method, line) + "\n")
                log.flush()
            if method is not None and method == die_on:
                child.kill()
                return 3
            child.stdin.write(line)
            child.stdin.flush()
    child.stdin.close()
    return child.wait()


def _method(line: bytes) -> str | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def _entry(method: str, line: bytes) -> str:
    """The log line: the method; for ``initialize``, the client's capabilities after it."""
    if method != "initialize":
        return method
    capabilities = json.loads(line).get("params", {}).get("capabilities", {})
    return f"initialize {json.dumps(capabilities, sort_keys=True)}"


def _copy(source: object, target: object) -> None:
    for line in source:  # type: ignore[attr-defined]
        target.write(line)  # type: ignore[attr-defined]
        target.flush()  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
