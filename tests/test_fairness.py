"""One hook cannot stall every hook: operator ceilings at load, another agent's guard decided
within its own deadline while an attacker hook runs at its limits from 4 threads, and a hook
that keeps killing workers quarantined until a reload; all through Engine.load as a host calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli.cmd_ops import status_lines
from engine.errors import ConfigError
from engine.runtime import Engine
from tests.kinds.test_script_hook import agent_files, body, inline_hook

LANGS = ("py", "js")
GUARD = {
    "py": "def on_tool_call(event, host):\n"
    "    if event['name'] == 'rm':\n        return {'block': 'no deletes'}\n",
    "js": "function on_tool_call(event, host) {\n"
    "  if (event.name === 'rm') { return {block: 'no deletes'}; }\n  return null;\n}\n",
}
NESTED_SORTS = "sorted(" * 16 + "range(1000000)" + ", key=str)" * 16
ATTACKS = {
    "js-busy-loop": ("js", "while (true) {}"),
    "py-busy-loop": ("py", "while True:\n        pass"),
    "js-uninterruptible": ("js", "for (;;) { 'ab'.repeat(1 << 20).split('').sort(); }"),
    # one C-level expression longer than the wall deadline: the parent kills the worker
    "py-uninterruptible": ("py", "while True:\n        " + NESTED_SORTS),
    "py-memory-hog": ("py", "x = 'a' * 10\n    while True:\n        x = x + x"),
    "js-memory-hog": ("js", "var a = []; while (true) { a.push(new Array(10000).fill(1)); }"),
}
BENIGN_TIMEOUT_MS = 50


def engine_yaml(extra: str = "") -> str:
    return f"process: test\nscripts: {{timeout_ms: {BENIGN_TIMEOUT_MS}, workers: 2{extra}}}\n"


# -- operator ceilings --------------------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("field", "value", "ceiling"),
    [("memory_mb", 4096, 256), ("memory_mb", 257, 256), ("timeout_ms", 60000, 1000)],
)
def test_a_hook_above_an_operator_ceiling_does_not_load(
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Engine],
    lang: str,
    field: str,
    value: int,
    ceiling: int,
) -> None:
    hook = inline_hook("greedy", lang, GUARD[lang], f"description: x\n{field}: {value}\n")
    root = project({"engine.yaml": engine_yaml(), **agent_files("a", {"greedy": hook})})
    with pytest.raises(ConfigError) as info:
        load(root)
    (problem,) = info.value.problems
    assert problem.path.endswith("agents/a/hooks/greedy.yaml")
    assert problem.line == 5 and problem.field == field
    assert f"{value}" in problem.message and f"{ceiling}" in problem.message
    assert f"max_{field}" in (problem.hint or "")


@pytest.mark.parametrize("lang", LANGS)
def test_an_operator_may_raise_the_ceilings(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], lang: str
) -> None:
    hook = inline_hook("patient", lang, GUARD[lang], "timeout_ms: 5000\nmemory_mb: 512\n")
    root = project(
        {
            "engine.yaml": engine_yaml(", max_timeout_ms: 5000, max_memory_mb: 512"),
            **agent_files("a", {"patient": hook}),
        }
    )
    engine = load(root)
    assert engine.agent("a").tool_call("rm", {}).reason == "no deletes"
    (slot,) = engine.agent("a").pipeline.slots
    assert (slot.hook.limits.timeout_ms, slot.hook.limits.memory_mb) == (5000, 512)


@pytest.mark.parametrize(
    "scripts", ["{timeout_ms: 2000}", "{memory_mb: 512}", "{max_memory_mb: 4096}"]
)
def test_engine_defaults_above_the_ceilings_do_not_load(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], scripts: str
) -> None:
    root = project({"engine.yaml": f"process: test\nscripts: {scripts}\n"})
    with pytest.raises(ConfigError) as info:
        load(root)
    assert "engine.yaml" in str(info.value) and "scripts" in str(info.value)


# -- fairness under attack ----------------------------------------------------------------------


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attacker_hook_from_4_threads_cannot_stall_another_agents_guard(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], attack: str
) -> None:
    lang, code = ATTACKS[attack]
    attacker = inline_hook(
        "attacker", lang, body(lang, "tool_call", code), "timeout_ms: 1000\nmemory_mb: 256\n"
    )
    root = project(
        {
            "engine.yaml": engine_yaml(),
            **agent_files("evil", {"attacker": attacker}),
            **agent_files("good", {"guard": inline_hook("guard", "js", GUARD["js"])}),
        }
    )
    engine = load(root)
    stop = threading.Event()
    attacker_causes: list[str | None] = []

    def attack_loop() -> None:
        while not stop.is_set():
            out = engine.agent("evil").tool_call("x", {}, user_id="mallory")
            attacker_causes.append(out.hooks[0].cause if out.blocked else "allowed")

    threads = [threading.Thread(target=attack_loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.3)  # the attacker holds its share of the pool now
        good = engine.agent("good")
        bound = 3 * BENIGN_TIMEOUT_MS / 1000 + 0.5 + 1.0  # its deadline plus a generous second
        for i in range(15):
            name = "rm" if i % 2 else "ls"
            started = time.monotonic()
            out = good.tool_call(name, {}, user_id="alice")
            took = time.monotonic() - started
            (run,) = out.hooks
            assert run.status != "failed", f"the guard failed: {run.cause} {run.error}"
            assert out.blocked == (name == "rm") and took < bound
            if out.blocked:
                assert out.reason == "no deletes"
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert attacker_causes and "allowed" not in attacker_causes
    # "error": a JS memory hog sometimes runs out of memory while QuickJS makes the error
    # itself, and then throws null; the call fails closed all the same
    assert set(attacker_causes) <= {
        "timeout",
        "memory",
        "busy",
        "crashed",
        "quarantined",
        "error",
    }


# -- quarantine ---------------------------------------------------------------------------------

KILLER = {
    "py": "def on_tool_call(event, host):\n"
    "    sorted(sorted(sorted(sorted(range(1000000), key=str), key=str), key=str), key=str)\n",
    "js": "function on_tool_call(event, host) {\n"
    "  for (;;) { 'ab'.repeat(1 << 20).split('').sort(); }\n}\n",
}
FIXED = {"py": GUARD["py"], "js": GUARD["js"]}


def recovered(engine: Engine) -> None:
    end = time.monotonic() + 20
    while engine.status()["sandbox"]["respawns_pending"] and time.monotonic() < end:
        time.sleep(0.02)


@pytest.mark.parametrize("lang", LANGS)
def test_a_hook_that_keeps_killing_workers_is_quarantined_until_reloaded(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], lang: str
) -> None:
    root = project(
        {
            "engine.yaml": engine_yaml(", quarantine_kills: 2, max_memory_mb: 256"),
            "agents/a/agent.yaml": "hooks: [killer]\n",
            "agents/a/hooks/killer.yaml": (
                f"kind: script_hook\nname: killer\nscript: killer.{lang}\nmemory_mb: 256\n"
            ),
            f"agents/a/hooks/killer.{lang}": KILLER[lang],
            **agent_files("b", {"guard": inline_hook("guard", lang, GUARD[lang])}),
        }
    )
    engine = load(root)
    agent = engine.agent("a")
    for _ in range(2):
        out = agent.tool_call("x", {})
        assert out.blocked and out.hooks[0].cause == "timeout"
        recovered(engine)
    spawned = engine.status()["sandbox"]["spawned_total"]
    for _ in range(3):
        out = agent.tool_call("x", {})
        assert out.blocked and out.hooks[0].cause == "quarantined"
        assert "quarantined after 2 worker kills" in (out.hooks[0].error or "")
        assert "'killer'" in (out.reason or "")
    sandbox = engine.status()["sandbox"]
    assert sandbox["spawned_total"] == spawned  # no worker was touched
    (entry,) = sandbox["quarantined"]
    assert "killer" in entry["hook"] and entry["kills"] == 2
    assert any(
        line.strip().startswith("quarantined:") and "killer" in line
        for line in status_lines(engine.status())
    )
    # another agent's guard is not affected
    assert engine.agent("b").tool_call("rm", {}).reason == "no deletes"

    (root / f"agents/a/hooks/killer.{lang}").write_text(FIXED[lang])
    assert engine.reload_agent("a")
    assert engine.status()["sandbox"]["quarantined"] == []
    assert engine.agent("a").tool_call("rm", {}).reason == "no deletes"
    assert not engine.agent("a").tool_call("ls", {}).blocked


SLOW_ONCE = (
    "// declarations only: the top level runs once per prepared context, at length\n"
    "const TABLE = (function () { var x = 0; for (var i = 0; i < 1e7; i++) {"
    " x = (x + i) % 1000003; } return x; })();\n"
    "function on_tool_call(event, host) { throw new Error('this hook always fails'); }\n"
)


def test_a_slow_top_level_is_prepared_again_on_its_own_time_not_another_agents(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    # A failed call throws its context away. Preparing it again runs its top level (a third of
    # a second here); done between requests, the other agent's next call on the same worker
    # waited for it, ran past its deadline (2 x 10 ms + slack), had its worker killed and was
    # blamed, and after five such kills quarantined.
    root = project(
        {
            "engine.yaml": "process: test\nscripts: {timeout_ms: 100, workers: 1}\n",
            **agent_files("a", {"bad": inline_hook("bad", "js", SLOW_ONCE)}),
            **agent_files(
                "b", {"good": inline_hook("good", "js", GUARD["js"], "timeout_ms: 10\n")}
            ),
        }
    )
    engine = load(root)
    spawned = engine.status()["sandbox"]["spawned_total"]
    for _ in range(6):
        out = engine.agent("a").tool_call("ls", {})
        assert out.blocked and out.hooks[0].cause in ("error", "timeout")
        good = engine.agent("b").tool_call("ls", {})
        assert not good.blocked, good.hooks[0].error
        assert engine.agent("b").tool_call("rm", {}).reason == "no deletes"
    assert engine.status()["sandbox"]["spawned_total"] == spawned  # no worker was killed
    assert engine.status()["sandbox"]["quarantined"] == []


def test_the_documented_engine_yaml_ceilings_are_valid_settings() -> None:
    import yaml

    from engine.config.models import EngineSettings
    from tests.conftest import REPO

    text = (REPO / "docs/operations.md").read_text()
    (block,) = [b for b in text.split("```yaml\n")[1:] if "max_timeout_ms" in b.split("```")[0]]
    settings = EngineSettings.model_validate(yaml.safe_load(block.split("```")[0]))
    assert (settings.scripts.max_timeout_ms, settings.scripts.max_memory_mb) == (1000, 256)
    documented = set(yaml.safe_load(block.split("```")[0])["scripts"])
    assert documented == set(type(settings.scripts).model_fields)
