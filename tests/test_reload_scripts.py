"""Hot reload of script hooks: editing the .js or .py file a hook references goes live; a
script that no longer compiles keeps the last good version and names the script's line."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from engine.config.loader import digest
from tests.test_reload import LOADED_S, error_of, short_gil_slices, wait_until

__all__ = ["short_gil_slices"]  # the fixture, used by name

ALLOW = {
    "js": "function on_tool_call(event, host) {\n  return null;\n}\n",
    "py": "def on_tool_call(event, host):\n    return None\n",
}
BLOCK = {
    "js": "function on_tool_call(event, host) {\n"
    "  if (event.name === 'shell') return {block: 'no shell (v2)'};\n  return null;\n}\n",
    "py": "def on_tool_call(event, host):\n"
    "    if event['name'] == 'shell':\n        return {'block': 'no shell (v2)'}\n",
}
BROKEN = {
    "js": "function on_tool_call(event, host) {\n  return {block: 'x'\n}\n",
    "py": "def on_tool_call(event, host):\n    return {'block': 'x'\n",
}


@pytest.mark.parametrize("suffix", ["js", "py"])
def test_editing_a_script_changes_the_next_decision_within_a_second(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], suffix: str
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": (
                f"kind: script_hook\nname: guard\nscript: guard.{suffix}\n"
            ),
            f"agents/a/hooks/guard.{suffix}": ALLOW[suffix],
        }
    )
    script = root / f"agents/a/hooks/guard.{suffix}"
    engine = load(root, watch=True)
    agent = engine.agent("a")
    assert not agent.tool_call("shell", {"command": "ls"}).blocked
    version = agent.pipeline.slots[0].hook.version

    script.write_text(BLOCK[suffix])
    took = wait_until(lambda: agent.tool_call("shell", {}).blocked, timeout=1.0)
    assert took < 1.0
    out = agent.tool_call("shell", {})
    assert out.reason == "no shell (v2)" and out.hooks[0].version != version

    script.write_text(BROKEN[suffix])
    wait_until(lambda: engine.status()["agents"]["a"]["error"] is not None)
    error = engine.status()["agents"]["a"]["error"]
    # the line is where the parser gave up: the open brace, or the end of the file
    assert error["file"].endswith(f"guard.{suffix}") and error["line"] in (2, 3, 4)
    assert agent.tool_call("shell", {}).reason == "no shell (v2)"  # the last good version

    script.write_text(ALLOW[suffix])
    wait_until(lambda: not agent.tool_call("shell", {}).blocked)
    assert engine.status()["agents"]["a"]["error"] is None


def flip_script(n: int) -> str:
    decide = f'{{block: "s{n}/" + host.config.mark}}' if n % 2 == 0 else "null"
    return f"function on_tool_call(event, host) {{\n  return {decide};\n}}\n"


def flip_yaml(n: int) -> str:
    return f"kind: script_hook\nname: guard\nscript: guard.js\nconfig: {{mark: y{n}}}\n"


@pytest.mark.usefixtures("short_gil_slices")
def test_a_script_flipping_under_concurrent_load_never_mixes_versions(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    """Threads evaluate tool_call non-stop while the guard's script and YAML flip between
    block and allow 50 times, with scripts that do not compile in between. Every decision
    must be exactly what the YAML and script behind its recorded version decide."""
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": flip_yaml(1),
            "agents/a/hooks/guard.js": flip_script(1),
        }
    )
    yaml_file, script = root / "agents/a/hooks/guard.yaml", root / "agents/a/hooks/guard.js"
    engine = load(root, watch=True, records=False)
    agent = engine.agent("a")
    stop, errors = threading.Event(), []
    seen: Counter[tuple[str, str | None]] = Counter()
    lock = threading.Lock()

    def evaluate() -> None:
        while not stop.is_set():
            try:
                out = agent.tool_call("shell", {})
                with lock:
                    seen[(out.hooks[0].version, out.reason)] += 1
            except Exception as exc:  # noqa: BLE001 - any error here fails the test
                errors.append(exc)

    workers = [threading.Thread(target=evaluate) for _ in range(3)]
    for w in workers:
        w.start()
    yamls, scripts = [flip_yaml(1)], [flip_script(1)]
    try:
        for n in range(2, 52):
            if n % 5 == 0:  # a script that does not compile: refused, the last good stays
                script.write_text(flip_script(n).replace("return", "return (", 1))
                wait_until(lambda: error_of(engine) is not None, timeout=LOADED_S)
            script.write_text(flip_script(n))
            yaml_file.write_text(flip_yaml(n))
            scripts.append(flip_script(n))
            yamls.append(flip_yaml(n))
            want = f"s{n}/y{n}" if n % 2 == 0 else None
            wait_until(
                lambda w=want: (
                    agent.tool_call("shell", {}).reason == w and error_of(engine) is None
                ),
                timeout=LOADED_S,
            )
    finally:
        stop.set()
        for w in workers:
            w.join(10)
    # what every (YAML, script) pair that was ever on disk together decides, by its version
    expected = {
        digest(y, s): (f"s{j}/y{i}" if j % 2 == 0 else None)
        for i, y in enumerate(yamls, 1)
        for j, s in enumerate(scripts, 1)
    }
    assert not errors and seen.total() > 100
    assert len({version for version, _ in seen}) > 25  # many versions went live
    for version, reason in seen:
        assert version in expected, f"a version no YAML and script on disk make: {version}"
        assert reason == expected[version], (version, reason)


def relink(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` in one step, as ``ln -sfn`` and deploy tools do."""
    fresh = link.with_name(link.name + ".new")
    fresh.symlink_to(target)
    fresh.replace(link)


GUARD_YAML = "kind: script_hook\nname: guard\nscript: ../../../{script}\n"
SWAPS: dict[str, tuple[dict[str, str], dict[str, str], str, str]] = {
    # files, symlinks made at the start (link: target), the link re-pointed, its new target
    "a script symlink": (
        {"agents/a/hooks/guard.yaml": GUARD_YAML.format(script="scripts/guard.js")},
        {"scripts/guard.js": "allow.js"},
        "scripts/guard.js",
        "block.js",
    ),
    "a hook file symlink": (
        {
            "agents/a/hooks/v1.yaml": GUARD_YAML.format(script="scripts/allow.js"),
            "agents/a/hooks/v2.yaml": GUARD_YAML.format(script="scripts/block.js"),
        },
        {"agents/a/hooks/guard.yaml": "v1.yaml"},
        "agents/a/hooks/guard.yaml",
        "v2.yaml",
    ),
    "a symlink to the scripts' folder": (
        {
            "agents/a/hooks/guard.yaml": GUARD_YAML.format(script="live/guard.js"),
            "release1/guard.js": ALLOW["js"],
            "release2/guard.js": BLOCK["js"],
        },
        {"live": "release1"},
        "live",
        "release2",
    ),
}


@pytest.mark.parametrize("case", list(SWAPS))
def test_re_pointing_a_symlink_on_the_way_to_a_hook_file_goes_live(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], case: str
) -> None:
    files, links, swapped, target = SWAPS[case]
    root = project(
        {
            "engine.yaml": "process: p\n",
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "scripts/allow.js": ALLOW["js"],
            "scripts/block.js": BLOCK["js"],
            **files,
        }
    )
    for link, to in links.items():
        (root / link).symlink_to(to)
    engine = load(root, watch=True)
    agent = engine.agent("a")
    assert not agent.tool_call("shell", {}).blocked

    relink(root / swapped, target)  # the file it pointed to is left as it was
    wait_until(lambda: agent.tool_call("shell", {}).blocked, timeout=LOADED_S)
    assert engine.status()["agents"]["a"]["generation"] == 1


def test_editing_a_hook_file_named_without_a_yaml_suffix_goes_live(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hook_files: [hooks/guard.hook]\n",
            "agents/a/hooks/guard.hook": "kind: script_hook\nname: guard\nscript: allow.js\n",
            "agents/a/hooks/allow.js": ALLOW["js"],
            "agents/a/hooks/block.js": BLOCK["js"],
        }
    )
    engine = load(root, watch=True)
    agent = engine.agent("a")
    assert not agent.tool_call("shell", {}).blocked
    (root / "agents/a/hooks/guard.hook").write_text(
        "kind: script_hook\nname: guard\nscript: block.js\n"
    )
    wait_until(lambda: agent.tool_call("shell", {}).blocked, timeout=LOADED_S)
