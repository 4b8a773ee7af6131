"""The contract table: each case once in Python, once in JavaScript, with one expected outcome."""

# ruff: noqa: E501 - a table of scripts reads best one case per line

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EVENT = {
    "agent": "demo",
    "point": "tool_call",
    "time": "2025-01-02T03:04:05Z",
    "name": "delete_file",
    "input": {"path": "a.txt", "n": 3},
    "scope": {"user_id": "u1"},
}


@dataclass(frozen=True)
class Returns:
    """The call succeeds with this value (and these logs, emits, state writes when given)."""

    value: dict[str, Any] | None
    logs: list[str] | None = None
    emits: list[dict[str, Any]] | None = None
    writes: dict[str, Any] | None = None
    ttls: dict[str, float] | None = None


@dataclass(frozen=True)
class Fails:
    """The call raises this engine error type with this cause (and line, when given)."""

    error: str
    cause: str
    line: int | None = None
    says: str | None = None
    """Words the error's message holds, when given."""


@dataclass(frozen=True)
class Rejected:
    """Compile raises ScriptCompileError with a problem on this line (and this hint)."""

    line: int | None
    hint: str | None = None


@dataclass(frozen=True)
class Case:
    name: str
    py: str
    js: str
    expect: Returns | Fails | Rejected
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    event: dict[str, Any] = field(default_factory=lambda: EVENT)
    function: str = "on_tool_call"


def guard(py_body: str, js_body: str) -> tuple[str, str]:
    """Wrap one-line bodies in on_tool_call(event, host)."""
    return (
        f"def on_tool_call(event, host):\n    {py_body}\n",
        f"function on_tool_call(event, host) {{\n  {js_body}\n}}\n",
    )


def case(name: str, py_body: str, js_body: str, expect: Any, **kw: Any) -> Case:
    py, js = guard(py_body, js_body)
    return Case(name, py, js, expect, **kw)


RUNTIME = "ScriptRuntimeError"
LIMIT = "ScriptLimitError"

CASES: list[Case] = [
    # --- return shapes
    case("returns_none", "return None", "return null;", Returns(None)),
    case("returns_nothing", "pass", "", Returns(None)),
    case(
        "returns_block",
        'return {"block": "no deletes"}',
        'return {block: "no deletes"};',
        Returns({"block": "no deletes"}),
    ),
    case(
        "returns_nested_json",
        'return {"input": {"a": [1, 2.5, True, None, "x"], "b": {}}}',
        'return {input: {a: [1, 2.5, true, null, "x"], b: {}}};',
        Returns({"input": {"a": [1, 2.5, True, None, "x"], "b": {}}}),
    ),
    case(
        "returns_unicode",
        'return {"notice": "Привет 🌍"}',
        'return {notice: "Привет 🌍"};',
        Returns({"notice": "Привет 🌍"}),
    ),
    case(
        "returns_nul_char",
        'return {"notice": "a\\u0000b"}',
        'return {notice: "a\\u0000b"};',
        Returns({"notice": "a\x00b"}),
    ),
    case(
        "returns_big_safe_int",
        'return {"n": 9007199254740991}',
        "return {n: 9007199254740991};",
        Returns({"n": 9007199254740991}),
    ),
    case(
        "returns_event_fields",
        'return {"notice": event["name"] + ":" + event["input"]["path"]}',
        'return {notice: event.name + ":" + event.input.path};',
        Returns({"notice": "delete_file:a.txt"}),
    ),
    case(
        "returns_list_is_invalid",
        "return [1, 2]",
        "return [1, 2];",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_string_is_invalid",
        'return "block"',
        'return "block";',
        Fails(RUNTIME, "invalid_result"),
    ),
    case("returns_number_is_invalid", "return 3", "return 3;", Fails(RUNTIME, "invalid_result")),
    case(
        "returns_function_is_invalid",
        'return {"f": len}',
        "return {f: function () {}};",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_nan_is_invalid",
        'return {"x": float("nan")}',
        "return {x: NaN};",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_infinity_is_invalid",
        'return {"x": float("inf")}',
        "return {x: Infinity};",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_huge_int_is_invalid",
        'return {"x": 2 ** 60}',
        "return {x: 2 ** 60};",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_cycle_is_invalid",
        'd = {}\n    d["self"] = d\n    return d',
        "var d = {}; d.self = d; return d;",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_too_deep_is_invalid",
        'd = {}\n    for i in range(40):\n        d = {"x": d}\n    return d',
        "var d = {}; for (var i = 0; i < 40; i++) { d = {x: d}; } return d;",
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_too_large_is_invalid",
        'return {"x": "a" * 70000}',
        'return {x: "a".repeat(70000)};',
        Fails(RUNTIME, "invalid_result"),
    ),
    case(
        "returns_tuple_or_set_is_invalid",
        'return {"x": {1, 2}}',
        "return {x: new Set([1, 2])};",
        Fails(RUNTIME, "invalid_result"),
    ),
    # --- errors
    case(
        "raise_is_runtime_error_with_line",
        'raise ValueError("boom")',
        'throw new Error("boom");',
        Fails(RUNTIME, "error", line=2),
    ),
    case(
        "name_error_has_line",
        'return {"x": missing}',
        "return {x: missing};",
        Fails(RUNTIME, "error", line=2),
    ),
    case("zero_division_has_line", "x = 1 // 0", "null.x;", Fails(RUNTIME, "error", line=2)),
    case(
        "missing_function",
        "return None",
        "return null;",
        Fails(RUNTIME, "error"),
        function="on_tool_result",
    ),
    case(
        "caught_error_is_fine",
        'try:\n        raise ValueError("x")\n    except ValueError:\n        return {"notice": "caught"}',
        'try { throw new Error("x"); } catch (e) { return {notice: "caught"}; }',
        Returns({"notice": "caught"}),
    ),
    # --- host.config / now
    case(
        "config_is_visible",
        'return {"block": "no"} if event["name"] in host.config["forbidden"] else None',
        "return host.config.forbidden.includes(event.name) ? {block: 'no'} : null;",
        Returns({"block": "no"}),
        config={"forbidden": ["delete_file"]},
    ),
    case(
        "config_mutation_stays_local",
        'host.config["x"] = 1\n    return {"n": len(host.config)}',
        "host.config.x = 1; return {n: Object.keys(host.config).length};",
        Returns({"n": 2}),
        config={"a": 1},
    ),
    case(
        "now_is_event_time",
        'return {"notice": host.now()}',
        "return {notice: host.now()};",
        Returns({"notice": "2025-01-02T03:04:05Z"}),
    ),
    # --- host.log
    case(
        "log_lines",
        'host.log("one")\n    host.log("two")',
        'host.log("one"); host.log("two");',
        Returns(None, logs=["one", "two"]),
    ),
    case(
        "log_line_truncated",
        'host.log("x" * 1005)',
        'host.log("x".repeat(1005));',
        Returns(None, logs=["x" * 1000 + "…"]),
    ),
    case(
        "log_lines_capped",
        'for i in range(60):\n        host.log("l")',
        'for (var i = 0; i < 60; i++) { host.log("l"); }',
        Returns(None, logs=["l"] * 50 + ["[10 more log lines dropped]"]),
    ),
    case("log_non_string_is_error", "host.log(5)", "host.log(5);", Fails(RUNTIME, "error", line=2)),
    case(
        "log_too_long_is_error",
        'host.log("x" * 500001 + "x" * 500000)',
        'host.log("x".repeat(1000001));',
        Fails(RUNTIME, "error"),
    ),
    # --- host.emit
    case(
        "emit_status",
        'host.emit({"type": "status", "data": {"description": "checking", "done": False}})',
        'host.emit({type: "status", data: {description: "checking", done: false}});',
        Returns(
            None, emits=[{"type": "status", "data": {"description": "checking", "done": False}}]
        ),
    ),
    case(
        "emit_bad_type",
        'host.emit({"type": "shout", "data": {}})',
        'host.emit({type: "shout", data: {}});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "emit_extra_key",
        'host.emit({"type": "status", "data": {}, "x": 1})',
        'host.emit({type: "status", data: {}, x: 1});',
        Fails(RUNTIME, "error"),
    ),
    case("emit_not_object", 'host.emit("status")', 'host.emit("status");', Fails(RUNTIME, "error")),
    case(
        "emit_data_not_object",
        'host.emit({"type": "message", "data": [1]})',
        'host.emit({type: "message", data: [1]});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "emit_too_many",
        'for i in range(21):\n        host.emit({"type": "message", "data": {}})',
        'for (var i = 0; i < 21; i++) { host.emit({type: "message", data: {}}); }',
        Fails(RUNTIME, "error"),
    ),
    case(
        "emit_too_large",
        'host.emit({"type": "message", "data": {"c": "x" * 9000}})',
        'host.emit({type: "message", data: {c: "x".repeat(9000)}});',
        Fails(RUNTIME, "error"),
    ),
    # --- host.state
    case(
        "state_get_snapshot",
        'return {"n": host.state.get("count")}',
        'return {n: host.state.get("count")};',
        Returns({"n": 4}),
        state={"count": 4},
    ),
    case(
        "state_get_missing_is_none",
        'return {"n": host.state.get("nope")}',
        'return {n: host.state.get("nope")};',
        Returns({"n": None}),
    ),
    case(
        "state_set_comes_back",
        'host.state.set("count", (host.state.get("count") or 0) + 1)',
        'host.state.set("count", (host.state.get("count") || 0) + 1);',
        Returns(None, writes={"count": 5}),
        state={"count": 4},
    ),
    case(
        "state_read_your_writes",
        'host.state.set("k", [1])\n    return {"k": host.state.get("k")}',
        'host.state.set("k", [1]); return {k: host.state.get("k")};',
        Returns({"k": [1]}, writes={"k": [1]}),
    ),
    case(
        "state_get_returns_copy",
        'v = host.state.get("k")\n    v.append(2)\n    return {"k": host.state.get("k")}',
        'var v = host.state.get("k"); v.push(2); return {k: host.state.get("k")};',
        Returns({"k": [1]}),
        state={"k": [1]},
    ),
    case(
        "state_set_none_deletes",
        'host.state.set("k", None)\n    return {"k": host.state.get("k")}',
        'host.state.set("k", null); return {k: host.state.get("k")};',
        Returns({"k": None}, writes={"k": None}),
        state={"k": 1},
    ),
    case(
        "state_delete_of_a_key_not_stored_writes_nothing",
        'host.state.set("k", 1)\n    host.state.set("k", None)\n    host.state.set("gone", None)',
        'host.state.set("k", 1); host.state.set("k", null); host.state.set("gone", null);',
        Returns(None, writes={}, ttls={}),
    ),
    case(
        "state_deletes_are_bounded_by_what_is_stored",
        'for i in range(3000):\n        host.state.set("k" + str(i), None)',
        'for (var i = 0; i < 3000; i++) { host.state.set("k" + i, null); }',
        Returns(None, writes={"k7": None}),
        state={"k7": 1},
    ),
    case(
        "state_key_with_half_a_character_is_refused",
        'host.state.set("last:" + "\\ud83d", 1)',
        'host.state.set("last:" + "\\u{1F600}".slice(0, 1), 1);',
        Fails(RUNTIME, "error", says="lone surrogate"),
    ),
    case(
        "state_key_with_a_whole_emoji_is_kept",
        'host.state.set("last:\\U0001F600", 1)',
        'host.state.set("last:\\u{1F600}", 1);',
        Returns(None, writes={"last:\U0001f600": 1}),
    ),
    case(
        "state_key_must_be_string",
        "host.state.set(1, 2)",
        "host.state.set(1, 2);",
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_key_not_empty",
        'host.state.set("", 2)',
        'host.state.set("", 2);',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_key_too_long",
        'host.state.set("k" * 129, 2)',
        'host.state.set("k".repeat(129), 2);',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_value_too_large",
        'host.state.set("k", "x" * 17000)',
        'host.state.set("k", "x".repeat(17000));',
        Fails(RUNTIME, "error"),
    ),
    # the caps count bytes of UTF-8: 6,000 euro signs are 18,000 bytes in 6,000 characters
    case(
        "state_value_too_large_in_bytes",
        'host.state.set("k", "\u20ac" * 6000)',
        'host.state.set("k", "\u20ac".repeat(6000));',
        Fails(RUNTIME, "error", says="larger than 16384 bytes"),
    ),
    case(
        "emit_too_large_in_bytes",
        'host.emit({"type": "message", "data": {"c": "\u20ac" * 3000}})',
        'host.emit({type: "message", data: {c: "\u20ac".repeat(3000)}});',
        Fails(RUNTIME, "error", says="larger than 8192 bytes"),
    ),
    case(
        "state_value_just_under_the_cap_in_bytes",
        'host.state.set("k", "\u20ac" * 5460)\n    return {"ok": True}',
        'host.state.set("k", "\u20ac".repeat(5460));\n  return {ok: true};',
        Returns({"ok": True}),
    ),
    case(
        "state_value_not_json",
        'host.state.set("k", {1, 2})',
        'host.state.set("k", new Map());',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_too_many_keys",
        'for i in range(65):\n        host.state.set("k" + str(i), i)',
        'for (var i = 0; i < 65; i++) { host.state.set("k" + i, i); }',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_error_caught_writes_nothing_extra",
        'host.state.set("a", 1)\n    try:\n        host.state.set("b", float("nan"))\n    except Exception:\n        pass',
        'host.state.set("a", 1); try { host.state.set("b", NaN); } catch (e) {}',
        Returns(None, writes={"a": 1}),
    ),
    # --- host.state TTL: (key, value, ttl_s=N) in Python, (key, value, {ttl_s: N}) in JS
    case(
        "state_ttl_comes_back_with_the_write",
        'host.state.set("w", [1], ttl_s=60)\n    host.state.set("k", 2)',
        'host.state.set("w", [1], {ttl_s: 60}); host.state.set("k", 2);',
        Returns(None, writes={"w": [1], "k": 2}, ttls={"w": 60.0}),
    ),
    case(
        "state_ttl_fraction_of_a_second",
        'host.state.set("w", 1, ttl_s=0.5)',
        'host.state.set("w", 1, {ttl_s: 0.5});',
        Returns(None, writes={"w": 1}, ttls={"w": 0.5}),
    ),
    case(
        "state_set_again_without_ttl_keeps_the_key",
        'host.state.set("w", 1, ttl_s=60)\n    host.state.set("w", 2)',
        'host.state.set("w", 1, {ttl_s: 60}); host.state.set("w", 2);',
        Returns(None, writes={"w": 2}, ttls={}),
    ),
    case(
        "state_delete_drops_the_ttl",
        'host.state.set("w", 1, ttl_s=60)\n    host.state.set("w", None, ttl_s=5)',
        'host.state.set("w", 1, {ttl_s: 60}); host.state.set("w", null, {ttl_s: 5});',
        Returns(None, writes={"w": None}, ttls={}),
        state={"w": 0},
    ),
    case(
        "state_ttl_none_means_no_ttl",
        'host.state.set("w", 1, ttl_s=None)',
        'host.state.set("w", 1, {ttl_s: null});',
        Returns(None, writes={"w": 1}, ttls={}),
    ),
    case(
        "state_ttl_zero_is_refused",
        'host.state.set("w", 1, ttl_s=0)',
        'host.state.set("w", 1, {ttl_s: 0});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_negative_is_refused",
        'host.state.set("w", 1, ttl_s=-5)',
        'host.state.set("w", 1, {ttl_s: -5});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_not_a_number_is_refused",
        'host.state.set("w", 1, ttl_s="60")',
        'host.state.set("w", 1, {ttl_s: "60"});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_bool_is_refused",
        'host.state.set("w", 1, ttl_s=True)',
        'host.state.set("w", 1, {ttl_s: true});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_infinite_is_refused",
        'host.state.set("w", 1, ttl_s=float("inf"))',
        'host.state.set("w", 1, {ttl_s: Infinity});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_over_ten_years_is_refused",
        'host.state.set("w", 1, ttl_s=315360001)',
        'host.state.set("w", 1, {ttl_s: 315360001});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_unknown_option_is_refused",
        'host.state.set("w", 1, ttl=60)',
        'host.state.set("w", 1, {ttl: 60});',
        Fails(RUNTIME, "error"),
    ),
    case(
        "state_ttl_refused_writes_nothing",
        'try:\n        host.state.set("w", 1, ttl_s=-1)\n    except Exception:\n        pass\n    return {"w": host.state.get("w")}',
        'try { host.state.set("w", 1, {ttl_s: -1}); } catch (e) {} return {w: host.state.get("w")};',
        Returns({"w": None}, writes={}, ttls={}),
    ),
    # --- host.match / host.redact
    case(
        "match_finds",
        'return {"m": host.match("rm\\\\s+-rf", event["input"]["cmd"])}',
        'return {m: host.match("rm\\\\s+-rf", event.input.cmd)};',
        Returns({"m": True}),
        event={**EVENT, "input": {"cmd": "sudo rm  -rf /"}},
    ),
    case(
        "match_misses",
        'return {"m": host.match("^rm", "echo rm")}',
        'return {m: host.match("^rm", "echo rm")};',
        Returns({"m": False}),
    ),
    case(
        "match_case_insensitive_flag",
        'return {"m": host.match("(?i)secret", "A SECRET")}',
        'return {m: host.match("(?i)secret", "A SECRET")};',
        Returns({"m": True}),
    ),
    case(
        "match_classes_and_counts",
        'return {"m": host.match("^\\\\d{3}-[a-f]+$", "123-beef")}',
        'return {m: host.match("^\\\\d{3}-[a-f]+$", "123-beef")};',
        Returns({"m": True}),
    ),
    case(
        "match_catastrophic_pattern_is_linear",
        'return {"m": host.match("(a+)+$", "a" * 5000 + "b")}',
        'return {m: host.match("(a+)+$", "a".repeat(5000) + "b")};',
        Returns({"m": False}),
    ),
    case(
        "match_invalid_pattern_is_error",
        'host.match("(a", "a")',
        'host.match("(a", "a");',
        Fails(RUNTIME, "error"),
    ),
    case(
        "match_backreference_unsupported",
        'host.match("(a)\\\\1", "aa")',
        'host.match("(a)\\\\1", "aa");',
        Fails(RUNTIME, "error"),
    ),
    case(
        "match_pattern_must_be_string",
        'host.match(1, "a")',
        'host.match(1, "a");',
        Fails(RUNTIME, "error"),
    ),
    case(
        "redact_secrets",
        'return {"answer": host.redact("key sk-abcdefghij0123456789 and 4111 1111 1111 1111", ["sk-[A-Za-z0-9]{20}", "(?:\\\\d[ -]?){15}\\\\d"], "[X]")}',
        'return {answer: host.redact("key sk-abcdefghij0123456789 and 4111 1111 1111 1111", ["sk-[A-Za-z0-9]{20}", "(?:\\\\d[ -]?){15}\\\\d"], "[X]")};',
        Returns({"answer": "key [X] and [X]"}),
    ),
    case(
        "redact_default_replacement",
        'return {"a": host.redact("token=abc", ["abc"])}',
        'return {a: host.redact("token=abc", ["abc"])};',
        Returns({"a": "token=[REDACTED]"}),
    ),
    case(
        "redact_leftmost_first",
        'return {"a": host.redact("abcd", ["ab|abcd"], "_")}',
        'return {a: host.redact("abcd", ["ab|abcd"], "_")};',
        Returns({"a": "_cd"}),
    ),
    case(
        "redact_patterns_must_be_list",
        'host.redact("x", "x")',
        'host.redact("x", "x");',
        Fails(RUNTIME, "error"),
    ),
    case(
        "redact_too_many_patterns",
        'host.redact("x", ["a"] * 33)',
        'host.redact("x", new Array(33).fill("a"));',
        Fails(RUNTIME, "error"),
    ),
    # --- limits
    case(
        "infinite_loop_times_out",
        "while True:\n        pass",
        "while (true) {}",
        Fails(LIMIT, "timeout"),
    ),
    case(
        "timeout_cannot_be_caught",
        "while True:\n        try:\n            while True:\n                pass\n        except:\n            pass",
        "while (true) { try { while (true) {} } catch (e) {} }",
        Fails(LIMIT, "timeout"),
    ),
    case(
        "infinite_recursion_hits_stack",
        "def f(n):\n        return f(n + 1)\n    f(0)",
        "function f(n) { return f(n + 1); } f(0);",
        Fails(LIMIT, "memory"),
    ),
    case(
        "memory_bomb_hits_memory",
        'x = []\n    while True:\n        x.append("y" * 100000)',
        # typed arrays: 1 MB per step, so the memory limit comes long before the time limit
        # ("y".repeat(100000) takes ~0.4 ms in QuickJS here: 32 MB of it outlasted 100 ms)
        "var x = []; while (true) { x.push(new Float64Array(131072).fill(x.length)); }",
        Fails(LIMIT, "memory"),
    ),
    # QuickJS throws null when it runs out of memory while making the error itself: a
    # script that writes ``throw`` (here ``throw null`` on purpose) keeps its error as an error
    case(
        "thrown_null_is_an_error",
        "raise ValueError(None)",
        "throw null;",
        Fails(RUNTIME, "error"),
    ),
    case(
        "huge_repeat_is_refused",
        'x = "a" * 10 ** 9',
        'var x = "a".repeat(1e9);',
        Fails(LIMIT, "memory"),
    ),
]

COMPILE_CASES: list[Case] = [
    Case(
        "syntax_error_has_line",
        "def on_tool_call(event, host):\n    return (\n\n",
        "function on_tool_call(event, host) {\n  return (;\n}\n",
        Rejected(2),
    ),
    Case(
        "misspelt_point_is_suggested",
        "def on_tool_cal(event, host):\n    return None\n",
        "function on_tool_cal(event, host) {\n  return null;\n}\n",
        Rejected(1, hint="on_tool_call"),
    ),
    Case(
        "misspelt_point_on_later_line",
        "def on_tool_call(e, h):\n    pass\n\ndef on_befor_call(e, h):\n    pass\n",
        "function on_tool_call(e, h) {}\n\nfunction on_befor_call(e, h) {}\n",
        Rejected(None, hint="on_before_call"),
    ),
    Case("no_point_function", "def helper():\n    pass\n", "function helper() {}\n", Rejected(1)),
    Case(
        "load_time_error_is_compile_error",
        "x = 1 // 0\ndef on_tool_call(e, h):\n    pass\n",
        "null.x;\nfunction on_tool_call(e, h) {}\n",
        Rejected(1),
    ),
    Case(
        "load_time_infinite_loop_is_compile_error",
        "while True:\n    pass\ndef on_tool_call(e, h):\n    pass\n",
        "while (true) {}\nfunction on_tool_call(e, h) {}\n",
        Rejected(None),
    ),
    Case(
        "eval_is_not_available",
        "def on_tool_call(e, h):\n    return eval('1')\n",
        "function on_tool_call(e, h) {}\neval('1');\n",
        Rejected(2),
    ),
]
"""Compile-time contract: both languages refuse these at load, with a line where one is known."""

FUNCTIONS: list[Case] = [
    Case(
        "functions_lists_points",
        "def on_tool_call(e, h):\n    pass\n\ndef on_after_turn(e, h):\n    pass\n\ndef helper():\n    pass\n",
        "function on_tool_call(e, h) {}\nfunction on_after_turn(e, h) {}\nfunction helper() {}\n",
        Returns(None),
    ),
]
