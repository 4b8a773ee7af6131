"""How the host best waits for a worker's answer: round trip and host CPU per wake-up mechanism.

Each case is a ping-pong of a 64-byte message with a child Python process, the way the pool
talks to a worker. Pipe cases differ only in how the host waits for the answer line:

- ``spin 200us``: poll(0) in a loop for 200 µs, then a blocking poll (the pool before issue 10)
- ``spin 20us``: the same with a short spin
- ``adaptive``: the pool's own wait (``engine.sandbox.hotwait.Spin``): a hot wait learnt from
  this child's recent answers, at most ``SPIN_CAP_S`` from the write, dropped while answers
  are slow
- ``adaptive, both``: the same, and the child waits hot for the next message too, as a worker
  does (``Spin(cap=WORKER_SPIN_CAP_S)`` from its last answer)
- ``poll``: one blocking poll with the deadline as its timeout, then os.read
- ``select``: select.select with the deadline, then os.read
- ``read``: a blocking os.read (the deadline would need a watchdog thread; the floor for pipes)

and two cases that replace the pipe's wake-up: ``eventfd`` (the message in shared memory, each
side blocks in read() on its own eventfd) and ``futex`` (shared memory and FUTEX_WAIT/WAKE via
ctypes; there is no futex in the standard library).

The child answers at once, or after working a while (as a worker runs a script: about 50 µs;
200 µs: a slow script, where a spin can only lose).
Every case runs with the other core idle and then with a process burning it. Printed per case:
p50 and p99 round trip, host CPU per call (thread time of the waiting thread), and both as a
ratio to ``poll``.

Run: python bench/bench_wakeup.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.sandbox.hotwait import Spin

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import ctypes, mmap, os, sys, time
mode = sys.argv[1]
work_s = float(os.environ["BENCH_WORK_US"]) / 1e6
def work():
    until = time.perf_counter() + work_s
    while time.perf_counter() < until:
        pass
if mode in ("pipe", "pipe-hot"):
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    hot = None
    if mode == "pipe-hot":  # the worker's own hot wait for the next request (worker.py)
        import select
        sys.path.insert(0, sys.argv[2])
        from engine.sandbox.hotwait import WORKER_SPIN_CAP_S, Spin
        hot, requests = Spin(cap=WORKER_SPIN_CAP_S), select.poll()
        requests.register(0, select.POLLIN | select.POLLHUP)
    while True:
        if hot is not None:
            hot.wait(requests)
        line = inp.readline()
        if not line:
            break
        work()
        out.write(line)
        out.flush()
        if hot is not None:
            hot.since = time.perf_counter()
elif mode == "eventfd":
    to_child, to_host, memfd = map(int, sys.argv[2:5])
    mm = mmap.mmap(memfd, 4096)
    while True:
        os.eventfd_read(to_child)
        work()
        mm[128:192] = mm[64:128]
        os.eventfd_write(to_host, 1)
else:
    memfd = int(sys.argv[2])
    mm = mmap.mmap(memfd, 4096)
    word = ctypes.c_int.from_buffer(mm)
    addr = ctypes.addressof(word)
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    while True:
        while word.value != 1:
            syscall(202, ctypes.c_void_p(addr), 0, 2, None)  # FUTEX_WAIT while it is 2
        work()
        mm[128:192] = mm[64:128]
        word.value = 2
        syscall(202, ctypes.c_void_p(addr), 1, 1)  # FUTEX_WAKE one
"""
MESSAGE = b"x" * 63 + b"\n"
DEADLINE_S = 1.0


class PipeChild:
    """An echo child on stdin/stdout; ``wait`` is the host's wake-up under test."""

    def __init__(self, wait: Callable[[int], None], *, hot: bool = False) -> None:
        mode = ["pipe-hot", str(ROOT)] if hot else ["pipe"]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, *mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.inp = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self.wait = wait

    def round_trip(self) -> None:
        os.write(self.inp, MESSAGE)
        sent.append(time.perf_counter())
        buf = b""
        while not buf.endswith(b"\n"):
            self.wait(self.out)
            buf += os.read(self.out, 65536)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def make_poll() -> Callable[[int], None]:
    polls: dict[int, select.poll] = {}

    def wait(fd: int) -> None:
        p = polls.get(fd)
        if p is None:
            p = polls[fd] = select.poll()
            p.register(fd, select.POLLIN | select.POLLHUP)
        if not p.poll(DEADLINE_S * 1000):
            raise TimeoutError

    return wait


def make_spin(spin_s: float) -> Callable[[int], None]:
    polls: dict[int, select.poll] = {}

    def wait(fd: int) -> None:
        p = polls.get(fd)
        if p is None:
            p = polls[fd] = select.poll()
            p.register(fd, select.POLLIN | select.POLLHUP)
        until = time.perf_counter() + spin_s
        while time.perf_counter() < until:
            if p.poll(0):
                return
        if not p.poll(DEADLINE_S * 1000):
            raise TimeoutError

    return wait


sent: list[float] = [0.0]
"""When the last message was written (the adaptive wait counts its budget from there)."""


def make_adaptive() -> Callable[[int], None]:
    polls: dict[int, tuple[select.poll, Spin]] = {}

    def wait(fd: int) -> None:
        if fd not in polls:
            p = select.poll()
            p.register(fd, select.POLLIN | select.POLLHUP)
            polls[fd] = (p, Spin())
        p, spin = polls[fd]
        spin.since = sent[-1]
        del sent[:-1]
        if not spin.wait(p) and not p.poll(DEADLINE_S * 1000):
            raise TimeoutError

    return wait


def wait_select(fd: int) -> None:
    if not select.select([fd], [], [], DEADLINE_S)[0]:
        raise TimeoutError


def wait_nothing(fd: int) -> None:
    """os.read blocks by itself."""


class SharedChild:
    """A child that shares a page with the host and is woken by eventfd or futex."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.memfd = os.memfd_create("bench-wakeup")
        os.ftruncate(self.memfd, 4096)
        self.mm = mmap.mmap(self.memfd, 4096)
        fds = [self.memfd]
        args = [str(self.memfd)]
        if mode == "eventfd":
            self.to_child, self.to_host = os.eventfd(0), os.eventfd(0)
            fds += [self.to_child, self.to_host]
            args = [str(self.to_child), str(self.to_host), str(self.memfd)]
        else:
            self.word = ctypes.c_int.from_buffer(self.mm)
            self.word.value = 2
            self.addr = ctypes.c_void_p(ctypes.addressof(self.word))
            self.syscall = ctypes.CDLL(None, use_errno=True).syscall
            self.timeout = _timespec(DEADLINE_S)
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, *args], pass_fds=fds)

    def round_trip(self) -> None:
        self.mm[64:128] = MESSAGE
        if self.mode == "eventfd":
            os.eventfd_write(self.to_child, 1)
            os.eventfd_read(self.to_host)
        else:
            self.word.value = 1
            self.syscall(202, self.addr, 1, 1)
            while self.word.value != 2:
                self.syscall(202, self.addr, 0, 1, ctypes.byref(self.timeout))
        if self.mm[128:192] != MESSAGE:
            raise RuntimeError("the child answered something else")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.mode == "eventfd":
            os.close(self.to_child)
            os.close(self.to_host)
        else:
            del self.word, self.addr  # they export the buffer: the map cannot close before
        self.mm.close()
        os.close(self.memfd)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _timespec(seconds: float) -> _Timespec:
    return _Timespec(int(seconds), int(seconds % 1 * 1e9))


def run_case(child: PipeChild | SharedChild, calls: int) -> tuple[list[float], float]:
    """Round-trip times and host CPU seconds per call."""
    for _ in range(200):
        child.round_trip()
    times = []
    cpu = time.thread_time()
    for _ in range(calls):
        start = time.perf_counter()
        child.round_trip()
        times.append(time.perf_counter() - start)
    return times, (time.thread_time() - cpu) / calls


CASES: dict[str, Callable[[], PipeChild | SharedChild]] = {
    "poll": lambda: PipeChild(make_poll()),
    "adaptive": lambda: PipeChild(make_adaptive()),
    "adaptive, both": lambda: PipeChild(make_adaptive(), hot=True),
    "select": lambda: PipeChild(wait_select),
    "read": lambda: PipeChild(wait_nothing),
    "spin 20us": lambda: PipeChild(make_spin(20e-6)),
    "spin 200us": lambda: PipeChild(make_spin(200e-6)),
    "eventfd": lambda: SharedChild("eventfd"),
    "futex": lambda: SharedChild("futex"),
}


def measure_all(calls: int, rounds: int) -> dict[str, tuple[float, float, float]]:
    """Per case: median over rounds of (p50 s, p99 s, CPU s per call); cases interleave."""
    found: dict[str, list[tuple[float, float, float]]] = {name: [] for name in CASES}
    for _ in range(rounds):
        for name, make in CASES.items():
            child = make()
            try:
                times, cpu = run_case(child, calls)
            finally:
                child.close()
            times.sort()
            found[name].append((times[len(times) // 2], times[int(len(times) * 0.99)], cpu))
    return {
        name: tuple(statistics.median(r[i] for r in rows) for i in range(3))  # type: ignore[misc]
        for name, rows in found.items()
    }


def print_table(title: str, rows: dict[str, tuple[float, float, float]]) -> None:
    base = rows["poll"]
    print(f"\n{title}")
    columns = ("p50 µs", "p99 µs", "CPU µs", "p50 x poll", "CPU x poll")
    print(
        f"{'case':<12}" + "".join(f" {c:>8}" for c in columns[:3]) + f" {columns[3]:>11}"
        f" {columns[4]:>11}"
    )
    for name, (p50, p99, cpu) in rows.items():
        print(
            f"{name:<12} {p50 * 1e6:>8.1f} {p99 * 1e6:>8.1f} {cpu * 1e6:>8.1f}"
            f" {p50 / base[0]:>11.2f} {cpu / base[2]:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--work-us", default="0,50,200", help="comma-separated µs the child works before it answers"
    )
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for work in args.work_us.split(","):
        os.environ["BENCH_WORK_US"] = work
        print_table(f"child works {work} µs, other core idle", measure_all(args.calls, args.rounds))
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.2)
            rows = measure_all(args.calls, args.rounds)
        finally:
            burner.kill()
            burner.wait()
        print_table(f"child works {work} µs, other core busy (a process burns it)", rows)


if __name__ == "__main__":
    main()
