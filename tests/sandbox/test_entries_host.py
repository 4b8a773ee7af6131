"""host.entries in both runtimes: the same answers and the same refusals for each case, and
attacks on the new host API (huge data, getters, prototype tricks, non-JSON values, too many
adds) fail inside the sandbox, naming the call, without an entry slipping through."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import ScriptCompileError, ScriptError, ScriptRuntimeError
from engine.sandbox import CallResult, Language, WorkerPool
from engine.sandbox.limits import BatchCall, config_key
from tests.sandbox.conftest import TEST_LIMITS

EVENT = {"agent": "a", "point": "before_call", "time": "2026-01-01T00:00:00Z", "instruction": ""}
SNAPSHOT = [
    {"kind": "note", "data": {"n": 1}, "turn": "t1"},
    {"kind": "mode", "data": "careful", "turn": None},
    {"kind": "note", "data": {"n": 2}, "turn": "t2"},
]


def run(
    pool: WorkerPool, lang: str, body: str, entries: list[dict[str, Any]] | None = SNAPSHOT
) -> CallResult | ScriptError:
    """``body`` as the body of on_before_call(event, host) in ``lang``."""
    if lang == "py":
        source = "def on_before_call(event, host):\n" + "".join(
            f"    {line}\n" for line in body.splitlines()
        )
        language = Language.PYTHON
    else:
        source = f"function on_before_call(event, host) {{\n{body}\n}}\n"
        language = Language.JAVASCRIPT
    script = pool.compile(source, filename=f"entries.{lang}", language=language)
    call = BatchCall(
        script=script,
        function="on_before_call",
        config={},
        config_key=config_key({}),
        state={},
        limits=TEST_LIMITS,
        owner=f"entries-{lang}",
        entries=entries,
    )
    return pool.call_batch("before_call", EVENT, [call])[0]


def ok(result: CallResult | ScriptError) -> CallResult:
    assert isinstance(result, CallResult), result
    return result


def refused(result: CallResult | ScriptError, *words: str) -> None:
    assert isinstance(result, ScriptRuntimeError), result
    for word in words:
        assert word in result.message


SAME = [
    (
        "return {'sections': [str(len(host.entries.list('note')))]}",
        "return {sections: [String(host.entries.list('note').length)]};",
        ["2"],
    ),
    (
        "return {'sections': [str(host.entries.list('note', last=1)[0]['data']['n'])]}",
        "return {sections: [String(host.entries.list('note', {last: 1})[0].data.n)]};",
        ["2"],
    ),
    (
        "return {'sections': [str(host.entries.list('note', last=9)[0]['turn'])]}",
        "return {sections: [String(host.entries.list('note', 9)[0].turn)]};",
        ["t1"],
    ),
    (
        "host.entries.add('note', {'n': 3})\n"
        "return {'sections': [str(len(host.entries.list('note')))]}",
        "host.entries.add('note', {n: 3});\n"
        "return {sections: [String(host.entries.list('note').length)]};",
        ["3"],
    ),
    (
        "xs = host.entries.list('note')\nxs[0]['data']['n'] = 99\nxs.clear()\n"
        "return {'sections': [str(host.entries.list('note')[0]['data']['n'])]}",
        "var xs = host.entries.list('note'); xs[0].data.n = 99; xs.length = 0;\n"
        "return {sections: [String(host.entries.list('note')[0].data.n)]};",
        ["1"],
    ),
    (
        "d = {'k': [1]}\nhost.entries.add('x', d)\nd['k'].append(2)\n"
        "return {'sections': [str(len(host.entries.list('x')[0]['data']['k']))]}",
        "var d = {k: [1]}; host.entries.add('x', d); d.k.push(2);\n"
        "return {sections: [String(host.entries.list('x')[0].data.k.length)]};",
        ["1"],
    ),
    (
        "return {'sections': [str(host.entries.list('nothing', last=0))]}",
        "return {sections: [JSON.stringify(host.entries.list('mode', {last: 0}))]};",
        None,
    ),
]


@pytest.mark.parametrize(("py", "js", "sections"), SAME)
def test_listing_and_adding_answer_the_same_in_both_languages(
    pool: WorkerPool, py: str, js: str, sections: list[str] | None
) -> None:
    for lang, body in (("py", py), ("js", js)):
        result = ok(run(pool, lang, body))
        if sections is not None:
            assert result.value == {"sections": sections}, lang
        else:
            assert result.value in ({"sections": ["[]"]},), lang


@pytest.mark.parametrize("lang", ["py", "js"])
def test_adds_come_back_in_order_and_listing_is_noted(pool: WorkerPool, lang: str) -> None:
    body = {
        "py": "host.entries.add('a', 1)\nhost.entries.add('b', [True, None])\nreturn None",
        "js": "host.entries.add('a', 1); host.entries.add('b', [true, null]); return null;",
    }[lang]
    result = ok(run(pool, lang, body))
    assert result.entries_added == [{"kind": "a", "data": 1}, {"kind": "b", "data": [True, None]}]
    assert result.entries_read is False
    listing = {"py": "host.entries.list('a')\nreturn None", "js": "host.entries.list('a');"}
    assert ok(run(pool, lang, listing[lang])).entries_read is True


REFUSED = [
    ("host.entries.add('k', 'x' * 5000)", "host.entries.add('k', 'x'.repeat(5000));", "larger"),
    # bytes of UTF-8, not characters: 2,000 euro signs are 6,000 bytes
    (
        "host.entries.add('k', '\u20ac' * 2000)",
        "host.entries.add('k', '\u20ac'.repeat(2000));",
        "larger than 4096 bytes",
    ),
    (
        "for i in range(17):\n    host.entries.add('k', i)",
        "for (var i = 0; i < 17; i++) { host.entries.add('k', i); }",
        "more than 16",
    ),
    ("host.entries.add('', 1)", "host.entries.add('', 1);", "kind"),
    ("host.entries.add('k' * 65, 1)", "host.entries.add('k'.repeat(65), 1);", "kind"),
    ("host.entries.add(1, 1)", "host.entries.add(1, 1);", "kind"),
    ("host.entries.add('k', float('nan'))", "host.entries.add('k', NaN);", "finite"),
    ("host.entries.add('k', {1, 2})", "host.entries.add('k', new Set([1]));", "JSON"),
    ("host.entries.add('k', b'x')", "host.entries.add('k', function () {});", "JSON"),
    ("host.entries.add('k', {1: 'x'})", "host.entries.add('k', 10n);", "data"),
    (
        "d = []\nd.append(d)\nhost.entries.add('k', d)",
        "var d = []; d.push(d); host.entries.add('k', d);",
        "data",
    ),
    ("host.entries.list('note', last=-1)", "host.entries.list('note', {last: -1});", "last"),
    ("host.entries.list('note', last='2')", "host.entries.list('note', {last: 1.5});", "last"),
    ("host.entries.list('note', last=True)", "host.entries.list('note', {lst: 1});", "last"),
]


@pytest.mark.parametrize(("py", "js", "word"), REFUSED)
def test_a_bad_entry_is_refused_inside_the_sandbox(
    pool: WorkerPool, py: str, js: str, word: str
) -> None:
    for lang, body in (("py", py), ("js", js)):
        refused(run(pool, lang, body), "host.entries", word)


JS_TRICKS = [
    # a getter runs inside the call's limits, once; what it returns is copied, not the getter
    (
        "var n = 0; var o = {};\n"
        "Object.defineProperty(o, 'g', {enumerable: true, get: function () { n++; return n; }});\n"
        "host.entries.add('k', o);\n"
        "return {sections: [JSON.stringify(host.entries.list('k')[0].data) + n]};",
        '{"g":1}1',
    ),
    (
        "var p = Object.create({inherited: 1}); host.entries.add('k', p); return null;",
        None,
    ),
    (
        "class C { constructor() { this.a = 1; } }\nhost.entries.add('k', new C()); return null;",
        None,
    ),
    ("host.entries.add('k', new Proxy([], {})); return {sections: ['x']};", "x"),
    (
        "var o = {toJSON: function () { return new Set(); }};\n"
        "host.entries.add('k', o); return null;",
        None,
    ),
    ("var o = {}; o[Symbol('s')] = 1; host.entries.add('k', o); return null;", None),
    (
        "var o = JSON.parse('{\"__proto__\": {\"polluted\": 1}}'); host.entries.add('k', o);\n"
        "return {sections: [String(({}).polluted) + Object.keys(host.entries.list('k')[0].data)]};",
        "undefined__proto__",
    ),
    (
        "var a = host.entries; try { a.add = null; } catch (e) {}\n"
        "try { Object.getPrototypeOf(a).x = 1; } catch (e) {}\n"
        "return {sections: [String(typeof host.entries.add) + String(Object.isFrozen(a))]};",
        "functiontrue",
    ),
]


@pytest.mark.parametrize(("body", "section"), JS_TRICKS)
def test_javascript_tricks_on_host_entries_get_plain_json_or_a_refusal(
    pool: WorkerPool, body: str, section: str | None
) -> None:
    result = run(pool, "js", body)
    if section is None:
        refused(result, "host.entries.add")
        return
    assert ok(result).value == {"sections": [section]}


PY_TRICKS = [
    "host.entries.add('k', (1, 2))",
    "host.entries.add('k', host)",
    "host.entries.add('k', host.entries.list)",
    "host.entries.add('k', {'a': range(3)})",
    "host.entries.add('k', {'a': [len]})",
]


@pytest.mark.parametrize("body", PY_TRICKS)
def test_python_objects_that_are_not_json_are_refused(pool: WorkerPool, body: str) -> None:
    refused(run(pool, "py", body + "\nreturn None"), "host.entries.add: data")


@pytest.mark.parametrize("lang", ["py", "js"])
def test_the_host_entries_object_hides_its_snapshot(pool: WorkerPool, lang: str) -> None:
    if lang == "py":  # a leading underscore is refused when the script compiles
        with pytest.raises(ScriptCompileError):
            run(pool, lang, "return {'sections': [str(host.entries._snapshot)]}")
        refused(run(pool, lang, "return {'sections': [str(host.entries.snapshot)]}"))
        return
    body = "return {sections: [String(host.entries.req) + String(host.entries.snapshot)]};"
    assert ok(run(pool, lang, body)).value == {"sections": ["undefinedundefined"]}


@pytest.mark.parametrize("lang", ["py", "js"])
def test_without_a_conversation_entries_cannot_be_added_or_listed(
    pool: WorkerPool, lang: str
) -> None:
    add = {"py": "host.entries.add('k', 1)", "js": "host.entries.add('k', 1);"}[lang]
    lst = {"py": "host.entries.list('k')", "js": "host.entries.list('k');"}[lang]
    refused(run(pool, lang, add, entries=None), "no conversation")
    refused(run(pool, lang, lst, entries=None), "no conversation")
