"""The sandbox: RestrictedPython and QuickJS scripts in supervised worker processes."""

from engine.sandbox.limits import BatchCall, CallResult, CompiledScript, Language, Limits
from engine.sandbox.supervise import PoolPolicy
from engine.sandbox.workerpool import WorkerPool

__all__ = [
    "BatchCall",
    "CallResult",
    "CompiledScript",
    "Language",
    "Limits",
    "PoolPolicy",
    "WorkerPool",
]
