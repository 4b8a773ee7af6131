"""Python calls in a shared worker: nothing one call does shows in or breaks another call, no
addresses reach a script, the same input gives the same output on every worker start, and
size bombs are refused before they allocate."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import contextlib
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ScriptLimitError, ScriptRuntimeError
from engine.runtime import Engine
from engine.sandbox import CompiledScript, Language, Limits, WorkerPool
from tests.conftest import write

LIMITS = Limits(timeout_ms=1000, memory_mb=32, compile_timeout_ms=2000)
ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


def py_body(body: str, top: str = "") -> str:
    return f"{top}\ndef on_tool_call(event, host):\n{textwrap.indent(body, '    ')}\n"


def compile_py(pool: WorkerPool, source: str, name: str = "probe") -> CompiledScript:
    return pool.compile(source, filename=f"{name}.py", language=Language.PYTHON)


def call(pool: WorkerPool, script: CompiledScript, event: dict[str, Any] | None = None) -> Any:
    result = pool.call(
        script, "on_tool_call", event or {"name": "x", "n": "4711"}, config={}, state={}
    )
    return result.value


def worker_pids(pool: WorkerPool) -> set[int]:
    return {w.proc.pid for w in pool._workers._all}


@pytest.fixture(scope="module")
def one_worker() -> Iterator[WorkerPool]:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        yield pool


# --- no addresses ---------------------------------------------------------------------------

OBJECTS = {
    "function": "def f():\n    pass\nobj = f",
    "lambda": "obj = lambda: 0",
    "generator": "def g():\n    yield 1\nobj = g()",
    "generator_expression": "obj = (x for x in [1])",
    "map": "obj = map(str, [1])",
    "filter": "obj = filter(None, [1])",
    "zip": "obj = zip([1], [2])",
    "enumerate": "obj = enumerate([1])",
    "reversed_list": "obj = reversed([1])",
    "dict_key_iterator": "obj = reversed({'a': 1}.keys())",
    "dict_item_iterator": "obj = reversed({'a': 1}.items())",
    "host": "obj = host",
    "host_state": "obj = host.state",
    "host_method": "obj = host.log",
    "list_method": "obj = [].append",
    "builtin": "obj = sorted",
    "nested_in_list": "obj = [[lambda: 0], {'k': (x for x in [])}]",
}
RENDERINGS = {
    "str": "str(obj)",
    "fstring": "f'{obj}'",
    "fstring_repr": "f'{obj!r}'",
    "fstring_ascii": "f'{obj!a}'",
    "fstring_padded": "f'{obj!s:>80}'",
    "fstring_debug": "f'{obj=}'",
    "percent_s": "'%s' % (obj,)",
    "percent_r": "'%r' % (obj,)",
    "percent_mapping": "'%(o)s' % {'o': obj}",
    "bytes_percent_r": "('%s' % (b'%r' % (obj,)))",
    "str_of_list": "str([obj, obj])",
    "str_of_dict": "str({'k': obj})",
    "index_error_message": "(lambda: [].index(obj))",
    "key_error_message": "(lambda: {}[obj])",
}


def render_script(obj: str, rendering: str) -> str:
    expr = RENDERINGS[rendering]
    if rendering.endswith("_message"):
        body = (
            f"{obj}\ntry:\n    {expr}()\nexcept Exception as e:\n"
            "    return {'text': [str(e), f'{e}', '%s' % e, str(e.args), e.args[0] if isinstance(e.args[0], str) else '']}\n"
        )
        return py_body(body)
    return py_body(f"{obj}\nreturn {{'text': {expr}}}")


@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
@pytest.mark.parametrize("obj", sorted(OBJECTS))
def test_no_address_reaches_a_script(one_worker: WorkerPool, obj: str, rendering: str) -> None:
    value = call(one_worker, compile_py(one_worker, render_script(OBJECTS[obj], rendering)))
    assert value is not None and value["text"]
    assert not ADDRESS.search(str(value)), value


@pytest.mark.parametrize(
    "body", ["def f():\n    pass\n[].index(f)", "{}[lambda: 0]", "raise ValueError(host.log)"]
)
def test_error_messages_for_the_host_have_no_address(one_worker: WorkerPool, body: str) -> None:
    script = compile_py(one_worker, py_body(body))
    with pytest.raises(ScriptRuntimeError) as info:
        call(one_worker, script)
    assert info.value.cause == "error"
    assert "<" in str(info.value) and not ADDRESS.search(str(info.value))


def test_text_a_script_wrote_itself_is_left_alone(one_worker: WorkerPool) -> None:
    source = py_body("return {'a': str('at 0x1234'), 'b': f'{1} at 0x1f', 'c': '%s' % 'x at 0x99'}")
    assert call(one_worker, compile_py(one_worker, source)) == {
        "a": "at 0x1234",
        "b": "1 at 0x1f",
        "c": "x at 0x99",
    }


# --- sets -----------------------------------------------------------------------------------

IDENTITY_SETS = {
    "display": "s = {1, lambda: 0}",
    "comprehension": "s = {f for f in [len, sorted]}",
    "set_builtin": "s = set([lambda: 0])",
    "frozenset_builtin": "s = frozenset([host])",
    "tuple_element": "s = {(1, lambda: 0)}",
    "nested_frozenset": "s = {frozenset([1]), (2, (3, host.log))}",
    "add": "s = {1}\ns.add(host)",
    "update": "s = {1}\ns.update([2], [lambda: 0])",
    "union": "s = {1}.union([lambda: 0])",
    "symmetric_difference": "s = {1}.symmetric_difference([sorted])",
    "symmetric_difference_update": "s = {1}\ns.symmetric_difference_update([(x for x in [])])",
    "dict_keys_minus": "s = {len: 1}.keys() - []",
    "dict_keys_or": "s = {'a': 1}.keys() | [lambda: 0]",
    "dict_items_and": "d = {'a': len}\ns = d.items() & d.items()",
    "dict_keys_xor_inplace": "s = {'a': 1}.keys()\ns ^= [host]",
    "generator_element": "s = set([(x for x in [])])",
}


@pytest.mark.parametrize("way", sorted(IDENTITY_SETS))
def test_a_set_refuses_elements_hashed_by_identity(one_worker: WorkerPool, way: str) -> None:
    script = compile_py(
        one_worker, py_body(IDENTITY_SETS[way] + "\nreturn {'leak': sorted(map(str, s))}")
    )
    with pytest.raises(ScriptRuntimeError) as info:
        call(one_worker, script)
    assert info.value.cause == "error" and "a set cannot hold" in str(info.value)


def test_sets_of_values_still_work(one_worker: WorkerPool) -> None:
    source = py_body(
        "s = {'b', 'a', 1, 2.5, None, (1, 'x'), frozenset(['z'])}\n"
        "t = set(['q']) | {'r'}\nt.add(('k', 1))\nt.update(['u'])\n"
        "k = {'a': 1, 'b': 2}.keys() - {'a'}\n"
        "return {'n': len(s), 'sorted': sorted(str(x) for x in t), 'k': sorted(k),"
        " 'types': [isinstance(s, set), isinstance(frozenset(), frozenset), isinstance('a', str), isinstance(1, (str, int))],"
        " 'names': [str(str), str(set)]}"
    )
    assert call(one_worker, compile_py(one_worker, source)) == {
        "n": 7,
        "sorted": ["('k', 1)", "q", "r", "u"],
        "k": ["b"],
        "types": [True, True, True, True],
        "names": ["<class 'str'>", "<class 'set'>"],
    }


# --- the same decision on every worker start ------------------------------------------------

DETERMINISM = {
    Language.PYTHON: py_body(
        "words = {'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', event['name']}\n"
        "def f():\n    pass\n"
        "order = [w for w in words]\n"
        "return {'block': order[0] if order[0] < 'e' else None, 'order': order, 'fn': str(f) + f'{map(f, [])}' + '%r' % (lambda: 0,)}"
    ),
    Language.JAVASCRIPT: (
        "function on_tool_call(event, host) {\n"
        "  var words = new Set(['alpha', 'beta', 'gamma', 'delta', 'epsilon', event.name]);\n"
        "  function f() {}\n"
        "  var order = Array.from(words);\n"
        "  return {order: order, fn: String(f) + String(function () {})};\n}\n"
    ),
}


@pytest.mark.parametrize("language", list(DETERMINISM), ids=str)
def test_the_same_event_gives_the_same_result_on_six_worker_starts(language: Language) -> None:
    results = []
    for _ in range(6):
        with WorkerPool(size=1, limits=LIMITS) as pool:
            script = pool.compile(
                DETERMINISM[language], filename=f"d.{language.value}", language=language
            )
            results.append(call(pool, script, {"name": "iota"}))
    assert all(r == results[0] for r in results), results
    assert not ADDRESS.search(str(results[0]))


# --- size pre-checks ------------------------------------------------------------------------

SIZE_BOMBS = {
    "bytes_repeat": 'x = b"x" * 10 ** 9',
    "bytes_repeat_reversed": 'x = 10 ** 9 * b"xy"',
    "bytes_repeat_inplace": 'x = b"x"\nx *= 10 ** 9',
    "str_repeat_bool_then_int": 'x = "x" * True * 10 ** 9',
    "percent_width": 'x = "%0999999999d" % 1',
    "percent_precision": 'x = "%.999999999f" % 1.5',
    "percent_mapping_width": 'x = "%(a)999999999s" % {"a": 1}',
    "percent_many_fields": 'x = ("%s" * 400000) % (("abcd",) * 400000)',
    "percent_long_arguments": 'x = "%s%s%s" % ("x" * 900000, "y" * 900000, "z")',
    "percent_inplace": 'x = "%0999999999d"\nx %= 1',
    "percent_key_with_parentheses": 'x = "%(a(b))20000000s" % {"a(b)": 1}',
    "percent_key_with_parentheses_of_a_shared_list": 'x = "%(a(b))s" % {"a(b)": [["y" * 1000] * 1000] * 10}',
    "bytes_percent_key_with_parentheses": 'x = b"%(a(b))20000000s" % {b"a(b)": b"x"}',
    "bytes_percent_mapping_of_a_shared_list": 'x = b"%(a)a" % {b"a": [["y" * 1000] * 1000] * 10}',
    "percent_of_a_whole_dict": 'x = "%s" % {"a": [["y" * 1000] * 1000] * 10}',
    "percent_of_huge_floats": 'x = ("%f" * 30000) % ((1e308,) * 30000)',
    "encode_unicode_escape": 'x = ("\\U0010ffff" * 10 ** 6).encode("unicode_escape")',
    "encode_raw_unicode_escape": 'x = ("\\U0010ffff" * 10 ** 6).encode("raw-unicode-escape")',
    "encode_xmlcharrefreplace": 'x = ("\\U0010ffff" * 10 ** 6).encode("ascii", "xmlcharrefreplace")',
    "encode_namereplace": 'x = ("\\ufdfa" * 200000).encode("latin-1", "namereplace")',
    "encode_utf_32": 'x = ("a" * 10 ** 6).encode("utf-32")',
    "decode_backslashreplace": 'x = str(b"\\xff" * 10 ** 6, "ascii", "backslashreplace")',
    "bytes_percent_width": 'x = b"%0999999999d" % 1',
    "bytes_percent_arguments": 'x = b"%s%s" % (b"x" * 900000, b"y" * 900000)',
    "translate_to_long_strings": 'x = ("a" * 10 ** 6).translate({97: "x" * 1000})',
    "translate_list_table": 'x = ("ab" * 100000).translate(["z" * 50] * 128)',
    "replace_empty": 'x = ("a" * 10 ** 6).replace("", "x" * 1000)',
    "replace_empty_small_string": 'x = "ab".replace("", "x" * 999999)',
    "replace_growing": 'x = ("ab" * 400000).replace("a", "aaaa")',
    "join_many": 'x = ",".join(["x" * 1000] * 1000000)',
    "join_generator": 'x = "".join(("y" * 100000) for i in range(100))',
    "expandtabs": 'x = "\\t".expandtabs(10 ** 9)',
    "ljust": 'x = "a".ljust(10 ** 9)',
    "center": 'x = "a".center(10 ** 9, "*")',
    "zfill": 'x = "1".zfill(10 ** 9)',
    "fstring_width": 'x = f"{1:>999999999}"',
    "fstring_nested_width": 'w = "9" * 9\nx = f"{1:>{w}}"',
    "fstring_precision": 'x = f"{1.5:.999999999f}"',
    "fstring_of_shared_list": "x = f'{[[\"y\" * 1000] * 1000] * 1000}'",
    "str_of_shared_list": 'x = str([["y" * 1000] * 1000] * 1000)',
    "str_of_shared_dict": 'v = {"k": "y" * 100000}\nx = str([v] * 1000)',
    "repr_of_tuple": 'x = f\'{("y" * 600000, "z" * 600000)!r}\'',
    "exception_message": 'try:\n    {}[("x" * 500000,) * 100]\nexcept KeyError as e:\n    x = str(e)',
}


@pytest.fixture(scope="module")
def bomb_worker() -> Iterator[WorkerPool]:
    # A refusal can take a second of CPU on a slow machine (percent_many_fields sizes 400 000
    # arguments): the time limit must not be what ends the call.
    with WorkerPool(size=1, limits=Limits(timeout_ms=10_000, memory_mb=32)) as pool:
        yield pool


@pytest.mark.parametrize("bomb", sorted(SIZE_BOMBS))
def test_a_size_bomb_is_refused_before_it_allocates(bomb_worker: WorkerPool, bomb: str) -> None:
    source = py_body(SIZE_BOMBS[bomb] + "\nreturn {'leak': len(x)}")
    script = compile_py(bomb_worker, source, bomb)
    before = worker_pids(bomb_worker)
    with pytest.raises(ScriptLimitError) as info:
        call(bomb_worker, script)
    assert info.value.cause == "memory"
    # A real MemoryError replaces the worker; a refusal allocated nothing, so it stays.
    assert worker_pids(bomb_worker) == before


def test_unreachable_size_bombs_fail_as_errors(one_worker: WorkerPool) -> None:
    for body in ('x = b"x".ljust(10 ** 9)', 'x = "{:>999999999}".format(1)', "x = str(7 ** 30000)"):
        script = compile_py(one_worker, py_body(body))
        with pytest.raises(ScriptRuntimeError) as info:
            call(one_worker, script)
        assert info.value.cause == "error", body


def test_bounded_text_operations_still_work(one_worker: WorkerPool) -> None:
    source = py_body(
        "return {'r': 'a-b'.replace('-', '--'), 'e': 'ab'.replace('', '.'), 't': 'abc'.translate({97: 'AA', 98: None}),"
        " 'j': '-'.join(x for x in ['a', 'b']), 'p': '%05d|%-3s' % (42, 'x'),"
        " 'm': '%(k)s' % {'k': 'v', 'unused': 'u' * 900000}, 'b': str(b'ab' * 2), 'f': f'{3.5:>8.2f}|{[1, None]}',"
        " 'l': len(str(['y' * 1000] * 900)), 'c': str([1, [2, {'a': (3,)}]]), 'x': '\\t'.expandtabs(4),"
        " 'k': '%(a(b))s|%%' % {'a(b)': 1}, 'kd': '%s' % {'a': 1}, 'bk': str(b'%(k)s' % {b'k': b'v'}), 'fl': len('%f' % 1e20),"
        " 'ue': len(('\\U0010ffff' * 90000).encode('unicode_escape')), 'u8': len(('\\xe9' * 400000).encode('UTF8')),"
        " 'ua': len(('a' * 200000).encode('unicode_escape')), 'd': len(str(b'a' * 900000, 'ascii', 'backslashreplace')),"
        " 'de': str(b'\\xcf\\xf0', encoding='cp1251'), 'o': str(object=b'x')}"
    )
    assert call(one_worker, compile_py(one_worker, source)) == {
        "r": "a--b",
        "e": ".a.b.",
        "t": "AAc",
        "j": "a-b",
        "p": "00042|x  ",
        "m": "v",
        "b": "b'abab'",
        "f": "    3.50|[1, None]",
        "l": len(str(["y" * 1000] * 900)),
        "c": "[1, [2, {'a': (3,)}]]",
        "x": "    ",
        "k": "1|%",
        "kd": "{'a': 1}",
        "bk": "b'v'",
        "fl": len(f"{1e20:f}"),
        "ue": 900000,
        "u8": 800000,
        "ua": 200000,
        "d": 900000,
        "de": "\u041f\u0440",
        "o": "b'x'",
    }


GROW = "while True:\n    chunks.append(chr(65 + n % 26) * 1000000)\n    n = n + 1"
CATCH_MEMORY = {
    "except_exception": f"try:\n{textwrap.indent(GROW, '    ')}\nexcept Exception:\n    chunks = None\n    return {{'leak': n}}",
    "bare_except": f"try:\n{textwrap.indent(GROW, '    ')}\nexcept:\n    chunks = None\nreturn {{'leak': n}}",
    "finally_return": f"try:\n{textwrap.indent(GROW, '    ')}\nfinally:\n    return {{'leak': n}}",
    "nested_handlers": f"try:\n    try:\n{textwrap.indent(GROW, '        ')}\n    except Exception:\n        chunks = None\nexcept:\n    pass\nreturn {{'leak': n}}",
    "retry_after_catching": f"for attempt in range(3):\n    try:\n{textwrap.indent(GROW, '        ')}\n    except Exception:\n        chunks = []\nreturn {{'leak': n}}",
    # The except clause's own expression fails (MemoryError is no name a script has): the
    # NameError replaces the MemoryError before the handler's body runs, and the outer
    # handler sees only the NameError.
    "except_clause_that_raises": f"try:\n    try:\n{textwrap.indent(GROW, '        ')}\n    except MemoryError:\n        chunks = None\nexcept Exception:\n    chunks = None\nreturn {{'leak': n}}",
    "except_clause_attribute_error": f"try:\n    try:\n{textwrap.indent(GROW, '        ')}\n    except (ValueError, host.nothing):\n        chunks = None\nexcept Exception:\n    chunks = None\nreturn {{'leak': n}}",
    # A generator's finally block, run as the generator goes: CPython swallows what it raises
    # (an "unraisable" exception), so no handler of the script ever sees the MemoryError.
    "generator_finalizer": "count = [0]\ndef g():\n    try:\n        yield 1\n    finally:\n        kept = []\n        while True:\n            kept.append(chr(65 + count[0] % 26) * 1000000)\n            count[0] = count[0] + 1\nit = g()\nnext(it)\nit = None\nreturn {'leak': count[0]}",
}


@pytest.mark.parametrize("way", sorted(CATCH_MEMORY))
def test_running_out_of_memory_cannot_be_caught_and_measured(
    one_worker: WorkerPool, way: str
) -> None:
    body = "n = 0\nchunks = []\n" + CATCH_MEMORY[way]
    script = compile_py(one_worker, py_body(body), way)
    with pytest.raises(ScriptLimitError) as info:
        call(one_worker, script)
    assert info.value.cause == "memory"


def test_the_pattern_engine_running_out_of_memory_cannot_be_caught_and_measured() -> None:
    # host.redact's engine (a QuickJS context every Python call of the worker shares) ran out
    # of memory and the script caught a ValueError("out of memory") and went on: it could
    # search for the size at which that happens, which depends on the shared context.
    body = (
        "for n in [1000, 20000]:\n    try:\n        host.redact('a' * n, ['a'], 'x' * 512)\n"
        "    except Exception as e:\n        return {'leak': n, 'said': str(e.args)}\nreturn None"
    )
    with WorkerPool(size=1, limits=Limits(timeout_ms=2000, memory_mb=8)) as pool:
        script = compile_py(pool, py_body(body), "redact_out_of_memory")
        with pytest.raises(ScriptLimitError) as info:
            call(pool, script)
    assert info.value.cause == "memory"


def test_a_refused_size_can_be_caught_it_allocated_nothing(one_worker: WorkerPool) -> None:
    source = py_body(
        "try:\n    x = 'a'.ljust(10 ** 9)\nexcept Exception as e:\n    return {'refused': str(e)}"
    )
    value = call(one_worker, compile_py(one_worker, source))
    assert value is not None and "1000000000" in value["refused"]


# --- nothing a call does shows in the next --------------------------------------------------

PROBE = py_body(
    "def depth(n):\n    try:\n        return depth(n + 1)\n    except Exception:\n        return n\n"
    "big = [chr(65 + i) * 1000000 for i in range(24)]\n"
    "words = [w for w in {'pin-1', 'pin-2', 'pin-3', 'pin-4', 'pin-5', event['n']}]\n"
    "built = 'pin-' + event['n']\n"
    "try:\n    marker = str.stash\nexcept Exception:\n    marker = None\n"
    "try:\n    raise ValueError()\nexcept ValueError as e:\n    args = str(e.args)\n"
    "return {'depth': depth(0), 'big': sum(len(b) for b in big), 'words': words,"
    " 'interned': built is 'pin-4711', 'marker': marker, 'args': args}"
)
PLANTS = {
    "uncaught_recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "caught_recursion": "def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept Exception:\n    pass",
    "cyclic_garbage": "junk = []\nfor i in range(30):\n    d = {'s': chr(97 + i) * 1000000}\n    d['self'] = d\n    junk.append(d)\njunk = None",
    "many_small_cycles": "for i in range(100000):\n    d = {}\n    d['d'] = d",
    "memory_error": "x = 'a' * 1000000\nwhile True:\n    x = x + x",
    "size_refusal": 'x = "a".ljust(10 ** 9)',
    "string_sets": "for i in range(2000):\n    s = {str(i), 'pin-4711', 'pin-' + str(i)}",
    "interned_constant": "pin = 'pin-4711'\nhost.log(pin)",
    "builtin_attributes": "for t in [str, set, frozenset, dict, ValueError]:\n    try:\n        t.stash = 'secret'\n    except Exception:\n        pass",
    "exception_left_behind": "raise ValueError('secret-canary')",
    "timeout": "while True:\n    pass",
    "warnings_at_compile": "x = '\\d' if 1 is 1 else 'pin-4711' is 'pin-4711'\nreturn {'x': x}",
    "gc_pressure": "keep = [[i] for i in range(200000)]\nfor k in keep:\n    k.append(keep)",
}


@pytest.fixture(scope="module")
def fresh_probe() -> Any:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        return call(pool, compile_py(pool, PROBE))


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_call_leaves_nothing_the_next_call_can_see_or_trip_on(
    one_worker: WorkerPool, fresh_probe: Any, plant: str
) -> None:
    probe = compile_py(one_worker, PROBE)
    planted = compile_py(one_worker, py_body(PLANTS[plant]), plant)
    for _ in range(3):
        with contextlib.suppress(ScriptRuntimeError, ScriptLimitError):
            call(one_worker, planted)
        assert call(one_worker, probe) == fresh_probe
    assert fresh_probe["big"] == 24 * 10**6 and fresh_probe["depth"] > 150


def test_evicting_the_code_cache_changes_nothing(one_worker: WorkerPool, fresh_probe: Any) -> None:
    probe = compile_py(one_worker, PROBE)
    assert call(one_worker, probe) == fresh_probe
    for i in range(70):  # more scripts than a worker caches: the probe's code is dropped
        other = compile_py(one_worker, py_body(f"return {{'i': {i}}}"), f"filler{i}")
        assert call(one_worker, other) == {"i": i}
    assert call(one_worker, probe) == fresh_probe


# --- through Engine.load, as a host calls it ------------------------------------------------

LITTER = {
    "py": py_body(PLANTS["cyclic_garbage"] + "\n" + PLANTS["caught_recursion"]),
    "js": "function on_tool_call(event, host) {\n  var junk = [];\n  for (var i = 0; i < 20; i++) { var d = {s: 'x'.repeat(1000000)}; d.self = d; junk.push(d); }\n  return null;\n}\n",
}
VICTIM = {
    "py": py_body(
        "big = [chr(65 + i) * 1000000 for i in range(24)]\n"
        "words = [w for w in {'alpha', 'beta', 'gamma', 'delta', event['name']}]\n"
        "return {'notice': words[0] + ':' + str(sum(len(b) for b in big)) + ':' + str(lambda: 0)}"
    ),
    "js": "function on_tool_call(event, host) {\n  var big = [];\n  for (var i = 0; i < 8; i++) { big.push('y'.repeat(1000000)); }\n  return {notice: Array.from(new Set(['alpha', 'beta', event.name]))[0] + ':' + big.length};\n}\n",
}


ENGINE_BOMBS = {
    "py": [
        'x = b"x" * 10 ** 9',
        'x = "%0999999999d" % 1',
        'x = ("a" * 10 ** 6).translate({97: "x" * 1000})',
        'x = ("a" * 10 ** 6).replace("", "x" * 1000)',
        'x = str([["y" * 1000] * 1000] * 1000)',
    ],
    "js": [
        "var x = 'a'.padStart(1e9);",
        "var x = 'a'.repeat(1e3).replaceAll('a', 'x'.repeat(1e5));",
        "var x = 'x'.repeat(1e9);",
        "var x = new Array(1e6).fill('y'.repeat(1000)).join(',');",
        "var x = JSON.stringify(new Array(1000).fill(new Array(1000).fill('y'.repeat(1000))));",
    ],
}


LEAKY_ERROR = {
    "py": py_body("def f():\n    pass\n[].index(f)"),
    "js": "function on_tool_call(event, host) {\n  function f() {}\n  throw new Error('not found: ' + String(f));\n}\n",
}


def bomb_source(lang: str) -> str:
    if lang == "py":
        branches = "".join(
            f"if event['input']['bomb'] == {i}:\n    {bomb}\n"
            for i, bomb in enumerate(ENGINE_BOMBS["py"])
        )
        return py_body(branches + "return {'notice': 'survived'}")
    cases = "".join(
        f"  if (event.input.bomb === {i}) {{ {bomb} }}\n"
        for i, bomb in enumerate(ENGINE_BOMBS["js"])
    )
    return f"function on_tool_call(event, host) {{\n{cases}  return {{notice: 'survived'}};\n}}\n"


def hook_yaml(name: str, lang: str, source: str) -> str:
    language = "python" if lang == "py" else "javascript"
    return f"kind: script_hook\nname: {name}\nlanguage: {language}\nsource: |\n" + textwrap.indent(
        source, "  "
    )


def engine_files() -> dict[str, str]:
    files = {
        "engine.yaml": "process: test\nscripts: {timeout_ms: 1000, memory_mb: 32, workers: 1}\n"
    }
    for lang in ("py", "js"):
        roles = (
            ("litter", LITTER[lang]),
            ("victim", VICTIM[lang]),
            ("bomb", bomb_source(lang)),
            ("leaky_error", LEAKY_ERROR[lang]),
        )
        for role, source in roles:
            files[f"agents/{role}_{lang}/agent.yaml"] = f"hooks: [{role}]\n"
            files[f"agents/{role}_{lang}/hooks/{role}.yaml"] = hook_yaml(role, lang, source)
    return files


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("isolation")
    write(root / "config", engine_files())
    with Engine.load(root / "config", db=str(root / "store.db")) as eng:
        yield eng


@pytest.mark.parametrize("victim", ["py", "js"])
def test_one_agents_hook_cannot_make_another_agents_hook_fail_or_learn_from_it(
    engine: Engine, victim: str
) -> None:
    first = engine.agent(f"victim_{victim}").tool_call("t", {"a": 1}, user_id="u2")
    assert not first.blocked and first.notices
    for litter in ("py", "js"):
        for _ in range(3):
            engine.agent(f"litter_{litter}").tool_call("t", {"a": 1}, user_id="u1")
            again = engine.agent(f"victim_{victim}").tool_call("t", {"a": 1}, user_id="u2")
            assert not again.blocked, again.reason
            assert again.notices == first.notices
    assert not ADDRESS.search(str(first.notices))


@pytest.mark.parametrize("lang", ["py", "js"])
def test_a_size_bomb_at_tool_call_blocks_the_tool_as_a_memory_failure(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"bomb_{lang}")
    for i in range(len(ENGINE_BOMBS[lang])):
        out = agent.tool_call("t", {"bomb": i}, user_id="u1")
        assert out.blocked and "'bomb'" in (out.reason or ""), i
        (run,) = out.hooks
        assert run.status == "failed" and run.cause == "memory", (i, run.cause)
    assert agent.tool_call("t", {"bomb": -1}, user_id="u1").notices == ["survived"]
    victim = engine.agent(f"victim_{lang}").tool_call("t", {"a": 1}, user_id="u2")
    assert not victim.blocked


@pytest.mark.parametrize("lang", ["py", "js"])
def test_errors_the_host_gets_and_records_have_no_address(engine: Engine, lang: str) -> None:
    out = engine.agent(f"leaky_error_{lang}").tool_call("t", {}, user_id="u1")
    assert out.blocked and out.hooks[0].cause == "error"
    (record,) = engine.records(agent=f"leaky_error_{lang}", limit=1)
    error = record.hooks[0].error or ""
    assert ("is not in list" if lang == "py" else "not found") in error
    assert "function" in error and not ADDRESS.search(error)
    assert not ADDRESS.search(str(record)) and not ADDRESS.search(str(out))


def test_the_same_event_gives_the_same_decision_over_six_engine_starts(tmp_path: Path) -> None:
    files = {
        "engine.yaml": "process: test\nscripts: {timeout_ms: 1000, workers: 1}\n",
        "agents/a/agent.yaml": "hooks: [decide]\n",
        "agents/a/hooks/decide.yaml": hook_yaml(
            "decide",
            "py",
            py_body(
                "tags = {'red', 'green', 'blue', 'cyan', 'magenta', 'yellow', event['name']}\n"
                "first = [t for t in tags][0]\n"
                "if first < 'm':\n    return {'block': 'first tag ' + first}\n"
                "return {'notice': first + ' ' + str(lambda: 0)}"
            ),
        ),
    }
    outcomes = []
    for i in range(6):
        root = write(tmp_path / f"run{i}" / "config", files)
        with Engine.load(root, db=str(tmp_path / f"run{i}" / "store.db")) as eng:
            out = eng.agent("a").tool_call("black", {}, user_id="u")
            outcomes.append((out.blocked, out.reason, out.notices))
    assert all(o == outcomes[0] for o in outcomes), outcomes
    assert not ADDRESS.search(str(outcomes[0]))
