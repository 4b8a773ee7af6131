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
    if expect.says is not None:
        assert expect.says in str(info.value)


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


@pytest.mark.parametrize(
    ("returned", "says"),
    [
        ("new Date(2025, 0, 1)", "not a string (from its toJSON method)"),
        ("{toJSON: function () { return [1, 2]; }}", "not an array (from its toJSON method)"),
        ("{toJSON: function () { return 5; }}", "not a number (from its toJSON method)"),
        ("{input: {limit: JSON.rawJSON('1e999')}}", "result: JSON.rawJSON values are not JSON"),
        ("{input: {id: JSON.rawJSON('123456789012345678901234567890')}}", "JSON.rawJSON"),
        ("(function () { var d = {a: {}}; d.a.up = d; return {input: d}; })()", "cycle"),
    ],
)
def test_a_javascript_result_that_json_would_change_is_invalid(
    pool: WorkerPool, returned: str, says: str
) -> None:
    # A toJSON method runs after the type check, and JSON.rawJSON text is written as it is:
    # neither may bring a value past the checks (a non-object result, an infinite number).
    source = f"function on_tool_call(event, host) {{\n  return {returned};\n}}\n"
    script = pool.compile(source, filename="r.js", language=Language.JAVASCRIPT)
    with pytest.raises(ScriptRuntimeError) as err:
        pool.call(script, "on_tool_call", {"name": "t", "time": "t"}, config={}, state={})
    assert err.value.cause == "invalid_result" and says in str(err.value)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        ("host.state.set('k', d)", "host.state.set: value: contains a cycle"),
        ("host.emit({type: 'status', data: d})", "host.emit: event: contains a cycle"),
        ("host.state.set('k', JSON.rawJSON('1e999'))", "host.state.set: value: JSON.rawJSON"),
        ("host.emit({type: 'status', data: {n: JSON.rawJSON('1')}})", "host.emit: event: JSON"),
    ],
)
def test_a_javascript_host_call_names_the_call_and_field_it_refuses(
    pool: WorkerPool, call: str, says: str
) -> None:
    source = (
        "function on_tool_call(event, host) {\n  var d = {}; d.self = d;\n"
        f"  {call};\n  return null;\n}}\n"
    )
    script = pool.compile(source, filename="h.js", language=Language.JAVASCRIPT)
    with pytest.raises(ScriptRuntimeError) as err:
        pool.call(script, "on_tool_call", {"name": "t", "time": "t"}, config={}, state={})
    assert err.value.cause == "error" and says in str(err.value) and err.value.line == 3


def test_a_log_that_writes_to_a_kept_constant_answers_as_a_fresh_top_level(
    pool: WorkerPool,
) -> None:
    # console.log shows a value through the result checker; a TypeError its toJSON raises (a
    # write to a frozen constant, whatever the property is called) is the script's own and
    # reaches the worker, which runs the call again with a fresh top level.
    source = (
        "const K = {circular: 0};\nfunction on_tool_call(event, host) {\n"
        "  console.log({toJSON: function () { K.circular = 1; return 'logged'; }});\n"
        "  return {notice: 'v=' + K.circular};\n}\n"
    )
    script = pool.compile(source, filename="k.js", language=Language.JAVASCRIPT)
    result = pool.call(script, "on_tool_call", {"name": "t", "time": "t"}, config={}, state={})
    assert result.value == {"notice": "v=1"} and result.logs == ['"logged"']
