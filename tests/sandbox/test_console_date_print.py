"""JavaScript's console and Date, Python's print: log lines and the call's own time, and
nothing more (no clock, no escape, no error swallowed)."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import json

import _quickjs
import pytest

from engine.errors import ScriptCompileError, ScriptError
from engine.sandbox import CallResult, Language, WorkerPool
from engine.sandbox.javascript import JavaScriptRuntime
from engine.sandbox.static_checks import JS_GLOBALS, check_script

TIME = "2025-03-04T05:06:07.123456+00:00"
MS = 1741064767123


def js_call(
    pool: WorkerPool, body: str, event: dict[str, object] | None = None, top: str = ""
) -> object:
    source = f"{top}\nfunction on_tool_call(event, host) {{\n{body}\n}}\n"
    script = pool.compile(source, filename="t.js", language=Language.JAVASCRIPT)
    return pool.call(
        script, "on_tool_call", event or {"name": "x", "time": TIME}, config={}, state={}
    )


def py_call(pool: WorkerPool, body: str, top: str = "") -> object:
    lines = "\n".join("    " + line for line in body.splitlines())
    source = f"{top}\ndef on_tool_call(event, host):\n{lines}\n"
    script = pool.compile(source, filename="t.py", language=Language.PYTHON)
    return pool.call(script, "on_tool_call", {"name": "x", "time": TIME}, config={}, state={})


# -- console ---------------------------------------------------------------------------------


def test_console_methods_log_lines_with_their_level(pool: WorkerPool) -> None:
    result = js_call(
        pool,
        'console.log("a", 1, true, null, undefined, {k: [1]}); console.info("i"); console.debug("d");'
        'console.warn("w"); console.error(new RangeError("bad")); return null;',
    )
    assert result.logs == [
        'a 1 true null undefined {"k":[1]}',
        "i",
        "debug: d",
        "warn: w",
        "error: RangeError: bad",
    ]


def test_console_shows_what_json_cannot_as_a_marker(pool: WorkerPool) -> None:
    result = js_call(
        pool,
        "var c = {}; c.c = c; console.log(c, function () {}, Symbol('s'), 5n, new Map(), NaN); return null;",
    )
    assert result.logs == ["[object] [function] [symbol] 5n [object] NaN"]


def test_a_console_line_is_cut_at_the_text_cap_never_refused(pool: WorkerPool) -> None:
    result = js_call(
        pool,
        "console.log('x'.repeat(500000), 'y'); console.log.apply(null, new Array(60000)); return null;",
    )
    assert len(result.logs) == 2
    assert all(len(line) <= 2001 for line in result.logs)  # max_log_chars and its marker


def test_console_lines_share_the_log_line_cap(pool: WorkerPool) -> None:
    result = js_call(pool, "for (var i = 0; i < 1000; i++) { console.log(i); } return null;")
    assert result.logs[-1].endswith("more log lines dropped]")


def test_an_error_a_getter_throws_while_logged_reaches_the_script(pool: WorkerPool) -> None:
    with pytest.raises(ScriptError, match="from the getter"):
        js_call(
            pool, "console.log({get a() { throw new Error('from the getter'); }}); return null;"
        )


def test_console_at_load_time_logs_nothing_and_does_not_fail(pool: WorkerPool) -> None:
    result = js_call(pool, "return null;", top="console.log('at load');")
    assert result.logs == ["at load"]  # the top level runs again inside the call


# -- Date ------------------------------------------------------------------------------------


def test_date_gives_the_calls_time_however_it_is_reached(pool: WorkerPool) -> None:
    result = js_call(
        pool,
        "class D extends Date {}\n"
        "return {now: Date.now(), made: new Date().getTime(), sub: new D().getTime(),"
        " via: new (new Date(0).constructor)().getTime(), reflect: Reflect.construct(Date, []).getTime(),"
        " text: Date(), iso: new Date().toISOString(), hours: new Date().getHours(),"
        " offset: new Date().getTimezoneOffset(), local: new Date(2025, 0, 2, 3).toISOString()};",
    )
    value = result.value
    assert {value[k] for k in ("now", "made", "sub", "via", "reflect")} == {MS}
    assert value["iso"] == "2025-03-04T05:06:07.123Z"
    assert value["text"].startswith("Tue Mar 04 2025 05:06:07 GMT+0000")
    assert (value["hours"], value["offset"]) == (5, 0)  # workers run in UTC
    assert value["local"] == "2025-01-02T03:00:00.000Z"


def test_date_is_the_events_time_as_the_call_began_whatever_the_script_changes(
    pool: WorkerPool,
) -> None:
    """The time is parsed when a Date first asks for it, from the text the call began with: a
    script that rewrites (or deletes) ``event.time`` first cannot move its own clock."""
    moved = js_call(pool, "event.time = '1999-01-01T00:00:00+00:00'; return {t: Date.now()};")
    gone = js_call(pool, "delete event.time; return {t: new Date().getTime()};")
    assert isinstance(moved, CallResult) and isinstance(gone, CallResult)
    assert moved.value == {"t": MS}
    assert gone.value == {"t": MS}


def test_date_with_arguments_is_the_ordinary_calendar(pool: WorkerPool) -> None:
    result = js_call(
        pool,
        "return {a: new Date(0).toISOString(), b: Date.parse('2020-01-01T00:00:00Z'), c: Date.UTC(2020, 0, 1)};",
    )
    assert result.value == {"a": "1970-01-01T00:00:00.000Z", "b": 1577836800000, "c": 1577836800000}


def test_date_without_an_event_time_is_an_error_naming_host_now(pool: WorkerPool) -> None:
    with pytest.raises(ScriptError, match=r"this event has no time \(host.now\(\) is null\)"):
        js_call(pool, "return {t: Date.now()};", event={"name": "x"})


def test_date_at_load_time_fails_to_compile_with_a_pointer_to_host_now(pool: WorkerPool) -> None:
    with pytest.raises(ScriptCompileError, match=r"only known inside an on_<point> call"):
        js_call(pool, "return null;", top="const STARTED = Date.now();")


def test_date_is_the_same_on_replay_however_late(pool: WorkerPool) -> None:
    first = js_call(pool, "return {t: Date.now(), s: String(new Date())};")
    again = js_call(pool, "return {t: Date.now(), s: String(new Date())};")
    assert first.value == again.value


def test_the_real_clock_is_unreachable() -> None:
    """The prelude's context has no Date.now of the real Date and no constructor leading to it."""
    js = JavaScriptRuntime()
    c = js._new({"memory_mb": 32, "stack_kb": 256})
    probes = [
        "Object.getOwnPropertyNames(Date).sort().join()",
        "Date.prototype.constructor === Date",
        "Object.isFrozen(Date) && Object.isFrozen(Date.prototype) && Object.isFrozen(console)",
        "typeof performance",
    ]
    assert [c.ctx.eval(p) for p in probes] == [
        "UTC,length,name,now,parse,prototype",
        True,
        True,
        "undefined",
    ]


def test_js_globals_of_the_static_checks_are_the_sandboxs() -> None:
    js = JavaScriptRuntime()
    c = js._new({"memory_mb": 32, "stack_kb": 256})
    names = json.loads(c.ctx.eval("JSON.stringify(Object.getOwnPropertyNames(globalThis))"))
    assert set(names) == JS_GLOBALS
    with pytest.raises(_quickjs.JSException):
        c.ctx.eval("require")


@pytest.mark.parametrize(
    "pattern", ["[" * 5000 + "a" + "]" * 5000, "{a:" * 5000 + "b" + "}" * 5000]
)
def test_the_static_checks_read_a_deeply_nested_pattern(pattern: str) -> None:
    # A destructuring pattern thousands deep was walked by recursion: RecursionError.
    name = "a" if pattern[0] == "[" else "b"
    source = f"var x;\nconst {pattern} = x;\nfunction on_tool_call(e, h) {{ return {name}; }}\n"
    assert check_script(source, "javascript") == []
    params = f"function f({pattern}) {{}}\nfunction on_tool_call(event, host) {{ return zz; }}\n"
    assert [f.field for f in check_script(params, "javascript")] == ["zz"]


# -- Python print ----------------------------------------------------------------------------


def test_print_writes_one_log_line_per_call(pool: WorkerPool) -> None:
    result = py_call(pool, 'print("a", 1, None, {"k": [1]}, sep="|")\nprint()\nreturn None')
    assert result.logs == ["a|1|None|{'k': [1]}", ""]


def test_a_print_line_is_cut_at_the_text_cap(pool: WorkerPool) -> None:
    result = py_call(pool, 'print("x" * 200000, "y")\nreturn None')
    assert len(result.logs) == 1 and len(result.logs[0]) <= 2001


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('print("x", file=host)\nreturn None', "file= is not supported"),
        ('print("x", sep=1)\nreturn None', "sep and end must be str"),
    ],
)
def test_print_refuses_files_and_odd_separators(pool: WorkerPool, body: str, words: str) -> None:
    with pytest.raises(ScriptError, match=words):
        py_call(pool, body)


def test_printed_and_the_collector_are_not_reachable(pool: WorkerPool) -> None:
    with pytest.raises(ScriptCompileError, match="'printed' is not allowed"):
        py_call(pool, 'print("x")\nreturn {"t": printed}')
    with pytest.raises(ScriptCompileError, match="__self__"):
        py_call(pool, "return {'t': str(print.__self__)}")


def test_print_hides_addresses(pool: WorkerPool) -> None:
    result = py_call(pool, "print(host, print)\nreturn None")
    assert "0x" not in result.logs[0]
