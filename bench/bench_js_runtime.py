"""The QuickJS runtime as a worker runs it, in-process: cost per call, per script in rotation,
per 50 KB deny list, and what preparing and checking a context costs.

Every row is one call plus the worker's between-calls step (``prepare()``), as in worker.py,
with no pipe and no host (``whole worker request`` adds what the worker does around the call:
parsing the request's header, writing the answer line): the numbers are the worker's own
share of a decision, in CPU time (a wall clock on 2 shared cores measures the neighbours).

Run: python bench/bench_js_runtime.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import report

from engine.sandbox.javascript import CHECK_CALLS, JavaScriptRuntime
from engine.sandbox.jsscope import top_level_plan
from engine.sandbox.limits import Limits
from engine.sandbox.python import PythonRuntime, address_space_limiter
from engine.sandbox.worker import Served, serve

LIMITS = Limits().as_wire()
GUARD = (
    "function on_tool_call(event, host) {\n"
    "  var cmd = String(event.input.command || '');\n"
    "  if (cmd.indexOf('rm -rf') >= 0) { return {block: 'no deletes'}; }\n"
    "  return null;\n}\n"
)
EVENT = {"name": "shell", "input": {"command": "ls -la /tmp"}, "time": 1700000000.0}
DENY_WORDS = [f"forbidden-command-{i:05d}" for i in range(2000)]  # about 50 KB as JSON
DENY_MAP = {w: 1 for w in DENY_WORDS}  # the same words as an object, looked up by key
LOOKUP = (
    "const has = Object.prototype.hasOwnProperty;\n"
    "function on_tool_call(event, host) {\n"
    "  return has.call(LIST, String(event.input.command)) ? {block: 'denied'} : null;\n}\n"
)
SCAN = (
    "function on_tool_call(event, host) {\n"
    "  return LIST.indexOf(String(event.input.command)) >= 0 ? {block: 'denied'} : null;\n}\n"
)
DENY_TOP = f"const LIST = {json.dumps(DENY_MAP)};\n" + LOOKUP
DENY_CONFIG = LOOKUP.replace("LIST", "host.config.deny")
SCAN_TOP = f"const LIST = {json.dumps(DENY_WORDS)};\n" + SCAN


def measure(fn: Callable[[], object], *, runs: int, warmup: int = 50) -> list[float]:
    """Seconds of this process's CPU per call: in-process, other processes on the machine
    (and there are many on 2 shared cores) do not count, so ratios hold steady."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return times


class Worker:
    """A JavaScriptRuntime driven as worker.py drives it."""

    def __init__(self, capacity: int | None = None) -> None:
        self.js = JavaScriptRuntime()
        if capacity is not None:
            self.js.set_capacity(capacity)

    def load(self, key: str, source: str, *, once: bool = True) -> None:
        plan = top_level_plan(source) if once else None
        req = {"source": source, "filename": "b.js", "key": key, "limits": LIMITS}
        answer = self.js.compile({**req, "top_level": plan})
        assert answer["ok"], answer
        self.js.prepare()

    def v2(
        self, key: str, source: str, config: dict[str, Any], *, once: bool = True
    ) -> Callable[[], object]:
        """One call through call_v2 (what the batch protocol sends), config text made once."""
        call = {
            "function": "on_tool_call",
            "script": {
                "key": key,
                "filename": "b.js",
                "source": source,
                "top_level": top_level_plan(source) if once else None,
            },
            "limits": LIMITS,
            "limits_key": "l",
            "config_key": "c",
            "config_text": json.dumps(config),
            "state": {},
        }
        event_text = json.dumps(EVENT)

        def run() -> object:
            answer = self.js.call_v2(call, event_text)
            self.js.prepare()
            assert isinstance(answer, str), answer
            return answer

        return run

    def request(self, key: str, source: str, config: dict[str, Any]) -> Callable[[], object]:
        """One whole batch request of one call as worker.py serves it: the header line parsed,
        the call, the answer line written (here to a list: no pipe), then ``prepare()``."""
        served = Served(PythonRuntime(self.js.regex, address_space_limiter()), self.js)
        call = {
            "language": "javascript",
            "function": "on_tool_call",
            "script": {"key": key, "filename": "b.js"},
            "limits_key": "l",
            "config_key": "c",
            "apply": True,
            "state": {},
        }
        header = {"op": "batch", "point": "tool_call", "calls": [call]}
        first = {**header, "limits": {"l": LIMITS}, "configs": {"c": config}}
        event_text = json.dumps(EVENT)
        out: list[str] = []
        serve(json.dumps(first), lambda: event_text, served, out.append)
        line = json.dumps(header, separators=(",", ":"))

        def run() -> object:
            out.clear()
            serve(line, lambda: event_text, served, out.append)
            self.js.prepare()
            assert out[0].startswith('{"ok":true'), out
            return out

        return run

    def v1(self, key: str, config: dict[str, Any]) -> Callable[[], object]:
        """One call through the old one-line request (event and config in it)."""
        req = {
            "op": "call",
            "language": "javascript",
            "function": "on_tool_call",
            "script": {"key": key, "filename": "b.js"},
            "event": EVENT,
            "config": config,
            "state": {},
            "limits_key": "l",
        }

        line = json.dumps(req)

        def run() -> object:
            parsed = json.loads(line)  # the worker parses the line in Python, then JS again
            parsed["limits"] = LIMITS
            answer = self.js.call(parsed, line)
            self.js.prepare()
            assert isinstance(answer, str), answer
            return answer

        return run


def rotation(scripts: int, *, capacity: int | None) -> Callable[[], object]:
    """``scripts`` distinct guards called in turn; one call per run."""
    w = Worker(capacity)
    calls = []
    for i in range(scripts):
        source = GUARD.replace("no deletes", f"no deletes ({i})")
        w.load(f"k{i}", source)
        calls.append(w.v2(f"k{i}", source, {}))
    turn = [0]

    def run() -> object:
        turn[0] = (turn[0] + 1) % scripts
        return calls[turn[0]]()

    return run


def prepare_cost(runs: int) -> tuple[float, float, int]:
    """Median ms to prepare a context, µs for one memory look, bytes one context holds."""
    js = JavaScriptRuntime()
    times = []
    for _ in range(runs):
        start = time.process_time()
        c, _ = js._prepare(GUARD, LIMITS, timeout_ms=2000)
        times.append(time.process_time() - start)
    assert c is not None
    look = common.measure(lambda: c.ctx.memory(), runs=2000, warmup=50)
    return (
        statistics.median(times) * 1e3,
        statistics.median(look) * 1e6,
        c.ctx.memory()["malloc_size"],
    )


def rss_per_context(count: int) -> float:
    """MB of worker memory per prepared context: resident size before and after ``count``."""

    def resident() -> int:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * resource.getpagesize()

    before = resident()
    w = Worker(count)
    for i in range(count):
        w.load(f"m{i}", GUARD.replace("no deletes", f"m{i}"))
    return (resident() - before) / 1024 / 1024 / count


def in_turns(cases: dict[str, Callable[[], object]], *, runs: int) -> list[tuple[str, list[float]]]:
    """Each case measured in five turns, the cases one after another in each: a burst of load
    from elsewhere (or a cold start) falls on every case alike, so their ratios hold."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(5):
        for name, fn in cases.items():
            samples[name] += measure(fn, runs=max(40, runs // 5), warmup=20)
    return list(samples.items())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    args = parser.parse_args()
    runs = args.runs
    per_context_mb = rss_per_context(50)  # first, before other runs leave freed memory around

    w = Worker()
    w.load("guard", GUARD)
    w.load("deny_top", DENY_TOP)
    w.load("deny_top_per_call", DENY_TOP, once=False)
    w.load("deny_cfg", DENY_CONFIG)
    w.load("scan_top", SCAN_TOP)
    rows = in_turns(
        {
            "guard, call_v2": w.v2("guard", GUARD, {}),
            "guard, whole worker request": w.request("guard", GUARD, {}),
            "guard, old one-line call": w.v1("guard", {}),
            "50 KB deny list, top level run once": w.v2("deny_top", DENY_TOP, {}),
            "50 KB deny list in config:, call_v2": w.v2(
                "deny_cfg", DENY_CONFIG, {"deny": DENY_MAP}
            ),
            "50 KB deny array scanned (indexOf), run once": w.v2("scan_top", SCAN_TOP, {}),
        },
        runs=runs,
    )
    slow = {
        "50 KB deny list, top level every call": w.v2(
            "deny_top_per_call", DENY_TOP, {}, once=False
        ),
        "50 KB deny list in config:, old call": w.v1("deny_cfg", {"deny": DENY_MAP}),
    }
    rows += in_turns(slow, runs=max(200, runs // 10))
    rotations = {
        f"{n} scripts in rotation, capacity 64": rotation(n, capacity=64) for n in (1, 20, 50)
    }
    rows += in_turns(rotations, runs=runs)
    rows.append(
        (
            "20 scripts in rotation, capacity 16 (old)",
            measure(rotation(20, capacity=None), runs=max(200, runs // 20)),
        )
    )
    report(rows, baseline="guard, call_v2")

    p50 = {name: statistics.median(times) for name, times in rows}
    one = p50["1 scripts in rotation, capacity 64"]
    for scripts in (20, 50):
        ratio = p50[f"{scripts} scripts in rotation, capacity 64"] / one
        print(f"{scripts} scripts / 1 script: {ratio:.2f}x (target <= 1.5)")
    for name in ("50 KB deny list, top level run once", "50 KB deny list in config:, call_v2"):
        print(f"{name} / guard: {p50[name] / p50['guard, call_v2']:.2f}x (target <= 1.3)")
    prep_ms, look_us, held = prepare_cost(50)
    print(
        f"prepare one context: {prep_ms:.2f} ms CPU; one memory look: {look_us:.1f} µs "
        f"(every {CHECK_CALLS} calls: {look_us / CHECK_CALLS:.2f} µs per call)"
    )
    print(
        f"one prepared context: {held / 1024:.0f} KB in QuickJS, "
        f"{per_context_mb:.2f} MB of worker RSS (50 contexts)"
    )


if __name__ == "__main__":
    main()
