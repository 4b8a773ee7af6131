"""The Python runtime of a sandbox worker, called in a loop as the worker calls it (no pipe).

Each row decides the same three tool_call events in turn with ``config/scripts/no_deletes.py``,
through what a worker does per request: parse the request, run the call (fresh globals, guards,
limits, result check, collection) and encode the answer. Rows differ in the protocol (one JSON
line holding everything, or a header line plus the event's text with the config parsed once per
key) and in where a 50 KB deny list lives (none, the script's top level, ``config:``). Rounds
alternate the rows, so a load change on the machine hits them alike; ratios are to the first
row of the batch protocol.

Run: PYTHONPATH=. python bench/bench_py_runtime.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.sandbox.javascript import JavaScriptRuntime
from engine.sandbox.limits import Limits
from engine.sandbox.python import PythonRuntime, address_space_limiter

ROOT = Path(__file__).resolve().parents[1]
GUARD = (ROOT / "config/scripts/no_deletes.py").read_text()
DENY = [f"tool_{i:05d}_forbidden" for i in range(2500)]  # about 50 KB as JSON
EVENTS = [
    {"name": "delete_file", "input": {"path": "a.txt"}},
    {"name": "read_file", "input": {"path": "a.txt"}},
    {"name": "shell", "input": {"command": "ls -la /tmp"}},
]
CONFIG = {"forbidden": ["delete_file", "drop_table"]}
SOURCES = {
    "plain": GUARD,
    "top-level list": f"{GUARD}\nDENY = {json.dumps(DENY)}\n",
    "top-level set display": f"{GUARD}\nDENY = {{{', '.join(json.dumps(d) for d in DENY)}}}\n",
    "top-level set(list)": f"{GUARD}\nDENY = set({json.dumps(DENY)})\n",
}


def event(index: int) -> dict[str, Any]:
    scope = {"user_id": "u1", "session_id": "s1", "template": "t", "process": "p"}
    return {**EVENTS[index % 3], "agent": "a", "point": "tool_call", "scope": scope, "time": 1.0}


class Row:
    """One variant: the requests prepared once, and the per-request work of a worker."""

    def __init__(self, py: PythonRuntime, limits: dict[str, int], source: str, config: Any):
        self.py, self.limits = py, limits
        key = f"k{abs(hash((source, json.dumps(config))))}"
        answer = py.compile({"source": source, "filename": "g.py", "limits": limits, "key": key})
        assert answer["ok"], answer
        script = {"key": key, "filename": "g.py"}
        self.lines = [
            json.dumps(
                {
                    "op": "call",
                    "language": "python",
                    "function": "on_tool_call",
                    "script": script,
                    "event": event(i),
                    "config": config,
                    "state": {},
                    "limits_key": "l",
                }
            )
            for i in range(3)
        ]
        config_text = json.dumps(config)
        header = {"op": "call", "calls": [{"function": "on_tool_call", "script": script}]}
        self.batch = [(json.dumps(header), json.dumps(event(i))) for i in range(3)]
        self.config = {"config_key": key, "config_text": config_text}

    def one_line(self, i: int) -> None:
        req = json.loads(self.lines[i % 3])
        req["limits"] = self.limits
        _encode(self.py.call(req))

    def two_lines(self, i: int) -> None:
        header, event_text = self.batch[i % 3]
        call = json.loads(header)["calls"][0]
        call.update(self.config, limits=self.limits, limits_key="l", state={})
        _encode(self.py.call_v2(call, event_text))


_ENCODER = json.JSONEncoder(separators=(",", ":"))
FAILURES: dict[str, int] = {}
"""Failed calls by cause (a timeout on a loaded machine, with a wall-clock budget)."""


def _encode(answer: dict[str, Any]) -> None:
    if not answer["ok"]:
        cause = str(answer.get("cause", answer.get("kind")))
        FAILURES[cause] = FAILURES.get(cause, 0) + 1
    _ENCODER.encode(answer).encode("utf-8", "surrogatepass")


def timed(fn: Callable[[int], None], calls: int) -> list[float]:
    times = []
    for i in range(calls):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per row and round")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    js = JavaScriptRuntime()
    py = PythonRuntime(js.regex, address_space_limiter())
    gc.freeze()  # as the worker does after start-up
    limits = Limits().as_wire()
    deny_config = {**CONFIG, "deny": DENY}
    rows: dict[str, Callable[[int], None]] = {}
    plain = Row(py, limits, GUARD, CONFIG)
    rows["one line: plain guard"] = plain.one_line
    rows["one line: deny list in config"] = Row(py, limits, GUARD, deny_config).one_line
    if hasattr(py, "call_v2"):
        for name, source in SOURCES.items():
            rows[f"batch: {name}"] = Row(py, limits, source, CONFIG).two_lines
        rows["batch: deny list in config"] = Row(py, limits, GUARD, deny_config).two_lines
    times: dict[str, list[float]] = {name: [] for name in rows}
    for fn in rows.values():
        timed(fn, 100)  # warm-up
    for _ in range(args.rounds):
        for name, fn in rows.items():
            times[name] += timed(fn, args.calls)
    base_name = "batch: plain" if "batch: plain" in times else "one line: plain guard"
    base = statistics.median(times[base_name])
    print(f"{'row':<36} {'p50 µs':>8} {'p90 µs':>8} {'x ' + base_name:>22}")
    for name, ts in times.items():
        p50 = statistics.median(ts)
        p90 = sorted(ts)[int(len(ts) * 0.9)]
        print(f"{name:<36} {p50 * 1e6:>8.1f} {p90 * 1e6:>8.1f} {p50 / base:>22.2f}")
    print(f"failed calls: {FAILURES or 'none'}")


if __name__ == "__main__":
    main()
