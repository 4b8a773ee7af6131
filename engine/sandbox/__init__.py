"""The sandbox: RestrictedPython and QuickJS scripts in supervised worker processes."""

from engine.sandbox.limits import CallResult, CompiledScript, Language, Limits
from engine.sandbox.supervise import PoolPolicy
from engine.sandbox.workerpool import WorkerPool

__all__ = ["CallResult", "CompiledScript", "Language", "Limits", "PoolPolicy", "WorkerPool"]
