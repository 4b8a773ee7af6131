"""hookengine: a sandboxed scripting plugin engine for LLM agents."""

from engine.errors import (
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
from engine.store import Record, RecordQuery

__all__ = [
    "Agent",
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
    "StoreError",
    "StoreUnavailableError",
]
