"""hookengine: a sandboxed scripting plugin engine for LLM agents.

The public names are imported on first use (PEP 562), so that ``import engine`` and a
command that needs only a part of the engine (``hook_tool``, a sandbox worker) do not pay
for pydantic models, SQLAlchemy or the HTTP app they never touch.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: it is a tenth of a bare import's time
if TYPE_CHECKING:
    from engine.errors import (
        ApprovalError,
        ConfigError,
        EngineError,
        EventError,
        PluginError,
        Problem,
        ScriptCompileError,
        ScriptError,
        ScriptLimitError,
        ScriptRuntimeError,
        StoreError,
        StoreUnavailableError,
    )
    from engine.outcome import Outcome
    from engine.points import Point, Scope
    from engine.runtime import Agent, Engine
    from engine.session import Session
    from engine.store import Record, RecordQuery
    from engine.tools.base import ToolResult, ToolSpec

_HOMES = {
    "Agent": "engine.runtime",
    "ApprovalError": "engine.errors",
    "ConfigError": "engine.errors",
    "Engine": "engine.runtime",
    "EngineError": "engine.errors",
    "EventError": "engine.errors",
    "Outcome": "engine.outcome",
    "PluginError": "engine.errors",
    "Point": "engine.points",
    "Problem": "engine.errors",
    "Record": "engine.store",
    "RecordQuery": "engine.store",
    "Scope": "engine.points",
    "ScriptCompileError": "engine.errors",
    "ScriptError": "engine.errors",
    "ScriptLimitError": "engine.errors",
    "ScriptRuntimeError": "engine.errors",
    "Session": "engine.session",
    "StoreError": "engine.errors",
    "StoreUnavailableError": "engine.errors",
    "ToolResult": "engine.tools.base",
    "ToolSpec": "engine.tools.base",
}
"""Each public name and the module that defines it."""

__all__ = [
    "Agent",
    "ApprovalError",
    "ConfigError",
    "Engine",
    "EngineError",
    "EventError",
    "Outcome",
    "PluginError",
    "Point",
    "Problem",
    "Record",
    "RecordQuery",
    "Scope",
    "ScriptCompileError",
    "ScriptError",
    "ScriptLimitError",
    "ScriptRuntimeError",
    "Session",
    "StoreError",
    "StoreUnavailableError",
    "ToolResult",
    "ToolSpec",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use (then cached here)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
