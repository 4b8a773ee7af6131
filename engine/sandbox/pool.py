"""The supervised worker pool: scripts compile and run in pre-started worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from engine.errors import ScriptLimitError

_ROOT = Path(__file__).resolve().parents[2]
# The worker imports only engine/sandbox: the stubs keep engine/__init__ (the whole engine,
# pydantic and SQLAlchemy included) out of every worker's memory and start-up time.
_BOOT = (
    "import sys, types\n"
    "for name, sub in (('engine', 'engine'), ('engine.sandbox', 'engine/sandbox')):\n"
    "    m = types.ModuleType(name); m.__path__ = [sys.argv[1] + '/' + sub]\n"
    "    sys.modules[name] = m\n"
    "from engine.sandbox.worker import main\n"
    "main()\n"
)
START_TIMEOUT_S = 10.0
SPIN_S = 0.0002
"""How long a caller polls for an answer without sleeping before it blocks."""
GRACE_S = 0.25
"""Wall-clock time past a call's own limit before the parent kills the worker."""


class WorkerDied(Exception):
    """The worker closed its pipe, overran its deadline or answered nonsense."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


class Worker:
    """One worker process and its pipes; used by one thread at a time (the pool sees to it)."""

    def __init__(self, cwd: str) -> None:
        self.proc = subprocess.Popen(
            # -s -P is -I minus -E, which would ignore PYTHONHASHSEED; the env is only what follows.
            [sys.executable, "-s", "-P", "-c", _BOOT, str(_ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            # A fixed hash seed: a set of strings iterates in the same order in every worker.
            env={"LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"},
            close_fds=True,
        )
        self._out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._in = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._buf = b""
        self._ready = False
        self.known: set[str] = set()

    def request(self, data: bytes, *, deadline_s: float, max_bytes: int) -> dict[str, Any]:
        """Send one request line and wait for its answer until the wall-clock deadline."""
        if not self._ready:
            self._read(time.monotonic() + START_TIMEOUT_S, 1024)
            self._ready = True
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._in, view) :]
        except OSError as exc:
            raise WorkerDied(f"worker pipe closed: {exc}") from exc
        return self._read(time.monotonic() + deadline_s, max_bytes)

    def _read(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        while b"\n" not in self._buf:
            if not self._spin():
                left = deadline - time.monotonic()
                if left <= 0 or not self._poll.poll(left * 1000):
                    raise WorkerDied("worker overran its deadline", timed_out=True)
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise WorkerDied("worker exited")
            self._buf += chunk
            if len(self._buf) > max_bytes:
                raise WorkerDied(f"worker answer larger than {max_bytes} bytes")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise WorkerDied("worker answered malformed JSON") from exc
        if type(answer) is not dict:
            raise WorkerDied("worker answered a non-object")
        return answer

    def _spin(self) -> bool:
        """Poll without sleeping for a short while: most answers come within SPIN_S, and
        waking from a blocking poll costs more on a VM than the whole call."""
        until = time.perf_counter() + SPIN_S
        while time.perf_counter() < until:
            if self._poll.poll(0):
                return True
        return False

    def close(self) -> None:
        """End the process (EOF first, then kill) and reap it, so nothing is left behind."""
        proc = self.proc
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        self.proc.kill()
        self.close()


class Workers:
    """A thread-safe set of workers: take one, give it back, or replace it if it failed."""

    def __init__(self, size: int) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="hookengine-sandbox-")
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(max(1, size)):
            self._idle.put(self._spawn())

    def _spawn(self) -> Worker:
        worker = Worker(self._dir.name)
        with self._lock:
            self._all.add(worker)
        return worker

    def take(self) -> Worker:
        if self._closed:
            raise ScriptLimitError("the sandbox is closed", cause="crashed")
        # LIFO: the worker used last has its script context and caches hot (contexts are
        # reused, so there is no preparation to wait for on the idle ones).
        return self._idle.get()

    def give_back(self, worker: Worker, *, healthy: bool) -> None:
        if healthy and not self._closed:
            self._idle.put(worker)
            return
        worker.kill()
        with self._lock:
            self._all.discard(worker)
        if not self._closed:
            self._idle.put(self._spawn())

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers = list(self._all)
            self._all.clear()
        for worker in workers:
            worker.close()
        self._dir.cleanup()
