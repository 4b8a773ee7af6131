"""A sandbox worker process: JSON requests on stdin, one JSON answer per line on stdout."""

from __future__ import annotations

import gc
import json
import os
import resource
import signal
import sys
import warnings
from typing import Any

from engine.sandbox.javascript import JavaScriptRuntime
from engine.sandbox.python import PythonRuntime, address_space_limiter

HEADROOM_MB = 1024
"""Address space a worker may grow by beyond its startup size; per-call caps are far lower."""


def harden() -> None:
    """Limits no script can lift: no files written, no processes, no core dumps, bounded memory."""
    # With RLIMIT_FSIZE at 0 a write raises EFBIG instead of killing us with SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for limit, value in (
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
        (resource.RLIMIT_NOFILE, 16),
    ):
        resource.setrlimit(limit, (value, value))
    with open("/proc/self/statm", "rb") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    cap = size + HEADROOM_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


_LIMITS_KEPT = 256


def handle(
    req: dict[str, Any],
    line: str,
    py: PythonRuntime,
    js: JavaScriptRuntime,
    limits: dict[str, dict[str, int]],
) -> dict[str, Any] | str:
    """Answer one request; every failure becomes an answer, never an exception.

    A JavaScript call may answer with its response line already encoded (by the script's own
    context, which also checked the result), so the worker does not decode and encode it again.
    """
    key = req.get("limits_key")
    if not isinstance(key, str):
        raise ValueError("the request has no limits_key (the host sends one with every request)")
    if "limits" in req:
        if len(limits) >= _LIMITS_KEPT:
            limits.clear()
        limits[key] = req["limits"]
    elif key in limits:
        req["limits"] = limits[key]
    else:
        return {"ok": False, "kind": "need_source"}
    runtime: Any = js if req["language"] == "javascript" else py
    if req["op"] == "compile":
        return runtime.compile(req)
    if req["language"] == "javascript":
        return js.call(req, line)
    return py.call(req)


def main() -> None:
    """Serve requests until stdin closes or a call asks for a recycle (after running out of
    memory, or when the worker has grown too far)."""
    harden()
    # Warnings go nowhere (stderr is closed) and keep no registry a later compile could depend on.
    warnings.simplefilter("ignore")
    js = JavaScriptRuntime()
    py = PythonRuntime(js.regex, address_space_limiter())
    # Start-up objects leave the collector's view, so the collection after every call is cheap.
    gc.freeze()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    max_line = int(os.environ.get("HOOKENGINE_MAX_REQUEST", "8000000"))
    limits: dict[str, dict[str, int]] = {}
    out.write(b'{"ready":true}\n')
    out.flush()
    while True:
        raw = inp.readline(max_line + 1)
        if not raw or not raw.endswith(b"\n"):
            return
        line = raw.decode("utf-8")
        try:
            answer = handle(json.loads(line), line, py, js, limits)
        except BaseException as exc:  # noqa: BLE001 - a worker bug must answer, not hang the host
            answer = {
                "ok": False,
                "kind": "crashed",
                "message": f"worker error: {type(exc).__name__}: {exc}"[:500],
            }
        if isinstance(answer, str):
            out.write(answer.encode("utf-8", "surrogatepass") + b"\n")
            out.flush()
        else:
            out.write(
                json.dumps(answer, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"
            )
            out.flush()
            if answer.get("recycle"):
                return
        js.prepare()
