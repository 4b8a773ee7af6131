"""Host adapters per tool call, against calling the engine directly on the same events.

One agent with a guard (``no_deletes.py``) and a redaction (``redact_secrets.py``), records on.
A tool call is the ``tool_call`` decision, the tool (a function returning a ``ToolMessage``
with a secret) and, unless blocked, the ``tool_result`` decision. Two ways to make it:

- ``direct``: ``agent.tool_call`` / ``agent.tool_result`` (or the a-forms) with the scope and
  host the adapter would use, and the tool called in between;
- ``langchain``: ``HookMiddleware.wrap_tool_call`` (or ``awrap_tool_call``) on a real
  ``ToolCallRequest`` with a ``ToolRuntime`` (the context's user, the thread's id);
- ``openai-agents``: what the Agents SDK runs per call of a tool from ``guard_tools``: its
  input guardrail, its ``on_invoke_tool`` and its output guardrail, on a real ``ToolContext``
  (async only, as the SDK is). ``direct`` there invokes the unguarded ``FunctionTool`` the same
  way, so the SDK's own argument parsing is on both sides.

The two alternate call by call over the same events (a read whose result holds a key, a
harmless shell command, a blocked delete), so drift on a shared machine hits both alike.
Each row prints p50 and p99 in µs and the p50 difference to ``direct``; the target is
<= +300 µs p50. Every outcome is checked (a delete is blocked and never runs, the key is
redacted).

Run: python bench/bench_adapters.py [--only langchain] [--only openai-agents] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import GUARD_CONFIG, copy_scripts, pct, script_hook, write_agent

from engine import Engine

TARGET_US = 300.0
SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("read_file", {"path": ".env"}, False),
    ("shell", {"command": "ls -la /tmp"}, False),
    ("delete_file", {"path": "a.txt"}, True),
]
"""(tool, arguments, blocked?): the tool calls each contender makes in turn."""
SCOPE = {"user_id": "u1", "session_id": "t1"}

Timed = list[tuple[str, list[float]]]


def project(tmp: Path) -> Path:
    """A config with agent ``tools``: the guard, then the redaction."""
    config = tmp / "config"
    config.mkdir()
    (config / "engine.yaml").write_text("scripts:\n  workers: 1\n  timeout_ms: 1000\n")
    copy_scripts(config)
    hooks = {
        "no_deletes": script_hook("no_deletes", "no_deletes.py", GUARD_CONFIG),
        "redact_secrets": script_hook("redact_secrets", "redact_secrets.py"),
    }
    write_agent(config, "tools", hooks)
    return config


def alternate(
    contenders: dict[str, Callable[[int], object]], *, runs: int, warmup: int
) -> dict[str, list[float]]:
    """Seconds per call of each contender, called in turn on call ``i`` of ``runs``."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for i in range(warmup + runs):
        for name, fn in contenders.items():
            begin = time.perf_counter()
            fn(i)
            if i >= warmup:
                times[name].append(time.perf_counter() - begin)
    return times


async def aalternate(
    contenders: dict[str, Callable[[int], Awaitable[object]]], *, runs: int, warmup: int
) -> dict[str, list[float]]:
    """``alternate`` for coroutines, awaited on the running loop."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for i in range(warmup + runs):
        for name, fn in contenders.items():
            begin = time.perf_counter()
            await fn(i)
            if i >= warmup:
                times[name].append(time.perf_counter() - begin)
    return times


# -- LangChain --------------------------------------------------------------------------------


def langchain_rows(engine: Engine, *, runs: int, warmup: int) -> Timed:
    """The LangChain middleware's tool call against the direct one, sync and async."""
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest, ToolRuntime
    from langgraph.runtime import ExecutionInfo

    from engine.integrations.langchain import HookMiddleware

    agent = engine.agent("tools")
    middleware = HookMiddleware(agent)
    ran: list[str] = []

    def tool(name: str, call_id: str) -> ToolMessage:
        ran.append(name)
        return ToolMessage(f"API_KEY={SECRET}\n", tool_call_id=call_id, name=name)

    def request(i: int) -> tuple[ToolCallRequest, bool]:
        name, args, blocked = CALLS[i % len(CALLS)]
        info = ExecutionInfo(checkpoint_id="c", checkpoint_ns="", task_id="k", thread_id="t1")
        runtime = ToolRuntime(
            state={"messages": []},
            context={"user_id": "u1"},
            config={},
            stream_writer=lambda _: None,
            tool_call_id=f"c{i}",
            store=None,
            execution_info=info,
        )
        call = {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
        return ToolCallRequest(call, None, {"messages": []}, runtime), blocked  # type: ignore[arg-type]

    def check(text: Any, blocked: bool) -> None:
        assert ("not allowed" in text) if blocked else SECRET not in text, text

    def via_middleware(i: int) -> None:
        req, blocked = request(i)
        out = middleware.wrap_tool_call(req, lambda r: tool(r.tool_call["name"], r.tool_call["id"]))
        check(str(out.content), blocked)  # type: ignore[union-attr]

    def direct(i: int) -> None:
        req, blocked = request(i)
        name, args, call_id = req.tool_call["name"], req.tool_call["args"], req.tool_call["id"]
        out = agent.tool_call(name, args, call_id=call_id, host="langchain", **SCOPE)
        if out.blocked:
            return check(out.reason, blocked)
        result = tool(name, call_id or "")
        done = agent.tool_result(
            name, args, result.content, call_id=call_id, host="langchain", **SCOPE
        )
        check(str(done.result), blocked)

    async def avia_middleware(i: int) -> None:
        req, blocked = request(i)

        async def handler(r: ToolCallRequest) -> ToolMessage:
            return tool(r.tool_call["name"], r.tool_call["id"] or "")

        out = await middleware.awrap_tool_call(req, handler)
        check(str(out.content), blocked)  # type: ignore[union-attr]

    async def adirect(i: int) -> None:
        req, blocked = request(i)
        name, args, call_id = req.tool_call["name"], req.tool_call["args"], req.tool_call["id"]
        out = await agent.atool_call(name, args, call_id=call_id, host="langchain", **SCOPE)
        if out.blocked:
            return check(out.reason, blocked)
        result = tool(name, call_id or "")
        done = await agent.atool_result(
            name, args, result.content, call_id=call_id, host="langchain", **SCOPE
        )
        check(str(done.result), blocked)

    sync = alternate({"direct": direct, "langchain": via_middleware}, runs=runs, warmup=warmup)
    run_async = aalternate(
        {"direct": adirect, "langchain": avia_middleware}, runs=runs, warmup=warmup
    )
    async_ = asyncio.run(run_async)
    assert "delete_file" not in ran, "a blocked tool ran"
    return [
        ("direct: tool_call + tool_result", sync["direct"]),
        ("langchain: wrap_tool_call", sync["langchain"]),
        ("direct async: atool_call + atool_result", async_["direct"]),
        ("langchain async: awrap_tool_call", async_["langchain"]),
    ]


# -- OpenAI Agents SDK --------------------------------------------------------------------------


def openai_agents_rows(engine: Engine, *, runs: int, warmup: int) -> Timed:
    """A ``guard_tools`` tool call (input guardrail, invoker, output guardrail) against the
    direct engine calls around the unguarded tool."""
    import json

    from agents import Agent, FunctionTool, function_tool
    from agents.tool_context import ToolContext
    from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData

    from engine.integrations.openai_agents import HOST, guard_tools

    agent = engine.agent("tools")
    ran: list[str] = []

    def make(name: str) -> FunctionTool:
        def body(path: str = "", command: str = "") -> str:
            ran.append(name)
            return f"API_KEY={SECRET}\n"

        return function_tool(body, name_override=name)

    plain = {name: make(name) for name, _, _ in CALLS}
    guarded = dict(zip(plain, guard_tools(list(plain.values()), agent, scope=SCOPE), strict=True))
    sdk_agent = Agent(name="bench")

    def context(i: int) -> tuple[ToolContext[Any], str, dict[str, Any], bool]:
        name, args, blocked = CALLS[i % len(CALLS)]
        text = json.dumps(args)
        ctx = ToolContext(None, tool_name=name, tool_call_id=f"c{i}", tool_arguments=text)
        return ctx, text, args, blocked

    def check(text: Any, blocked: bool) -> None:
        assert ("not allowed" in text) if blocked else SECRET not in text, text

    async def via_guardrails(i: int) -> None:
        ctx, text, _, blocked = context(i)
        tool = guarded[ctx.tool_name]
        (before,) = tool.tool_input_guardrails or []
        verdict = await before.run(ToolInputGuardrailData(context=ctx, agent=sdk_agent))
        if verdict.behavior["type"] != "allow":
            return check(verdict.behavior.get("message"), blocked)
        output = await tool.on_invoke_tool(ctx, text)
        (after,) = tool.tool_output_guardrails or []
        data = ToolOutputGuardrailData(context=ctx, agent=sdk_agent, output=output)
        verdict = await after.run(data)
        check(verdict.behavior.get("message", output), blocked)

    async def adirect(i: int) -> None:
        ctx, _, args, blocked = context(i)
        out = await agent.atool_call(
            ctx.tool_name, args, call_id=ctx.tool_call_id, host=HOST, **SCOPE
        )
        if out.blocked:
            return check(out.reason, blocked)
        output = await plain[ctx.tool_name].on_invoke_tool(ctx, json.dumps(out.input))
        done = await agent.atool_result(
            ctx.tool_name, out.input, output, call_id=ctx.tool_call_id, host=HOST, **SCOPE
        )
        check(str(done.result), blocked)

    contenders = {"direct": adirect, "openai-agents": via_guardrails}
    timed = asyncio.run(aalternate(contenders, runs=runs, warmup=warmup))
    assert "delete_file" not in ran, "a blocked tool ran"
    return [
        ("direct async: atool_call + atool_result", timed["direct"]),
        ("openai-agents: guard_tools' guardrails", timed["openai-agents"]),
    ]


# -- report -----------------------------------------------------------------------------------


def report(rows: Timed) -> list[str]:
    """Print each row's p50 and p99 (µs) and, for an adapter, its p50 over the direct row
    before it; returns the verdict lines."""
    print(f"{'case':<44} {'p50 µs':>9} {'p99 µs':>9} {'+p50 µs':>9}")
    verdicts, base = [], 0.0
    for name, times in rows:
        p50 = statistics.median(times) * 1e6
        if name.startswith("direct"):
            base, extra = p50, ""
        else:
            over = p50 - base
            extra = f"{over:>+9.1f}"
            met = "met" if over <= TARGET_US else "MISSED"
            verdicts.append(f"{name}: +{over:.1f} µs p50 over direct (target <= +300): {met}")
        print(f"{name:<44} {p50:>9.1f} {pct(times, 0.99) * 1e6:>9.1f} {extra}")
    for line in verdicts:
        print(line)
    return verdicts


ROWS: dict[str, Callable[..., Timed]] = {
    "langchain": langchain_rows,
    "openai-agents": openai_agents_rows,
}
"""Each adapter's rows, by the name ``--only`` takes."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append")
    parser.add_argument("--quick", action="store_true", help="few runs: a smoke test")
    args = parser.parse_args(argv)
    runs, warmup = (60, 20) if args.quick else (2000, 200)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with Engine.load(project(folder), db=str(folder / "store.db")) as engine:
            for name in args.only or sorted(ROWS):
                print(f"== {name} ({runs} calls each, alternating)")
                report(ROWS[name](engine, runs=runs, warmup=warmup))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
