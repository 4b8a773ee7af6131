"""Size caps on runtime input: texts over their cap refuse the point naming the field and the
cap; structured data past the event cap refuses the points that act and reaches the points
that only hear cut with a marker; below the caps the built-in kinds cost linear time
(bench/bench_input_size.py measures it; these tests check the bounds that make it so)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.boundary import MAX_EVENT_BYTES
from engine.points import TEXT_CAPS, Point
from engine.text import MAX_TERMS, find_phrases, stem, stems, terms, tokens
from tests.conftest import REPO
from tests.kinds.test_script_hook import body, inline_hook

LANGS = ("py", "js")
POINTS = [p.value for p in Point if p not in (Point.BEFORE_CALL, Point.FEEDBACK)]


def _hook(lang: str) -> str:
    code = "return None" if lang == "py" else "return null;"
    return inline_hook("seen", lang, "".join(body(lang, p, code) for p in POINTS))


@pytest.fixture
def engine(project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]) -> Engine:
    files = {f"agents/{lang}/hooks/seen.yaml": _hook(lang) for lang in LANGS}
    files |= {f"agents/{lang}/agent.yaml": "hooks: [seen]\n" for lang in LANGS}
    files["agents/kinds/agent.yaml"] = "hooks: [faq, esc]\n"
    files["agents/kinds/hooks/faq.yaml"] = "kind: faq_cache\nname: faq\n"
    files["agents/kinds/hooks/esc.yaml"] = (
        "kind: escalate\nname: esc\nmessage: call us\n"
        "off_topic_keywords: [iphone, доставка заказа]\nsuppress_on_off_topic: true\n"
    )
    return load(project(files))


def _fields(point: Point, name: str, text: str) -> dict[str, Any]:
    base: dict[Point, dict[str, Any]] = {
        Point.BEFORE_USER_MESSAGE: {"question": "q"},
        Point.TOOL_CALL: {"name": "t"},
        Point.TOOL_RESULT: {"name": "t", "result": "r"},
        Point.BEFORE_ASSISTANT_MESSAGE: {"question": "q", "answer": "a"},
        Point.AFTER_TURN: {"question": "q", "answer": "a"},
        Point.AFTER_LOOP: {"status": "done"},
    }
    return {**base[point], name: text}


CAPPED = [(p, f, cap) for p, fields in TEXT_CAPS.items() for f, cap in fields.items()]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("point", "field", "cap"), CAPPED, ids=[f"{p}.{f}" for p, f, _ in CAPPED])
def test_a_text_over_its_cap_refuses_the_point_naming_field_and_cap(
    engine: Engine, lang: str, point: Point, field: str, cap: int
) -> None:
    agent = engine.agent(lang)
    at_cap = agent.evaluate(point, _fields(point, field, "w" * cap), user_id=f"cap-{lang}")
    assert at_cap.input_error is None and [r.status for r in at_cap.hooks] != ["skipped"]
    over = agent.evaluate(point, _fields(point, field, "w" * (cap + 1)), user_id=f"cap-{lang}")
    assert over.input_error is not None
    assert f"event.{field}" in over.input_error and f"cap of {cap}" in over.input_error
    assert [r.status for r in over.hooks] == ["skipped"]
    assert over.blocked is (not point.hears_only)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("size", [100_001, 1_000_000, 10_000_000])
def test_a_huge_question_is_refused_and_recorded_small(
    engine: Engine, lang: str, size: int
) -> None:
    out = engine.agent(lang).before_user_message("я " * (size // 2) + "x", user_id=f"big-{lang}")
    assert out.blocked and "event.question" in (out.reason or "")
    engine.flush()
    (record,) = engine.records(agent=lang, scope=f"user:big-{lang}", limit=1)
    assert len(json.dumps(record.event)) < 5_000 and "[cut: " in record.event["question"]


BIG = "\U0001f600" * 240_000  # 960 KB of UTF-8, 2.9 MB as the workers get it (escaped)
CUTS = [
    (Point.TOOL_CALL, {"name": "shell", "input": {"a": BIG, "command": "rm -rf /"}}, "input"),
    (Point.TOOL_RESULT, {"name": "read", "result": {"rows": [{"line": BIG}]}}, "result"),
    (
        Point.BEFORE_ASSISTANT_MESSAGE,
        {"question": BIG[:99_000], "answer": BIG[:99_000]},
        "answer",
    ),
    (Point.BEFORE_CALL, {"messages": [{"role": "user", "content": BIG}]}, "messages"),
    (Point.BEFORE_CALL, {"tools": [{"name": f"t{i}"} for i in range(300_000)]}, "tools"),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("point", "fields", "field"),
    CUTS,
    ids=[c[0].value for c in CUTS],
)
def test_an_event_the_size_cap_cuts_is_refused_where_the_host_acts_on_it(
    engine: Engine, lang: str, point: Point, fields: dict[str, Any], field: str
) -> None:
    # the host acts on what it sent: a hook deciding on a cut copy would miss the rest
    out = engine.agent(lang).evaluate(point, fields, user_id=f"cut-{lang}")
    assert out.blocked and out.input_error is not None
    assert f"event.{field}" in out.input_error and "size cap of 2,000,000 bytes" in out.input_error
    assert all(r.status == "skipped" for r in out.hooks)


def test_a_key_before_the_command_cannot_push_it_past_the_guard(engine: Engine) -> None:
    for host in (None, "litellm", "claude-code", "opa", "codex", "mcp"):
        out = engine.agent("py").tool_call(
            "shell", {"a": BIG, "command": "rm -rf /srv/data"}, host=host, session_id="x1"
        )
        assert out.blocked and "event.input: cut at the event's size cap" in (out.reason or "")
        assert "event.input.a: cut at the event's size cap" in (out.input_error or "")


def test_an_event_nested_past_the_depth_cap_is_refused_at_tool_call(engine: Engine) -> None:
    deep: Any = {"command": "rm -rf /"}
    for _ in range(80):
        deep = {"n": deep}
    out = engine.agent("py").tool_call("shell", deep)
    assert out.blocked and "event.input: cut at the event's depth cap" in (out.reason or "")
    assert "nested deeper than 64" in (out.input_error or "")


@pytest.mark.parametrize("lang", LANGS)
def test_a_big_tool_result_is_withheld_not_cut(engine: Engine, lang: str) -> None:
    rows = [{"line": "x" * 100} for _ in range(40_000)]  # ~4.4 MB of structured data
    out = engine.agent(lang).tool_result("read", {}, {"rows": rows})
    assert out.blocked and "event.result.rows" in (out.input_error or "")
    assert isinstance(out.result, str) and out.result.startswith("[result withheld: ")


@pytest.mark.parametrize("lang", LANGS)
def test_a_point_that_only_hears_gets_the_cut_event(engine: Engine, lang: str) -> None:
    calls = [{"name": "read", "input": {"line": BIG}}]
    out = engine.agent(lang).after_turn("q", "a", tool_calls=calls, user_id=f"hear-{lang}")
    assert out.input_error is None and out.hooks[0].status != "skipped"
    engine.flush()
    (record,) = engine.records(agent=lang, scope=f"user:hear-{lang}", limit=1)
    assert len(json.dumps(record.event, separators=(",", ":"))) <= MAX_EVENT_BYTES
    assert len(record.event["tool_calls"][0]["input"]["line"]) < len(BIG)


def test_a_question_at_the_cap_reaches_the_built_in_kinds_whole(engine: Engine) -> None:
    cap = TEXT_CAPS[Point.BEFORE_USER_MESSAGE]["question"]
    tail = " где доставка заказа"
    question = ("слово " * cap)[: cap - len(tail)] + tail
    out = engine.agent("kinds").before_user_message(question, user_id="k1")
    assert out.input_error is None
    assert out.answer == "call us" and "off-topic" in " ".join(out.notices)


def test_terms_count_only_the_first_distinct_words() -> None:
    words = [f"word{i}" for i in range(5 * MAX_TERMS)]
    found = terms(" ".join(words))
    assert len(found) == MAX_TERMS and "word0" in found and f"word{MAX_TERMS}" not in found
    assert terms("the cats and the dogs") == {"cat", "dog"}
    assert len(terms("a b c d", limit=2)) == 2


@pytest.mark.parametrize(
    ("text", "phrases", "found"),
    [
        (
            "x " * 50_000 + "new iphones",
            ["iphone", "new iphone", "old iphone"],
            ["iphone", "new iphone"],
        ),
        ("доставки заказов нет", ["доставка заказа", "заказ"], ["доставка заказа", "заказ"]),
        ("a a a a a b", ["a a b", "a b a"], ["a a b"]),
        ("", ["iphone"], []),
        ("iphone", [""], []),
    ],
)
def test_find_phrases_matches_word_forms_anywhere_in_one_pass(
    text: str, phrases: list[str], found: list[str]
) -> None:
    assert find_phrases(text, phrases) == found


def test_the_caps_table_in_the_docs_matches_the_caps() -> None:
    rows = [
        line
        for line in (REPO / "docs" / "points.md").read_text().splitlines()
        if line.startswith("| `")
    ]
    for point, fields in TEXT_CAPS.items():
        for name, cap in fields.items():
            assert any(
                row.startswith(f"| `{point.value}` |") and f"`{name}`" in row and f"{cap:,}" in row
                for row in rows
            ), (point, name, cap)


def test_a_stem_keeps_its_words_first_letter_which_find_phrases_relies_on() -> None:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyzабвгдежзийклмнопрстуфхцчшщъыьэюя0123456789"
    words = [
        "skis",
        "skies",
        "dying",
        "lying",
        "tying",
        "idly",
        "gently",
        "ugly",
        "early",
        "only",
        "news",
        "yes",
        "ies",
        "ёлка",
    ]
    words += [
        "".join(rng.choice(letters) for _ in range(rng.randint(1, 12))) for _ in range(20_000)
    ]
    for word in (w for text in words for w in tokens(text)):
        assert stem(word)[:1] == word[:1], word


def test_find_phrases_agrees_with_a_scan_of_every_position() -> None:
    rng = random.Random(3)
    vocabulary = [
        "iphone",
        "iphones",
        "new",
        "old",
        "доставка",
        "доставки",
        "заказ",
        "заказа",
        "the",
        "a",
        "running",
        "runs",
    ]
    for _ in range(300):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12)))
        phrases = [" ".join(rng.sample(vocabulary, rng.randint(1, 3))) for _ in range(4)]
        hay = stems(text)

        def naive(phrase: str, hay: list[str] = hay) -> bool:
            needle = stems(phrase)
            n = len(needle)
            return any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))

        assert find_phrases(text, phrases) == [p for p in phrases if naive(p)], (text, phrases)


@pytest.mark.parametrize("lang", LANGS)
def test_replay_refuses_a_recorded_oversized_question_again(engine: Engine, lang: str) -> None:
    from engine.replay import Replayer

    engine.agent(lang).before_user_message("w" * 100_001, user_id=f"replay-{lang}")
    engine.agent(lang).before_user_message("fine", user_id=f"replay-{lang}")
    engine.flush()
    big, small = sorted(
        engine.records(agent=lang, scope=f"user:replay-{lang}"),
        key=lambda r: -len(r.event["question"]),
    )
    again = Replayer(engine).outcome(big)
    assert again.blocked and again.input_error == big.outcome["input_error"]
    assert [run.status for run in again.hooks] == ["skipped"]
    assert Replayer(engine).outcome(small).input_error is None


def test_stemming_from_many_threads_at_once_gives_each_words_own_stem() -> None:
    # Snowball stemmer objects keep their word in the object: shared between threads they
    # stemmed wrongly or raised IndexError (seen in the soak as a failing faq_cache).
    import sys
    import threading

    from engine import text

    words = [f"{w}{i}" for i in range(3000) for w in ("running", "delivery", "доставки")]
    expected = {
        w: text._stemmers()[("russian" if "д" in w else "english")].stemWord(w) for w in words
    }
    text.stem.cache_clear()
    wrong: list[str] = []

    def work(part: list[str]) -> None:
        for w in part:
            if text.stem(w) != expected[w]:
                wrong.append(w)

    threads = [threading.Thread(target=work, args=(words[i::4],)) for i in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, as a busy host does
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []
