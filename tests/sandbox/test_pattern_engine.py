"""The pattern engine behind host.match and host.redact (engine/sandbox/js/regex.js) against
Python's ``re`` on the syntax both share: the same matches, leftmost-first, and the same
redactions, for generated patterns and texts. The engine is the one a worker runs (the
regex context of ``JavaScriptRuntime``), so its speed-ups (a literal prefix found with
``indexOf``, thread lists without allocation, ASCII class tables, threads started only at a
character a match can start with) are held to the same answers, on ASCII and other texts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.sandbox.javascript import JavaScriptRuntime

ALPHABET = "ab-_ x\n1"
WIDE_ALPHABET = ALPHABET + "éЖ€\u00a0"
"""Characters from 128 up: a class table covers only ASCII, the rest goes through ranges."""


@pytest.fixture(scope="module")
def runtime() -> JavaScriptRuntime:
    return JavaScriptRuntime()


def engine(runtime: JavaScriptRuntime, op: dict[str, Any]) -> Any:
    return runtime.regex(op, call=object(), remaining_s=5.0, memory_mb=64)


def _atom() -> st.SearchStrategy[tuple[str, str]]:
    """(engine pattern, Python pattern) pairs for one atom."""
    literal = st.sampled_from(["a", "b", "-", "_", " ", "1", "ab", "ba", "sk-"]).map(
        lambda s: (re.escape(s).replace("\\-", "-").replace("\\ ", " "),) * 2
    )
    classes = st.sampled_from(
        [
            "[ab]",
            "[^a]",
            "[a-b1]",
            "\\w",
            "\\W",
            "\\d",
            "\\s",
            "\\S",
            ".",
            "[à-ÿ]",
            "[^\u00a0-\u00ff]",
            "Ж",
            "[a€]",
        ]
    ).map(lambda s: (s, s))
    # (\B is left out: Python's never matches an empty text, RE2's and ours do)
    anchors = st.sampled_from([("^", "^"), ("$", "\\Z"), ("\\b", "\\b")])
    return st.one_of(literal, literal, classes, anchors)


def _pattern(depth: int = 0) -> st.SearchStrategy[tuple[str, str]]:
    atom = _atom() if depth >= 2 else st.one_of(_atom(), _group(depth))
    repeated = st.tuples(
        atom, st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{2,}"])
    ).map(lambda t: _repeat(t[0], t[1]))
    concat = st.lists(repeated, min_size=1, max_size=4).map(
        lambda parts: ("".join(p[0] for p in parts), "".join(p[1] for p in parts))
    )
    return st.lists(concat, min_size=1, max_size=3).map(
        lambda alts: ("|".join(a[0] for a in alts), "|".join(a[1] for a in alts))
    )


def _group(depth: int) -> st.SearchStrategy[tuple[str, str]]:
    return st.deferred(lambda: _pattern(depth + 1)).map(lambda p: (f"(?:{p[0]})", f"(?:{p[1]})"))


def _repeat(atom: tuple[str, str], how: str) -> tuple[str, str]:
    if how and atom[0] in ("^", "$", "\\b", "\\B"):
        return atom  # nothing to repeat: both refuse it
    if how and re.fullmatch(re.sub(r"\\[bBZ]|\^|\$", "", atom[1]), "", re.ASCII):
        # A repeated group that can match the empty text (somewhere: its assertions taken as
        # holding): Python ends the loop after an empty turn, the engine takes the next way
        # through the group; docs/scripting.md.
        return atom
    return atom[0] + how, atom[1] + how


patterns = _pattern()
texts = st.text(alphabet=ALPHABET, max_size=24)
wide_texts = st.text(alphabet=WIDE_ALPHABET, max_size=24)


def _python(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.ASCII)


def engine_match(runtime: JavaScriptRuntime, pattern: str, text: str) -> Any:
    return engine(runtime, {"op": "match", "pattern": pattern, "text": text})


def engine_redact(runtime: JavaScriptRuntime, text: str, patterns: list[str]) -> Any:
    return engine(runtime, {"op": "redact", "text": text, "patterns": patterns, "replacement": "#"})


def agrees_with_python(runtime: JavaScriptRuntime, pattern: tuple[str, str], text: str) -> None:
    """The engine finds what ``re`` finds, and redacts what it would replace."""
    ours, theirs = pattern
    compiled = _python(theirs)
    assert engine_match(runtime, ours, text) is (compiled.search(text) is not None)
    assert engine_redact(runtime, text, [ours]) == _redacted(compiled, text, "#")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, text=texts)
def test_match_and_redact_agree_with_python(
    runtime: JavaScriptRuntime, pattern: tuple[str, str], text: str
) -> None:
    agrees_with_python(runtime, pattern, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, text=wide_texts)
def test_texts_beyond_ascii_match_and_redact_as_python_does(
    runtime: JavaScriptRuntime, pattern: tuple[str, str], text: str
) -> None:
    agrees_with_python(runtime, pattern, text)


def _redacted(compiled: re.Pattern[str], text: str, replacement: str) -> str:
    """The engine's redaction: each leftmost-first match replaced; an empty match replaces
    nothing and the search goes on one character later."""
    out, pos, start = [], 0, 0
    while start <= len(text):
        m = compiled.search(text, start)
        if m is None:
            break
        if m.end() == m.start():
            start = m.start() + 1
            continue
        out.append(text[pos : m.start()] + replacement)
        pos = start = m.end()
    return "".join(out) + text[pos:]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, text=texts)
def test_case_folding_is_ascii_and_agrees(
    runtime: JavaScriptRuntime, pattern: tuple[str, str], text: str
) -> None:
    ours, theirs = pattern
    text = text.replace("a", "A", 1)
    expected = _python(theirs, re.IGNORECASE).search(text) is not None
    assert engine_match(runtime, "(?i)" + ours, text) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "redacted"),
    [
        ("sk-[A-Za-z0-9]{20,}", "API_KEY=sk-bench0123456789abcdefXYZ\nregion=eu", None),
        ("sk-[A-Za-z0-9]{20,}", "sk-short sk-" + "a" * 20 + " sk-sk-" + "b" * 21, None),
        ("sk-[a-z]+|sk-[a-z0-9]+", "x sk-abc1 y", None),
        ("ab|abab", "abababab", None),
        ("\\bkey\\b", "keys key monkey key", None),
        ("(?i)SECRET-\\d+", "secret-12 Secret-9 SECRET-", None),
        ("^sk-\\w+$", "sk-abc", None),
        ("x*", "aaa", "aaa"),
        # (?i) with a literal prefix: found in the lower-cased text; lower-casing "İ" makes
        # the text longer (no jump then), and the Kelvin sign lower-cases to "k" (a place to
        # try, which the pattern then refuses: case folding is ASCII only)
        ("(?i)\\bbearer\\s+\\w+", "x Bearer abc bearer\tdef", None),
        ("(?i)ab", "İ ab AB aB", None),
        ("(?i)kelvin", "\u212aelvin KELVIN kelvin", None),
        ("\\bsk-\\w+", "xsk-a sk-b", None),
        ("\\b\\d{4}([ .-]?\\d{4}){3}\\b", "card 4111 1111 1111 1111, 1234-5678", None),
        # a run of classes every match begins with: the search jumps to the next place the
        # text holds it (lead classes, found natively), negated and beyond ASCII too
        (
            "\\b[rsp]k_(live|test)_[A-Za-z0-9]{4,}",
            "park spark rk_live_abcd sk_test_x pk_live_12",
            None,
        ),
        ("[A-Z]{2}\\d{2}", "xx AB12 Cd34 EF5 GH67 IJ8K", None),
        ("[^a-z]b\\bc?", "ab Xb xbc Yb! 1bc", None),
        ("é[a-z]{2}", "café été éte Éta é", None),
        ("(?i)[a-c]x\\d", "AX1 bx2 Cx 3 dx4 cX9", None),
    ],
)
def test_known_redactions(
    runtime: JavaScriptRuntime, pattern: str, text: str, redacted: str | None
) -> None:
    flags = re.IGNORECASE if pattern.startswith("(?i)") else 0
    theirs = pattern.removeprefix("(?i)").replace("$", "\\Z")
    expected = redacted if redacted is not None else _redacted(_python(theirs, flags), text, "#")
    got = engine_redact(runtime, text, [pattern])
    assert got == expected


def test_a_long_text_with_no_match_of_a_literal_prefix_is_answered(
    runtime: JavaScriptRuntime,
) -> None:
    text = "x" * 200_000 + "sk-" + "a" * 25
    got = engine(
        runtime,
        {"op": "redact", "text": text, "patterns": ["sk-[a-z]{20,}"], "replacement": "#"},
    )
    assert got == "x" * 200_000 + "#"


# -- patterns written in a script's source are compiled once per context (regex.js pin) ------


def _script_runtime(source: str) -> Any:
    from tests.sandbox.test_fresh_state import compiled_runtime

    return compiled_runtime(source)


def _call(js: Any, name: str) -> Any:
    from tests.sandbox.test_fresh_state import js_call

    answer = js_call(js, name)
    assert answer["ok"], answer
    return answer["value"]


def test_literal_and_computed_patterns_answer_the_same_on_every_call() -> None:
    js = _script_runtime(
        "var KEY = 'sk-[a-z]{3,}';\n"
        'const WORD = "\\\\bdrop\\\\b";\n'
        "function on_tool_call(event, host) {\n"
        "  var computed = 'id-' + '[0-9]+';\n"
        "  var text = event.name + ' sk-abcd id-42 drop';\n"
        "  return {notice: [host.redact(text, [KEY, computed], '#'),\n"
        "    host.match(WORD, event.name), host.match('(?i)DROP', event.name)].join('|')};\n"
        "}\n"
    )
    for name in ("probe", "drop", "probe", "Drop table", "probe"):
        got = _call(js, name)["notice"]
        expected_match = "true" if name == "drop" else "false"
        expected_ci = "true" if "rop" in name.lower() else "false"
        assert got == f"{name} # # drop|{expected_match}|{expected_ci}"


def test_a_script_full_of_patterns_loads_and_runs_within_the_pin_caps() -> None:
    literals = ", ".join(f"'k{i}-[a-z]{{2,}}'" for i in range(200))
    js = _script_runtime(
        f"const PATTERNS = [{literals}];\n"
        "function on_tool_call(event, host) {\n"
        "  var some = [PATTERNS[7], PATTERNS[199], PATTERNS[3]];  // pinned, not pinned, pinned\n"
        "  return {notice: host.redact('k7-ab k199-cd k3-x', some, '#')};\n"
        "}\n"
    )
    assert _call(js, "probe") == {"notice": "# # k3-x"}
    assert _call(js, "again") == {"notice": "# # k3-x"}


def _secret_patterns() -> list[str]:
    """The patterns of config/scripts/redact_secrets.js, as the script passes them."""
    import json
    from pathlib import Path

    source = (Path(__file__).parents[2] / "config" / "scripts" / "redact_secrets.js").read_text(
        encoding="utf-8"
    )
    found = re.findall(r'^\s*\[\[?[^\n]*?\]?, ("(?:[^"\\]|\\.)*")\],?\s*(?://.*)?$', source, re.M)
    return [json.loads(literal) for literal in found]


PROSE = (
    "Ticket 4711: the café's card 4111 1111 1111 1111 failed at 10:30; IBAN DE44 5001 0517 "
    "5407 3249 31 was used instead. Password reset: passwd = hunter2, Bearer abcDEF123456789. "
    "Keys: sk-proj-" + "a1" * 12 + ", AKIAIOSFODNN7EXAMPLE, ghp_" + "x" * 36 + " — Жёлтый. "
)


@pytest.mark.parametrize("text", [PROSE, PROSE * 8, "no secrets here, only words " * 40])
def test_the_secret_patterns_redact_as_python_does(runtime: JavaScriptRuntime, text: str) -> None:
    patterns = _secret_patterns()
    assert len(patterns) == 15
    expected = text
    for pattern in patterns:
        flags = re.IGNORECASE if pattern.startswith("(?i)") else 0
        compiled = _python(pattern.removeprefix("(?i)").replace("$", "\\Z"), flags)
        expected = _redacted(compiled, expected, "#")
    got = engine_redact(runtime, text, patterns)
    assert got == expected
    assert (got == text) is (text.startswith("no secrets"))


# -- a pattern a backtracking search runs in linear time goes to a native expression ------------


NATIVE_LINE = 'p.native = nativeOf(ast, ci, "y");'


def _regex_engines() -> tuple[Any, Any]:
    """The pattern engine twice, each in a context of its own: as it is, and with no native
    expression for any pattern (every search through the program)."""
    from pathlib import Path

    import _quickjs

    source = (Path(__file__).parents[2] / "engine" / "sandbox" / "js" / "regex.js").read_text(
        encoding="utf-8"
    )
    assert source.count(NATIVE_LINE) == 1
    engines = []
    for text in (source, source.replace(NATIVE_LINE, "p.native = null;")):
        ctx = _quickjs.Context()
        ctx.set("E", ctx.eval(text))
        engines.append(ctx)
    return engines[0], engines[1]


NATIVE, PROGRAM = _regex_engines()


def _both(op: str, *args: Any) -> tuple[Any, Any]:
    call = f"JSON.stringify(E.{op}(" + ", ".join(json.dumps(a) for a in args) + "))"
    return json.loads(NATIVE.eval(call)), json.loads(PROGRAM.eval(call))


def _native(pattern: str) -> bool:
    return bool(NATIVE.eval(f"E.compile({json.dumps(pattern)}).native !== null"))


def _bounded_pattern(depth: int = 0) -> st.SearchStrategy[tuple[str, str]]:
    """Patterns whose repetitions are bounded (what goes native), an unbounded class at the
    end now and then, and groups that can match the empty text (which do not go native)."""
    atom = _atom() if depth >= 2 else st.one_of(_atom(), _bounded_group(depth))
    repeated = st.tuples(
        atom, st.sampled_from(["", "", "?", "??", "{2}", "{1,3}", "{0,2}", "{1,2}?"])
    ).map(lambda t: _repeat(t[0], t[1]))
    concat = st.lists(repeated, min_size=1, max_size=4).map(
        lambda parts: ("".join(p[0] for p in parts), "".join(p[1] for p in parts))
    )
    tail = st.sampled_from(["", "", "[ab]+", "\\w{2,}", "[^ ]*?", "a{1,}"]).map(lambda s: (s, s))
    alts = st.lists(concat, min_size=1, max_size=3).map(
        lambda alts: ("|".join(a[0] for a in alts), "|".join(a[1] for a in alts))
    )
    return st.tuples(alts, tail).map(
        lambda t: (f"(?:{t[0][0]}){t[1][0]}", f"(?:{t[0][1]}){t[1][1]}") if t[1][0] else t[0]
    )


def _bounded_group(depth: int) -> st.SearchStrategy[tuple[str, str]]:
    return st.deferred(lambda: _bounded_pattern(depth + 1)).map(
        lambda p: (f"(?:{p[0]})", f"(?:{p[1]})")
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=_bounded_pattern(),
    text=st.text(alphabet=WIDE_ALPHABET + "\r\u2028KÉ\u212a", max_size=24),
    ci=st.booleans(),
)
def test_the_native_expression_finds_what_the_program_finds(
    pattern: tuple[str, str], text: str, ci: bool
) -> None:
    ours = ("(?i)" if ci else "") + pattern[0]
    text = text.replace("a", "A", 1) if ci else text
    native, program = _both("match", ours, text)
    assert native is program
    native, program = _both("redact", text, [ours], "#")
    assert native == program
    if not ci:
        assert native == _redacted(_python(pattern[1]), text, "#")


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("a.b", "a\rb", True),  # a native . would not read \r, \u2028 nor \u2029
        ("a.b", "a\u2028b", True),
        ("a.b", "a\nb", False),
        ("(?i)xé", "XÉ", False),  # case folding is ASCII only; a native i flag folds é
        ("(?i)xk", "X\u212a", False),
        ("(?i)xk", "XK", True),
        ("x\\s", "x\u00a0", False),  # \s is ASCII: a native one reads no-break spaces
        ("x\\S", "x\u00a0", True),
        ("x\\d", "x\u0663", False),
        ("\\bé", " é", False),  # é is no word character, for \b
        ("x$", "x\n", False),  # $ is the end of the text
        ("^x", "a\nx", False),
    ],
)
def test_the_native_expression_keeps_the_engines_classes(
    pattern: str, text: str, found: bool
) -> None:
    assert _native(pattern)
    assert _both("match", pattern, text) == (found, found)


@pytest.mark.parametrize(
    ("pattern", "native"),
    [
        ("\\b\\d{4}([ .-]?\\d{4}){3}\\b", True),  # card numbers: 8 ways, 19 characters
        ("\\bsk-[A-Za-z0-9_-]{16,}", True),  # an unbounded class at the very end
        ("(?i)\\b(AKIA|ASIA)[0-9A-Z]{16}\\b", True),
        ("", True),
        ("a+b", False),  # an unbounded repetition before the end: quadratic when backtracking
        ("\\w{2,}\\b", False),
        ("(?:a?){2}", False),  # a repeated group that can match the empty text
        ("(?:a|b|c|d){6}", False),  # 4096 ways through
        ("(a|b)*", False),
    ],
)
def test_which_patterns_go_native(pattern: str, native: bool) -> None:
    assert _native(pattern) is native


@pytest.mark.parametrize(
    "text",
    [
        PROSE * 4,
        "4111 1111 1111 11111 4111-1111-1111-1111 41111111111111112 card4111111111111111",
        "sk-" + "a" * 15 + " sk-" + "b" * 16 + "sk-sk-" + "c" * 40 + "_x",
        "x" * 5000 + " AKIAIOSFODNN7EXAMPLE " + "9" * 5000,
    ],
)
def test_the_secret_patterns_answer_the_same_either_way(text: str) -> None:
    patterns = _secret_patterns()
    assert sum(_native(p) for p in patterns) >= 8
    native, program = _both("redact", text, patterns, "#")
    assert native == program
    assert native != text
