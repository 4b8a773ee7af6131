"""The Python runtime as a worker calls it, in this process: the batch entry point
(``call_v2``), the config parsed once per key and copied per call, module-level lookup tables
folded into constants, and the CPU-time budget."""

# ruff: noqa: E501 - scripts read best one per line

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import json
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.sandbox import textcodecs
from engine.sandbox.guards import Budget, Deadline
from engine.sandbox.javascript import JavaScriptRuntime
from engine.sandbox.limits import Limits
from engine.sandbox.python import PythonRuntime, translate
from engine.sandbox.values import ConfigCache, copier

LIMITS = Limits(timeout_ms=200, compile_timeout_ms=2000).as_wire()


@pytest.fixture(scope="module")
def py() -> Iterator[PythonRuntime]:
    # No address-space cap in the test process: the limiter is the worker's (see worker.py).
    yield PythonRuntime(JavaScriptRuntime().regex, lambda memory_mb: 0)


def script(body: str, top: str = "") -> str:
    return f"{top}\ndef on_tool_call(event, host):\n{textwrap.indent(body, '    ')}\n"


def load(py: PythonRuntime, source: str, key: str) -> None:
    answer = py.compile({"source": source, "filename": f"{key}.py", "limits": LIMITS, "key": key})
    assert answer["ok"], answer


def call_v2(
    py: PythonRuntime, key: str, event: Any, config: Any, *, config_key: str = "c"
) -> dict[str, Any]:
    call = {
        "function": "on_tool_call",
        "script": {"key": key, "filename": f"{key}.py"},
        "limits": LIMITS,
        "limits_key": "l",
        "config_key": config_key,
        "config_text": json.dumps(config),
        "state": {},
    }
    return py.call_v2(call, json.dumps(event))


def test_a_call_gets_the_event_text_parsed_and_the_config(py: PythonRuntime) -> None:
    load(py, script("return {'name': event['name'], 'forbidden': host.config['forbidden']}"), "s1")
    answer = call_v2(py, "s1", {"name": "rm"}, {"forbidden": ["rm", "dd"]})
    assert answer["ok"] and answer["value"] == {"name": "rm", "forbidden": ["rm", "dd"]}


def test_an_unknown_script_asks_for_its_source(py: PythonRuntime) -> None:
    assert call_v2(py, "never-compiled", {}, {}) == {"ok": False, "kind": "need_source"}


CHANGE_EVERYTHING = script(
    "host.config['deny'].append('x')\n"
    "host.config['nested']['list'].append(1)\n"
    "host.config['nested']['new'] = 1\n"
    "host.config['extra'] = 1\n"
    "event['input']['stash'] = 1\n"
    "return {'config': host.config, 'event': event}"
)


def test_each_call_gets_its_own_copy_of_the_cached_config(py: PythonRuntime) -> None:
    load(py, CHANGE_EVERYTHING, "s2")
    config = {"deny": ["rm"], "nested": {"list": [], "n": 1}, "flag": True}
    first = call_v2(py, "s2", {"input": {}}, config)
    second = call_v2(py, "s2", {"input": {}}, config)
    assert first["value"] == second["value"]
    assert first["value"]["config"]["deny"] == ["rm", "x"]
    assert first["value"]["config"]["nested"] == {"list": [1], "n": 1, "new": 1}


def test_a_config_key_with_another_text_is_parsed_again(py: PythonRuntime) -> None:
    load(py, script("return host.config"), "s3")
    assert call_v2(py, "s3", {}, {"a": 1}, config_key="same")["value"] == {"a": 1}
    assert call_v2(py, "s3", {}, {"b": 2}, config_key="same")["value"] == {"b": 2}


def walk_containers(value: Any) -> Iterator[Any]:
    if type(value) in (list, dict):
        yield value
        for item in value.values() if type(value) is dict else value:
            yield from walk_containers(item)


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2, {"b": [3, {"c": []}]}], "d": "x", "e": None},
        [[], [[]], {"k": [1]}],
        {"flat": ["x"] * 100},
        "text",
        3,
        None,
        [],
    ],
)
def test_a_config_copy_is_equal_and_every_container_in_it_is_new(value: Any) -> None:
    fresh = copier(value)
    one, two = fresh(), fresh()
    assert one == value and two == value
    originals = {id(c) for c in walk_containers(value)}
    assert not originals & {id(c) for c in walk_containers(one)}
    assert not {id(c) for c in walk_containers(one)} & {id(c) for c in walk_containers(two)}


def test_the_config_cache_is_bounded_by_entries_and_characters() -> None:
    cache = ConfigCache(max_entries=3, max_chars=100)
    for i in range(5):
        assert cache.fresh(f"k{i}", json.dumps([i])) == [i]
    assert list(cache._entries) == ["k2", "k3", "k4"]
    cache.fresh("big", json.dumps("x" * 97))  # 99 characters: the older entries must go
    assert list(cache._entries) == ["big"]


# --- module-level lookup tables -------------------------------------------------------------


def constants(source: str) -> list[Any]:
    code, problems = translate(source, "t.py")
    assert code is not None, problems
    return [c for c in code.co_consts if type(c) in (tuple, frozenset) and "deny-1" in c]


TABLES = "DENY = {'deny-1', 'deny-2'}\nWORDS = ['deny-1', 'x']\nNAMES = set(['deny-1'])\n"


@pytest.mark.parametrize(
    "uses",
    [
        "return {'x': event['name'] in DENY or event['name'] not in WORDS or 'a' in NAMES}",
        "for w in WORDS:\n    pass\nreturn {'x': [w for w in WORDS if w in DENY or w in NAMES]}",
        "pass",
    ],
)
def test_a_table_only_tested_against_becomes_a_constant(uses: str) -> None:
    found = constants(script(uses, TABLES))
    assert sorted(type(c).__name__ for c in found) == ["frozenset", "frozenset", "tuple"]


@pytest.mark.parametrize(
    "use",
    [
        "DENY.add('x')",
        "x = DENY",
        "host.log(str(DENY))",
        "return {'n': len(DENY)}",
        "global DENY\nDENY = set()",
        "del DENY",
        "for DENY in [1]:\n    pass",
        "try:\n    pass\nexcept Exception as DENY:\n    pass",
        "f = lambda DENY: DENY",
        "(DENY := 1)",
        "for x in DENY:\n    pass",  # a set's iteration order is not promised to match a frozenset's
    ],
)
def test_any_other_use_keeps_the_table_built_per_call(use: str) -> None:
    assert not any(type(c) is frozenset for c in constants(script(use, "DENY = {'deny-1'}")))


def test_a_parameter_or_a_second_assignment_keeps_the_table_built_per_call() -> None:
    assert constants("DENY = ['deny-1']\ndef f(DENY):\n    return 'a' in DENY\n") == []
    assert constants("DENY = ['deny-1']\nDENY = ['deny-1', 'b']\n") == []
    assert constants("set = list\nDENY = set(['deny-1'])\n") == []


def test_folded_tables_give_the_same_answers(py: PythonRuntime) -> None:
    body = "n = event['name']\nreturn {'set': n in DENY, 'list': n not in WORDS, 'call': n in NAMES, 'loop': [w for w in WORDS]}"
    load(py, script(body, TABLES), "s4")
    assert call_v2(py, "s4", {"name": "deny-1"}, {})["value"] == {
        "set": True,
        "list": False,
        "call": True,
        "loop": ["deny-1", "x"],
    }


@pytest.mark.parametrize(
    ("table", "probe"),
    [
        ("DENY = {'rm': 1, 'dd': 2}", "{'rm'} in DENY"),
        ("DENY = {'rm': 1, 'dd': 2}", "['rm'] in DENY"),
        ("DENY = {'rm': 1, 'dd': 2}", "frozenset({'rm'}) not in DENY"),
        ("DENY = {'rm', 'dd'}", "{'rm'} in DENY"),
        ("DENY = {'rm', 'dd'}", "['rm'] in DENY"),
        ("DENY = ['rm', 'dd']", "{'rm'} in DENY"),
        ("DENY = ['rm', 'dd']", "['rm'] in DENY"),
    ],
)
def test_a_folded_table_answers_or_refuses_every_in_as_the_table_would(
    py: PythonRuntime, table: str, probe: str
) -> None:
    # The same test against the table as written: DENY.copy() keeps it built per call.
    body = f"try:\n    return {{'in': {probe}}}\nexcept TypeError as e:\n    return {{'error': str(e)}}"
    unfolded = body.replace("DENY", "DENY.copy()") + "\nDENY.copy()"
    assert constants(script(body, table.replace("'rm'", "'deny-1'"))), "the table was not folded"
    load(py, script(body, table), "fold-in")
    load(py, script(unfolded, table), "fold-out")
    folded = call_v2(py, "fold-in", {}, {})["value"]
    assert folded == call_v2(py, "fold-out", {}, {})["value"]


# --- what the call made goes with it --------------------------------------------------------


def test_a_generator_left_in_the_config_or_event_does_not_run_in_a_later_call(
    py: PythonRuntime,
) -> None:
    top = "def late(host):\n    try:\n        yield 1\n    finally:\n        host.log('late')\n"
    body = (
        "if event['name'] == 'plant':\n"
        "    for where in [host.config, event]:\n"
        "        g = late(host)\n        next(g)\n        where['g'] = g\n"
        "return None"
    )
    load(py, script(body, top), "s5")
    call_v2(py, "s5", {"name": "plant"}, {})
    after = call_v2(py, "s5", {"name": "probe"}, {})
    assert after["ok"] and after["logs"] == []


def test_a_comprehension_without_loops_in_script_code_still_runs_out_of_time(
    py: PythonRuntime,
) -> None:
    load(py, script("return {'n': sum(1 for x in range(10 ** 6) for y in range(10 ** 6))}"), "s6")
    answer = call_v2(py, "s6", {}, {})
    assert answer["ok"] is False and answer["cause"] == "timeout"


def test_starred_targets_keep_their_bounded_unpacking(py: PythonRuntime) -> None:
    body = "out = []\nfor a, *b in [[1, 2, 3], [4]]:\n    out.append([a, b])\nreturn {'out': out, 'c': [c for c, *d in [[5, 6]]]}"
    load(py, script(body), "s7")
    assert call_v2(py, "s7", {}, {})["value"] == {"out": [[1, [2, 3]], [4, []]], "c": [5]}


# --- the time limit is CPU time -------------------------------------------------------------


def test_a_budget_that_waited_without_running_is_not_out_of_time() -> None:
    budget = Budget(LIMITS, timeout_ms=50)
    budget.deadline = time.perf_counter() - 1  # as if the thread had been descheduled
    budget.tick()
    assert not budget.expired and budget.deadline > time.perf_counter()


def test_a_budget_whose_cpu_time_is_used_up_is_out_of_time() -> None:
    budget = Budget(LIMITS, timeout_ms=5)
    end = time.thread_time() + 0.01
    while time.thread_time() < end:
        pass
    with pytest.raises(Deadline):
        budget.tick()
    assert budget.expired


# --- dict displays used only with ``in`` --------------------------------------------------


def test_a_dict_only_tested_against_becomes_the_frozenset_of_its_keys(py: PythonRuntime) -> None:
    source = "DENY = {'deny-1': True, 'deny-2': 1}\n"
    found = constants(script("return {'x': event['name'] in DENY}", source))
    assert found == [frozenset({"deny-1", "deny-2"})]
    load(py, script("return {'in': event['name'] in DENY, 'out': 'x' not in DENY}", source), "d1")
    assert call_v2(py, "d1", {"name": "deny-2"}, {})["value"] == {"in": True, "out": True}


@pytest.mark.parametrize(
    "use",
    [
        "return {'v': DENY['deny-1']}",  # its values are read: the dict stays a dict
        "for k in DENY:\n    pass",
        "return {'v': DENY.get('deny-1')}",
        "DENY['x'] = 1",
    ],
)
def test_any_other_use_of_a_dict_keeps_it_built_per_call(use: str) -> None:
    assert constants(script(use, "DENY = {'deny-1': True}")) == []
    assert constants("DENY = {'deny-1': [1]}\nx = 'a' in DENY\n") == []  # a value not a literal


# --- what a call hands back: errors name where the problem is -------------------------------

CYCLE = "d = {}\nd['d'] = d\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "return {'input': {'meta': {'tags': (1, 2)}}}",
            "result.input.meta.tags: a tuple is not JSON",
        ),
        (
            "return {'input': {'meta': {3: 'x'}}}",
            "result.input.meta: a key of type int is not JSON (keys are text)",
        ),
        ("return {'input': {'n': [1, float('inf')]}}", "result.input.n[1]: numbers must be finite"),
        ("return {'input': {'a b': {'s': {1}}}}", 'result.input["a b"].s: a set is not JSON'),
        (
            "return {'input': {'n': 2 ** 60}}",
            "result.input.n: integers must be within +-(2**53 - 1)",
        ),
        (CYCLE + "return {'input': {'meta': d}}", "result.input.meta.d: contains a cycle"),
        (CYCLE + "return d", "result.d: contains a cycle"),
        ("d = {}\nfor i in range(40):\n    d = {'x': d}\nreturn d", "nested deeper than 32 levels"),
    ],
)
def test_an_invalid_result_names_the_field_and_tells_a_cycle(
    py: PythonRuntime, body: str, message: str
) -> None:
    load(py, script(body), "invalid-result")
    answer = call_v2(py, "invalid-result", {}, {})
    assert answer["cause"] == "invalid_result" and message in answer["message"], answer
    assert "cycle" not in message or "nested deeper" not in answer["message"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("host.state.set('k', {'a': [d]})", "host.state.set: value.a[0].d: contains a cycle"),
        ("host.state.set('k', {'t': (1,)})", "host.state.set: value.t: a tuple is not JSON"),
        (
            "host.emit({'type': 'status', 'data': {'d': d}})",
            "host.emit: event.data.d.d: contains a cycle",
        ),
        (
            "host.emit({'type': 'status', 'data': {'x': float('nan')}})",
            "host.emit: event.data.x: numbers must be finite",
        ),
    ],
)
def test_a_host_call_names_the_field_it_refuses(py: PythonRuntime, call: str, message: str) -> None:
    load(py, script(CYCLE + call + "\nreturn None"), "invalid-host-call")
    answer = call_v2(py, "invalid-host-call", {}, {})
    assert answer["cause"] == "error" and message in answer["message"], answer
    assert answer["line"] == 5


def test_an_entry_names_the_field_it_refuses(py: PythonRuntime) -> None:
    call = {
        "function": "on_tool_call",
        "script": {"key": "invalid-entry", "filename": "invalid-entry.py"},
        "limits": LIMITS,
        "limits_key": "l",
        "config_key": "c",
        "config_text": "{}",
        "state": {},
        "entries": [],
    }
    load(py, script(CYCLE + "host.entries.add('note', {'d': d})\nreturn None"), "invalid-entry")
    answer = py.call_v2(call, "{}")
    assert "host.entries.add: data.d.d: contains a cycle" in answer["message"], answer


def test_the_host_cannot_be_closed_by_the_script(py: PythonRuntime) -> None:
    load(py, script("host.close()\nreturn {'now': host.now()}"), "host-close")
    answer = call_v2(py, "host-close", {"time": "t"}, {})
    assert answer["ok"] is False and "has no attribute 'close'" in answer["message"], answer


def test_every_codec_use_leaves_the_worker_as_it_found_it(py: PythonRuntime) -> None:
    # The runtime loaded every codec when it was made: a call changes no module and no entry
    # of the codec search cache, whatever codec, spelling or error handler it uses.
    uses = [
        "'\\u043f'.encode('koi8_r')",
        "'\\u043f'.encode('KOI8-R')",
        "'x'.encode(' Mac  Greek ')",
        "str(b'x', 'Shift JIS')",
        "'\\xe9'.encode('ascii', 'namereplace')",
        "str(b'\\\\N{DIGIT ONE}', 'unicode_escape')",
        "'b\\xfccher.example'.encode('idna')",
        "'x'.encode('base64')",
        "'x'.encode('no such codec')",
        "str(b'x', encoding='hz')",
        "'x'.encode('utf_8_sig')",
        "'x'.encode('ISO-2022-JP-2004')",
        "'x'.encode('zlib')",
    ]
    body = "".join(f"try:\n    {u}\nexcept Exception:\n    pass\n" for u in uses) + "return None"
    load(py, script(body), "codecs-all")
    modules, cached = set(sys.modules), dict(encodings._cache)  # type: ignore[attr-defined]
    assert call_v2(py, "codecs-all", {}, {})["ok"]
    assert set(sys.modules) == modules and encodings._cache == cached  # type: ignore[attr-defined]


def test_codecs_are_loaded_once_before_the_first_script_is_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Not at start-up: a worker that only serves JavaScript never pays for it. Before the first
    # compile or call, every time: the first script already finds every codec loaded.
    from engine.sandbox import python as python_module

    loads: list[str] = []
    monkeypatch.setattr(python_module.textcodecs, "preload", lambda: loads.append("preload"))
    runtime = PythonRuntime(
        lambda *a, **k: None, lambda mb: 0, warmed=lambda: loads.append("warmed")
    )
    assert loads == []
    load(runtime, script("return None"), "warm-1")
    load(runtime, script("return None"), "warm-2")
    assert call_v2(runtime, "warm-1", {}, {})["ok"]
    assert loads == ["preload", "warmed"]
    # a new worker gets a call before any compile (the host sends the source when asked)
    answer = call_v2(PythonRuntime(lambda *a, **k: None, lambda mb: 0), "unknown-key", {}, {})
    assert loads == ["preload", "warmed", "preload"] and answer["ok"] is False


def test_codec_names_resolve_as_cpython_resolves_them() -> None:
    textcodecs.preload()
    names = set(encodings.aliases.aliases) | set(textcodecs._CANONICAL.values())
    spellings = {"", "-", "utf\xe98", "u.t.f-8", "utf..8", "dbcs", "mbcs", "rot13", " latin "}
    for n in names:
        spellings |= {n, n.upper(), n.replace("_", " "), n.replace("_", "."), f" {n}!", "x" + n}
    for name in spellings:
        try:
            real = codecs.lookup(name).name
        except LookupError:
            real = None
        try:
            ours: str | None = codecs.lookup(textcodecs.canonical(name)).name
        except LookupError:
            ours = None
        assert ours == real, name
