"""The MCP gateway's cost per tool call: ``hookengine mcp-proxy`` with a guard and a redaction
against a bare pass-through proxy built with the same SDK, in the same run.

Three servers read the same small file (it holds an API key) through the real filesystem
server (``@modelcontextprotocol/server-filesystem``, from tests/fixtures/node):

- ``direct``: the filesystem server itself (for reference);
- ``bare``: a pass-through proxy, the lowlevel ``Server`` on stdio with a legacy ``Client``
  upstream, forwarding ``tools/list`` and ``tools/call`` (this file run with ``--bare``);
- ``gateway``: ``hookengine mcp-proxy`` whose agent has a JavaScript guard at ``tool_call``
  (argument-aware: writes are blocked, an ``edit_file`` dry run passes) and a JavaScript
  redaction at ``tool_result`` (``host.redact`` over every string of the result: the key is
  redacted on every call);
- ``gateway-full``: the same guard, and the repository's ``redact_secrets.js`` (fifteen
  secret patterns, escapes and look-alike characters folded first) as the redaction;
- ``gateway-none``: ``hookengine mcp-proxy`` whose agent has no hook at ``tool_call`` nor
  ``tool_result`` (one ``inject`` hook elsewhere, records off): the gateway's own cost, with
  no script run (``tool_call`` is still evaluated, ``tool_result`` is not).

One Python ``Client`` (legacy handshake) per server, all connected at once; the calls go round
robin (direct, bare, gateway, gateway-full, gateway-none, ...), so machine noise falls on
all alike. Every gateway answer is checked (redacted where the agent redacts, not an error).
Target: gateway p50 <= bare p50 + 1 ms.

Then, for the breakdown, the two evaluations each gateway call makes (``atool_call`` and
``atool_result`` on the same event) are timed in this process, without MCP: what the hooks
cost, against what the gateway adds in all; back to back, and each after a 2 ms pause, as in
the gateway (an evaluation after idling costs more: the machine's caches have gone cold); and
the gateway's own work on a redacted result (the result as hooks see it, the replacement
rebuilt, its ``outputSchema`` check against the server's own ``read_text_file`` tool).

Run: python bench/bench_mcp.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's engine

from common import ROOT, pct

SERVER = ROOT / "tests" / "fixtures" / "node" / "node_modules" / ".bin" / "mcp-server-filesystem"
SECRET = "sk-" + "bench0123456789abcdefXYZ"
TARGET_MS = 1.0

GUARD = """
var WRITES = ["write_file", "move_file", "edit_file", "create_directory"];
function on_tool_call(event, host) {
  if (event.name === "edit_file" && event.input.dryRun === true) { return null; }
  if (WRITES.indexOf(event.name) >= 0) { return { block: event.name + " is not allowed" }; }
  return null;
}
"""

REDACT = """
var KEY = "sk-[A-Za-z0-9]{20,}";
function clean(value, host) {
  if (typeof value === "string") { return host.redact(value, [KEY], "[REDACTED]"); }
  if (Array.isArray(value)) { return value.map(function (v) { return clean(v, host); }); }
  if (value !== null && typeof value === "object") {
    var out = {};
    Object.keys(value).forEach(function (k) { out[k] = clean(value[k], host); });
    return out;
  }
  return value;
}
function on_tool_result(event, host) { return { result: clean(event.result, host) }; }
"""

HOOKS = "hook_files: [hooks/guard.yaml, hooks/redact.yaml]\n"
GUARD_YAML = "kind: script_hook\nname: guard\nscript: ../../../guard.js\npoints: [tool_call]\n"
REDACT_YAML = "kind: script_hook\nname: redact\nscript: {}\npoints: [tool_result]\n"
ELSEWHERE_YAML = "kind: inject\nname: hello\nmessages:\n  - {role: system, content: hello}\n"
PROJECT = {
    "engine.yaml": "records:\n  enabled: false\nscripts:\n  workers: 1\n",
    "guard.js": GUARD,
    "redact.js": REDACT,
    "agents/fs/agent.yaml": HOOKS,
    "agents/fs/hooks/guard.yaml": GUARD_YAML,
    "agents/fs/hooks/redact.yaml": REDACT_YAML.format("../../../redact.js"),
    "agents/fs_full/agent.yaml": HOOKS,
    "agents/fs_full/hooks/guard.yaml": GUARD_YAML,
    "agents/fs_full/hooks/redact.yaml": REDACT_YAML.format("../../../redact_secrets.js"),
    "agents/fs_none/agent.yaml": "hook_files: [hooks/hello.yaml]\n",
    "agents/fs_none/hooks/hello.yaml": ELSEWHERE_YAML,
}
"""Agent ``fs``: the guard and the lean redaction; ``fs_full``: the guard and redact_secrets.js;
``fs_none``: a hook at ``before_user_message`` only (none at the tool points)."""


# -- the bare pass-through proxy (run as: bench_mcp.py --bare -- CMD ARGS) -------------------


async def bare_proxy(command: list[str]) -> None:
    """Forward tools/list and tools/call to ``command``, nothing else: the floor to beat."""
    from contextlib import asynccontextmanager

    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    upstream: dict[str, Client] = {}

    @asynccontextmanager
    async def lifespan(_: Any) -> Any:
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(params, mode="legacy") as client:
            upstream["client"] = client
            yield {}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return await upstream["client"].list_tools(cache_mode="bypass")

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await upstream["client"].call_tool(params.name, params.arguments)

    server = Server("bare", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


# -- the bench --------------------------------------------------------------------------------


def write_project(root: Path) -> tuple[Path, Path]:
    config = root / "config"
    for rel, text in PROJECT.items():
        (config / rel).parent.mkdir(parents=True, exist_ok=True)
        (config / rel).write_text(text, encoding="utf-8")
    shutil.copy(ROOT / "config" / "scripts" / "redact_secrets.js", config / "redact_secrets.js")
    files = root / "files"
    files.mkdir()
    (files / "config.env").write_text(f"API_KEY={SECRET}\nregion=eu\n", encoding="utf-8")
    return config, files.resolve()


def servers(config: Path, files: Path) -> dict[str, StdioServerParameters]:
    upstream = [str(SERVER), str(files)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    here = str(Path(__file__).resolve())

    def gateway(agent: str) -> StdioServerParameters:
        words = ["-m", "engine.cli.hookengine", "mcp-proxy", "--agent", agent, "--config"]
        words += [str(config), "--db", ":memory:", "--", *upstream]
        return StdioServerParameters(command=sys.executable, args=words, env=env, cwd=ROOT)

    return {
        "direct": StdioServerParameters(command=upstream[0], args=upstream[1:]),
        "bare": StdioServerParameters(
            command=sys.executable, args=[here, "--bare", "--", *upstream], env=env
        ),
        "gateway": gateway("fs"),
        "gateway-full": gateway("fs_full"),
        "gateway-none": gateway("fs_none"),
    }


async def run(calls: int, warmup: int) -> tuple[dict[str, list[float]], types.Tool]:
    """Seconds per call of every server, and the server's ``read_text_file`` tool."""
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        config, files = write_project(root)
        arguments = {"path": str(files / "config.env")}
        async with AsyncExitStack() as stack:
            clients = {
                name: await stack.enter_async_context(Client(params, mode="legacy"))
                for name, params in servers(config, files).items()
            }
            for client in clients.values():
                listed = await client.list_tools()
            tool = next(tool for tool in listed.tools if tool.name == "read_text_file")
            times: dict[str, list[float]] = {name: [] for name in clients}
            for i in range(warmup + calls):
                for name, client in clients.items():
                    begin = time.perf_counter()
                    result = await client.call_tool("read_text_file", arguments)
                    spent = time.perf_counter() - begin
                    check(name, result)
                    if i >= warmup:
                        times[name].append(spent)
            return times, tool
    finally:
        shutil.rmtree(root, ignore_errors=True)


PAUSE_S = 0.002
"""The idle time before each call of the ``after a pause`` rows: about what the upstream call
takes between a gateway's two evaluations, and a client's think time before the next call."""


async def engine_cost(calls: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per call of the gateway's two evaluations, in process, per agent: back to back,
    and (``<agent> after a pause``) each evaluation after ``PAUSE_S`` of idling, as in the
    gateway, where the process and its worker sleep between them."""
    from engine import Engine
    from engine.integrations.mcp import result_event

    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        config, files = write_project(root)
        arguments = {"path": str(files / "config.env")}
        text = (files / "config.env").read_text("utf-8")
        block = types.TextContent(type="text", text=text)
        seen, _ = result_event(
            types.CallToolResult(content=[block], structured_content={"content": text})
        )
        times: dict[str, list[float]] = {}
        with Engine.load(config, db=":memory:") as engine:
            for name, pause in (("fs", 0.0), ("fs_full", 0.0), ("fs", PAUSE_S)):
                agent = engine.agent(name)
                spent = times.setdefault(name + (" after a pause" if pause else ""), [])
                for i in range(warmup + calls):
                    time.sleep(pause)
                    begin = time.perf_counter()
                    await agent.atool_call("read_text_file", arguments, host="mcp")
                    between = time.perf_counter()
                    time.sleep(pause)
                    resumed = time.perf_counter()
                    await agent.atool_result("read_text_file", arguments, seen, host="mcp")
                    if i >= warmup:
                        spent.append(time.perf_counter() - begin - (resumed - between))
        return times
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def gateway_cost(calls: int, warmup: int, tool: types.Tool) -> list[float]:
    """Seconds per call of the gateway's own work on agent ``fs``'s redacted result."""
    from engine import Engine
    from engine.integrations.mcp import Gateway, GatewayOptions, result_event, result_from_change

    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        config, files = write_project(root)
        arguments = {"path": str(files / "config.env")}
        text = (files / "config.env").read_text("utf-8")
        block = types.TextContent(type="text", text=text)
        result = types.CallToolResult(content=[block], structured_content={"content": text})
        with Engine.load(config, db=":memory:") as engine:
            gateway = Gateway(engine, GatewayOptions(agent="fs", command=(str(SERVER),)))
            gateway.tools[tool.name] = tool
            seen, _ = result_event(result)
            out = await engine.agent("fs").atool_result(tool.name, arguments, seen, host="mcp")
            spent = []
            for i in range(warmup + calls):
                begin = time.perf_counter()
                seen, stubs = result_event(result)
                await gateway._check_output(tool.name, result_from_change(out.result, stubs))
                if i >= warmup:
                    spent.append(time.perf_counter() - begin)
            return spent
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check(name: str, result: types.CallToolResult) -> None:
    text = result.content[0].text if result.content[0].type == "text" else ""
    redacted = SECRET not in text and "[REDACTED]" in text
    if result.is_error or redacted != (name in ("gateway", "gateway-full")):
        raise SystemExit(f"{name}: wrong answer: {result}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=400, help="timed calls per server (default 400)")
    p.add_argument("--warmup", type=int, default=40)
    p.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.bare:
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        anyio.run(bare_proxy, command)
        return 0
    if not SERVER.exists():
        raise SystemExit(f"{SERVER} is missing: cd tests/fixtures/node && npm ci")
    times, tool = anyio.run(run, args.calls, args.warmup)
    print(f"read_text_file, {args.calls} calls per server, round robin")
    print(f"{'server':<13} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for name, spent in times.items():
        row = [statistics.median(spent), pct(spent, 0.90), pct(spent, 0.99)]
        print(f"{name:<13} " + " ".join(f"{value * 1e3:>8.3f}" for value in row))
    bare = statistics.median(times["bare"])
    for name in ("gateway", "gateway-full"):
        added = (statistics.median(times[name]) - bare) * 1e3
        verdict = "met" if added <= TARGET_MS else "MISSED"
        print(f"{name} p50 - bare p50 = {added:+.3f} ms (target <= +{TARGET_MS:g} ms: {verdict})")
    own = (statistics.median(times["gateway-none"]) - bare) * 1e3
    print(f"gateway-none p50 - bare p50 = {own:+.3f} ms (the gateway without scripts)")
    hooks = anyio.run(engine_cost, args.calls, args.warmup)
    for agent, spent in hooks.items():
        p50 = statistics.median(spent) * 1e3
        print(f"in process, agent {agent}: tool_call + tool_result p50 = {p50:.3f} ms")
    own = statistics.median(anyio.run(gateway_cost, args.calls, args.warmup, tool)) * 1e3
    print(f"in process, the gateway's own work on a redacted result p50 = {own:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
