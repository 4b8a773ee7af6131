"""No state carried from one call to the next: each channel is planted by one call and probed by
the next call of the same script on the same worker (and, for JavaScript, the same context)."""

# ruff: noqa: E501 - a table of channels reads best one per line

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engine.errors import ScriptCompileError
from engine.sandbox import Language, Limits, WorkerPool
from engine.sandbox.javascript import RECYCLE_CALLS, JavaScriptRuntime

JS_CHANNELS: dict[str, tuple[str, str]] = {
    "global_assignment": ("globalThis.stash = 1;", "typeof globalThis.stash !== 'undefined'"),
    "implicit_global": ("stash2 = 1;", "typeof stash2 !== 'undefined'"),
    "this_at_top_level": ("(function () { this.stash3 = 1; })();", "typeof stash3 !== 'undefined'"),
    "define_property_on_global": (
        "Object.defineProperty(globalThis, 'stash4', {value: 1});",
        "typeof stash4 !== 'undefined'",
    ),
    "object_prototype_pollution": ("Object.prototype.polluted = 1;", "({}).polluted !== undefined"),
    "object_prototype_proto_setter": (
        "Object.prototype.__proto__ = {x: 1};",
        "({}).x !== undefined",
    ),
    "array_prototype_method": (
        "Array.prototype.push = function () { return 42; };",
        "[].push(1) === 42",
    ),
    "array_prototype_prop": ("Array.prototype.stash = 1;", "[].stash !== undefined"),
    "builtin_method_object": ("[].push.stash = 1;", "[].push.stash !== undefined"),
    "function_prototype": ("Function.prototype.stash = 1;", "(function () {}).stash !== undefined"),
    "string_prototype": ("String.prototype.stash = 1;", "''.stash !== undefined"),
    "json": (
        "JSON.stash = 1; JSON.parse = function () { return 1; };",
        "JSON.stash !== undefined || JSON.parse('2') !== 2",
    ),
    "math": ("Math.stash = 1;", "Math.stash !== undefined"),
    "reflect": ("Reflect.stash = 1;", "Reflect.stash !== undefined"),
    "error_prototype_to_string": (
        "Error.prototype.toString = function () { return 'x'; };",
        "String(new Error('m')) === 'x'",
    ),
    "error_stack_trace_limit": ("Error.stackTraceLimit = 3;", "Error.stackTraceLimit === 3"),
    "error_prepare_stack_trace": (
        "Error.prepareStackTrace = function () { return 'x'; };",
        "typeof Error.prepareStackTrace === 'function'",
    ),
    "getter_on_frozen_object": (
        "Object.defineProperty(Math, 'q', {get: function () { return 1; }});",
        "Math.q !== undefined",
    ),
    "iterator_prototype": (
        "Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())).stash = 1;",
        "[][Symbol.iterator]().stash !== undefined",
    ),
    "array_iterator_prototype": (
        "Object.getPrototypeOf([][Symbol.iterator]()).stash = 1;",
        "[][Symbol.iterator]().stash !== undefined",
    ),
    "generator_prototype": (
        "Object.getPrototypeOf(function* () {}).prototype.stash = 1;",
        "(function* () {})().stash !== undefined",
    ),
    "async_function_prototype": (
        "Object.getPrototypeOf(async function () {}).stash = 1;",
        "(async function () {}).stash !== undefined",
    ),
    "typed_array_prototype": (
        "Object.getPrototypeOf(Int8Array.prototype).stash = 1;",
        "new Int8Array(1).stash !== undefined",
    ),
    "throw_type_error_intrinsic": (
        "(function () { 'use strict'; Object.getOwnPropertyDescriptor(arguments, 'callee').get.stash = 1; })();",
        "(function () { 'use strict'; return Object.getOwnPropertyDescriptor(arguments, 'callee').get.stash; })() !== undefined",
    ),
    "symbol_registry_as_key": (
        "var s = Symbol.for('he'); Object.prototype[s] = 1;",
        "({})[Symbol.for('he')] !== undefined",
    ),
    "weakmap_on_frozen_object": ("wm.set(Object.prototype, 1);", "wm.has(Object.prototype)"),
    "top_level_variable": ("counter.n += 1;", "counter.n !== 0"),
    "closure_cache": ("remember('k', 1);", "remember('k') !== undefined"),
    "regexp_last_index": ("re.exec('aaa'); re.exec('aaa');", "re.lastIndex !== 0"),
    "promise_job": (
        "Promise.resolve().then(function () { globalThis.late = 1; counter.n = 9; });",
        "typeof late !== 'undefined'",
    ),
    "host_function_property": ("host.log.stash = 1;", "host.log.stash !== undefined"),
    "host_config_mutation": ("host.config.list.push('x');", "host.config.list.length !== 0"),
    "event_mutation": ("event.input.stash = 1;", "event.input.stash !== undefined"),
    "function_caller_reaches_engine": (
        "",
        "(function f() { return f.caller; })() !== undefined && (function f() { return f.caller; })() !== null",
    ),
    "weakref_absent": ("", "typeof WeakRef !== 'undefined'"),
    "date_static_write": ("try { Date.now = null; } catch (e) {}", "Date.now === null"),
    "date_prototype_write": (
        "try { Date.prototype.getTime = null; } catch (e) {}",
        "Date.prototype.getTime === null",
    ),
    "console_write": ("try { console.log = null; } catch (e) {}", "console.log === null"),
    # the strict, frozen wrapper: nothing at top level reaches an object that outlives the call
    "arguments_callee_of_the_wrapper": ("me.stash = event.input;", "me.stash !== undefined"),
    "wrapper_prototype": ("me.prototype.stash = 1;", "me.prototype.stash !== undefined"),
    "wrapper_as_this": ("self.stash = 1;", "self.stash !== undefined"),
    "caller_of_the_handler": (
        "(function f() { return f.caller; })().stash = 1;",
        "(function f() { return f.caller; })().stash !== undefined",
    ),
    "caller_of_top_level_function": (
        "callerOfTop().stash = 1;",
        "callerOfTop().stash !== undefined",
    ),
    "generator_made_at_top_level": ("gen.next(7);", "gen.next().value !== 0"),
    "async_function_made_at_top_level": ("pending.stash = 1;", "pending.stash !== undefined"),
    "async_continuation": (
        "(async function () { await null; counter.n = 5; })();",
        "counter.n !== 0",
    ),
    # realm-wide registries and statics
    "symbol_registry_description": (
        "Object.defineProperty(Symbol.prototype, 'stash', {value: Symbol.for('he').description});",
        "Symbol.for('he').stash !== undefined",
    ),
    "well_known_symbol_property": (
        "Symbol.iterator.stash = 1;",
        "Symbol.iterator.stash !== undefined",
    ),
    "regexp_legacy_statics": (
        "/(planted)/.exec('planted');",
        "RegExp.$1 === 'planted' || RegExp.lastMatch === 'planted' || RegExp.input === 'planted'",
    ),
    "regexp_prototype_flags": (
        "Object.defineProperty(RegExp.prototype, 'flags', {get: function () { return 'g'; }});",
        "/a/.flags === 'g'",
    ),
    "error_capture_stack_trace": (
        "Error.captureStackTrace(Object.prototype);",
        "({}).stack !== undefined",
    ),
    "error_stack_on_builtin": ("Error.captureStackTrace(Math);", "Math.stack !== undefined"),
    "array_species": (
        "Object.defineProperty(Array, Symbol.species, {get: function () { return Object; }});",
        "[1].map(function (x) { return x; }).constructor !== Array",
    ),
    "typed_array_species": (
        "Object.defineProperty(Uint8Array, Symbol.species, {get: function () { return Object; }});",
        "new Uint8Array(1).map(function (x) { return x; }).constructor !== Uint8Array",
    ),
    "promise_species": (
        "Object.defineProperty(Promise, Symbol.species, {get: function () { return Object; }});",
        "Promise[Symbol.species] !== Promise",
    ),
    "atomics_absent": (
        "",
        "typeof Atomics !== 'undefined' || typeof SharedArrayBuffer !== 'undefined'",
    ),
    "iterator_helper_prototype": (
        "Object.getPrototypeOf([].values().map(function (x) { return x; })).stash = 1;",
        "[].values().map(function (x) { return x; }).stash !== undefined",
    ),
    "iterator_constructor": ("Iterator.prototype.stash = 1;", "[].values().stash !== undefined"),
    "disposable_stack_prototype": (
        "DisposableStack.prototype.stash = 1;",
        "new DisposableStack().stash !== undefined",
    ),
    "async_disposable_stack_prototype": (
        "AsyncDisposableStack.prototype.stash = 1;",
        "new AsyncDisposableStack().stash !== undefined",
    ),
    "dom_exception_prototype": (
        "DOMException.prototype.stash = 1;",
        "new DOMException('m').stash !== undefined",
    ),
    "json_object": ("JSON.rawJSON = null;", "JSON.rawJSON === null"),
    "math_object": ("Math.max = Math.min;", "Math.max(1, 2) !== 2"),
    "host_object_identity": ("host.stash = 1;", "host.stash !== undefined"),
    "host_state_object": ("host.state.stash = 1;", "host.state.stash !== undefined"),
    # the host's functions are one set per context (each acts for the running call)
    "host_function": ("host.log.stash = 1;", "host.log.stash !== undefined"),
    "host_state_function": ("host.state.get.stash = 1;", "host.state.get.stash !== undefined"),
    "host_function_name": (
        "Object.defineProperty(host.match, 'name', {value: 'x'});",
        "host.match.name === 'x'",
    ),
    "host_entries_object": ("host.entries.stash = 1;", "host.entries.stash !== undefined"),
    "host_config_property": ("host.config.stash = event.input;", "host.config.stash !== undefined"),
}
JS_TOP = (
    "var counter = {n: 0};\nvar wm = new WeakMap();\nvar re = /a/g;\n"
    "var remember = (function () { var m = {}; return function (k, v) { if (v !== undefined) { m[k] = v; } return m[k]; }; })();\n"
    "var me = null;\ntry { me = arguments.callee; } catch (e) {}\n"
    "var self = this;\n"
    "function callerOfTop() { return callerOfTop.caller; }\n"
    "var gen = (function* () { var n = 0; while (true) { var m = yield n; if (m !== undefined) { n = m; } } })();\ngen.next();\n"
    "var pending = (async function () {})();\n"
)
PY_CHANNELS: dict[str, tuple[str, str]] = {
    "module_global": ("COUNTER.append(1)", "len(COUNTER) != 0"),
    "default_argument": ("remember(1)", "len(remember()) != 0"),
    "closure_cache": ("CACHE['k'] = 1", "'k' in CACHE"),
    "builtin_type_attribute": ("dict.stash = 1", "False"),
    "exception_class_attribute": ("Exception.stash = 1", "False"),
    "function_attribute": ("on_tool_call.stash = 1", "False"),
    "host_attribute": ("host.stash = 1", "False"),
    "host_config_mutation": ("host.config['list'].append('x')", "len(host.config['list']) != 0"),
    "event_mutation": ("event['input']['stash'] = 1", "'stash' in event['input']"),
    # module-level tables: a name used any other way than ``x in NAME`` stays built per call
    "module_list_table": ("TABLE.append('x')", "'x' in TABLE"),
    "module_set_table": ("SEEN.add('x')", "'x' in SEEN"),
    "module_table_by_alias": ("alias = ALIASED\n            alias.append('x')", "'x' in ALIASED"),
    "global_statement": (
        "plant_global()",
        "'PLANTED' in [k for k in ['PLANTED'] if k == PLANTED_NAME()]",
    ),
}
PY_TOP = (
    "COUNTER = []\nCACHE = {}\nTABLE = ['a']\nSEEN = {'a', 'b'}\nALIASED = ['a']\n"
    "\ndef remember(x=None, seen=[]):\n    if x is not None:\n        seen.append(x)\n    return seen\n\n"
    "def plant_global():\n    global STASH\n    STASH = 1\n\ndef PLANTED_NAME():\n    return 'PLANTED' if STASH_SEEN() else ''\n\n"
    "def STASH_SEEN():\n    try:\n        return STASH == 1\n    except NameError:\n        return False\n"
)


def js_script(plant: str, probe: str) -> str:
    return (
        JS_TOP + "function on_tool_call(event, host) {\n"
        f"  if (event.name === 'plant') {{ try {{ {plant} }} catch (e) {{}} return null; }}\n"
        f"  var leak = false; try {{ leak = !!({probe}); }} catch (e) {{ leak = false; }}\n"
        "  return {leak: leak};\n}\n"
    )


def py_script(plant: str, probe: str) -> str:
    return (
        PY_TOP + "\ndef on_tool_call(event, host):\n"
        "    if event['name'] == 'plant':\n"
        f"        try:\n            {plant}\n        except Exception:\n            pass\n"
        "        return None\n"
        f"    try:\n        leak = bool({probe})\n    except Exception:\n        leak = False\n"
        "    return {'leak': leak}\n"
    )


@pytest.fixture(scope="module")
def one_worker() -> Iterator[WorkerPool]:
    # One worker: the probing call runs where the planting call ran.
    with WorkerPool(size=1, limits=Limits(timeout_ms=200, compile_timeout_ms=2000)) as pool:
        yield pool


def plant_then_probe(pool: WorkerPool, source: str, language: Language) -> object:
    script = pool.compile(source, filename=f"channel.{language.value}", language=language)
    config = {"list": []}
    event = {"input": {}}
    planted = pool.call(script, "on_tool_call", {**event, "name": "plant"}, config=config, state={})
    assert planted.value is None
    probed = pool.call(script, "on_tool_call", {**event, "name": "probe"}, config=config, state={})
    return probed.value


@pytest.mark.parametrize("channel", sorted(JS_CHANNELS))
def test_javascript_call_leaves_nothing_for_the_next(one_worker: WorkerPool, channel: str) -> None:
    plant, probe = JS_CHANNELS[channel]
    assert plant_then_probe(one_worker, js_script(plant, probe), Language.JAVASCRIPT) == {
        "leak": False
    }


@pytest.mark.parametrize("channel", sorted(PY_CHANNELS))
def test_python_call_leaves_nothing_for_the_next(one_worker: WorkerPool, channel: str) -> None:
    plant, probe = PY_CHANNELS[channel]
    assert plant_then_probe(one_worker, py_script(plant, probe), Language.PYTHON) == {"leak": False}


def test_the_probes_would_see_a_leak_if_state_were_shared(one_worker: WorkerPool) -> None:
    # The probes are not vacuous: within one call, planting then probing does show the value.
    for plant, probe in (JS_CHANNELS["top_level_variable"], JS_CHANNELS["closure_cache"]):
        source = (
            JS_TOP
            + f"function on_tool_call(event, host) {{ {plant} return {{leak: !!({probe})}}; }}\n"
        )
        script = one_worker.compile(source, filename="same_call.js", language=Language.JAVASCRIPT)
        result = one_worker.call(
            script, "on_tool_call", {"input": {}}, config={"list": []}, state={}
        )
        assert result.value == {"leak": True}


LIMITS = Limits().as_wire()


def js_request(name: str) -> tuple[dict[str, object], str]:
    req = {
        "op": "call",
        "language": "javascript",
        "function": "on_tool_call",
        "script": {"key": "k", "filename": "t.js"},
        "event": {"name": name, "input": {}},
        "config": {"list": []},
        "state": {},
        "limits_key": "l",
    }
    line = json.dumps(req)
    req["limits"] = LIMITS
    return req, line


def test_a_javascript_context_is_reused_between_healthy_calls() -> None:
    js = JavaScriptRuntime()
    source = js_script(*JS_CHANNELS["top_level_variable"])
    assert js.compile({"source": source, "filename": "t.js", "key": "k", "limits": LIMITS})["ok"]
    first = js._ready["k"]
    for name in ("plant", "probe", "probe"):
        js.call(*js_request(name))
        js.prepare()
        assert js._ready["k"] is first


def test_a_javascript_context_is_replaced_after_a_failure_and_after_many_calls() -> None:
    js = JavaScriptRuntime()
    source = "function on_tool_call(event, host) { if (event.name === 'boom') { throw new Error('x'); } return null; }"
    assert js.compile({"source": source, "filename": "t.js", "key": "k", "limits": LIMITS})["ok"]
    first = js._ready["k"]
    answer = js.call(*js_request("boom"))
    assert isinstance(answer, dict) and answer["kind"] == "runtime"
    js.prepare()
    second = js._ready["k"]
    assert second is not first
    for _ in range(RECYCLE_CALLS):
        js.call(*js_request("ok"))
        js.prepare()
    assert js._ready["k"] is not second


def test_everything_a_javascript_call_can_reach_is_frozen(one_worker: WorkerPool) -> None:
    walker = """
function on_tool_call(event, host) {
  var getProto = Object.getPrototypeOf, seen = new Set(), open = [];
  var todo = [globalThis, getProto(function* () {}), getProto(async function () {}), getProto(async function* () {}),
    getProto([][Symbol.iterator]()), getProto(new Map()[Symbol.iterator]()), getProto(new Set()[Symbol.iterator]()),
    getProto(''[Symbol.iterator]()), getProto(/a/[Symbol.matchAll]('')), getProto([].values().map(function (x) { return x; })),
    getProto(Iterator.from({next: function () {}})), getProto(host), getProto(event)];
  while (todo.length) {
    var o = todo.pop();
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) { continue; }
    seen.add(o);
    if (!Object.isFrozen(o)) { open.push(String(o && o.name || Object.prototype.toString.call(o))); }
    if (o instanceof Map || o instanceof Set || o instanceof WeakMap || o instanceof ArrayBuffer) { open.push('slots'); }
    todo.push(getProto(o));
    Reflect.ownKeys(o).forEach(function (k) { var d = Object.getOwnPropertyDescriptor(o, k); todo.push(d.value, d.get, d.set); });
  }
  return {open: open, count: seen.size};
}
"""
    script = one_worker.compile(walker, filename="walker.js", language=Language.JAVASCRIPT)
    result = one_worker.call(script, "on_tool_call", {"input": {}}, config={}, state={})
    assert result.value is not None
    assert result.value["open"] == []
    assert result.value["count"] > 500


def test_a_script_cannot_break_out_of_its_function_scope(one_worker: WorkerPool) -> None:
    # A source that is not a Script on its own (it closes the wrapper) is refused at load.
    from engine.errors import ScriptCompileError

    source = "}); let kept = {n: 0}; (function () {\nfunction on_tool_call(e, h) { kept.n++; return {n: kept.n}; }"
    with pytest.raises(ScriptCompileError):
        one_worker.compile(source, filename="escape.js", language=Language.JAVASCRIPT)


SLOPPY_ONLY = {
    "with_statement": (
        "var o = {x: 1};\nfunction on_tool_call(event, host) {\n  with (o) { return {x: x}; }\n}\n",
        3,
    ),
    "octal_literal": ("function on_tool_call(event, host) {\n  return {x: 010};\n}\n", 2),
    "octal_escape": ("function on_tool_call(event, host) {\n  return {x: '\\01'};\n}\n", 2),
    # QuickJS names the first line of the body for a duplicate parameter
    "duplicate_parameters": ("function on_tool_call(event, event) {\n  return null;\n}\n", 2),
    "delete_of_a_name": (
        "var x = 1;\nfunction on_tool_call(event, host) {\n  delete x;\n  return null;\n}\n",
        3,
    ),
    "reserved_word_as_name": (
        "var x = 1;\nfunction on_tool_call(event, host) {\n  var interface = 1;\n  return null;\n}\n",
        3,
    ),
}


@pytest.mark.parametrize("case", sorted(SLOPPY_ONLY))
def test_a_sloppy_mode_only_script_fails_to_load_naming_line_and_strict_mode(
    one_worker: WorkerPool, case: str
) -> None:
    source, line = SLOPPY_ONLY[case]
    with pytest.raises(ScriptCompileError) as caught:
        one_worker.compile(source, filename="sloppy.js", language=Language.JAVASCRIPT)
    (problem,) = caught.value.problems
    assert problem.line == line
    assert "strict mode" in problem.message


@pytest.mark.parametrize(
    "top",
    [
        "var me = arguments.callee;",
        "var c = arguments.callee.caller;",
        "arguments.callee.stash = 1;",
    ],
)
def test_reaching_the_wrapper_through_arguments_callee_fails_the_load(
    one_worker: WorkerPool, top: str
) -> None:
    source = "\n" + top + "\nfunction on_tool_call(event, host) { return null; }\n"
    with pytest.raises(ScriptCompileError) as caught:
        one_worker.compile(source, filename="callee.js", language=Language.JAVASCRIPT)
    assert caught.value.problems[0].line == 2


def compiled_runtime(source: str) -> JavaScriptRuntime:
    js = JavaScriptRuntime()
    assert js.compile({"source": source, "filename": "t.js", "key": "k", "limits": LIMITS})["ok"]
    return js


def js_call(js: JavaScriptRuntime, name: str) -> dict[str, object]:
    answer = js.call(*js_request(name))
    js.prepare()
    return json.loads(answer) if isinstance(answer, str) else answer


@pytest.mark.parametrize(
    "queue",
    [
        "Promise.resolve().then(function () { counter.n = 1; });",
        "(async function () { await null; counter.n = 1; })();",
        "Promise.reject(new Error('x')).catch(function () { counter.n = 1; });",
        "new Promise(function (ok) { ok(); }).then(function () { return Promise.resolve(); }).then(function () { counter.n = 1; });",
    ],
)
def test_a_context_left_with_promise_jobs_is_never_used_again(queue: str) -> None:
    source = (
        "var counter = {n: 0};\nfunction on_tool_call(event, host) {\n"
        f"  if (event.name === 'plant') {{ {queue} }}\n  return {{n: counter.n}};\n}}\n"
    )
    js = compiled_runtime(source)
    first = js._ready["k"]
    assert js_call(js, "probe")["value"] == {"n": 0}
    assert js._ready["k"] is first
    assert js_call(js, "plant")["value"] == {"n": 0}
    assert js._ready["k"] is not first
    assert js_call(js, "probe")["value"] == {"n": 0}


def test_the_host_used_after_its_call_ended_reaches_no_call() -> None:
    """The host's functions are made once per context and act for the running call: one a
    promise job calls after its call ended logs nowhere (it throws), the answer stays the
    call's own, and the next call sees its own host, with none of it."""
    source = (
        "function on_tool_call(event, host) {\n"
        "  if (event.name === 'plant') {\n"
        "    var log = host.log, set = host.state.set;\n"
        "    Promise.resolve().then(function () { log('late'); set('n', 1); });\n"
        "  }\n"
        "  host.log('call ' + event.name);\n"
        "  return {n: host.state.get('n'), same: Object.isFrozen(host.log)};\n}\n"
    )
    js = compiled_runtime(source)
    planted = js_call(js, "plant")
    assert planted["value"] == {"n": None, "same": True}
    assert planted["logs"] == ["call plant"] and planted["state_writes"] == {}
    probe = js_call(js, "probe")
    assert probe["value"] == {"n": None, "same": True}
    assert probe["logs"] == ["call probe"] and probe["state_writes"] == {}


def test_promise_jobs_queued_at_load_do_not_stay_in_the_kept_context() -> None:
    js = compiled_runtime(
        "Promise.resolve().then(function () {});\nfunction on_tool_call(event, host) { return null; }\n"
    )
    assert "k" not in js._ready
    assert js_call(js, "probe")["value"] is None


def test_the_pattern_cache_of_a_script_context_lives_for_one_call() -> None:
    # Memory is the observable: many compiled patterns after one call, none after the next.
    source = (
        "function on_tool_call(event, host) {\n"
        "  if (event.name === 'plant') { for (var i = 0; i < 200; i++) { host.match('(?i)pin-' + i + '-[0-9]{4,8}', 'x'); } }\n"
        "  else { host.match('a+', 'aa'); }\n  return null;\n}\n"
    )
    js = compiled_runtime(source)
    assert js_call(js, "probe")["ok"]
    used = js._ready["k"].ctx.memory()["memory_used_size"]
    # 200 compiles take about 60 ms of CPU on a slow machine: past the default time limit
    req, line = js_request("plant")
    req["limits"] = {**LIMITS, "timeout_ms": 2000}
    planted = js.call(req, line)
    assert json.loads(planted)["ok"] if isinstance(planted, str) else planted["ok"], planted
    assert js._ready["k"].ctx.memory()["memory_used_size"] > used + 100_000
    js.prepare()
    assert js_call(js, "probe")["ok"]
    assert js._ready["k"].ctx.memory()["memory_used_size"] == used


@pytest.mark.parametrize(
    "plant",
    [
        # objects of 60 prototypes alive at once: the runtime's table of shapes would grow
        "var keep = []; for (var i = 0; i < 60; i++) { keep.push(Object.create({})); }",
        # patterns compiled in the call: case-folded, repeated, alternatives, classes
        "['(?i)pin-x+', '(?i)(ab|cd)+e', '[a-f]{12,}', '(?i)a{9}b', 'x|y|z'].forEach("
        "function (p) { host.match(p + event.name.length, 'x PIN-XX abcde'); });",
        # a pinned pattern with no literal prefix, on a text where its search skips ahead
        "host.redact('a long text with one number 1234x in it', [PINNED[2]], '#');",
    ],
)
def test_a_call_that_grows_the_runtimes_tables_leaves_no_trace(plant: str) -> None:
    # The context is prepared with room to spare (prelude.js), so an ordinary call grows no
    # table of the runtime: its memory after the call is what it was before, to the byte.
    literals = "var PINNED = ['(?i)a+', 'x+', '[0-9]{4}x'];\n"  # pinned: alive in the context
    js = compiled_runtime(
        literals + "function on_tool_call(event, host) {\n"
        f"  if (event.name === 'plant') {{ {plant} }} else {{ host.match('a' + '+', 'aa'); }}\n"
        "  return null;\n}\n"
    )
    js_call(js, "probe")
    used = js._ready["k"].ctx.memory()["memory_used_size"]
    assert js_call(js, "plant")["ok"]
    js_call(js, "probe")
    assert js._ready["k"].ctx.memory()["memory_used_size"] == used


def regex_memory(history: list[dict[str, object]], limit_mb: int) -> tuple[int, int]:
    js = JavaScriptRuntime()
    for op in history:
        js.regex(op, call=object(), remaining_s=5.0, memory_mb=64)
    assert js.regex(
        {"op": "match", "pattern": "ab+", "text": "abb"},
        call=object(),
        remaining_s=5.0,
        memory_mb=limit_mb,
    )
    assert js._regex_ctx is not None
    memory = js._regex_ctx.ctx.memory()
    return memory["memory_used_size"], memory["malloc_limit"]


def test_the_python_pattern_engine_meets_each_call_as_if_it_were_the_first() -> None:
    # What an earlier call compiled, matched or allowed leaves no trace the next call meets:
    # the same memory in use and the call's own memory limit.
    pins = [f"(?i)pin[ :]*{n:04d}\\b" for n in range(32)]
    history = [
        {"op": "redact", "text": "pin 0042 " * 2000, "patterns": pins, "replacement": "#"},
        {"op": "match", "pattern": "(a|b)*c{1,500}", "text": "x" * 300},
    ]
    assert regex_memory(history, 8) == regex_memory([], 8)
    assert regex_memory(history, 8)[1] == 8 * 1024 * 1024


# -- a top level that runs once per context (jsscope.py plan, prelude.js keep) -------------------

ONCE_TOP = (
    "const K = {list: [1], obj: {a: 1}, re: /a/i, deep: [[1, [2]]]};\n"
    "const L = [3, 1, 2];\nconst S = 'text', N = 4;\n"
    "function helper() { return 1; }\n"
)
ONCE_CHANNELS: dict[str, tuple[str, str]] = {
    "kept_array_push": ("K.list.push(2);", "K.list.length !== 1"),
    "kept_nested_array": ("K.deep[0][1].push(3);", "K.deep[0][1].length !== 1"),
    "kept_object_write": ("K.obj.a = 2;", "K.obj.a !== 1"),
    "kept_object_new_key": ("K.obj.b = 1;", "K.obj.b !== undefined"),
    "kept_delete": ("delete K.obj.a;", "K.obj.a !== 1"),
    "kept_sort": ("L.sort();", "L[0] !== 3"),
    "kept_reverse": ("L.reverse();", "L[0] !== 3"),
    "kept_fill": ("L.fill(0);", "L[0] !== 3"),
    "kept_copy_within": ("L.copyWithin(0, 1);", "L[0] !== 3"),
    "kept_length": ("L.length = 0;", "L.length !== 3"),
    "kept_splice": ("L.splice(0, 1);", "L.length !== 3"),
    "kept_shift": ("L.shift();", "L.length !== 3"),
    "kept_unshift": ("L.unshift(9);", "L.length !== 3"),
    "kept_pop": ("L.pop();", "L.length !== 3"),
    "kept_define_property": ("Object.defineProperty(K, 'x', {value: 1});", "K.x !== undefined"),
    "kept_assign": ("Object.assign(K.obj, {z: 1});", "K.obj.z !== undefined"),
    "kept_set_prototype": ("Object.setPrototypeOf(K.obj, {p: 1});", "K.obj.p !== undefined"),
    "kept_proto_setter": ("K.obj.__proto__ = {p: 1};", "K.obj.p !== undefined"),
    "kept_symbol_key": ("K.obj[Symbol.for('he')] = 1;", "K.obj[Symbol.for('he')] !== undefined"),
    "kept_private_field": (
        "class B { constructor(o) { return o; } } class P extends B { #p = 1; } new P(K.obj);",
        "Object.getOwnPropertyNames(K.obj).length !== 1",
    ),
    "kept_regex_last_index": ("K.re.lastIndex = 5;", "K.re.lastIndex !== 0"),
    "kept_regex_compile": ("K.re.compile('b');", "!K.re.test('a')"),
    "kept_regex_match_state": ("K.re.exec('xa'); 'xa'.replace(K.re, 'b');", "K.re.lastIndex !== 0"),
    "function_declaration_property": ("helper.stash = 1;", "helper.stash !== undefined"),
    "function_declaration_prototype": (
        "helper.prototype.stash = 1;",
        "helper.prototype.stash !== undefined",
    ),
    "function_name_reassignment": ("helper = function () { return 2; };", "helper() !== 1"),
    "kept_binding_reassigned": (
        "K = {list: [9]}; L = 0; N = 5;",
        "K.list.length !== 1 || L === 0 || N !== 4",
    ),
    "kept_primitive_updated": ("N++; N += 10;", "N !== 4"),
    "kept_root_array": (
        "(function () { 'use strict'; return typeof __heKept === 'object' ? __heKept.push(1) : 0; })();",
        "typeof __heKept === 'object' && __heKept.length !== 4",
    ),
}
# Top levels the worker must not keep (its own check refuses, or jsscope gives no plan): each
# plants through the constant it makes, and the next call must not see it.
ONCE_REFUSED: dict[str, tuple[str, str, str]] = {
    "iife_closure_with_let": (
        "const C = (function () { let n = 0; return {inc: function () { return ++n; }}; })();",
        "C.inc();",
        "C.inc() !== 1",
    ),
    "map_in_const": ("const M = new Map();", "M.set('k', 1);", "M.size !== 0"),
    "set_in_const": ("const M = new Set();", "M.add('k');", "M.size !== 0"),
    "weak_map_in_const": ("const M = new WeakMap(), O = {};", "M.set(O, 1);", "M.has(O)"),
    "typed_array_in_const": ("const T = new Uint8Array(4);", "T[0] = 9;", "T[0] !== 0"),
    "array_buffer_in_const": (
        "const T = new ArrayBuffer(8);",
        "new Uint8Array(T)[0] = 9;",
        "new Uint8Array(T)[0] !== 0",
    ),
    "data_view_in_const": (
        "const T = new DataView(new ArrayBuffer(8));",
        "T.setInt8(0, 9);",
        "T.getInt8(0) !== 0",
    ),
    "global_regex_in_const": ("const G = /a/g;", "G.exec('aaa');", "G.lastIndex !== 0"),
    "sticky_regex_in_const": ("const G = /a/y;", "G.exec('aaa');", "G.lastIndex !== 0"),
    "getter_in_const": (
        "const G = (function () { let n = 0; return {get v() { return n++; }}; })();",
        "G.v;",
        "G.v !== 0",
    ),
    "class_instance_in_const": (
        "function F() { this.n = 0; }\nconst I = new F();",
        "I.n += 1;",
        "I.n !== 0",
    ),
    "arguments_in_const": ("const A = arguments;", "A[0] = 1;", "A[0] !== undefined"),
    "generator_in_const": (
        "function* counter() { let n = 0; while (true) { yield n++; } }\nconst G = counter();",
        "G.next();",
        "G.next().value !== 0",
    ),
    "iterator_in_const": ("const I = [1, 2, 3].values();", "I.next();", "I.next().value !== 1"),
    "bound_function_in_const": (
        "const O = {n: 0}; const F = function () { return this; }.bind(O);",
        "F().stash = 1;",
        "F().stash !== undefined",
    ),
    "function_table_in_const": (
        "function h() { return 1; }\nconst T = {h: h};",
        "T.h.stash = 1;",
        "T.h.stash !== undefined",
    ),
    "class_at_top": ("class C { static n = 0; }", "C.n += 1;", "C.n !== 0"),
    "eval_named": ("const E = typeof eval; const K = {n: 0};", "K.n += 1;", "K.n !== 0"),
    "write_caught_by_try": ("const K = {n: 0};", "try { K.n += 1; } catch (e) {}", "K.n !== 0"),
    "write_in_async_function": (
        "const K = {list: []};",
        "(async function () { K.list.push(1); })();",
        "K.list.length !== 0",
    ),
    "write_in_promise_executor": (
        "const K = {list: []};",
        "new Promise(function () { K.list.push(1); });",
        "K.list.length !== 0",
    ),
    "write_through_reflect": ("const K = {n: 0};", "Reflect.set(K, 'n', 1);", "K.n !== 0"),
    "proxy_in_const": (
        "const K = new Proxy({}, {});",
        "K.n = 1;",
        "K.n !== undefined",
    ),
}


def once_script(top: str, plant: str, probe: str) -> str:
    # No try: a script that could catch the TypeError of a write keeps only primitives.
    return (
        top + "\nfunction on_tool_call(event, host) {\n"
        f"  if (event.name === 'plant') {{ {plant} return null; }}\n"
        f"  return {{leak: !!({probe})}};\n}}\n"
    )


def once_runtime(top: str, plant: str, probe: str) -> tuple[JavaScriptRuntime, str]:
    from engine.sandbox.jsscope import top_level_plan

    source = once_script(top, plant, probe)
    js = JavaScriptRuntime()
    answer = js.compile(
        {
            "source": source,
            "filename": "t.js",
            "key": "k",
            "limits": LIMITS,
            "top_level": top_level_plan(source),
        }
    )
    assert answer["ok"], answer
    return js, answer["once"]


def keyed_call(js: JavaScriptRuntime, name: str, *, config: object = None) -> dict[str, object]:
    call = {
        "function": "on_tool_call",
        "script": {"key": "k", "filename": "t.js"},
        "limits": LIMITS,
        "limits_key": "l",
        "config_key": "c",
        "config_text": json.dumps({"list": []} if config is None else config),
        "state": {},
    }
    answer = js.call_v2(call, json.dumps({"name": name, "input": {}}))
    js.prepare()
    return json.loads(answer) if isinstance(answer, str) else answer


@pytest.mark.parametrize("keyword", ["const", "let", "var"])
@pytest.mark.parametrize("channel", sorted(ONCE_CHANNELS))
def test_a_kept_constant_carries_nothing_to_the_next_call(channel: str, keyword: str) -> None:
    plant, probe = ONCE_CHANNELS[channel]
    if keyword == "const" and channel == "kept_binding_reassigned":
        plant = "K = {list: [9]};"  # a TypeError: the call falls back to a fresh top level
    elif keyword == "const" and channel == "kept_primitive_updated":
        plant = "N++;"
    # A plant that hits a frozen copy makes the worker fall back to a fresh top level (for
    # that call and the later ones); one that wrote anything kept would show in the probe,
    # which then still runs on the kept copies. A let or var is declared again, bound to its
    # kept copy, in every call: assigning to it changes only that call's binding.
    js, once = once_runtime(ONCE_TOP.replace("const ", keyword + " "), plant, probe)
    assert once == "once"
    for _ in range(2):
        keyed_call(js, "plant")
        assert keyed_call(js, "probe")["value"] == {"leak": False}


@pytest.mark.parametrize("channel", sorted(ONCE_REFUSED))
def test_a_top_level_that_could_carry_state_runs_on_every_call(channel: str) -> None:
    top, plant, probe = ONCE_REFUSED[channel]
    js, once = once_runtime(top, plant, probe)
    assert once != "once"
    for _ in range(2):
        keyed_call(js, "plant")
        assert keyed_call(js, "probe")["value"] == {"leak": False}


def test_the_once_probes_would_see_a_leak_if_the_constants_were_not_frozen() -> None:
    # Within one call a write through the fresh top level shows: the probes are not vacuous.
    source = (
        ONCE_TOP
        + "function on_tool_call(event, host) { K.list.push(2); return {leak: K.list.length !== 1}; }\n"
    )
    js = JavaScriptRuntime()
    js.compile(
        {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS, "top_level": None}
    )
    assert keyed_call(js, "probe")["value"] == {"leak": True}


def test_a_write_to_a_kept_constant_answers_as_a_fresh_top_level_would() -> None:
    # The first call hits the frozen copy, runs again with a fresh top level and answers as
    # before; the script's later calls (and contexts) run their top level every time.
    source = "const SEEN = [];\nfunction on_tool_call(event, host) {\n  SEEN.push(event.name);\n  host.log('n=' + SEEN.length);\n  return {n: SEEN.length};\n}\n"
    from engine.sandbox.jsscope import top_level_plan

    js = JavaScriptRuntime()
    assert (
        js.compile(
            {
                "source": source,
                "filename": "t.js",
                "key": "k",
                "limits": LIMITS,
                "top_level": top_level_plan(source),
            }
        )["once"]
        == "once"
    )
    for _ in range(3):
        answer = keyed_call(js, "x")
        assert (answer["value"], answer["logs"]) == ({"n": 1}, ["n=1"])
    assert js._recent["k"].plan is None


def test_kept_constants_keep_their_sharing_and_key_order_and_error_lines() -> None:
    top = "const A = {z: 1, a: [1, 2], 2: 'two', 1: 'one'};\nconst B = {again: A, re: /x+/i};\n"
    source = (
        top + "function on_tool_call(event, host) {\n"
        "  if (event.name === 'boom') {\n    null.x;\n  }\n"
        "  return {same: B.again === A, keys: Object.keys(A), re: B.re.test('XX'), frozen: Object.isFrozen(A)};\n}\n"
    )
    from engine.sandbox.jsscope import top_level_plan

    plan = top_level_plan(source)
    assert plan is not None and plan["objects"] is False  # isFrozen: only primitives are kept
    plan = {**plan, "objects": True}
    js = JavaScriptRuntime()
    assert (
        js.compile(
            {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS, "top_level": plan}
        )["once"]
        == "once"
    )
    value = keyed_call(js, "x")["value"]
    assert value == {"same": True, "keys": ["1", "2", "z", "a"], "re": True, "frozen": True}
    failed = keyed_call(js, "boom")
    assert (failed["kind"], failed["line"]) == ("runtime", 5)


def test_host_config_values_are_parsed_once_per_context_and_frozen() -> None:
    # A call gets a new host.config (a key it sets stays its own), holding the frozen values.
    source = (
        "function on_tool_call(event, host) {\n"
        "  var wrote = true; try { host.config.list.push('x'); } catch (e) { wrote = false; }\n"
        "  var had = host.config.mine; host.config.mine = 1;\n"
        "  return {frozen: Object.isFrozen(host.config.list), wrote: wrote, n: host.config.list.length, had: had === undefined};\n}\n"
    )
    js = compiled_runtime(source)
    for _ in range(2):
        assert keyed_call(js, "x", config={"list": ["a"]})["value"] == {
            "frozen": True,
            "wrote": False,
            "n": 1,
            "had": True,
        }
    assert js._ready["k"].configs == {"c"}


def test_a_kept_top_level_runs_once_per_context_through_the_pool(one_worker: WorkerPool) -> None:
    # End to end: the pool sends the plan with the source; the answers are the fresh top level's.
    source = ONCE_TOP + "function on_tool_call(event, host) { L.sort(); return {first: L[0]}; }\n"
    script = one_worker.compile(source, filename="once.js", language=Language.JAVASCRIPT)
    assert script.top_level is not None
    for _ in range(3):
        assert one_worker.call(script, "on_tool_call", {}, config={}, state={}).value == {
            "first": 1
        }


@pytest.mark.parametrize("keyed", [True, False])
def test_the_rerun_after_a_write_to_a_kept_constant_gets_new_inputs(keyed: bool) -> None:
    # What the first run changed in the event (or, on the one-line path, in the config) is gone.
    from engine.sandbox.jsscope import top_level_plan

    source = (
        "const K = [];\nfunction on_tool_call(event, host) {\n"
        "  if (event.input.seen || host.config.seen) { return {second: true}; }\n"
        "  event.input.seen = true;\n  if (!Object.isFrozen(host.config)) { host.config.seen = true; }\n"
        "  K.push(1);\n  return {second: false};\n}\n"
    )
    plan = top_level_plan(source)
    assert plan is not None
    js = JavaScriptRuntime()
    req = {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS}
    assert js.compile({**req, "top_level": {**plan, "objects": True}})["once"] == "once"
    answer = keyed_call(js, "x") if keyed else js_call(js, "x")
    assert answer["value"] == {"second": False}
    assert js._recent["k"].plan is None


def test_a_body_that_does_not_compile_leaves_the_top_level_to_every_call() -> None:
    # A name written with escapes can clash with the body's parameter: no load error for it.
    from engine.sandbox.jsscope import top_level_plan

    source = "const K = [1];\nconst \\u005f_heKept = 2;\nfunction on_tool_call(event, host) { return {n: K.length}; }\n"
    plan = top_level_plan(source)
    assert plan is not None and plan["param"] == "__heKept"
    js = JavaScriptRuntime()
    req = {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS, "top_level": plan}
    answer = js.compile(req)
    assert answer["ok"] and answer["once"] != "once"
    assert keyed_call(js, "x")["value"] == {"n": 1}


def test_a_kept_top_level_that_queues_promise_jobs_runs_on_every_call_instead() -> None:
    from engine.sandbox.jsscope import top_level_plan

    source = "const P = (async function () { await null; })(), N = 1;\nfunction on_tool_call(event, host) { return {n: N}; }\n"
    plan = top_level_plan(source)
    assert plan is not None and plan["objects"] is False
    js = JavaScriptRuntime()
    req = {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS, "top_level": plan}
    assert js.compile(req)["ok"]
    assert "k" not in js._ready
    for _ in range(2):
        assert keyed_call(js, "x")["value"] == {"n": 1}


# What a call loads stays loaded: a codec module, the codec cache's entry for a spelling,
# unicodedata behind namereplace and \N{...}. Near the recursion limit a load fails where a
# loaded codec still works, so the probe would tell which encodings earlier calls used.
CODEC_USES = {
    "codec_by_module_name": "'\\u043f'.encode('koi8_r')",
    "codec_by_other_spelling": "'\\u043f'.encode('KOI8-U')",
    "codec_by_alias_with_spaces": "str(b'x', 'Shift JIS')",
    "decoding_through_str": "str(b'\\xcf', 'cp1251')",
    "namereplace_handler": "'\\xe9'.encode('ascii', 'namereplace')",
    "named_escape_decoding": "str(b'\\\\N{DIGIT ONE}', 'unicode_escape')",
    "idna": "'b\\xfccher.example'.encode('idna')",
    "punycode": "'b\\xfccher'.encode('punycode')",
    "bytes_to_bytes_codec": "'x'.encode('base64')",
    "unknown_codec": "'x'.encode('no-such-codec')",
    "encoding_keyword": "'x'.encode(encoding='mac_greek', errors='strict')",
}


@pytest.mark.parametrize("use", sorted(CODEC_USES))
def test_a_codec_a_call_used_is_as_loaded_for_the_next_call_as_before(
    one_worker: WorkerPool, use: str
) -> None:
    source = (
        "def at_the_limit(n):\n    try:\n        return at_the_limit(n + 1)\n"
        "    except Exception:\n        try:\n"
        f"            {CODEC_USES[use]}\n            return 'works'\n"
        "        except Exception as e:\n            return str(e)[:40]\n\n"
        "def on_tool_call(event, host):\n    if event['name'] == 'plant':\n"
        f"        try:\n            {CODEC_USES[use]}\n        except Exception:\n            pass\n"
        "        return None\n    return {'probe': at_the_limit(0)}\n"
    )
    script = one_worker.compile(source, filename=f"{use}.py", language=Language.PYTHON)

    def run(name: str) -> object:
        return one_worker.call(script, "on_tool_call", {"name": name}, config={}, state={}).value

    before = run("probe")
    assert run("plant") is None
    assert run("probe") == before
