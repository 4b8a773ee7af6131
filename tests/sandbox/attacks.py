"""The adversarial table: attacks per language; each must fail or come back harmless."""

# ruff: noqa: E501 - a table of scripts reads best one attack per line

from __future__ import annotations

from dataclasses import dataclass

SECRET_ENV = "HOOKENGINE_TEST_SECRET"
SECRET = "s3cr3t-planted-in-the-host-env"


@dataclass(frozen=True)
class Attack:
    name: str
    source: str
    """A script whose on_tool_call returns {"leak": ...} only if the attack got through."""


def py(name: str, body: str, top: str = "") -> Attack:
    lines = "\n".join("    " + line for line in body.splitlines())
    return Attack(name, f"{top}\ndef on_tool_call(event, host):\n{lines}\n")


def js(name: str, body: str, top: str = "") -> Attack:
    return Attack(name, f"{top}\nfunction on_tool_call(event, host) {{\n{body}\n}}\n")


PYTHON: list[Attack] = [
    # print: one log line, nothing else
    py("print_to_file", 'print("x", file=host)\nreturn {"leak": True}'),
    py("print_collector_attribute", 'return {"leak": str(print.__self__)}'),
    py("printed_variable", 'print("x")\nreturn {"leak": printed}'),
    py("print_huge_sep", 'print(1, 2, sep="x" * 10000000)\nreturn None'),
    py("print_str_trick", "print(host, event, str)\nreturn None"),
    # files and network
    py("open_write", 'open(host.config["dir"] + "/pwned", "w").write("x")'),
    py("open_read", 'return {"leak": open("/etc/passwd").read()}'),
    py("import_os", 'import os\nreturn {"leak": os.environ}'),
    py("from_import", 'from os import system\nsystem("touch /tmp/pwned")'),
    py("import_socket", 'import socket\nsocket.create_connection(("127.0.0.1", 80))'),
    py("dunder_import", 'return {"leak": __import__("os").environ}'),
    py("builtins_import", 'return {"leak": __builtins__["__import__"]("os")}'),
    py("import_at_top", "pass", top="import subprocess"),
    py("import_inside_function_never_called", "return None", top="def later():\n    import os"),
    # interpreter internals
    py(
        "class_subclasses",
        'return {"leak": [c.__name__ for c in ().__class__.__base__.__subclasses__()]}',
    ),
    py("mro_via_attribute", 'return {"leak": str(dict.mro())}'),
    py("type_builtin", 'return {"leak": str(type(host))}'),
    py("getattr_builtin", 'return {"leak": getattr(host, "_limits")}'),
    py("private_host_attr", 'return {"leak": host._out}'),
    py("vars_dir_globals", 'return {"leak": str(globals())}'),
    py("frame_via_generator", 'g = (x for x in [1])\nreturn {"leak": str(g.gi_frame.f_globals)}'),
    py(
        "frame_via_traceback",
        'try:\n    1 / 0\nexcept Exception as e:\n    return {"leak": str(e.__traceback__.tb_frame.f_globals)}',
    ),
    py(
        "traceback_via_with_traceback",
        'try:\n    1 / 0\nexcept Exception as e:\n    return {"leak": str(e.with_traceback)}',
    ),
    py("format_attribute_access", 'return {"leak": "{0.__class__.__mro__}".format(host)}'),
    py("format_map", 'return {"leak": "{x.__class__}".format_map({"x": host})}'),
    py(
        "percent_format_of_host",
        'return {"leak": "%r" % (host,)} if "0x" in ("%r" % (host,)) else None',
    ),
    py(
        "fstring_repr_of_host",
        'text = f"{host!r} {host.state!r}"\nreturn {"leak": text} if "0x" in text else None',
    ),
    py("function_globals", 'return {"leak": str(on_tool_call.__globals__)}'),
    py("code_object", 'return {"leak": str((lambda: 0).__code__)}'),
    py("exec_eval_compile", 'exec("x = 1")\nreturn {"leak": eval("1")}'),
    py("system_exit_contained", "raise SystemExit(0)"),
    py("host_method_self", 'return {"leak": str(host.log.__self__)}'),
    py("write_host_attribute", 'host.config = {"x": 1}\nhost.state.set = None'),
    py("write_method_attribute", "host.log.x = 1"),
    # loops, memory, numbers
    py("infinite_loop_at_call", "while True:\n    pass"),
    py("infinite_loop_at_load", "pass", top="while True:\n    pass"),
    py(
        "catch_the_timeout",
        "while True:\n    try:\n        while True:\n            pass\n    except:\n        continue",
    ),
    py(
        "timeout_in_finally",
        "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    ),
    py("big_power", "x = 10 ** 10 ** 9"),
    py("big_pow_builtin", "x = pow(10, 10 ** 9)"),
    py("big_shift", "x = 1 << 10 ** 9"),
    py("inplace_power_loop", "x = 10 ** 1000\nwhile True:\n    x *= x"),
    py("list_repeat_bomb", "x = [0] * 10 ** 9"),
    py("string_padding_bomb", 'x = "a".ljust(10 ** 9)'),
    py("fstring_padding_bomb", 'x = f"{1:>{10 ** 9}}"'),
    py("percent_padding_bomb", 'x = "%-900000000s" % "a"'),
    py("replace_amplification", 's = "a" * 1000000\nwhile True:\n    s = s.replace("a", "aa")'),
    py("range_bomb", "x = list(range(10 ** 10))"),
    py("unpack_infinite_generator", "def gen():\n    while True:\n        yield 1\na, b = gen()"),
    py(
        "starred_unpack_infinite_generator",
        "def gen():\n    while True:\n        yield 1\na, *b = gen()",
    ),
    py("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)"),
    py("lambda_recursion", "f = lambda: f()\nf()"),
    py("deep_nesting_compile", "return None", top="x = " + "(" * 500 + "1" + ")" * 500),
    py("long_chain_compile", "return None", top="x = " + "1+" * 100000 + "1"),
    py("uninterruptible_modpow", "pow(7, 2 ** 49000, (1 << 50000) - 1)"),
    # hostile results
    py("result_cycle", 'd = {}\nd["d"] = d\nreturn d'),
    py("result_huge", 'return {"x": "y" * 900000}'),
    py("result_non_json", 'return {"x": {1, 2}}'),
    py("result_generator", 'return {"x": (i for i in [1])}'),
    py("result_deep", 'd = []\nfor i in range(100000):\n    d = [d]\nreturn {"x": d}'),
    # host API abuse and leaks
    py("log_flood", 'while True:\n    host.log("x" * 1000)'),
    py("state_value_host_object", 'host.state.set("k", host)'),
    py("emit_host_object", 'host.emit({"type": "status", "data": {"h": host}})'),
    py(
        "catastrophic_regex",
        'return {"leak": host.redact("a" * 200000, ["(a|aa)*b", "(x+x+)+y"] * 16)}',
    ),
    py("redact_huge_text", 'return {"x": host.redact("ab" * 500000, ["a"], "xxxxxxxx")}'),
    py("state_of_another_hook", 'return {"leak": host.state.get("other-hook-secret")}'),
    # addresses (determinism): no 0x... in anything a script can read
    py("address_of_lambda", 't = str(lambda: 0)\nreturn {"leak": t} if "0x" in t else None'),
    py(
        "address_of_generator_in_fstring",
        't = f"{(x for x in [1])!r} {map(str, [])}"\nreturn {"leak": t} if "0x" in t else None',
    ),
    py(
        "address_via_percent_mapping",
        't = "%(a)s %(b)r" % {"a": zip(), "b": [].append}\nreturn {"leak": t} if "0x" in t else None',
    ),
    py(
        "address_via_bytes_percent_r",
        't = b"%r" % (enumerate([]),)\nreturn {"leak": str(t)} if b"0x" in t else None',
    ),
    py(
        "address_in_exception_args",
        'def f():\n    pass\ntry:\n    [].index(f)\nexcept ValueError as e:\n    t = e.args[0]\nreturn {"leak": t} if "0x" in t else None',
    ),
    py("address_in_error_message_to_host", "{}[reversed([1])]"),
    # identity-hashed set elements (their order would follow addresses)
    py("set_of_functions", 's = {lambda: 0, lambda: 1}\nreturn {"leak": [str(f) for f in s]}'),
    py(
        "set_from_dict_keys_view",
        's = {len: 1, sorted: 2}.keys() - []\nreturn {"leak": str(list(s))}',
    ),
    py("set_add_host_method", 's = set()\ns.add(host.log)\nreturn {"leak": len(s)}'),
    # size pre-checks
    py("bytes_repeat_bomb", 'x = b"x" * 10 ** 9'),
    py("percent_zero_pad_bomb", 'x = "%0999999999d" % 1'),
    py("bytes_percent_width_bomb", 'x = b"%999999999s" % b"a"'),
    py("percent_many_arguments_bomb", 'x = ("%s" * 400000) % (("abcd",) * 400000)'),
    py("translate_bomb", 'x = ("a" * 10 ** 6).translate({97: "x" * 1000})'),
    py("replace_empty_bomb", 'x = ("a" * 10 ** 6).replace("", "x" * 1000)'),
    py("join_bomb", 'x = ",".join(["x" * 1000] * 1000000)'),
    py("str_of_shared_list_bomb", 'x = str([["y" * 1000] * 1000] * 1000)'),
    py("fstring_precision_bomb", 'x = f"{1.5:.999999999f}"'),
    py("exception_message_bomb", '{}[("x" * 500000,) * 1000]'),
    # leaving things behind for the next call
    py(
        "cyclic_garbage_left_behind",
        'for i in range(30):\n    d = {"s": chr(97 + i) * 1000000}\n    d["self"] = d\nreturn None',
    ),
    py(
        "catch_memory_error_and_count",
        'n = 0\nchunks = []\ntry:\n    while True:\n        chunks.append(chr(65 + n % 26) * 1000000)\n        n = n + 1\nexcept Exception:\n    chunks = None\n    return {"leak": n}',
    ),
    py(
        "recursion_to_the_limit_then_return",
        "def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept Exception:\n    pass\nreturn None",
    ),
    # an interrupt the script catches still ends the call as a timeout
    py(
        "generator_finally_swallows_the_timeout",
        "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\nit = g()\nnext(it)\ntry:\n    it.close()\nexcept Exception:\n    pass\nreturn {'leak': True}",
    ),
    py(
        "finally_returns_after_the_timeout",
        "try:\n    while True:\n        pass\nfinally:\n    return {'leak': True}",
    ),
    # caps on what a call hands back: each overrun fails the call instead of getting through
    py("result_over_the_size_cap", 'return {"leak": "x" * 70000}'),
    py("non_finite_number_in_result", 'return {"leak": float("nan")}'),
    py(
        "emit_flood",
        'for i in range(100):\n    host.emit({"type": "status", "data": {}})\nreturn {"leak": True}',
    ),
    py(
        "state_key_flood",
        'for i in range(100):\n    host.state.set("k" + str(i), 1)\nreturn {"leak": True}',
    ),
    py("log_flood_is_cut", 'for i in range(10000):\n    host.log("x" * 1000)\nreturn None'),
    py("lone_surrogate_in_result", 'return {"note": "\\ud800"}'),
]

JAVASCRIPT: list[Attack] = [
    # files, network, modules
    js(
        "std_open",
        'var f = std.open(host.config.dir + "/pwned", "w"); f.puts("x"); return {leak: true};',
    ),
    js("os_exec", 'os.exec(["touch", "/tmp/pwned"]); return {leak: true};'),
    js("require_fs", 'return {leak: require("fs").readFileSync("/etc/passwd", "utf8")};'),
    js("static_import", "return null;", top='import * as os from "os";'),
    js(
        "dynamic_import",
        'import("os").then(function (m) { globalThis.m = m; }); return {leak: typeof m !== "undefined"};',
    ),
    js(
        "globals_std_os",
        'return {leak: typeof std !== "undefined" || typeof os !== "undefined" || typeof scriptArgs !== "undefined"};',
    ),
    js("process_env", "return {leak: process.env};"),
    js(
        "fetch_xhr",
        'return {leak: typeof fetch !== "undefined" || typeof XMLHttpRequest !== "undefined" || typeof WebSocket !== "undefined"};',
    ),
    js("load_file", 'return {leak: loadFile("/etc/passwd")};'),
    # code from strings, internals
    js("eval_global", 'return {leak: eval("1 + 1")};'),
    js("function_constructor", 'return {leak: Function("return 1")()};'),
    js("function_via_prototype", 'return {leak: (function () {}).constructor("return 1")()};'),
    js(
        "generator_function_constructor",
        'return {leak: (function* () {}).constructor("yield 1")().next().value};',
    ),
    js(
        "async_function_constructor",
        'return {leak: typeof (async function () {}).constructor("return 1")};',
    ),
    js("host_method_constructor", 'return {leak: host.log.constructor("return 1")()};'),
    js(
        "engine_internals",
        'return {leak: typeof __he !== "undefined" || typeof __heHost !== "undefined" || typeof HookRegex !== "undefined"};',
    ),
    js("date_clock", "return {leak: Date.now()};"),
    js(
        "date_constructor_via_prototype",
        "return {leak: new (new Date(0).constructor)().getTime()};",
    ),
    js("date_reflect_construct", "return {leak: Reflect.construct(Date, [], Object).getTime()};"),
    js("date_subclass_clock", "class D extends Date {}\nreturn {leak: new D().getTime()};"),
    js(
        "date_prototype_constructor_swap",
        "Date.prototype.constructor = null; return {leak: Date.prototype.constructor === null};",
    ),
    js("date_now_swap", "Date.now = function () { return 1; }; return {leak: Date.now() === 1};"),
    js(
        "console_pollution",
        "console.log.stash = 1; Object.prototype.polluted = 1; return {leak: console.log.stash};",
    ),
    js("console_replaced", "console.log = function () {}; return {leak: true};"),
    js(
        "console_getter_reads_config",
        'var seen = null; console.log({get a() { seen = host.config.dir; return 1; }}); return {leak: seen !== null && seen.indexOf("pwned") >= 0};',
    ),
    js(
        "console_to_json_returns_global",
        "console.log({toJSON: function () { return globalThis; }}); return null;",
    ),
    js(
        "console_recursion",
        "var o = {get a() { console.log(o); return 1; }}; console.log(o); return {leak: true};",
    ),
    js(
        "console_huge_arguments",
        "var a = []; for (var i = 0; i < 100000; i++) { a.push('x'.repeat(100)); } console.log.apply(null, a); return null;",
    ),
    js(
        "console_to_string_trick",
        'var o = {toString: function () { throw new Error("ran"); }}; console.log(o, [o], Symbol("s"), 1n); return null;',
    ),
    js("math_random", "return {leak: Math.random()};"),
    js(
        "atomics_wait",
        "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return {leak: true};",
    ),
    js(
        "weakref_gc_observation",
        'return {leak: typeof WeakRef !== "undefined" || typeof FinalizationRegistry !== "undefined"};',
    ),
    js(
        "stack_trace_contents",
        'var s = new Error("x").stack; return s.indexOf("s3cr3t") >= 0 ? {leak: s} : null;',
    ),
    # prototype pollution and poisoning the engine
    js(
        "pollute_object_prototype",
        "try { Object.prototype.polluted = 1; } catch (e) {} return {leak: ({}).polluted === 1};",
    ),
    js(
        "poison_json_stringify",
        'try { JSON.stringify = function () { return "{\\"leak\\":true}"; }; } catch (e) {} return {ok: 1};',
    ),
    js(
        "poison_array_push",
        'try { Array.prototype.push = function () { throw new Error("poisoned"); }; } catch (e) {} host.log("still works"); return {ok: [1].length};',
    ),
    js(
        "poison_error_tostring",
        'try { Error.prototype.toString = function () { while (true) {} }; } catch (e) {} throw new Error("boom");',
    ),
    js(
        "define_getter_on_prototype",
        'try { Object.defineProperty(Object.prototype, "toJSON", {get: function () { while (true) {} }}); } catch (e) {} return {ok: 1};',
    ),
    js(
        "mutate_host",
        'try { host.log = null; host.state.set = null; } catch (e) {} host.log("fine"); return {ok: typeof host.log};',
    ),
    js("proto_key_in_result", 'var o = JSON.parse(\'{"__proto__": {"leak": true}}\'); return o;'),
    js(
        "set_prototype_of_host",
        "try { Object.setPrototypeOf(host, {leak: true}); } catch (e) {} return {leak: host.leak};",
    ),
    # loops, memory, numbers
    js("infinite_loop_at_call", "while (true) {}"),
    js("infinite_loop_at_load", "return null;", top="while (true) {}"),
    js("catch_the_timeout", "while (true) { try { while (true) {} } catch (e) {} }"),
    js("timeout_in_finally", "try { while (true) {} } finally { while (true) {} }"),
    js(
        "promise_job_after_call",
        "Promise.resolve().then(function () { while (true) {} }); return null;",
    ),
    Attack("async_handler", "async function on_tool_call(event, host) { return {leak: true}; }\n"),
    js("array_bomb", "var a = []; while (true) { a.push(new Array(100000).fill(1)); }"),
    js("string_bomb", 'var s = "x"; while (true) { s = s + s; }'),
    js("bigint_bomb", "var x = 10n ** (10n ** 9n); return null;"),
    js("deep_recursion", "function f(n) { return f(n + 1); } f(0);"),
    js("deep_nesting_compile", "return null;", top="var x = " + "[" * 100000 + "]" * 100000 + ";"),
    js("uninterruptible_concat", "[].concat(new Array(1e8)); return null;"),
    js("regex_catastrophic_native", 'return {leak: /(a+)+$/.test("a".repeat(40) + "b")};'),
    # hostile results
    js("result_cycle", "var d = {}; d.d = d; return d;"),
    js("result_huge", 'return {x: "y".repeat(900000)};'),
    js("result_getter_loops", "return {get x() { while (true) {} }};"),
    js(
        "result_proxy_traps_loop",
        "return new Proxy({}, {ownKeys: function () { while (true) {} }});",
    ),
    js("result_tojson_loops", "return {toJSON: function () { while (true) {} }};"),
    js("result_function", "return {f: function () {}};"),
    js("result_promise", "return Promise.resolve({leak: true});"),
    js("result_class_instance", "class A { constructor() { this.x = 1; } } return new A();"),
    js("result_symbol_key", "var o = {}; o[Symbol('s')] = 1; return o;"),
    js("result_deep", "var d = []; for (var i = 0; i < 100000; i++) { d = [d]; } return {x: d};"),
    # host API abuse and leaks
    js("log_flood", 'while (true) { host.log("x".repeat(1000)); }'),
    js("state_value_function", 'host.state.set("k", function () {});'),
    js("emit_getter", 'host.emit({type: "status", get data() { while (true) {} }});'),
    js(
        "catastrophic_regex",
        'var ps = []; for (var i = 0; i < 16; i++) { ps.push("(a|aa)*b", "(x+x+)+y"); } return {leak: host.redact("a".repeat(200000), ps)};',
    ),
    js("state_of_another_hook", 'return {leak: host.state.get("other-hook-secret")};'),
    # what host.redact checks must be what it uses: a list read once, each pattern read once
    js(
        "redact_patterns_length_grows_after_the_check",
        "var reads = 0, seen = 0; var len = {valueOf: function () { seen++; return seen === 1 ? 1 : 1000; }}; var ps = new Proxy(['a'], {get: function (t, k) { if (k === 'length') { return seen === 0 ? len : 1000; } reads++; return 'b'; }}); host.redact('ab', ps); return {leak: reads > 32};",
    ),
    js(
        "redact_pattern_changes_after_its_check",
        "var k = 0; var ps = ['x']; Object.defineProperty(ps, 0, {get: function () { k++; return k === 1 ? 'a' : 'a'.repeat(600); }}); host.redact('aaa', ps); return {leak: k > 1};",
    ),
    js("nul_in_strings", 'return {x: "before\\u0000after"};'),
    # state carried from one call to the next (top-level code runs at load and again per call)
    js(
        "callee_parks_input",
        'return {leak: prev === "planted"};',
        top='var me = arguments.callee; var prev = me.stash; me.stash = "planted";',
    ),
    js(
        "callee_prototype_carry",
        "return {leak: prev === 1};",
        top="var p = null, prev = null; try { p = (function () { return this; })() || arguments.callee.prototype; prev = p.x; p.x = 1; } catch (e) {}",
    ),
    js(
        "this_at_top_level_carry",
        "return {leak: prev === 1};",
        top="var prev = null; try { prev = this.stash; this.stash = 1; } catch (e) {}",
    ),
    js(
        "caller_reaches_the_engine",
        'try { return {leak: typeof on_tool_call.caller === "function"}; } catch (e) { return null; }',
    ),
    js(
        "with_statement_over_host",
        "with (host) { return {leak: typeof config}; }",
    ),
    js(
        "symbol_registry_carry",
        "return {leak: prev === 1};",
        top="var s = Symbol.for('he-carry'), prev = null; try { prev = Object.prototype[s]; Object.prototype[s] = 1; } catch (e) {}",
    ),
    js(
        "regexp_legacy_statics_carry",
        'return {leak: prev === "planted"};',
        top="var prev = RegExp.$1; /(planted)/.exec('planted');",
    ),
    js(
        "capture_stack_trace_on_a_prototype",
        "return {leak: prev !== undefined};",
        top="var prev = ({}).stack; try { Error.captureStackTrace(Object.prototype); } catch (e) {}",
    ),
    js(
        "array_species_poison",
        "try { Object.defineProperty(Array, Symbol.species, {get: function () { return function () { return {leak: true}; }; }}); } catch (e) {} return [1].map(function (x) { return x; }).leak ? {leak: true} : null;",
    ),
    js(
        "promise_job_into_the_next_call",
        "return {leak: seen};",
        top="var seen = typeof late !== 'undefined'; Promise.resolve().then(function () { try { globalThis.late = 1; } catch (e) {} });",
    ),
    js(
        "generator_made_at_load_carries",
        'var prev = g.next().value; g.next("planted"); return {leak: prev === "planted"};',
        top="var g = (function* () { var k; while (true) { var v = yield k; if (v !== undefined) { k = v; } } })(); g.next();",
    ),
    js(
        "iterator_prototype_carry",
        "return {leak: prev === 1};",
        top="var prev = [].values().stash; try { Iterator.prototype.stash = 1; } catch (e) {}",
    ),
    # an interrupt the script catches still ends the call as a timeout
    js(
        "dispose_async_swallows_the_timeout",
        "var s = new AsyncDisposableStack(); s.defer(function () { while (true) {} }); s.disposeAsync(); return {leak: true};",
    ),
    js(
        "promise_executor_swallows_the_timeout",
        "new Promise(function () { while (true) {} }); return {leak: true};",
    ),
    js(
        "then_chain_swallows_the_timeout",
        "Promise.resolve().then(function () { while (true) {} }).catch(function () {}); return {leak: true};",
    ),
    js(
        "async_generator_swallows_the_timeout",
        "async function* g() { while (true) {} } g().next(); return {leak: true};",
    ),
    js(
        "thenable_swallows_the_timeout",
        "Promise.all([{then: function () { while (true) {} }}]); return {leak: true};",
    ),
    js(
        "swallowed_timeout_at_load",
        "return {leak: true};",
        top="new Promise(function () { while (true) {} });",
    ),
    # caps on what a call hands back: each overrun fails the call instead of getting through
    js("result_over_the_size_cap", "return {leak: 'x'.repeat(70000)};"),
    js("non_finite_number_in_result", "return {leak: NaN, also: Infinity};"),
    js(
        "emit_flood",
        "for (var i = 0; i < 100; i++) { host.emit({type: 'status', data: {}}); } return {leak: true};",
    ),
    js(
        "state_key_flood",
        "for (var i = 0; i < 100; i++) { host.state.set('k' + i, 1); } return {leak: true};",
    ),
    js("getter_in_result_runs_forever", "return {get leak() { while (true) {} }};"),
    js(
        "log_flood_is_cut",
        "for (var i = 0; i < 10000; i++) { host.log('x'.repeat(1000)); } return null;",
    ),
]
