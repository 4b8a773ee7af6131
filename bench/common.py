"""Shared bench parts: timing and percentiles, the guard's events and baselines, config trees.

The no_deletes guard is timed against the same decision made by a plain Python function (the
floor) and by Rego evaluated in-process (regopy); every contender decides ``EVENTS`` in turn.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = ["delete_file", "drop_table"]
RM_RF = r"\brm\s+(-\w+\s+)*-\w*[rRf]"
EVENTS: list[tuple[str, dict[str, Any], bool]] = [
    ("delete_file", {"path": "a.txt"}, True),
    ("shell", {"command": "rm -rf /tmp/build"}, True),
    ("read_file", {"path": "notes.txt"}, False),
]
"""(tool name, input, blocked?): the three tool calls every guard contender decides in turn."""
BENIGN: list[tuple[str, dict[str, Any], bool]] = [
    ("read_file", {"path": "notes.txt"}, False),
    ("shell", {"command": "ls -la /tmp"}, False),
    ("write_file", {"path": "b.txt", "text": "hello"}, False),
]
"""Tool calls no guard blocks, so every hook of a point runs."""
GUARD_CONFIG = {"forbidden": FORBIDDEN, "shell_tools": ["shell"]}
REGO = f"""package hooks.no_deletes

default block := ""

forbidden := {{{", ".join(json.dumps(f) for f in FORBIDDEN)}}}

block := sprintf("the tool %s deletes data and is not allowed here", [input.name]) if {{
    forbidden[input.name]
}}

block := sprintf("the command deletes data and is not allowed here: %s",
                 [input.input.command]) if {{
    not forbidden[input.name]
    input.name == "shell"
    regex.match(`{RM_RF}`, input.input.command)
}}
"""


# -- timing ---------------------------------------------------------------------------------


def measure(
    fn: Callable[[], object], *, runs: int, warmup: int = 50, budget_s: float | None = None
) -> list[float]:
    """Seconds per call of ``fn`` for ``runs`` calls after ``warmup`` calls.

    With ``budget_s``, warm-up and runs stop once that much time has passed (after at least
    20 runs), so a case that is 100x slower than expected still ends.
    """
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
        if budget_s is not None and time.perf_counter() - start > budget_s / 4:
            break
    start = time.perf_counter()
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        fn()
        end = time.perf_counter()
        times.append(end - begin)
        if budget_s is not None and end - start > budget_s and len(times) >= 20:
            break
    return times


def uptime() -> str:
    """The load averages, as ``uptime`` prints them, for a bench's first and last lines."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return "load average " + ", ".join(f.read().split()[:3])


def thread_cpu_s(name: str) -> float:
    """CPU seconds (user and system) of this process's thread named ``name`` so far; 0.0 if
    none runs (read from ``/proc``: no thread can time another itself)."""
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            with open(f"/proc/self/task/{thread.native_id}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(rows: list[tuple[str, list[float]]], *, baseline: str) -> None:
    """Print p50/p99 per row in µs and each row's p50 ratio to ``baseline``'s."""
    base = statistics.median(dict(rows)[baseline])
    print(f"{'case':<44} {'p50 µs':>10} {'p99 µs':>10} {'x ' + baseline:>18}")
    for name, times in rows:
        p50 = statistics.median(times)
        print(f"{name:<44} {p50 * 1e6:>10.1f} {pct(times, 0.99) * 1e6:>10.1f} {p50 / base:>18.1f}")


def rotate(decide: Callable[[str, dict[str, Any], bool], object], events: Iterable[Any]) -> Any:
    """A no-argument call that decides the next of ``events`` (cycled) with ``decide``."""
    turn = itertools.cycle(list(events))

    def call() -> object:
        return decide(*next(turn))

    return call


# -- baselines: the guard's decision without the engine -------------------------------------


def plain_python() -> Callable[[], object]:
    """The floor: the guard's decision on ``EVENTS`` as a plain Python function."""
    import re

    pattern = re.compile(RM_RF)

    def decide(name: str, tool_input: dict[str, Any], blocked: bool) -> object:
        if name in FORBIDDEN:
            out: object = {"block": f"the tool {name} deletes data and is not allowed here"}
        elif name == "shell" and pattern.search(tool_input.get("command") or ""):
            out = {"block": "the command deletes data"}
        else:
            out = None
        assert (out is not None) == blocked, name
        return out

    return rotate(decide, EVENTS)


def rego() -> Callable[[], object]:
    """The guard's decision on ``EVENTS`` as Rego, evaluated in-process by regopy."""
    import regopy

    interpreter = regopy.Interpreter()
    interpreter.add_module("no_deletes", REGO)

    def decide(name: str, tool_input: dict[str, Any], blocked: bool) -> object:
        interpreter.set_input_term(json.dumps({"name": name, "input": tool_input}))
        out = interpreter.query("data.hooks.no_deletes.block")
        assert ("deletes data" in str(out)) == blocked, (name, out)
        return out

    return rotate(decide, EVENTS)


def tool_calls(
    agent: Any, events: Iterable[Any], *, misses: list[str] | None = None, call_async: bool = False
) -> Callable[[], Any]:
    """A no-argument ``agent.tool_call`` (or ``atool_call``) on the next of ``events``.

    An outcome other than the expected one (a block of a harmless call, a failed hook) fails
    an assertion, or with ``misses`` is appended to it so a long run can count them.
    """

    def check(name: str, out: Any, blocked: bool) -> Any:
        if out.blocked != blocked or out.failed:
            miss = f"{name}: blocked={out.blocked} failed={out.failed} reason={out.reason}"
            if misses is None:
                raise AssertionError(miss)
            misses.append(miss)
        return out

    def decide(name: str, tool_input: dict[str, Any], blocked: bool) -> Any:
        return check(name, agent.tool_call(name, tool_input, user_id="u1"), blocked)

    async def adecide(name: str, tool_input: dict[str, Any], blocked: bool) -> Any:
        return check(name, await agent.atool_call(name, tool_input, user_id="u1"), blocked)

    return rotate(adecide if call_async else decide, events)


# -- config trees ---------------------------------------------------------------------------


def copy_scripts(config: Path) -> Path:
    """Copy the shipped example scripts to ``config/scripts`` and return that folder."""
    scripts = config / "scripts"
    if not scripts.exists():
        shutil.copytree(ROOT / "config" / "scripts", scripts)
    return scripts


def script_hook(name: str, script: str, config: dict[str, Any] | None = None) -> str:
    """A script_hook YAML; ``script`` is relative to ``config/scripts``."""
    text = f"kind: script_hook\nname: {name}\nscript: ../../../scripts/{script}\n"
    if config:
        text += f"config: {json.dumps(config)}\n"
    return text


def write_agent(config: Path, agent: str, hooks: dict[str, str], *, records: bool = True) -> Path:
    """Write ``agents/<agent>`` with ``{hook name: hook YAML}`` in that order."""
    folder = config / "agents" / agent
    (folder / "hooks").mkdir(parents=True)
    text = f"hooks: [{', '.join(hooks)}]\n"
    if not records:
        text += "records:\n  enabled: false\n"
    (folder / "agent.yaml").write_text(text, encoding="utf-8")
    for name, yaml_text in hooks.items():
        (folder / "hooks" / f"{name}.yaml").write_text(yaml_text, encoding="utf-8")
    return folder
