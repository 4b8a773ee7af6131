"""One sandbox worker process and its pipes: start-up, requests, answers, the host's wait."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.sandbox import hostclock
from engine.sandbox.hotwait import Spin

if TYPE_CHECKING:
    import asyncio  # imported where used: only the async paths need it

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
_decode = json.JSONDecoder().decode


def wake_future(future: asyncio.Future[Any], result: Any = None) -> None:
    """Complete ``future`` with ``result`` unless something completed it first."""
    if not future.done():
        future.set_result(result)


class Alarms:
    """The deadlines of one event loop's waits (a task's wait for a worker, for an answer),
    under one loop timer set for the earliest of them.

    A timer per wait (``call_later``, then ``cancel``) costs an object, a heap push and a
    cancelled handle left in the heap for every answer, though nearly every wait ends long
    before its deadline: here a wait is a dict entry, and the timer fires about once per
    deadline span (then it wakes what is due and is set again for the earliest left).
    Deadlines are on ``hostclock`` (a collector pause of the host does not count); used only
    from the loop's own thread.

    The timer is never cancelled, nor held here: a timer made moot by an earlier one fires
    later and does nothing. Held, it would hold its loop, and a loop closed before its
    timer fired (``asyncio.run`` per request) would never be freed, nor its epoll descriptor.
    """

    __slots__ = ("_at", "_due")

    def __init__(self) -> None:
        self._due: dict[asyncio.Future[Any], tuple[float, Any]] = {}
        self._at = float("inf")
        """When the earliest timer set fires (inf: none is set, or it fired)."""

    def set(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        deadline: float,
        value: Any,
    ) -> None:
        """Complete ``future`` with ``value`` at ``deadline`` unless ``clear`` comes first."""
        self._due[future] = (deadline, value)
        if deadline < self._at:
            self._arm(loop, deadline)

    def clear(self, future: asyncio.Future[Any]) -> None:
        """The wait of ``future`` is over: no alarm for it."""
        self._due.pop(future, None)

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        self._at = deadline
        loop.call_later(max(deadline - hostclock.now(), 0.0), self._sweep, loop, deadline)

    def _sweep(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        """Wake every wait that is due; set the timer for the earliest one left. A timer set
        for other than ``_at`` was made moot by an earlier one (which swept and set the next):
        it does nothing, or timers would pile up."""
        if at != self._at:
            return
        self._at = float("inf")
        now = hostclock.now()
        for future, (deadline, value) in list(self._due.items()):
            if deadline <= now:
                del self._due[future]
                wake_future(future, value)
        if self._due:
            self._arm(loop, min(deadline for deadline, _ in self._due.values()))


_alarms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Alarms] = weakref.WeakKeyDictionary()


def alarms(loop: asyncio.AbstractEventLoop) -> Alarms:
    """The ``Alarms`` of ``loop`` (made on its first wait; they go with the loop)."""
    found = _alarms.get(loop)
    if found is None:
        found = _alarms[loop] = Alarms()
    return found


def _loop_idle() -> bool:
    """Whether the running asyncio loop has no callback ready to run, so a hot wait holds up
    no other task. It reads the asyncio loop's own queue; a loop that keeps none (uvloop)
    never counts as idle, and there a hot wait only yields to the loop between looks."""
    import asyncio

    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    # a cancelled handle (a timer given up) still sits there until the loop skips it
    return ready is not None and all(handle.cancelled() for handle in ready)


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
            # TZ: a script's Date shows UTC on every machine, so a replay reads the same
            env={"LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "TZ": "UTC"},
            close_fds=True,
        )
        self._out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._in = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.spin = Spin()
        self._buf = b""
        self._ready = False
        self.known: set[str] = set()
        """Keys of the scripts, limits and configs the worker has (it is sent them once)."""
        self.contexts = 0
        """The prepared-context count the worker was last told (0: its default)."""

    def wait_ready(self) -> None:
        """Wait for the worker's ready line (its start-up), at most START_TIMEOUT_S."""
        if not self._ready:
            self._read(hostclock.now() + START_TIMEOUT_S, 1024)
            self._ready = True

    def request(self, data: bytes, *, deadline_s: float, max_bytes: int) -> dict[str, Any]:
        """Send one request and wait for its (one-line) answer until the wall-clock deadline
        (blocking: a compile takes milliseconds, and must not teach the spin otherwise)."""
        self.send(data)
        return self._read(hostclock.now() + deadline_s, max_bytes)

    def send(self, data: bytes) -> None:
        """Write a request (the pipe takes it whole: a worker reads while the host writes)."""
        if not self._ready:
            self.wait_ready()
        try:
            written = os.write(self._in, data)
            if written < len(data):  # a request larger than the pipe's buffer
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(self._in, view) :]
            self.spin.since = time.perf_counter()
        except OSError as exc:
            raise WorkerDied(f"worker pipe closed: {exc}") from exc

    def read_answer(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        """The next answer line: first a short hot wait (``Spin``: learnt per worker, dropped
        while answers are slow), then a blocking poll until the monotonic ``deadline``.

        A blocking os.read would save another ~2% of the round trip but needs a watchdog thread
        for the deadline; an eventfd or a futex needs the answer in shared memory.
        """
        answer = self._line(max_bytes)
        if answer is None and self.spin.wait(self._poll):
            self._fill()
            answer = self._line(max_bytes)
        if answer is None:
            answer = self._read(deadline, max_bytes)
        self.spin.since = time.perf_counter()  # the next answer of a batch counts from here
        return answer

    def _read(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        while (answer := self._line(max_bytes)) is None:
            # Past the deadline, one last look (a zero timeout): a host thread that waited for
            # the GIL (or the CPU) may wake late to an answer the worker gave in time.
            left = max(deadline - hostclock.now(), 0.0)
            if not self._poll.poll(left * 1000):
                if deadline > hostclock.now():
                    continue  # the host stood still in its collector meanwhile
                raise WorkerDied("worker overran its deadline", timed_out=True)
            self._fill()
        return answer

    async def aread_answer(self, deadline: float, max_bytes: int) -> dict[str, Any]:
        """``read_answer`` on the running event loop: the same short hot wait first, in which
        other tasks run whenever they are ready (``_hot``), then ``loop.add_reader``."""
        while (answer := self._line(max_bytes)) is None:
            ready = self._poll.poll(0) or await self._hot()
            if not ready and not await self._readable(deadline):
                if deadline > hostclock.now():
                    continue  # the host stood still in its collector meanwhile
                raise WorkerDied("worker overran its deadline", timed_out=True)
            self._fill()
        self.spin.since = time.perf_counter()  # the next answer of a batch counts from here
        return answer

    async def _hot(self) -> bool:
        """``Spin.wait`` for a task: look for the answer until the learnt budget runs out,
        and between looks let every other ready task of the loop run first, so the wait only
        spins while the loop has nothing else to do. A loop asleep in epoll wakes as slowly
        as a blocked process (tens of µs on this VM), which is what the hot wait saves."""
        until = self.spin.start()
        if not until:
            return False
        import asyncio

        while not self._poll.poll(0):
            if time.perf_counter() >= until:
                self.spin.missed()
                return False
            if not _loop_idle():
                await asyncio.sleep(0)
        self.spin.came()
        return True

    async def _readable(self, deadline: float) -> bool:
        """Wait on the loop until the pipe is readable (True) or the deadline passed; past
        it, one last look, as in ``_read``."""
        import asyncio

        loop = asyncio.get_running_loop()
        woke: asyncio.Future[bool] = loop.create_future()
        loop.add_reader(self._out, wake_future, woke, True)
        alarm = alarms(loop)
        alarm.set(loop, woke, deadline, False)
        try:
            readable = await woke
        finally:
            loop.remove_reader(self._out)
            alarm.clear(woke)
        return readable or bool(self._poll.poll(0))

    def _fill(self) -> None:
        try:
            chunk = os.read(self._out, 1 << 16)
        except OSError as exc:  # closed under us: the pool is closing
            raise WorkerDied(f"worker pipe closed: {exc}") from exc
        if not chunk:
            raise WorkerDied("worker exited")
        self._buf += chunk

    def _line(self, max_bytes: int) -> dict[str, Any] | None:
        """The first whole answer line of the buffer, parsed; None while there is none."""
        end = self._buf.find(b"\n")
        if end < 0:
            if len(self._buf) > max_bytes:
                raise WorkerDied(f"worker answer larger than {max_bytes} bytes")
            return None
        line, self._buf = self._buf[:end], self._buf[end + 1 :]
        if len(line) > max_bytes:
            raise WorkerDied(f"worker answer larger than {max_bytes} bytes")
        try:
            answer = _decode(line.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError) as exc:
            raise WorkerDied("worker answered malformed JSON") from exc
        if type(answer) is not dict:
            raise WorkerDied("worker answered a non-object")
        return answer

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
