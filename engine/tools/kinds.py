"""The tool kinds by name: each kind's loader, imported when a tool of that kind first loads."""

from __future__ import annotations

import importlib
from typing import cast

from engine.errors import Problem
from engine.tools.base import Loader, ToolLoadError

LOADERS: dict[str | None, str] = {
    None: "engine.tools.taskweaver:load_taskweaver",
    "openwebui_tools": "engine.tools.openwebui:load_openwebui",
    "script_tool": "engine.tools.script:load_script_tool",
    "delegate": "engine.tools.delegate:load_delegate",
}
"""``kind:`` of a tool YAML -> ``module:function`` of its loader (no ``kind:``: a TaskWeaver
plugin, read verbatim). Imported lazily: a kind's dependencies load only when it is used."""

KIND_NAMES = {
    None: "taskweaver",
    "openwebui_tools": "openwebui_tools",
    "script_tool": "script_tool",
    "delegate": "delegate",
}
"""The name ``Tool.kind`` reports for each ``kind:``."""


def loader_for(kind: str | None, *, shown: str, line: int | None) -> Loader:
    """The loader of ``kind``.

    Raises:
        ToolLoadError: an unknown kind (with a suggestion), or a kind whose module is missing.
    """
    target = LOADERS.get(kind) if kind is None or isinstance(kind, str) else None
    if target is None:
        known = ", ".join(k for k in LOADERS if k)
        message = f"unknown tool kind {kind!r}"
        hint = f"one of: {known} (or no kind: for a TaskWeaver plugin)"
        raise ToolLoadError([Problem(shown, line, "kind", message, hint)])
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        what = KIND_NAMES.get(kind, str(kind))
        message = f"the {what} tool kind is not available: {exc}"
        raise ToolLoadError([Problem(shown, line, "kind", message)]) from exc
    return cast(Loader, getattr(module, function))
