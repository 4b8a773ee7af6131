"""HTTP decisions on loopback against the in-process call: ``tool_call`` with the demo guards,
4 clients, the engine run in a threadpool (``evaluate``) or on the event loop (``aevaluate``),
the request parsed by httptools on uvloop or by h11 on asyncio's loop; and a batch of 50
against 50 single requests.

The server runs in its own process (``--serve``), so the clients do not share its GIL. Bounded:
``--requests`` per client per contender (default 500).

    python bench/bench_http_modes.py [--requests N] [--clients 4] [--rounds R] [--modes M,...]

bench/bench_http.py times the routes themselves (single, 4 clients, batch, Claude Code, the
forwarder); this one compares ways of running decisions behind them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENIGN, EVENTS, ROOT, pct

TOKEN = "bench-decide-token"
ENGINE_YAML = """process: bench
db_path: data/bench.db
records: {enabled: true}
scripts: {timeout_ms: 200, memory_mb: 32, workers: 2}
hooks: [house_rules]
http:
  max_concurrency: 256
  tokens: [{name: bench, env: BENCH_DECIDE, scopes: [decide]}]
"""


def serve(mode: str, port: int, config: str, db: str) -> None:
    """The server role: the demo config, decisions in a threadpool or on the loop; ``h11``:
    in a threadpool, the request parsed by h11 on asyncio's loop (``serve`` without the
    ``http`` extra's httptools and uvloop)."""
    from engine.http import decisions
    from engine.http.server import GuardedH11Protocol, build_server
    from engine.runtime import Engine

    if mode == "loop":

        async def on_loop(fn: Any, agent: Any, point: str, *args: Any, **kw: Any) -> Any:
            if fn is decisions.evaluate:
                event, scope = args
                return await agent.aevaluate(point, event, host=kw["host"], **scope)
            return fn(agent, point, *args, **kw)

        decisions.run_in_threadpool = on_loop  # type: ignore[assignment]
    with Engine.load(config, db=db) as engine:
        server = build_server(engine, "127.0.0.1", port, log_level="warning")
        if mode == "h11":
            server.config.http, server.config.loop = GuardedH11Protocol, "asyncio"
        server.run()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(mode: str, config: Path, db: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "BENCH_DECIDE": TOKEN, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, __file__, "--serve", mode, str(port), str(config), str(db)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/v1/ready", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not become ready")


def bodies() -> list[dict[str, Any]]:
    return [{"event": {"name": n, "input": i}} for n, i, _ in EVENTS + BENIGN]


WARMUP = 5
"""Requests each client sends before the timed run (all clients warm up, then start at once)."""


def clients(base: str, url: str, payloads: list[Any], *, n: int, each: int) -> list[float]:
    """``n`` keep-alive clients, ``each`` timed requests apiece after ``WARMUP``; every
    latency in seconds, then the wall time of the timed run as the last item."""
    times: list[float] = []
    lock = threading.Lock()
    ready = threading.Barrier(n + 1)

    def post(c: httpx.Client, k: int) -> float:
        start = time.perf_counter()
        response = c.post(url, json=payloads[k % len(payloads)])
        assert response.status_code == 200, response.text
        return time.perf_counter() - start

    def run() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
            for k in range(WARMUP):
                post(c, k)
            ready.wait()
            mine = [post(c, k) for k in range(each)]
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    times.append(time.perf_counter() - began)
    return times


def cpu_s(pid: int) -> float:
    """CPU seconds (user and system, every thread) of process ``pid``: on a shared machine
    it moves far less with the load than wall time does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def row(name: str, times: list[float], decisions: int) -> float:
    wall, lat = times[-1], times[:-1]
    rate = decisions / wall
    print(
        f"  {name:<34} p50 {pct(lat, 0.5) * 1e3:6.2f} ms  p99 {pct(lat, 0.99) * 1e3:6.2f} ms"
        f"  {rate:8.0f} decisions/s"
    )
    return rate


def batch_in_process(config: Path, db: Path) -> None:
    """50 decisions in process: in order, over 4 threads, gathered with ``aevaluate``."""
    from concurrent.futures import ThreadPoolExecutor

    from engine.runtime import Engine

    events = [b["event"] for b in bodies() * 9][:50]
    with Engine.load(config, db=str(db)) as engine, ThreadPoolExecutor(4) as pool:
        agent = engine.agent("demo")

        def in_order() -> None:
            for event in events:
                agent.evaluate("tool_call", event)

        def threads() -> None:
            list(pool.map(lambda event: agent.evaluate("tool_call", event), events))

        async def gather() -> None:
            await asyncio.gather(*(agent.aevaluate("tool_call", e) for e in events))

        ways = {"in order": in_order, "4 threads": threads}
        ways["gathered (aevaluate)"] = lambda: asyncio.run(gather())
        for run in ways.values():
            run()  # warm
        for name, run in ways.items():
            start = time.perf_counter()
            for _ in range(5):
                run()
            print(f"  50 in process, {name:<22} {(time.perf_counter() - start) / 5 * 1e3:6.1f} ms")


def in_process(config: Path, db: Path, runs: int) -> list[float]:
    from engine.runtime import Engine

    with Engine.load(config, db=str(db)) as engine:
        agent = engine.agent("demo")
        events = bodies()
        times = []
        for k in range(runs + 50):
            start = time.perf_counter()
            agent.evaluate("tool_call", events[k % len(events)]["event"])
            if k >= 50:
                times.append(time.perf_counter() - start)
    return times


URL = "/v1/agents/demo/points/tool_call"
BATCH_URL = "/v1/batch/agents/demo/points/tool_call"


def contend(mode: str, config: Path, db: Path, *, n: int, each: int, local: float) -> None:
    """One server in ``mode``: single requests, then batches of 50."""
    proc, base = start(mode, config, db)
    try:
        before = cpu_s(proc.pid)
        single = clients(base, URL, bodies(), n=n, each=each)
        cpu = (cpu_s(proc.pid) - before) / (n * (each + WARMUP))
        rate = row(f"HTTP single ({mode})", single, n * each)
        print(f"  {'':<34} p50 / in-process p50: {pct(single[:-1], 0.5) / local:.1f}x")
        print(f"  {'':<34} server CPU per decision: {cpu * 1e3:.2f} ms")
        events = bodies() * 9
        batch = {"inputs": {f"i{k}": events[k] for k in range(50)}}
        rounds = max(each // 25, 4)
        batched = clients(base, BATCH_URL, [batch], n=n, each=rounds)
        batch_rate = row(f"HTTP batch of 50 ({mode})", batched, n * rounds * 50)
        print(f"  {'':<34} batch / single throughput: {batch_rate / rate:.1f}x")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=500, help="per client per contender")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="repeat the modes in turn")
    parser.add_argument(
        "--modes",
        default="thread,loop,h11",
        help="thread: httptools, uvloop, decisions in a threadpool (serve's way); loop: the "
        "same with decisions on the event loop; h11: h11 and asyncio's loop, threadpool",
    )
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        mode, port, config, db = args.serve
        serve(mode, int(port), config, db)
        return
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config"
        shutil.copytree(ROOT / "config", config)
        (config / "engine.yaml").write_text(ENGINE_YAML)
        local = pct(in_process(config, Path(tmp) / "local.db", args.requests), 0.5)
        print(f"tool_call, demo guards, {args.clients} clients, {args.requests} requests each")
        print(f"  {'in-process evaluate':<34} p50 {local * 1e3:6.2f} ms")
        batch_in_process(config, Path(tmp) / "batch.db")
        for r in range(args.rounds):
            for mode in args.modes.split(","):
                db = Path(tmp) / f"{mode}{r}.db"
                contend(mode, config, db, n=args.clients, each=args.requests, local=local)


if __name__ == "__main__":
    main()
