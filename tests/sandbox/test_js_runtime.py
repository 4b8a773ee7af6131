"""The worker's JavaScript runtime: call_v2, how many contexts it keeps, when it looks at their
memory, and which top levels jsscope.py lets run once."""

from __future__ import annotations

import json

import pytest

from engine.sandbox.javascript import CHECK_CALLS, JavaScriptRuntime
from engine.sandbox.jsscope import context_capacity, top_level_plan
from engine.sandbox.limits import CompiledScript, Language, Limits
from tests.sandbox.cases import CASES as CONTRACT
from tests.sandbox.cases import Case, Fails

LIMITS = Limits().as_wire()
GUARD = (
    "function on_tool_call(event, host) {\n"
    "  host.log('seen ' + event.input.cmd);\n"
    "  host.state.set('last', event.input.cmd);\n"
    "  if (host.config.deny.indexOf(event.input.cmd) >= 0) { return {block: 'denied'}; }\n"
    "  return null;\n}\n"
)
EVENT = {"name": "shell", "input": {"cmd": "rm"}, "time": 1.5}
CONFIG = {"deny": ["rm", "dd"]}


def load(js: JavaScriptRuntime, key: str, source: str = GUARD) -> None:
    req = {"source": source, "filename": "t.js", "key": key, "limits": LIMITS}
    assert js.compile({**req, "top_level": top_level_plan(source)})["ok"]
    js.prepare()


def v2(
    js: JavaScriptRuntime, key: str, *, source: str | None = None, event: object = EVENT
) -> dict[str, object]:
    script: dict[str, object] = {"key": key, "filename": "t.js"}
    if source is not None:
        script["source"] = source
    call = {
        "function": "on_tool_call",
        "script": script,
        "limits": LIMITS,
        "limits_key": "l",
        "config_key": "c1",
        "config_text": json.dumps(CONFIG),
        "state": {"last": "ls"},
    }
    answer = js.call_v2(call, json.dumps(event))
    js.prepare()
    return json.loads(answer) if isinstance(answer, str) else answer


def v1(js: JavaScriptRuntime, key: str) -> dict[str, object]:
    req = {
        "op": "call",
        "language": "javascript",
        "function": "on_tool_call",
        "script": {"key": key, "filename": "t.js"},
        "event": EVENT,
        "config": CONFIG,
        "state": {"last": "ls"},
        "limits_key": "l",
    }
    answer = js.call({**req, "limits": LIMITS}, json.dumps(req))
    js.prepare()
    return json.loads(answer) if isinstance(answer, str) else answer


def test_call_v2_answers_as_the_one_line_call_does() -> None:
    js = JavaScriptRuntime()
    load(js, "k")
    new, old = v2(js, "k"), v1(js, "k")
    assert new.pop("duration_ms") >= 0 and old.pop("duration_ms") >= 0
    assert (
        new
        == old
        == {
            "ok": True,
            "value": {"block": "denied"},
            "logs": ["seen rm"],
            "emits": [],
            "state_writes": {"last": "rm"},
            "state_ttls": {},
        }
    )


def test_call_v2_asks_for_the_source_of_a_script_it_does_not_know() -> None:
    js = JavaScriptRuntime()
    assert v2(js, "unknown") == {"ok": False, "kind": "need_source"}
    assert v2(js, "unknown", source=GUARD)["value"] == {"block": "denied"}


def test_a_runtime_keeps_contexts_for_as_many_scripts_as_its_capacity() -> None:
    js = JavaScriptRuntime()
    js.set_capacity(20)
    for i in range(20):
        load(js, f"k{i}")
    for i in range(20):
        assert v2(js, f"k{i}")["ok"] is True
    assert len(js._ready) == 20
    js.set_capacity(5)
    assert list(js._ready) == [f"k{i}" for i in range(15, 20)]
    assert v2(js, "k0") == {"ok": False, "kind": "need_source"}


def test_the_default_capacity_is_16_scripts() -> None:
    js = JavaScriptRuntime()
    for i in range(17):
        load(js, f"k{i}")
    assert len(js._recent) == 16 and "k0" not in js._recent


def test_memory_left_behind_retires_a_context_within_check_calls_calls() -> None:
    js = JavaScriptRuntime()
    load(js, "k")
    first = js._ready["k"]
    first.baseline -= LIMITS["memory_mb"] * 1024 * 1024  # as if calls had left a lot behind
    calls = 0
    while js._ready.get("k") is first:
        v2(js, "k")
        calls += 1
    assert 1 <= calls <= CHECK_CALLS
    assert js._ready["k"] is not first


def test_a_context_full_of_nothing_is_kept_past_many_checks() -> None:
    js = JavaScriptRuntime()
    load(js, "k")
    first = js._ready["k"]
    for _ in range(3 * CHECK_CALLS):
        v2(js, "k")
    assert js._ready["k"] is first


def test_context_capacity_fits_every_script_up_to_the_cap_and_warns_beyond() -> None:
    assert context_capacity(0, cap=64) == (1, None)
    assert context_capacity(40, cap=64) == (40, None)
    capacity, warning = context_capacity(100, cap=64)
    assert capacity == 64
    assert warning is not None and "100" in warning and "scripts.max_contexts is 64" in warning


# -- which top levels may run once ------------------------------------------------------------

ELIGIBLE = (
    '"use strict";\n// a deny list\nconst DENY = ["rm", "dd"], MAX = 3;\n;\n'
    "const RULES = {shell: DENY};\nfunction on_tool_call(event, host) { return null; }\n"
    "function* walk(xs) { yield* xs; }\n"
)


def test_a_top_level_of_consts_and_functions_gets_a_plan() -> None:
    plan = top_level_plan(ELIGIBLE)
    assert plan is not None
    assert plan["names"] == ["DENY", "MAX", "RULES"]
    assert plan["objects"] is True
    assert plan["param"] not in ELIGIBLE


def test_the_plan_body_binds_the_constants_and_keeps_every_line_and_later_column() -> None:
    source = "const A = [\n  1,\n  2,\n]; function f() {}\nconst B = 'x';\nfunction on_x() {}\n"
    plan = top_level_plan(source)
    assert plan is not None
    body, param = plan["body"], plan["param"]
    assert body.count("\n") == source.count("\n")
    assert f"const A = {param}[0];" in body and f"const B = {param}[1];" in body
    assert [line.index("function") for line in body.splitlines() if "function" in line] == [
        line.index("function") for line in source.splitlines() if "function" in line
    ]


@pytest.mark.parametrize(
    "top",
    [
        "class C {}",
        "var {n} = {n: 1};",
        "let [m] = [1];",
        "const {a} = {a: 1};",
        "if (true) { }",
        "for (const x of []) {}",
        "n();",
        "{ const inner = 1; }",
        "async function a() {}",
        "const e = eval;",
        "const x = 1 +;",
    ],
)
def test_anything_else_at_top_level_runs_on_every_call(top: str) -> None:
    assert (
        top_level_plan(f"const K = [1];\n{top}\nfunction on_tool_call(e, h) {{ return null; }}\n")
        is None
    )


@pytest.mark.parametrize(
    "inside",
    [
        "try { K.push(1); } catch (e) {}",
        "try { K.push(1); } finally { return null; }",
        "(async () => K.push(1))();",
        "var o = {async m() {}};",
        "new Promise(function () {});",
        "Reflect.set(K, 0, 1);",
        "new Proxy(K, {});",
        "globalThis;",
        "Object.isFrozen(K);",
        "Object.getOwnPropertyDescriptor(K, 0);",
        "Array.fromAsync([]);",
        "new DisposableStack();",
        "{ using d = null; }",
        "import('x');",
        "var k = {}['isFro' + 'zen'], j = Object['isFrozen'];",
    ],
)
def test_a_script_that_could_swallow_or_observe_a_frozen_write_keeps_only_primitives(
    inside: str,
) -> None:
    plan = top_level_plan(
        f"const K = [1];\nfunction on_tool_call(e, h) {{ {inside} return null; }}\n"
    )
    assert plan is not None and plan["objects"] is False


def test_a_script_without_constants_gets_no_plan() -> None:
    assert top_level_plan("function on_tool_call(e, h) { return null; }\n") is None


def test_only_javascript_scripts_carry_a_plan() -> None:
    js = CompiledScript(Language.JAVASCRIPT, "a.js", ELIGIBLE, frozenset())
    py = CompiledScript(Language.PYTHON, "a.py", "X = 1\n", frozenset())
    assert js.top_level is not None and js.top_level is js.owned_by("agent").top_level
    assert py.top_level is None


def test_a_hostile_plan_cannot_leave_its_wrapper() -> None:
    # The worker checks the host's plan as if it were hostile: a body that closes the wrapper
    # is not used, and the top level runs on every call.
    js = JavaScriptRuntime()
    plan = {
        "names": ["K"],
        "param": "P",
        "objects": True,
        "body": "}); globalThis.x = 1; ((function () {",
    }
    source = "const K = [1];\nfunction on_tool_call(event, host) { return {n: K.length}; }\n"
    answer = js.compile(
        {"source": source, "filename": "t.js", "key": "k", "limits": LIMITS, "top_level": plan}
    )
    assert answer["ok"] and answer["once"] == "no"
    bad_name = {**(top_level_plan(source) or {}), "names": ["K]; x = [1"]}
    answer = js.compile(
        {"source": source, "filename": "t.js", "key": "k2", "limits": LIMITS, "top_level": bad_name}
    )
    assert answer["ok"] and answer["once"] == "no"


def test_names_in_comments_change_nothing() -> None:
    source = (
        "// eval, try, using, Promise, Object.isFrozen: only words here\n"
        "const K = [1];\nfunction on_tool_call(e, h) { /* async import */ return null; }\n"
    )
    plan = top_level_plan(source)
    assert plan is not None and plan["objects"] is True


def test_a_script_that_declares_nothing_is_not_parsed() -> None:
    # The parser is imported and run only for a script that may have constants to keep.
    from engine.sandbox import jsscope

    jsscope._parser.cache_clear()
    source = "function on_tool_call(e, h) { return {constant: 1, variable: 2}; }\n"
    assert top_level_plan(source) is None
    assert jsscope._parser.cache_info().currsize == 0


def test_let_and_var_get_a_plan_under_their_own_keyword() -> None:
    source = (
        "let a = 1, b;\nvar c = [1];\nvar c = 2;\nconst D = {k: c};\n"
        "function on_tool_call(e, h) { return null; }\n"
    )
    plan = top_level_plan(source)
    assert plan is not None
    p = plan["param"]
    assert plan["names"] == ["a", "b", "c", "c", "D"]
    assert f"let a = {p}[0], b = {p}[1];" in plan["body"]
    assert f"var c = {p}[2];" in plan["body"] and f"var c = {p}[3];" in plan["body"]
    assert f"const D = {p}[4];" in plan["body"]


def test_a_kept_let_or_var_is_rebound_every_call() -> None:
    # A call that assigns to a kept name changes only its own binding; a name declared twice,
    # or changed by a function while the top level ran, starts every call where a fresh top
    # level would have left it; a write into a kept object falls back to a fresh top level.
    source = (
        "var n = 0;\nfunction bump() { n += 10; return n; }\nconst FIRST = bump();\n"
        "let seen = [];\nvar twice = 1;\nvar twice = twice + 1;\nlet unset;\n"
        "function on_tool_call(event, host) {\n  n++;\n  twice *= 3;\n"
        "  if (event.name === 'push') { seen.push(1); }\n"
        "  return {n: n, first: FIRST, twice: twice, seen: seen.length,\n"
        "          unset: unset === undefined};\n}\n"
    )
    plan = top_level_plan(source)
    assert plan is not None
    js = JavaScriptRuntime()
    req = {"source": source, "filename": "t.js", "key": "lv", "limits": LIMITS}
    assert js.compile({**req, "top_level": plan})["once"] == "once"

    def call_value(js: JavaScriptRuntime, key: str, name: str) -> object:
        answer = v2(js, key, event={"name": name, "input": {}})
        assert answer["ok"], answer
        return answer["value"]

    expected = {"n": 11, "first": 10, "twice": 6, "seen": 0, "unset": True}
    for name in ("a", "b", "a"):
        assert call_value(js, "lv", name) == expected
    assert call_value(js, "lv", "push") == {**expected, "seen": 1}
    assert js._recent["lv"].plan is None  # the write fell back: every later call runs fresh
    assert call_value(js, "lv", "a") == expected


def test_a_context_slow_to_prepare_is_prepared_by_its_own_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Between requests a worker prepares again only contexts that are quick to prepare: the
    # next request may be another hook's. A slow one is prepared within its own next call.
    from engine.sandbox import javascript

    failing = "const K = [1];\nfunction on_tool_call(event, host) { throw new Error('x'); }\n"
    js = JavaScriptRuntime()
    load(js, "quick", failing)
    assert v2(js, "quick")["ok"] is False  # v2 runs prepare() after the call
    assert "quick" in js._ready
    assert js._recent["quick"].prepare_s < javascript.PREPARE_AHEAD_S
    monkeypatch.setattr(javascript, "PREPARE_AHEAD_S", 0.0)
    load(js, "slow", failing)
    assert "slow" in js._ready  # the load keeps what it prepared
    assert v2(js, "slow")["ok"] is False
    assert "slow" not in js._ready
    answer = v2(js, "slow")  # prepared in the call: the same answer as before
    assert answer["ok"] is False and "x" in str(answer)
    assert js._recent["slow"].prepare_s > 0


def test_after_a_batch_every_script_it_called_is_looked_after() -> None:
    # Two scripts called in one request, as a batch does: both lose their context (one to a
    # failure, one to memory left behind) and both get a new one before the next request.
    failing = GUARD.replace("return null;", "throw new Error('x');")
    js = JavaScriptRuntime()
    load(js, "a", failing)
    load(js, "b")
    b_context = js._ready["b"]
    b_context.baseline -= LIMITS["memory_mb"] * 1024 * 1024
    b_context.unchecked_cpu = 1.0  # due for a look at its memory
    for key in ("a", "b"):
        call = {
            "function": "on_tool_call",
            "script": {"key": key, "filename": "t.js"},
            "limits": LIMITS,
            "limits_key": "l",
            "config_key": "c1",
            "config_text": json.dumps({"deny": []}),
            "state": {},
        }
        js.call_v2(call, json.dumps(EVENT))
    assert "a" not in js._ready
    js.prepare()
    assert "a" in js._ready and js._ready["b"] is not b_context


# -- the contract cases through call_v2 -------------------------------------------------------

PARITY_LIMITS = Limits(timeout_ms=1000, memory_mb=32, compile_timeout_ms=1000).as_wire()


def _answer(raw: dict[str, object] | str) -> dict[str, object]:
    answer = json.loads(raw) if isinstance(raw, str) else dict(raw)
    answer.pop("duration_ms", None)
    return answer


@pytest.mark.parametrize(
    "c",
    [
        c
        for c in CONTRACT
        if not (isinstance(c.expect, Fails) and c.expect.error == "ScriptLimitError")
    ],
    ids=lambda c: c.name,
)
def test_call_v2_answers_every_contract_case_as_the_one_line_call(c: Case) -> None:
    # What the batch protocol will send gives the answers the pool's suite checks today; with
    # a top-level plan where the script has one. (Limit cases depend on timing: left out.)
    req = {"source": c.js, "filename": "c.js", "key": "k", "limits": PARITY_LIMITS}
    old, new = JavaScriptRuntime(), JavaScriptRuntime()
    assert old.compile({**req, "top_level": None})["ok"]
    assert new.compile({**req, "top_level": top_level_plan(c.js)})["ok"]
    line = {
        "op": "call",
        "language": "javascript",
        "function": c.function,
        "script": {"key": "k", "filename": "c.js"},
        "event": c.event,
        "config": c.config,
        "state": c.state,
        "limits_key": "l",
    }
    call = {
        "function": c.function,
        "script": {"key": "k", "filename": "c.js"},
        "limits": PARITY_LIMITS,
        "limits_key": "l",
        "config_key": "c",
        "config_text": json.dumps(c.config),
        "state": c.state,
    }
    for _ in range(2):
        expected = _answer(old.call({**line, "limits": PARITY_LIMITS}, json.dumps(line)))
        assert _answer(new.call_v2(call, json.dumps(c.event))) == expected
        old.prepare()
        new.prepare()


@pytest.mark.parametrize("top", ["", "const K = [];\n"])
def test_a_long_answer_comes_back_whole(top: str) -> None:
    # Strings QuickJS builds by adding long ones are ropes, which the binding cannot return:
    # the answer line (also after a rerun for a write to a kept constant) must be joined.
    source = top + (
        "function on_tool_call(event, host) {\n"
        + ("  K.push(1);\n" if top else "")
        + "  return {text: 'x'.repeat(5000)};\n}\n"
    )
    js = JavaScriptRuntime()
    load(js, "k", source)
    for _ in range(2):
        answer = v2(js, "k")
        assert answer["ok"] is True and answer["value"] == {"text": "x" * 5000}
