"""The Python runtime as a worker calls it, in this process: the batch entry point
(``call_v2``), the config parsed once per key and copied per call, module-level lookup tables
folded into constants, and the CPU-time budget."""

# ruff: noqa: E501 - scripts read best one per line

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

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
