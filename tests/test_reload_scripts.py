"""Hot reload of script hooks: editing the .js or .py file a hook references goes live; a
script that no longer compiles keeps the last good version and names the script's line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Engine
from tests.test_reload import wait_until

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
