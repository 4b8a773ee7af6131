"""A sandbox worker process: requests on stdin (a header line, then the event), one JSON answer
per call on stdout.

The wire format (host: engine/sandbox/batch.py):

- ``{"op": "compile", "language", "source", "filename", "key", "limits_key", "limits":
  {key: limits}}``: one line, one answer (``{"ok": true, "functions": [...]}`` or problems).
- ``{"op": "batch", "point", "calls": [{"language", "function", "script": {"key", "filename",
  "source"?}, "limits_key", "config_key", "apply", "state"}, ...], "limits"?: {key: limits},
  "configs"?: {key: config}, "contexts"?: n}`` and then the event as one line of
  JSON text. Limits, configs and sources come only while the worker lacks them (the host keeps
  a ``known`` set per worker); a call whose limits, config or script the worker does not have
  answers ``{"ok": false, "kind": "need_source"}`` and the host sends them again.
- One answer line per call, written as soon as the call is done: the runtime's answer
  (``{"ok": true, "value", "logs", "emits", "state_writes", "state_ttls", "duration_ms"}`` or a
  failure), with ``"end": true`` on a success after which the worker stopped with calls left
  (see ``run_batch``). After a failure or a ``"recycle"`` the batch ends unmarked.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import signal
import sys
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from engine.sandbox import effects
from engine.sandbox.hotwait import WORKER_SPIN_CAP_S, Spin
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
_CONFIGS_KEPT = 4096
_CONFIG_CHARS_KEPT = 64 * 1024 * 1024
_NULL_ANSWER = '{"ok":true,"value":null,'
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class Served:
    """What a worker keeps between requests: limits and configs by key, the two runtimes."""

    def __init__(self, py: PythonRuntime, js: JavaScriptRuntime) -> None:
        self.py, self.js = py, js
        self.limits: dict[str, dict[str, int]] = {}
        self.configs: OrderedDict[str, str] = OrderedDict()
        self._config_chars = 0

    def learn(self, header: dict[str, Any]) -> None:
        """Keep the limits and configs a request carries (the host sends each once)."""
        for key, wire in header.get("limits", {}).items():
            if len(self.limits) >= _LIMITS_KEPT:
                self.limits.clear()
            self.limits[key] = wire
        for key, config in header.get("configs", {}).items():
            self._keep_config(key, _dumps(config))
        if "contexts" in header:
            self.js.set_capacity(int(header["contexts"]))

    def _keep_config(self, key: str, text: str) -> None:
        old = self.configs.pop(key, None)
        self._config_chars += len(text) - (len(old) if old is not None else 0)
        self.configs[key] = text
        while self._config_chars > _CONFIG_CHARS_KEPT or len(self.configs) > _CONFIGS_KEPT:
            _, gone = self.configs.popitem(last=False)
            self._config_chars -= len(gone)

    def call(self, call: dict[str, Any], event_text: str) -> dict[str, Any] | str:
        """One call of a batch; a worker lacking the call's limits or config asks for them."""
        limits = self.limits.get(call["limits_key"])
        config_text = self.configs.get(call["config_key"])
        if limits is None or config_text is None:
            return {"ok": False, "kind": "need_source"}
        self.configs.move_to_end(call["config_key"])
        call["limits"], call["config_text"] = limits, config_text
        if call["language"] == "javascript":
            return self.js.call_v2(call, event_text)
        return self.py.call_v2(call, event_text)


def run_batch(
    header: dict[str, Any], event_text: str, served: Served, write: Callable[[str], None]
) -> bool:
    """Run a batch's calls in order, each on the event as changed by the answers before it.

    Writes one answer line per call, as soon as the call is done (the host counts each call's
    deadline from the answer before it). Stops after a failure, an answer that ends the chain
    (``effects.stops``) or that the worker cannot apply (``effects.apply_raw`` gives None), and
    marks such a success ``"end": true`` when calls were left. Returns False when the worker
    must be recycled.
    """
    point, calls = header["point"], header["calls"]
    event: dict[str, Any] | None = None
    for i, call in enumerate(calls):
        if i and calls[i - 1]["language"] == "javascript":
            served.js.prepare()  # what follows every JavaScript call (the last one's: main)
        answer = served.call(call, event_text)
        if isinstance(answer, dict) and (answer.get("ok") is not True or answer.get("recycle")):
            write(_encode(answer))
            return not answer.get("recycle")
        value = _value(answer) if i < len(calls) - 1 and call.get("apply", True) else None
        if value is not None:
            base = event if event is not None else json.loads(event_text)
            changed = None if effects.stops(value) else effects.apply_raw(point, base, value)
            if changed is None:
                write(_mark_end(answer))
                return True
            if changed is not base:
                event_text = _dumps(changed)
            event = changed
        write(answer if isinstance(answer, str) else _encode(answer))
    return True


def _value(answer: dict[str, Any] | str) -> Any:
    if isinstance(answer, dict):
        return answer.get("value")
    if answer.startswith(_NULL_ANSWER):
        return None
    return json.loads(answer)["value"]


def _mark_end(answer: dict[str, Any] | str) -> str:
    text = answer if isinstance(answer, str) else _encode(answer)
    return text[:-1] + ',"end":true}'


def _encode(answer: dict[str, Any]) -> str:
    return _dumps(answer)


def compile_script(req: dict[str, Any], served: Served) -> dict[str, Any]:
    """Check and load a script; a compile request carries its limits."""
    served.learn(req)
    runtime: Any = served.js if req["language"] == "javascript" else served.py
    req["limits"] = served.limits[req["limits_key"]]
    return runtime.compile(req)


def main() -> None:
    """Serve requests until stdin closes or a call asks for a recycle (after running out of
    memory, or when the worker has grown too far).

    A request is a header line, and for a batch then the event as one line of JSON text: the
    event is parsed only by what needs it (a runtime, or the worker applying an answer).
    """
    harden()
    # Warnings go nowhere (stderr is closed) and keep no registry a later compile could depend on.
    warnings.simplefilter("ignore")
    js = JavaScriptRuntime()
    py = PythonRuntime(js.regex, address_space_limiter(), warmed=gc.freeze)
    served = Served(py, js)
    # Start-up objects leave the collector's view, so the collection after every call is cheap.
    gc.freeze()
    inp, out = sys.stdin.buffer, sys.stdout.fileno()
    max_line = int(os.environ.get("HOOKENGINE_MAX_REQUEST", "8000000"))
    # After each answer, a short hot wait for the host's next request (learnt, and only while
    # the machine has a core to spare): a worker blocked in read on an idle core wakes slowly.
    hot, requests = Spin(cap=WORKER_SPIN_CAP_S), select.poll()
    requests.register(inp.fileno(), select.POLLIN | select.POLLHUP)

    def write(line: str) -> None:
        # One write per answer line, straight to the pipe (no buffer to copy into and flush).
        data = (line + "\n").encode("utf-8", "surrogatepass")
        while data:
            data = data[os.write(out, data) :]
        hot.since = time.perf_counter()

    def read() -> str | None:
        raw = inp.readline(max_line + 1)
        return raw.decode("utf-8") if raw.endswith(b"\n") else None

    write('{"ready":true}')
    while True:
        hot.wait(requests)
        if (line := read()) is None or not serve(line, read, served, write):
            return
        js.prepare()


def serve(
    line: str, read: Callable[[], str | None], served: Served, write: Callable[[str], None]
) -> bool:
    """Answer one request (its header is ``line``); False: stop serving (EOF or a recycle).

    Every failure becomes an answer, never an exception: a worker bug must answer, not hang
    the host.
    """
    try:
        header = json.loads(line)
        if header.get("op") == "compile":
            write(_encode(compile_script(header, served)))
            return True
        event_text = read()
        if event_text is None:
            return False
        served.learn(header)
        return run_batch(header, event_text, served, write)
    except BaseException as exc:  # noqa: BLE001 - see above
        write(
            _encode(
                {
                    "ok": False,
                    "kind": "crashed",
                    "message": f"worker error: {type(exc).__name__}: {exc}"[:500],
                }
            )
        )
        return True
