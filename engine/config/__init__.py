"""Reading and validating configuration: engine.yaml, agent.yaml and hook files."""

from engine.config.loader import (
    AgentSpec,
    HookSpec,
    ProjectConfig,
    agent_names,
    find_config_root,
    load_agent,
    load_engine_settings,
    load_hook_file,
    load_host_layer,
    load_project,
)
from engine.config.models import (
    KINDS,
    AgentConfig,
    EngineSettings,
    EscalateConfig,
    FaqCacheConfig,
    HookBase,
    HookConfig,
    InjectConfig,
    MemoryConfig,
    ScriptHookConfig,
)

__all__ = [
    "KINDS",
    "AgentConfig",
    "AgentSpec",
    "EngineSettings",
    "EscalateConfig",
    "FaqCacheConfig",
    "HookBase",
    "HookConfig",
    "HookSpec",
    "InjectConfig",
    "MemoryConfig",
    "ProjectConfig",
    "ScriptHookConfig",
    "agent_names",
    "find_config_root",
    "load_agent",
    "load_engine_settings",
    "load_hook_file",
    "load_host_layer",
    "load_project",
]
