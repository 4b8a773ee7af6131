"""What a reload reads: agent and host files read consistently, which files matter, what changed."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from engine.config.loader import HookSpec, digest, load_engine_settings, load_host_layer, show
from engine.config.scriptfile import MAX_SCRIPT_BYTES
from engine.config.toolfiles import named_files
from engine.config.yamlfile import MAX_CONFIG_BYTES, ConfigReadError, load_loose, read_text
from engine.errors import ConfigError, Problem
from engine.yamltests import test_file_of

READ_ATTEMPTS = 5
"""How often a reload reads again when a file changed while it was being read."""

READ_TIMEOUT_S = 5.0
"""How long a reload's reading may take before it is refused (a read that blocks, on a file
swapped for a FIFO after it was checked, never holds up the watcher or ``close()``)."""


# -- reading files consistently ------------------------------------------------------------------


def _text(path: Path | None) -> str | None:
    """A file's text read as the loader reads it (regular files only, size capped), or None."""
    if path is None:
        return ""
    try:
        return read_text(path, limit=max(MAX_CONFIG_BYTES, MAX_SCRIPT_BYTES))
    except ConfigReadError:
        return None


def special_file(path: Path) -> str | None:
    """What ``path`` is when it is a FIFO, a device or a socket (a read may block or never
    end), else None. Missing files, directories, symlink loops and NULs are the loader's to
    report: reading them fails at once."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else None


def refuse_special_files(paths: Iterable[Path]) -> None:
    """ConfigError naming every path that is a FIFO, a device or a socket: nothing is opened,
    so a FIFO never blocks a reload."""
    problems = [
        Problem(
            shown(p),
            None,
            None,
            f"cannot read it: it is {kind}, not a regular file",
            "replace it with a regular file",
        )
        for p in sorted(paths, key=str)
        if (kind := special_file(p))
    ]
    if problems:
        raise ConfigError(problems)


def read_bounded(read: Callable[[], Any], owner: Path, timeout_s: float | None = None) -> Any:
    """``read()`` in a helper thread, given at most ``timeout_s`` (``READ_TIMEOUT_S``); a read
    still blocked then (a file swapped for a FIFO between check and open) is abandoned, as a
    daemon thread, and reported as a ConfigError naming ``owner``."""
    timeout_s = READ_TIMEOUT_S if timeout_s is None else timeout_s
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = read()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="hookengine-reload-read", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise ConfigError.single(
            shown(owner),
            f"reading the agent's files took over {timeout_s:g} s (a FIFO or a device in "
            "place of a file?); the last good version stays",
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


def _hash(path: Path) -> str | None:
    text = _text(path)
    return None if text is None else hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _on_disk(spec: HookSpec) -> bool:
    """Whether the hook's YAML and script on disk are still the ones ``spec`` was read from."""
    yaml_text, script = _text(spec.path), _text(spec.script_path)
    if yaml_text is None or script is None:
        return False
    return digest(yaml_text, script if spec.script_path else "") == spec.version


def read_stable(
    owner: Path, read: Callable[[], Any], hooks_of: Callable[[Any], list[HookSpec]]
) -> Any:
    """``read()`` again until ``owner`` and every hook file it read are unchanged afterwards,
    so a build never mixes a YAML of one save with a script of another."""
    for _ in range(READ_ATTEMPTS):
        before = _hash(owner)
        result = read()
        if _hash(owner) == before and all(_on_disk(h) for h in hooks_of(result)):
            return result
    raise ConfigError.single(shown(owner), "files kept changing while being read; save again")


def read_host(root: Path) -> tuple[Any, tuple[HookSpec, ...]]:
    settings, problems = load_engine_settings(root)
    specs, found = load_host_layer(root, settings)
    if problems or found:
        raise ConfigError(problems + found)
    return settings, tuple(specs)


def wanted_files(folder: Path, owner: Path, *, root: Path) -> set[Path]:
    """Files ``owner`` (agent.yaml / engine.yaml) asks for, read loosely: even when invalid, its
    hook files and their scripts are watched so that creating them is noticed. A symlink on
    the way to one inside ``root`` is watched too: re-pointing it (``ln -sfn``, a deploy's
    swap) changes what the file reads while the file it pointed to stays as it was."""
    wanted = _wanted(folder, owner)
    return {_resolved(p) for p in wanted}.union(*(_links(p, root) for p in wanted))


def _links(path: Path, root: Path) -> set[Path]:
    """The symlinks among ``path`` and the folders it lies in below ``root``, each as the
    watcher names it (its folder resolved, its own name kept)."""
    found = set()
    for part in (path, *path.parents):
        if part == root or not part.is_relative_to(root):
            break
        try:
            if part.is_symlink():
                found.add(_resolved(part.parent) / part.name)
        except (OSError, ValueError):
            continue
    return found


def _wanted(folder: Path, owner: Path) -> set[Path]:
    data = _loose(owner)
    hooks = [folder / str(f) for f in data.get("hook_files") or [] if isinstance(f, str)]
    hooks += [folder / "hooks" / f"{n}.yaml" for n in data.get("hooks") or [] if isinstance(n, str)]
    tools = [folder / str(f) for f in data.get("tool_files") or [] if isinstance(f, str)]
    tools += [folder / "tools" / f"{n}.yaml" for n in data.get("tools") or [] if isinstance(n, str)]
    found = {owner, *hooks, *(test_file_of(h) for h in hooks), *tools}
    for tool in tools:
        found.update(named_files(tool, _loose(tool)))
    for hook in hooks:
        script = _loose(hook).get("script")
        if isinstance(script, str):
            found.add(hook.parent / script)
    return found


def read_checked(folder: Path, owner: Path, read: Callable[[], Any]) -> Any:
    """``read()`` once every file ``owner`` asks for is a regular file (or missing), within
    ``READ_TIMEOUT_S``: a FIFO, a device or a socket in a file's place is refused, named."""

    def checked() -> Any:
        refuse_special_files(_wanted(folder, owner))
        return read()

    return read_bounded(checked, owner)


def _resolved(path: Path) -> Path:
    """``path`` resolved; when it cannot be (a symlink loop, a NUL), its folder resolved and
    its name kept, so that events on it still find their agent."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        try:
            return path.parent.resolve() / path.name
        except (OSError, RuntimeError, ValueError):
            return Path(os.path.abspath(path))


def shown(path: Path) -> str:
    """``show(path)`` (the path as messages name it), or the path as given when it cannot be
    resolved: naming a broken path must not raise."""
    try:
        return show(path)
    except (OSError, RuntimeError, ValueError):
        return str(path)


def _loose(path: Path) -> dict[str, Any]:
    data = load_loose(path)
    return data if isinstance(data, dict) else {}


def files_of(specs: tuple[HookSpec, ...] | list[HookSpec]) -> set[Path]:
    found = {s.path for s in specs} | {test_file_of(s.path) for s in specs}
    return found | {s.script_path for s in specs if s.script_path}


def tests_key(spec: HookSpec) -> tuple[str, str | None]:
    return spec.version, _hash(test_file_of(spec.path))


def slot_key(spec_or_hook: Any) -> tuple[Path, str, str]:
    path = spec_or_hook.path if isinstance(spec_or_hook, HookSpec) else spec_or_hook.source
    return Path(path), spec_or_hook.version, spec_or_hook.name


# -- describing what changed ---------------------------------------------------------------------


def describe(old: tuple[HookSpec, ...], new: tuple[HookSpec, ...], layer: str) -> list[str]:
    """What changed between two versions of a layer's hooks, one line each."""
    before, after = {h.name: h for h in old}, {h.name: h for h in new}
    lines = [
        f"+ {layer} hook {n} ({after[n].kind}, {after[n].shown})" for n in after if n not in before
    ]
    lines += [f"- {layer} hook {n}" for n in before if n not in after]
    for name in after:
        if name in before and before[name].version != after[name].version:
            lines += _hook_diff(before[name], after[name])
    kept = [n for n in after if n in before]
    if kept != [n for n in before if n in after]:
        lines.append(f"order of {layer} hooks: {', '.join(after)}")
    return lines


def _hook_diff(old: HookSpec, new: HookSpec) -> list[str]:
    lines = [f"~ {new.name} {old.version} -> {new.version}"]
    was, now = old.config.model_dump(mode="json"), new.config.model_dump(mode="json")
    for key in now:
        if key != "tests" and was.get(key) != now.get(key):
            lines.append(f"    {key}: {_short(was.get(key))} -> {_short(now.get(key))}")
    if was.get("tests") != now.get("tests"):
        lines.append("    tests changed")
    if old.script_text != new.script_text:
        lines.append(f"    script {show(new.script_path) if new.script_path else ''} changed")
    return lines


def _short(value: Any, limit: int = 70) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "READ_ATTEMPTS",
    "READ_TIMEOUT_S",
    "describe",
    "files_of",
    "read_bounded",
    "read_checked",
    "read_host",
    "read_stable",
    "refuse_special_files",
    "shown",
    "slot_key",
    "special_file",
    "tests_key",
    "wanted_files",
]
