"""Where a tool's ``invoke`` runs: a thread of the host, or (``isolation: process``) a forked
worker process that a timeout kills."""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from engine.tools.artifacts import ArtifactMeta, CallContext, as_bytes, safe_name, shown_row
from engine.tools.base import Tool, ToolInputError, ToolResult

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
THREADS = 32
"""Threads tool calls run in; a call that timed out holds its thread until it returns."""


class ToolTimeout(Exception):
    """The call ran past its time limit."""


def _threads() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="hookengine-tool")
        return _pool


def run_in_thread(fn: Callable[[], ToolResult], timeout_s: float) -> ToolResult:
    """``fn()`` in a tool thread, waited for at most ``timeout_s``.

    Raises:
        ToolTimeout: it did not return in time (the thread is left to finish on its own:
            in-process code cannot be stopped; use ``isolation: process`` for code that may hang).
    """
    future = _threads().submit(fn)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout:
        future.cancel()
        raise ToolTimeout from None


class ChildContext:
    """The context a tool sees in a worker process: what it adds is recorded and replayed in
    the host when the call returns (events reach the host's callback then)."""

    def __init__(self, ctx: CallContext) -> None:
        self.agent, self.tool = ctx.agent, ctx.tool
        self.session_id, self.user_id, self.call_id = ctx.session_id, ctx.user_id, ctx.call_id
        self.emit: Callable[[dict[str, Any]], None] | None = None
        self.ask: Callable[[dict[str, Any]], Any] | None = None
        self.session_vars = dict(ctx.session_vars)
        self._store = ctx.artifacts_store
        self.added: list[tuple[dict[str, Any], bytes]] = []
        self.events: list[dict[str, Any]] = []
        self.logs: list[str] = []

    def add_artifact(
        self, name: str, file_name: str | None, type: str, val: Any, desc: str = "", **kw: Any
    ) -> str:
        if self.session_id is None:
            raise ToolInputError("artifacts need a session: call the tool with a session_id")
        artifact_id = uuid.uuid4().hex[:16]
        meta: dict[str, Any] = {"name": name, "file_name": safe_name(file_name or name)}
        meta["type"] = type
        meta |= {"description": desc, "id": artifact_id, "mime": kw.get("mime")}
        self.added.append((meta, as_bytes(val, type)))
        return artifact_id

    def create_artifact_path(
        self, name: str, file_name: str, type: str, desc: str = ""
    ) -> tuple[str, Path]:
        raise ToolInputError("create_artifact_path is not available with isolation: process")

    def artifact_path(self, ref: str) -> Path:
        row = None if self.session_id is None else self._store.find(self.session_id, ref)
        if row is None:
            raise ToolInputError(f"no artifact {ref!r} in this session")
        return self._store.path(row)

    def log(self, level: str, text: str) -> None:
        self.logs.append(f"{level}: {text}")

    def get_session_var(self, name: str, default: Any = None) -> Any:
        return self.session_vars.get(name, default)

    def record_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def _child(tool: Tool, input: Mapping[str, Any], ctx: Any, conn: Any) -> None:
    try:
        result = tool.invoke(input, ctx)
        conn.send(("ok", result, ctx.added, ctx.events, ctx.logs))
    except BaseException as exc:  # noqa: BLE001 - the worker's edge: reported to the host
        conn.send(("error", type(exc).__name__, str(exc)[:2000]))
    finally:
        conn.close()


def run_in_process(
    tool: Tool, input: Mapping[str, Any], ctx: CallContext, timeout_s: float
) -> ToolResult:
    """``tool.invoke`` in a forked process, killed at ``timeout_s``.

    Raises:
        ToolTimeout: it did not answer in time (the process was killed).
        RuntimeError: it raised (named) or died without an answer.
    """
    mp = multiprocessing.get_context("fork")
    receive, send = mp.Pipe(duplex=False)
    proc = mp.Process(target=_child, args=(tool, dict(input), ChildContext(ctx), send))
    proc.daemon = True
    proc.start()
    send.close()
    try:
        if not receive.poll(timeout_s):
            raise ToolTimeout
        try:
            answer = receive.recv()
        except EOFError:
            raise RuntimeError(
                f"the tool's worker process died (exit code {proc.exitcode})"
            ) from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        receive.close()
    if answer[0] == "error":
        raise RuntimeError(f"{answer[1]}: {answer[2]}")
    _, result, added, events, logs = answer
    for meta, data in added:
        row = ctx.artifacts_store.add(_meta(ctx, meta), data)
        ctx.artifacts.append(shown_row(row))
    for event in events:
        ctx.record_event(event)
    ctx.logs += logs
    return result


def _meta(ctx: CallContext, meta: dict[str, Any]) -> ArtifactMeta:
    assert ctx.session_id is not None  # the child refused artifacts without a session
    return ArtifactMeta(
        ctx.agent,
        ctx.session_id,
        ctx.tool,
        ctx.call_id,
        meta["name"],
        meta["file_name"],
        meta["type"],
        meta["mime"],
        meta["description"],
        meta["id"],
        user_id=ctx.user_id,
    )
