"""Workers size their prepared JavaScript contexts to the scripts loaded hooks hold."""

from __future__ import annotations

import logging

import pytest

from engine.sandbox import CompiledScript, Language, WorkerPool
from engine.sandbox.workerpool import MIN_CONTEXTS


def scripts(n: int, language: Language = Language.JAVASCRIPT) -> list[CompiledScript]:
    return [
        CompiledScript(
            language, f"s{i}.js", f"function on_tool_call() {{ return {i}; }}", frozenset()
        )
        for i in range(n)
    ]


def test_contexts_follow_the_scripts_held_within_the_floor_and_the_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with WorkerPool(size=1, max_contexts=40) as pool:
        few = scripts(3)
        for s in few:
            pool.hold(s)
        assert pool._contexts == MIN_CONTEXTS  # never below the floor
        many = scripts(30)
        for s in many:
            pool.hold(s)  # the first 3 are the same keys: held twice
        assert pool._contexts == 30
        pool.hold(few[0])
        assert pool._contexts == 30  # the same script held again is not a new context
        with caplog.at_level(logging.WARNING, logger="engine.sandbox"):
            more = scripts(45)
            for s in more:
                pool.hold(s)
        assert pool._contexts == 40
        warnings = [r for r in caplog.records if "scripts.max_contexts" in r.getMessage()]
        assert len(warnings) == 1 and "41 JavaScript script hooks" in warnings[0].getMessage()
        for s in more[30:]:
            pool.release(s)
        assert pool._contexts == 30


def test_python_scripts_hold_no_context() -> None:
    with WorkerPool(size=1) as pool:
        for s in scripts(40, Language.PYTHON):
            pool.hold(s)
        assert pool._contexts == 0


def test_a_loaded_engine_holds_each_agents_script(tmp_path) -> None:
    from engine import Engine

    root = tmp_path / "config"
    for i in range(20):
        hooks = root / "agents" / f"a{i}" / "hooks"
        hooks.mkdir(parents=True)
        (root / "agents" / f"a{i}" / "agent.yaml").write_text("hooks: [g]\n")
        (hooks / "g.yaml").write_text(
            "kind: script_hook\nname: g\nlanguage: javascript\nsource: |\n"
            f"  function on_tool_call(event) {{ return null; }} // {i}\n"
        )
    with Engine.load(root, records=False) as engine:
        pool = engine.sandbox()
        assert pool._contexts == 20
        assert not engine.agent("a0").tool_call("t", {}).blocked
    assert pool._contexts == MIN_CONTEXTS  # closing the hooks released their scripts
