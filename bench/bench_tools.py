"""Tool calls through the one guarded call path, against calling the tool directly.

Rows (targets from the issue, on 2 cores):

- ``raw``: a trivial in-process Python tool's ``invoke`` called directly;
- ``call_tool, no hooks``: the same tool through ``Agent.call_tool`` (tool_call and
  tool_result evaluated with no hook, the input checked, the tool run in a tool thread):
  p50 over ``raw`` <= 250 µs;
- ``call_tool, demo JS guard at both points``: ``no_deletes.js`` at tool_call and
  ``redact_secrets.js`` at tool_result: p50 <= 1 ms;
- ``script tool``: a Python script tool (``run`` in a sandbox worker), no hooks: p50 <= 500 µs;
- ``cached spec export``: ``tool_specs("openai-chat")`` once made: p50 <= 50 µs;
- ``mcp-serve round trip``: ``tools/call`` of the script tool by ``mcp.Client`` over stdio
  to ``hookengine mcp-serve``: p50 <= 3 ms.

Records are on (the engine's default). Every result is checked.

Run: python bench/bench_tools.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import GUARD_CONFIG, ROOT, copy_scripts, measure, pct, script_hook

from engine import Engine
from engine.tools import kinds
from engine.tools.base import ToolResult, ToolSpec

SCHEMA = (
    "input_schema:\n  type: object\n  properties:\n    text: {type: string}\n"
    "  required: [text]\n  additionalProperties: false\n"
)
SCRIPT = 'def run(input, host):\n    return "echo: " + input["text"]\n'


@dataclass
class TrivialTool:
    spec: ToolSpec
    path: Path
    enabled: bool = True
    timeout_ms: int | None = None
    isolation: Literal["thread", "process"] = "thread"
    kind: str = "bench_python"

    def invoke(self, input: Mapping[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(content="echo: " + str(input["text"]))

    def close(self) -> None:
        pass


def load_bench(path: Path, data: dict[str, Any], ctx: Any) -> list[Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return [TrivialTool(ToolSpec(data["name"], "Echo.", schema), path)]


def write_project(config: Path, *, trivial: bool = True) -> None:
    """Agents ``bare`` (no hooks) and ``guarded``; without ``trivial`` only the script tool
    (what a ``mcp-serve`` process can load: the bench kind is registered in this one)."""
    copy_scripts(config)
    tools = {
        "trivial.yaml": "kind: bench_python\nname: trivial\n",
        "script_echo.yaml": (
            "kind: script_tool\nname: script_echo\ndescription: Echo.\nscript: echo.py\n" + SCHEMA
        ),
        "echo.py": SCRIPT,
    }
    hooks = {
        "no_deletes": script_hook("no_deletes", "no_deletes.js", GUARD_CONFIG),
        "redact_secrets": script_hook("redact_secrets", "redact_secrets.js"),
    }
    for agent, hooked in (("bare", {}), ("guarded", hooks)):
        folder = config / "agents" / agent
        (folder / "tools").mkdir(parents=True)
        (folder / "hooks").mkdir()
        listed = "trivial, script_echo" if trivial else "script_echo"
        text = f"tools: [{listed}]\n" + (f"hooks: [{', '.join(hooked)}]\n" if hooked else "")
        (folder / "agent.yaml").write_text(text)
        for name, body in tools.items():
            (folder / "tools" / name).write_text(body)
        for name, body in hooked.items():
            (folder / "hooks" / f"{name}.yaml").write_text(body)


def row(name: str, times: list[float], target: str = "", limit_us: float | None = None) -> None:
    """One row: p50 and p99 in µs, the target and whether the p50 met it."""
    p50 = statistics.median(times) * 1e6
    verdict = "" if limit_us is None else ("MET" if p50 <= limit_us else "NOT met")
    print(f"{name:<48} {p50:>9.1f} {pct(times, 0.99) * 1e6:>9.1f}  {target:<24} {verdict}")


def mcp_times(config: Path, db: str, runs: int) -> list[float]:
    import anyio
    from mcp import Client, StdioServerParameters

    command = [sys.executable, "-m", "engine.cli.hookengine", "mcp-serve", "--agent", "bare"]
    command += ["--config", str(config), "--db", db]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    times: list[float] = []

    async def session() -> None:
        async with Client(params, mode="legacy") as client:
            for i in range(runs + 50):
                begin = time.perf_counter()
                result = await client.call_tool("script_echo", {"text": "hi"})
                if i >= 50:
                    times.append(time.perf_counter() - begin)
                assert result.content[0].text == "echo: hi" and not result.is_error

    anyio.run(session)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 300 if args.quick else 3000
    kinds.LOADERS["bench_python"] = "bench_tools:load_bench"
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config"
        write_project(config)
        db = str(Path(tmp) / "store.db")
        with Engine.load(config, db=db) as engine:
            bare, guarded = engine.agent("bare"), engine.agent("guarded")
            tool = bare.tools.tools["trivial"]
            inp = {"text": "hi"}
            assert bare.call_tool("trivial", inp).content == "echo: hi"
            assert guarded.call_tool("trivial", {"text": "sk-" + "a" * 20}).content == (
                "echo: [REDACTED]"
            )
            assert bare.call_tool("script_echo", inp).content == "echo: hi"
            raw = measure(lambda: tool.invoke(inp, None), runs=runs)
            plain = measure(lambda: bare.call_tool("trivial", inp), runs=runs)
            hooked = measure(lambda: guarded.call_tool("trivial", inp), runs=runs)
            script = measure(lambda: bare.call_tool("script_echo", inp), runs=runs)
            bare.tool_specs("openai-chat")
            export = measure(lambda: bare.tool_specs("openai-chat"), runs=runs)
        served = Path(tmp) / "served"
        write_project(served, trivial=False)
        mcp = mcp_times(served, db, max(100, runs // 10))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':<48} {'p50 µs':>9} {'p99 µs':>9}  target")
    row("raw (tool.invoke)", raw)
    over = (statistics.median(plain) - statistics.median(raw)) * 1e6
    row("call_tool, no hooks", plain)
    row("  -> p50 over raw", [over / 1e6], "<= 250 µs", 250)
    row("call_tool, demo JS guard at both points", hooked, "p50 <= 1000 µs", 1000)
    row("script tool (call_tool, no hooks)", script, "p50 <= 500 µs", 500)
    row("cached spec export (tool_specs)", export, "p50 <= 50 µs", 50)
    row("mcp-serve round trip (script tool)", mcp, "p50 <= 3000 µs", 3000)


if __name__ == "__main__":
    main()
