"""Built-in hook kinds, and ``build_hook`` turning a validated spec into a runnable hook."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.loader import HookSpec
from engine.config.models import EngineSettings
from engine.kinds.base import Hook, HookContext, Memo, Mode, OnError


@dataclass
class BuildEnv:
    """What building a hook may need: settings, the store, shared services."""

    settings: EngineSettings
    base_dir: Path
    """Relative ``db_path`` values resolve against this folder."""
    open_store: Callable[[str], Any]
    """Open (once, cached) the store at a URL or path: ``db_url`` / ``db_path`` of a hook."""
    sandbox: Callable[[], Any]
    """The sandbox worker pool, started on first use."""
    providers: Callable[[], Any] = lambda: None
    """The LLM judge/memorizer providers (offline unless configured or ``live``)."""
    live: bool = False
    db_override: str | None = None
    """``hook_tool --db``: every hook's store goes here."""
    extra: dict[str, Any] = field(default_factory=dict)

    def store_for(self, db_url: str | None, db_path: str | None) -> Any:
        """The store a hook with these fields uses (the engine's store when neither is set)."""
        if self.db_override:
            return self.open_store(self.db_override)
        if db_url:
            return self.open_store(db_url)
        if db_path:
            path = Path(db_path)
            return self.open_store(str(path if path.is_absolute() else self.base_dir / path))
        return self.open_store("")


MODULES = {
    "inject": "engine.kinds.inject",
    "escalate": "engine.kinds.escalate",
    "faq_cache": "engine.kinds.faq_cache",
    "memory": "engine.kinds.memory",
    "script_hook": "engine.kinds.script_hook",
    "compaction": "engine.kinds.compaction",
    "approval": "engine.kinds.approval",
}
"""The module of each kind; each exports ``build(spec, env) -> Hook``. Imported on first
use, so an engine without script hooks never loads the sandbox, nor one without memory the
providers."""


def build_hook(spec: HookSpec, env: BuildEnv) -> Hook:
    """Make the runnable hook of a validated spec.

    Raises:
        ConfigError: the hook cannot be built (e.g. its script does not compile).
    """
    module = importlib.import_module(MODULES[spec.kind])
    return module.build(spec, env)


__all__ = ["BuildEnv", "Hook", "HookContext", "Memo", "Mode", "OnError", "build_hook"]
