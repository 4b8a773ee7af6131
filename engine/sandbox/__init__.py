"""The sandbox: RestrictedPython and QuickJS scripts in supervised worker processes."""

from typing import Any

from engine.sandbox.limits import BatchCall, CallResult, CompiledScript, Language, Limits
from engine.sandbox.pool import Prestarted
from engine.sandbox.supervise import PoolPolicy
from engine.sandbox.workerpool import WorkerPool


def pool_for(scripts: Any, prestarted: Prestarted | None = None) -> WorkerPool:
    """The worker pool for an engine's ``scripts:`` settings (``ScriptSettings``): the one
    ``Engine.sandbox`` starts, and the one a one-shot ``hook_tool`` starts early (taking the
    worker it started first, ``prestarted``)."""
    return WorkerPool(
        size=scripts.workers,
        limits=Limits(timeout_ms=scripts.timeout_ms, memory_mb=scripts.memory_mb),
        policy=PoolPolicy(
            workers_per_hook=scripts.max_workers_per_hook,
            respawns_per_s=scripts.respawns_per_s,
            quarantine_kills=scripts.quarantine_kills,
            quarantine_window_s=scripts.quarantine_window_s,
        ),
        max_contexts=scripts.max_contexts,
        prestarted=prestarted,
    )


__all__ = [
    "BatchCall",
    "CallResult",
    "CompiledScript",
    "Language",
    "Limits",
    "PoolPolicy",
    "Prestarted",
    "WorkerPool",
    "pool_for",
]
