"""pydantic's plugin lookup, answered without ``importlib.metadata`` when no plugin exists.

Completing its first model, pydantic looks for plugins (the ``pydantic`` entry-point group):
it imports ``importlib.metadata`` (with ``email``, ``zipfile``, ``csv``, ...) and reads every
installed package's entry points, together about a tenth of a one-shot ``hook_tool`` run.
``skip_empty_plugin_lookup`` asks the same question of the ``entry_points.txt`` files on
``sys.path`` directly, and only when no package declares a pydantic plugin tells pydantic so
(the answer its own lookup would give: no plugin). Whatever this reading cannot see (a path
entry that is an archive, a folder it cannot list, a finder of distributions other than the
standard one) leaves pydantic to look for itself, as does a plugin that is declared.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
import types

LOADER = "pydantic.plugin._loader"
"""The pydantic module whose ``get_plugins()`` does the lookup (pydantic 2)."""
_GROUP = re.compile(r"^\s*\[\s*pydantic\s*\]\s*$", re.MULTILINE)
_INFO_SUFFIXES = (".dist-info", ".egg-info")


def skip_empty_plugin_lookup() -> bool:
    """Stand in for pydantic's plugin loader when no installed package declares a plugin.

    Returns:
        True when pydantic will now find no plugin without looking; False when it looks for
        itself (its loader is imported already, a plugin is declared, or it cannot be told).
    """
    if LOADER in sys.modules or plugins_declared() is not False:
        return False
    sys.modules[LOADER] = _empty_loader()
    return True


def plugins_declared() -> bool | None:
    """Whether a package on ``sys.path`` declares a pydantic entry point (None: unknown)."""
    others = [f for f in sys.meta_path if f is not importlib.machinery.PathFinder]
    if any(hasattr(finder, "find_distributions") for finder in others):
        return None
    for entry in dict.fromkeys(sys.path):
        found = _declared_in(entry or ".")
        if found is not False:
            return found
    return False


def _declared_in(entry: str) -> bool | None:
    """Whether a distribution in the ``sys.path`` entry ``entry`` declares a pydantic entry
    point, as ``importlib.metadata`` finds them (None: an archive or unreadable)."""
    if not os.path.exists(entry):
        return False
    if not os.path.isdir(entry):
        return None  # a zip archive: left to importlib.metadata
    try:
        children = os.listdir(entry)
    except OSError:
        return None
    infos = [c for c in children if c.lower().endswith(_INFO_SUFFIXES)]
    if entry.lower().endswith(".egg"):
        infos += [c for c in children if c.lower() == "egg-info"]
    return _any_declares([os.path.join(entry, c, "entry_points.txt") for c in infos])


def _any_declares(files: list[str]) -> bool | None:
    for name in files:
        try:
            with open(name, encoding="utf-8") as f:
                if _GROUP.search(f.read()):
                    return True
        except (FileNotFoundError, NotADirectoryError):
            continue  # no entry points (or a PKG-INFO file, not a folder)
        except (OSError, UnicodeDecodeError):
            return None
    return False


def _empty_loader() -> types.ModuleType:
    """A module with pydantic's loader interface whose lookup finds no plugin."""
    loader = types.ModuleType(LOADER, "pydantic's plugin loader: no package declares a plugin.")
    vars(loader).update(
        PYDANTIC_ENTRY_POINT_GROUP="pydantic",
        _plugins={},
        _loading_plugins=False,
        get_plugins=_no_plugins,
    )
    return loader


def _no_plugins() -> tuple[()]:
    return ()
