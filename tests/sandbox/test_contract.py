"""Contract suite: every case runs on both runtimes and must give its one expected outcome."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.errors import ScriptCompileError, ScriptLimitError, ScriptRuntimeError
from engine.sandbox import CallResult, Language, WorkerPool
from tests.sandbox.cases import CASES, COMPILE_CASES, FUNCTIONS, Case, Fails, Rejected, Returns
from tests.sandbox.conftest import TEST_LIMITS

LANGUAGES = [Language.PYTHON, Language.JAVASCRIPT]
ERRORS = {"ScriptRuntimeError": ScriptRuntimeError, "ScriptLimitError": ScriptLimitError}


def source(c: Case, language: Language) -> str:
    return c.py if language is Language.PYTHON else c.js


def filename(c: Case, language: Language) -> str:
    return f"{c.name}.{'py' if language is Language.PYTHON else 'js'}"


def test_the_table_is_big_enough() -> None:
    assert len(CASES) + len(COMPILE_CASES) + len(FUNCTIONS) >= 60
    assert len({c.name for c in CASES + COMPILE_CASES}) == len(CASES) + len(COMPILE_CASES)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_call_contract(pool: WorkerPool, c: Case, language: Language) -> None:
    script = pool.compile(source(c, language), filename=filename(c, language), language=language)

    expect = c.expect
    # Reaching a memory limit takes its own time (32 MB of page faults, about 40 ms of CPU on
    # the 2-core VM): a time limit of its own leaves the memory limit to fire on a loaded
    # machine, so the cause checked is the one the case is about.
    memory = isinstance(expect, Fails) and expect.cause == "memory"
    limits = replace(TEST_LIMITS, timeout_ms=1000) if memory else None

    def call() -> CallResult:
        return pool.call(
            script,
            c.function,
            c.event,
            config=dict(c.config),
            state=dict(c.state),
            limits=limits,
        )

    if isinstance(expect, Returns):
        result = call()
        assert result.value == expect.value
        if expect.logs is not None:
            assert result.logs == expect.logs
        if expect.emits is not None:
            assert result.emits == expect.emits
        if expect.writes is not None:
            assert result.state_writes == expect.writes
        if expect.ttls is not None:
            assert result.state_ttls == expect.ttls
        return
    assert isinstance(expect, Fails)
    with pytest.raises(ERRORS[expect.error]) as info:
        call()
    assert type(info.value) is ERRORS[expect.error]
    assert info.value.cause == expect.cause
    assert info.value.language == language.value
    if expect.line is not None:
        assert info.value.line == expect.line


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("c", COMPILE_CASES, ids=lambda c: c.name)
def test_compile_contract(pool: WorkerPool, c: Case, language: Language) -> None:
    expect = c.expect
    assert isinstance(expect, Rejected)
    with pytest.raises(ScriptCompileError) as info:
        pool.compile(source(c, language), filename=filename(c, language), language=language)
    problems = info.value.problems
    assert problems and all(p.path == filename(c, language) for p in problems)
    if expect.line is not None:
        assert problems[0].line == expect.line
    if expect.hint is not None:
        assert any(p.hint and expect.hint in p.hint for p in problems)
        assert all(p.line is not None for p in problems)


@pytest.mark.parametrize("language", LANGUAGES)
def test_compile_lists_the_point_functions(pool: WorkerPool, language: Language) -> None:
    c = FUNCTIONS[0]
    script = pool.compile(source(c, language), filename=filename(c, language), language=language)
    assert script.functions == {"on_tool_call", "on_after_turn"}
    assert script.language is language


@pytest.mark.parametrize("language", LANGUAGES)
def test_state_is_per_call_snapshot_and_isolated_between_hooks(
    pool: WorkerPool, language: Language
) -> None:
    c = next(c for c in CASES if c.name == "state_set_comes_back")
    a = pool.compile(source(c, language), filename="a." + filename(c, language), language=language)
    b = pool.compile(source(c, language), filename="b." + filename(c, language), language=language)
    first = pool.call(a, "on_tool_call", c.event, config={}, state={"count": 1})
    assert first.state_writes == {"count": 2}
    # The caller persists writes; nothing is kept in the sandbox between calls or hooks.
    assert pool.call(a, "on_tool_call", c.event, config={}, state={}).state_writes == {"count": 1}
    assert pool.call(b, "on_tool_call", c.event, config={}, state={"count": 9}).state_writes == {
        "count": 10
    }


@pytest.mark.parametrize("language", LANGUAGES)
def test_globals_do_not_survive_between_calls(pool: WorkerPool, language: Language) -> None:
    py = "seen = []\ndef on_tool_call(e, h):\n    seen.append(1)\n    return {'n': len(seen)}\n"
    js = "var seen = [];\nfunction on_tool_call(e, h) { seen.push(1); return {n: seen.length}; }\n"
    src = py if language is Language.PYTHON else js
    script = pool.compile(src, filename="g", language=language)
    for _ in range(4):
        assert pool.call(script, "on_tool_call", {}, config={}, state={}).value == {"n": 1}


@pytest.mark.parametrize("language", LANGUAGES)
def test_many_threads_share_the_pool(pool: WorkerPool, language: Language) -> None:
    from concurrent.futures import ThreadPoolExecutor

    c = next(c for c in CASES if c.name == "returns_event_fields")
    script = pool.compile(source(c, language), filename=filename(c, language), language=language)
    with ThreadPoolExecutor(8) as ex:
        results = list(
            ex.map(
                lambda _: pool.call(script, "on_tool_call", c.event, config={}, state={}), range(64)
            )
        )
    assert all(r.value == {"notice": "delete_file:a.txt"} for r in results)


def test_a_javascript_result_with_symbol_keys_is_refused_not_trimmed(pool: WorkerPool) -> None:
    source = (
        "function on_tool_call(event, host) {\n"
        "  var o = {block: 'no'}; o[Symbol('hidden')] = 'x'; return o;\n}\n"
    )
    script = pool.compile(source, filename="sym.js", language=Language.JAVASCRIPT)
    with pytest.raises(ScriptRuntimeError) as err:
        pool.call(script, "on_tool_call", {"name": "t", "time": "t"}, config={}, state={})
    assert err.value.cause == "invalid_result" and "symbol" in str(err.value)
