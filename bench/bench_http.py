"""The HTTP decision API on loopback, against the same decision made in-process.

A real ``hookengine serve`` process (the demo config, records on, one decide token) answers:

- ``single``: ``POST /v1/agents/demo/points/tool_call``, one client, p50 and p99, next to the
  in-process ``agent.tool_call`` on the same events (the ratio is what HTTP adds);
- ``clients``: the same route from 4 client threads at once (each its own keep-alive
  connection), decisions per second;
- ``batch``: ``POST /v1/batch/agents/demo/points/tool_call`` with 50 inputs, decisions per
  second vs the single route's;
- ``claude``: ``POST /v1/claude-code/demo`` with a PreToolUse payload, p50;
- ``hook``: the ``hookengine-hook`` forwarder (process start included) posting a PreToolUse
  payload to ``$HOOKENGINE_URL``, wall time, next to ``python -c pass``.

Every decision is checked (a delete is blocked, a read is not); a wrong one is counted and
printed. Beside the latencies, the CPU time per decision of the in-process call (this process)
and of the single route (the server process): on a shared machine it moves far less with the
load than wall time does. Bounded: each case runs for at most ``--budget`` seconds. The machine
is shared: read
ratios, not absolute numbers.

Run: python bench/bench_http.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import EVENTS, ROOT, pct

TOKEN_ENV = "HOOKENGINE_BENCH_TOKEN"
TOKEN = "bench-token-0123456789"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def project(tmp: Path) -> Path:
    """The demo config with a decide token, in ``tmp``."""
    config = tmp / "config"
    shutil.copytree(ROOT / "config", config)
    engine_yaml = config / "engine.yaml"
    engine_yaml.write_text(
        engine_yaml.read_text(encoding="utf-8")
        + f"http:\n  tokens:\n    - name: bench\n      env: {TOKEN_ENV}\n"
        "      scopes: [decide, admin]\n",
        encoding="utf-8",
    )
    return config


def start_server(config: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, TOKEN_ENV: TOKEN}
    argv = [sys.executable, "-m", "engine.cli.hookengine", "serve", "--config", str(config)]
    argv += ["--port", str(port), "--db", str(config.parent / "store.db")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"hookengine serve exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/ready", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("hookengine serve did not get ready within 60 s")


def timed(fn: Callable[[int], None], *, runs: int, budget_s: float) -> list[float]:
    """Seconds per call of ``fn(i)``, at most ``runs`` calls or ``budget_s`` seconds."""
    for i in range(20):
        fn(i)
    times: list[float] = []
    stop = time.perf_counter() + budget_s
    for i in range(runs):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
        if t0 > stop:
            break
    return times


class Checker:
    def __init__(self) -> None:
        self.wrong: list[str] = []
        self._lock = threading.Lock()

    def check(self, what: str, blocked: bool, expected: bool) -> None:
        if blocked != expected:
            with self._lock:
                self.wrong.append(f"{what}: blocked={blocked}, expected {expected}")


def event_of(i: int) -> tuple[dict[str, Any], bool]:
    name, tool_input, blocked = EVENTS[i % len(EVENTS)]
    return {"name": name, "input": tool_input}, blocked


def single_call(
    client: httpx.Client, base: str, checker: Checker, engine_s: list[float] | None = None
) -> Callable[[int], None]:
    """One decision per call; the engine's own time of each (``duration_us``) is appended to
    ``engine_s`` if given."""
    url = f"{base}/v1/agents/demo/points/tool_call"

    def call(i: int) -> None:
        event, blocked = event_of(i)
        r = client.post(url, json={"event": event, "scope": {"user_id": "u1"}})
        answer = r.json()
        checker.check(f"single {event['name']} ({r.status_code})", answer.get("blocked"), blocked)
        if engine_s is not None:
            engine_s.append(answer.get("duration_us", 0) / 1e6)

    return call


def batch_call(
    client: httpx.Client, base: str, checker: Checker, size: int
) -> Callable[[int], None]:
    url = f"{base}/v1/batch/agents/demo/points/tool_call"

    def call(i: int) -> None:
        inputs, expected = {}, {}
        for j in range(size):
            event, blocked = event_of(i * size + j)
            inputs[str(j)] = {"event": event, "scope": {"user_id": "u1"}}
            expected[str(j)] = blocked
        r = client.post(url, json={"inputs": inputs})
        responses = r.json().get("responses", {})
        for key, blocked in expected.items():
            checker.check(
                f"batch {key} ({r.status_code})", responses.get(key, {}).get("blocked"), blocked
            )

    return call


def pre_tool_use(i: int) -> tuple[dict[str, Any], bool]:
    event, blocked = event_of(i)
    payload = {
        "session_id": "bench-session",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": event["name"],
        "tool_input": event["input"],
        "tool_use_id": f"toolu_{i}",
    }
    return payload, blocked


def denied(answer: dict[str, Any]) -> bool:
    out = answer.get("hookSpecificOutput") or {}
    return out.get("permissionDecision") == "deny"


def claude_call(client: httpx.Client, base: str, checker: Checker) -> Callable[[int], None]:
    url = f"{base}/v1/claude-code/demo"

    def call(i: int) -> None:
        payload, blocked = pre_tool_use(i)
        r = client.post(url, json=payload)
        checker.check(
            f"claude-code {payload['tool_name']} ({r.status_code})", denied(r.json()), blocked
        )

    return call


def hook_call(base: str, checker: Checker) -> Callable[[int], None]:
    env = {**os.environ, "HOOKENGINE_URL": f"{base}/v1/claude-code/demo", "HOOKENGINE_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "engine.cli.hookengine_hook"]
    hook = shutil.which("hookengine-hook", path=str(Path(sys.executable).parent))
    if hook:
        argv = [hook]

    def call(i: int) -> None:
        payload, blocked = pre_tool_use(i)
        done = subprocess.run(
            argv, input=json.dumps(payload).encode(), env=env, capture_output=True, check=False
        )
        answer = json.loads(done.stdout or b"{}")
        checker.check(
            f"hookengine-hook {payload['tool_name']} (exit {done.returncode})",
            denied(answer),
            blocked,
        )

    return call


def rate(fn: Callable[[int], None], clients: int, seconds: float, per_call: int = 1) -> float:
    """Decisions per second with ``clients`` threads calling ``fn`` for ``seconds``."""
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def run(k: int) -> None:
        i = k * 1_000_000
        while time.perf_counter() < stop:
            fn(i)
            i += 1
            counts[k] += per_call

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def in_process(config: Path, checker: Checker) -> Callable[[int], None]:
    from engine import Engine

    engine = Engine.load(config, db=str(config.parent / "inproc.db"))
    agent = engine.agent("demo")

    def call(i: int) -> None:
        event, blocked = event_of(i)
        out = agent.tool_call(event["name"], event["input"], user_id="u1")
        checker.check(f"in-process {event['name']}", out.blocked, blocked)

    call.engine = engine  # type: ignore[attr-defined]
    return call


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user and system, every thread) of process ``pid``, or of this one. Read
    beside the latencies: on a shared machine a process's CPU time per decision moves far
    less with the load than its wall time does."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def verdict(
    rows: list[tuple[str, str, str, bool]], what: str, measured: str, target: str, met: bool
) -> None:
    rows.append((what, measured, target, met))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    args = parser.parse_args(argv)
    runs, seconds, hooks_runs = (300, 2.0, 10) if args.quick else (3000, 6.0, 20)
    print(uptime())
    checker = Checker()
    rows: list[tuple[str, str, str, bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = project(Path(tmp))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(config, port)
        try:
            local = in_process(config, checker)
            try:
                c0 = cpu_s()
                t_local = timed(local, runs=runs, budget_s=seconds * 2)
                cpu_local = (cpu_s() - c0) / (len(t_local) + 20)
            finally:
                local.engine.close()  # type: ignore[attr-defined]
            with httpx.Client(headers=HEADERS, timeout=10) as client:
                c0 = cpu_s(server.pid)
                engine_s: list[float] = []
                t_single = timed(
                    single_call(client, base, checker, engine_s), runs=runs, budget_s=seconds * 2
                )
                beside = [t - e for t, e in zip(t_single, engine_s[20:], strict=True)]
                cpu_single = (cpu_s(server.pid) - c0) / (len(t_single) + 20)
                t_claude = timed(
                    claude_call(client, base, checker), runs=runs, budget_s=seconds * 2
                )
            clients = [httpx.Client(headers=HEADERS, timeout=10) for _ in range(4)]
            try:
                calls = [single_call(c, base, checker) for c in clients]
                single_rate = rate(lambda i: calls[i // 1_000_000](i), 1, seconds)
                four_rate = rate(lambda i: calls[i // 1_000_000](i), 4, seconds)
                batches = [batch_call(c, base, checker, 50) for c in clients]
                batch_rate = rate(lambda i: batches[i // 1_000_000](i), 1, seconds, per_call=50)
            finally:
                for c in clients:
                    c.close()
            t_hook = timed(hook_call(base, checker), runs=hooks_runs, budget_s=seconds * 4)
            t_pass = timed(
                lambda i: subprocess.run([sys.executable, "-c", "pass"], check=True),
                runs=hooks_runs,
                budget_s=seconds,
            )
        finally:
            server.terminate()
            server.wait(timeout=10)
    p50 = lambda t: statistics.median(t) * 1e3  # noqa: E731
    p99 = lambda t: pct(t, 99) * 1e3  # noqa: E731
    print("\n## HTTP decision API (loopback, hookengine serve, demo config, records on)")
    print(f"  {'case':48} {'p50 ms':>8} {'p99 ms':>8} {'x in-process':>13}")
    for label, t in (
        ("in-process agent.tool_call", t_local),
        ("POST /v1/agents/demo/points/tool_call", t_single),
        ("POST /v1/claude-code/demo (PreToolUse)", t_claude),
        ("hookengine-hook, process start included", t_hook),
        ("python -c pass", t_pass),
    ):
        print(f"  {label:48} {p50(t):8.2f} {p99(t):8.2f} {p50(t) / p50(t_local):13.1f}")
    print(
        f"  decisions/s: 1 client {single_rate:.0f}, 4 clients {four_rate:.0f}, "
        f"batches of 50 (1 client) {batch_rate:.0f}"
    )
    print(
        f"  the single route's engine time (duration_us) p50 / p99: {p50(engine_s[20:]):.2f} / "
        f"{p99(engine_s[20:]):.2f} ms; its latency minus that: {p50(beside):.2f} / "
        f"{p99(beside):.2f} ms"
    )
    print(
        f"  CPU per decision: in-process {cpu_local * 1e3:.2f} ms (the bench process), "
        f"HTTP single {cpu_single * 1e3:.2f} ms (the server process, sandbox workers aside)"
    )
    verdict(
        rows,
        "HTTP tool_call p50 / p99",
        f"{p50(t_single):.2f} / {p99(t_single):.2f} ms",
        "<= 2 / 6 ms",
        p50(t_single) <= 2 and p99(t_single) <= 6,
    )
    verdict(
        rows,
        "HTTP tool_call, 4 clients",
        f"{four_rate:.0f} decisions/s",
        ">= 700/s",
        four_rate >= 700,
    )
    verdict(
        rows,
        "batch of 50 vs single",
        f"{batch_rate / single_rate:.1f}x",
        ">= 3x",
        batch_rate >= 3 * single_rate,
    )
    verdict(rows, "hookengine-hook p50", f"{p50(t_hook):.0f} ms", "<= 100 ms", p50(t_hook) <= 100)
    verdict(rows, "/v1/claude-code p50", f"{p50(t_claude):.2f} ms", "<= 3 ms", p50(t_claude) <= 3)
    verdict(rows, "wrong decisions", str(len(checker.wrong)), "0", not checker.wrong)
    print("\n## Done when")
    print(f"  {'what':32} {'measured':28} {'target':16} verdict")
    for what, measured, target, met in rows:
        print(f"  {what:32} {measured:28} {target:16} {'MET' if met else 'NOT met'}")
    for wrong in checker.wrong[:10]:
        print("  wrong:", wrong)
    print(uptime())
    return 0 if not checker.wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
