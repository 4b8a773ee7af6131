"""engine.encoding: any value becomes JSON every store accepts, and each change is marked."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
import pytest

from engine.encoding import MAX_DEPTH, Encoder, encode, escape_text, is_clean


def nested(depth: int, leaf: Any = "leaf") -> Any:
    value = leaf
    for i in range(depth):
        value = {"d": value} if i % 2 else [value]
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def strict_json(value: Any) -> str:
    """JSON as PostgreSQL would take it: UTF-8 encodable, no NaN, no NUL."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")
    assert "\x00" not in text and "\\u0000" not in text.replace("\\\\u0000", "")
    return text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\ud800b", "a\\ud800b"),
        ("\udfff", "\\udfff"),
        ("nul\x00here", "nul\\u0000here"),
        ("\ud83d\ude00 ok", "\U0001f600 ok"),  # a valid pair is joined, not escaped
        ("\ude00\ud83d", "\\ude00\\ud83d"),  # the wrong order is two lone ones
        ("plain", "plain"),
    ],
)
def test_surrogates_and_nul_are_written_as_their_escape(raw: str, expected: str) -> None:
    assert encode(raw) == expected
    assert encode({raw: [raw]}) == {expected: [expected]}
    strict_json(encode({raw: raw}))


def test_escape_text_keeps_valid_text_unchanged() -> None:
    text = "Grüße, 世界, 😀"
    assert escape_text(text) is text or escape_text(text) == text


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_json_numbers_become_null_as_in_events(number: float) -> None:
    assert encode({"x": number, "y": [number], "z": "\ud800"}) == {
        "x": None,
        "y": [None],
        "z": "\\ud800",
    }
    assert encode(1.5) == 1.5 and encode(True) is True and encode(None) is None


def test_nesting_deeper_than_the_cap_is_cut_with_a_marker() -> None:
    for depth in (MAX_DEPTH + 1, 300, 5000):
        out = encode(nested(depth))
        assert depth_of(out) == MAX_DEPTH
        assert f"[truncated: nested deeper than {MAX_DEPTH}]" in json.dumps(out)
    assert encode(nested(MAX_DEPTH)) == nested(MAX_DEPTH)


def test_a_long_string_keeps_its_start_and_says_how_long_it_was() -> None:
    out = encode("x" * 10_000_000, max_string=100)
    assert out == "x" * 100 + "[truncated: 10000000 characters]"
    assert encode("y" * 100, max_string=100) == "y" * 100


def test_once_the_budget_is_spent_later_items_become_one_marker() -> None:
    out = encode([f"item{i:03}" for i in range(1000)], budget=80)
    assert out[-1] == "[truncated: 990 more items]" and len(out) == 11
    mapping = encode({f"k{i}": i for i in range(100)}, budget=20)
    assert mapping["[truncated]"].startswith("[truncated: ") and len(mapping) < 20
    cut = encode(["a" * 50, "b" * 50], budget=60)
    assert cut[1] == "b" * 9 + "[truncated: 50 characters]"


def test_odd_types_become_text_and_a_hostile_str_is_named_not_run() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("leak")

    big = 1 << 20_000
    out = encode({"b": b"raw", "set": {1}, "h": Hostile(), "big": big, "ok": 1 << 80})
    assert out["b"] == "b'raw'" and out["set"] == [1]
    assert out["h"] == "[unencodable: Hostile]"
    assert out["big"] == "[truncated: integer of 20001 bits]" and out["ok"] == 1 << 80
    strict_json(out)


def test_redacted_values_go_from_strings_keys_and_numbers() -> None:
    enc = Encoder(redact=["hunter2", "hunter22", "123456"])
    out = enc.value(
        {"log": "pw=hunter22;again hunter2", "hunter2": 123456, "pin": "x123456y", "n": 1234567}
    )
    assert out == {"log": "pw=***;again ***", "***": "***", "pin": "x***y", "n": 1234567}


def test_marked_counts_each_change_made() -> None:
    enc = Encoder(max_string=3)
    enc.value(["\ud800", float("nan"), "long text", "ok"])
    assert enc.marked == 3


@pytest.mark.parametrize(
    "value",
    [
        {"a": "[[[[" * 40, "b": '\\"{{{{' * 40},
        ["\\", '"', "\\\\", '\\"]]]]' * 30, nested(MAX_DEPTH - 2, "[{")],
        nested(MAX_DEPTH, '"]}\\'),
        nested(MAX_DEPTH + 1, "[]"),
        {"k": [nested(MAX_DEPTH - 1)], "brackets": "}" * 200},
        [nested(10) for _ in range(40)],
        {"n": float("nan")},
        {"s": "a\x00b"},
        {"s": "a\ud800b"},
        "x" * 70_000,
    ],
)
def test_the_fast_check_agrees_with_the_full_walk(value: Any) -> None:
    walked = as_stored(Encoder().value(value))
    assert walked is not None
    assert is_clean(value) == (as_stored(value) == walked)
    assert as_stored(encode(value)) == walked


def as_stored(value: Any) -> bytes | None:
    """The JSON a store writes for ``value`` (None: it cannot)."""
    try:
        return pydantic_core.to_json(value, inf_nan_mode="null")
    except pydantic_core.PydanticSerializationError:
        return None


def test_the_fast_check_refuses_values_holding_a_redacted_text() -> None:
    assert is_clean({"log": "password 'hunter2'"})
    assert not is_clean({"log": "password 'hunter2'"}, redact=("hunter2",))
    assert not is_clean({"log": 'say "hi"\n'}, redact=('"hi"\n',))
    assert not is_clean({"pin": 987654}, redact=("987654",))
