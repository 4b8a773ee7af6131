"""The event boundary (engine/boundary.py): one rule normalises every event before any hook, and
a refused event fails its point closed. Attacks through Engine.load + agent.* in both languages."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import json
import math
import timeit
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.boundary import (
    MAX_DEPTH,
    MAX_EVENT_BYTES,
    MAX_SAFE_INT,
    normalize_event,
    normalize_value,
)
from engine.errors import EventError, InputError
from engine.pipeline import WITHHELD_ANSWER
from engine.points import Point, make_event
from engine.runtime import Engine
from engine.sandbox import Limits
from tests.conftest import REPO, write
from tests.kinds.test_script_hook import agent_files, inline_hook

LANGS = ("py", "js")
SECRET = "sk-" + "a1b2c3d4" * 4

# -- the rule, value by value ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (float("nan"), None),
        (math.inf, None),
        (-math.inf, None),
        ([1.5, float("nan")], [1.5, None]),
        (2**53 - 1, 2**53 - 1),
        (-(2**53 - 1), -(2**53 - 1)),
        (2**53, str(2**53)),
        (-(2**64), str(-(2**64))),
        ((1, (2, 3)), [1, [2, 3]]),
        (True, True),
        ("a\ud800b", "a\ufffdb"),
        ("\udfff", "\ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a valid pair becomes its character
        ({"k\udc80": 1}, {"k\ufffd": 1}),
    ],
)
def test_values_follow_the_one_rule(value: Any, expected: Any) -> None:
    out, problems = normalize_value(value, "event.x")
    assert out == expected and problems == []
    json.dumps(out, allow_nan=False).encode("utf-8")  # strict JSON, encodable


def test_subclasses_of_plain_types_become_the_plain_type() -> None:
    from enum import IntEnum, StrEnum

    class Colour(StrEnum):
        RED = "red"

    class Size(IntEnum):
        BIG = 3

    class Tags(list[str]):
        pass

    out, problems = normalize_value({"c": Colour.RED, "s": Size.BIG, "t": Tags(["x"])}, "e")
    assert out == {"c": "red", "s": 3, "t": ["x"]} and problems == []
    assert type(out["c"]) is str and type(out["s"]) is int and type(out["t"]) is list


@pytest.mark.parametrize(
    ("value", "path", "what"),
    [
        ({"data": b"ab"}, "event.input.data", "bytes is not JSON"),
        ({"ids": {1, 2}}, "event.input.ids", "set is not JSON"),
        ({"f": frozenset()}, "event.input.f", "frozenset is not JSON"),
        ({"o": object()}, "event.input.o", "object is not JSON"),
        ({"l": [1, bytearray(b"x")]}, "event.input.l[1]", "bytearray is not JSON"),
        ({3: "x"}, "event.input", "a key of type int is not JSON"),
        ({"a b": {"c": b""}}, 'event.input["a b"].c', "bytes is not JSON"),
    ],
)
def test_non_json_values_are_refused_naming_the_path(value: Any, path: str, what: str) -> None:
    with pytest.raises(InputError) as info:
        normalize_event({"point": "tool_call", "input": value})
    assert f"{path}: {what}" in str(info.value)
    json.dumps(info.value.event, allow_nan=False)  # the marked event is safe to record
    assert "[refused: " in json.dumps(info.value.event) or "a key" in what


def test_a_long_text_is_cut_with_a_marker_inside_the_cap() -> None:
    for text in ("a" * 5_000_000, "é" * 3_000_000, "\x01" * 1_000_000):
        out = normalize_event({"point": "tool_result", "result": text})
        wire = json.dumps(out, separators=(",", ":"))  # ASCII-escaped, as the workers get it
        assert len(wire) <= MAX_EVENT_BYTES
        assert out["result"].endswith("more characters]") and "…[cut: " in out["result"]
        assert out["result"].startswith(text[:1000])


def test_long_lists_and_wide_mappings_are_cut_with_a_marker() -> None:
    out = normalize_event({"point": "tool_result", "result": list(range(3_000_000))})
    assert out["result"][-1].startswith("[cut: ") and out["result"][-1].endswith("more items]")
    assert out["result"][:3] == [0, 1, 2]
    wide = normalize_event(
        {"point": "tool_result", "result": {f"k{i}": "v" * 20 for i in range(400_000)}}
    )
    assert wide["result"]["[cut]"].endswith("more keys")
    assert len(json.dumps(wide, separators=(",", ":"))) <= MAX_EVENT_BYTES


def test_deep_nesting_ends_in_a_marker_at_the_depth_cap() -> None:
    deep: Any = "bottom"
    for _ in range(1000):
        deep = {"n": deep}
    out = normalize_event({"point": "tool_result", "result": deep})
    node, depth = out, 0
    while isinstance(node, dict):
        node, depth = node.get("n", node.get("result")), depth + 1
    assert node == f"[cut: nested deeper than {MAX_DEPTH}]" and depth == MAX_DEPTH + 1
    nested_lists: Any = [1]
    for _ in range(500):
        nested_lists = [nested_lists]
    text = json.dumps(normalize_value(nested_lists, "e")[0])
    assert text.count("[") == MAX_DEPTH + 2 and "nested deeper" in text


def test_cyclic_values_end_at_the_caps() -> None:
    loop: dict[str, Any] = {}
    loop["a"] = loop
    loop["b"] = [loop, loop]
    out, problems = normalize_value(loop, "event.result")
    assert problems == []
    assert len(json.dumps(out, separators=(",", ":"))) <= MAX_EVENT_BYTES


def test_the_rule_is_idempotent_and_leaves_the_host_values_alone() -> None:
    host = {
        "point": "tool_result",
        "result": {"x": float("nan"), "big": 2**60, "t": (1,), "s": "a" * 3_000_000},
    }
    once = normalize_event(host)
    assert normalize_event(once) == once
    assert math.isnan(host["result"]["x"]) and host["result"]["t"] == (1,)  # type: ignore[index]


def test_the_cap_leaves_room_for_state_and_config_in_a_worker_request() -> None:
    limits = Limits()
    state_max = limits.max_state_keys * (
        limits.max_state_value_bytes + limits.max_state_key_chars + 8
    )
    assert MAX_EVENT_BYTES + state_max + 256_000 <= limits.max_input_bytes
    assert MAX_SAFE_INT == 2**53 - 1


def test_make_event_refuses_fields_that_do_not_fit_the_point_naming_them() -> None:
    with pytest.raises(EventError) as wrong:
        make_event(Point.FEEDBACK, agent="a", time="t", rating="meh")
    assert wrong.value.errors[0]["loc"] == ["rating"] and "rating" in str(wrong.value)
    with pytest.raises(EventError) as info:
        make_event(Point.TOOL_CALL, agent="a", time="t", name="x", input={1: 2})
    assert info.value.errors == [
        {"loc": ["input"], "msg": "a key of type int is not JSON (keys are text)"}
    ]


def test_normalising_a_typical_tool_call_event_is_cheap() -> None:
    # not a timing assertion (the machine is shared): the figure is reported by hand; this
    # only checks the measurement runs and the event comes out unchanged
    event = make_event(
        Point.TOOL_CALL,
        agent="demo",
        time="2026-01-01T00:00:00+00:00",
        scope={"user_id": "u1", "session_id": "s1"},
        name="delete_file",
        input={"path": "notes/a.txt", "recursive": False, "tags": ["x", "y"], "n": 3},
    )
    assert normalize_event(event) == event
    assert timeit.timeit(lambda: normalize_event(event), number=100) > 0


# -- through Engine.load and agent.*, both languages -------------------------------------------------

REDACTOR = {
    "py": (
        "def on_tool_result(event, host):\n"
        "    if 'sk-' in str(event['result']):\n"
        "        return {'result': '[redacted]'}\n"
        "    return None\n"
    ),
    "js": (
        "function on_tool_result(event, host) {\n"
        "  if (JSON.stringify(event.result).indexOf('sk-') >= 0) { return {result: '[redacted]'}; }\n"
        "  return null;\n"
        "}\n"
    ),
}
GUARD = {
    "py": (
        "def on_tool_call(event, host):\n"
        "    if str(event['input']).find('rm ') >= 0:\n"
        "        return {'block': 'no deletes'}\n"
        "    if event['input'].get('id') == '9007199254740993':\n"
        "        return {'block': 'id ' + event['input']['id']}\n"
        "    return {'notice': 'seen ' + str(event['input'].get('n'))}\n"
    ),
    "js": (
        "function on_tool_call(event, host) {\n"
        "  if (JSON.stringify(event.input).indexOf('rm ') >= 0) { return {block: 'no deletes'}; }\n"
        "  if (event.input.id === '9007199254740993') { return {block: 'id ' + event.input.id}; }\n"
        "  return {notice: 'seen ' + JSON.stringify(event.input.n)};\n"
        "}\n"
    ),
}
ANSWER = {
    "py": "def on_before_assistant_message(event, host):\n    return {'answer': event['answer'].replace('sk-', '[k]')}\n",
    "js": "function on_before_assistant_message(event, host) {\n  return {answer: event.answer.split('sk-').join('[k]')};\n}\n",
}
INVALID = {
    "null": {"py": "return {'block': None}", "js": "return {block: null};"},
    "empty": {"py": "return {'block': ''}", "js": "return {block: ''};"},
    "blank": {"py": "return {'block': '  \\n'}", "js": "return {block: '  \\n'};"},
    "input_null": {"py": "return {'input': None}", "js": "return {input: null};"},
    "number": {"py": "return {'block': 5}", "js": "return {block: 5};"},
}
RESHAPE = {
    "py": (
        "def on_before_call(event, host):\n"
        "    tool = dict(event['tools'][0])\n"
        "    tool['parameters'] = {'type': 'object', 'properties': {'cmd': {'type': 'string'}}}\n"
        "    return {'tools': [tool]}\n"
    ),
    "js": (
        "function on_before_call(event, host) {\n"
        "  var tool = Object.assign({}, event.tools[0]);\n"
        "  tool.description = 'runs anything';\n"
        "  return {tools: [tool]};\n"
        "}\n"
    ),
}
NARROW = {
    "py": "def on_before_call(event, host):\n    return {'tools': [event['tools'][1]]}\n",
    "js": "function on_before_call(event, host) {\n  return {tools: [event.tools[1]]};\n}\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("boundary")
    files = {
        "engine.yaml": (
            "process: test\n"
            "scripts: {timeout_ms: 2000, max_timeout_ms: 2000, memory_mb: 64, workers: 2}\n"
        )
    }
    for lang in LANGS:
        files.update(
            agent_files(
                f"redact_{lang}",
                {"redactor": inline_hook("redactor", lang, REDACTOR[lang], "on_error: ignore\n")},
            )
        )
        files.update(
            agent_files(f"guard_{lang}", {"guard": inline_hook("guard", lang, GUARD[lang])})
        )
        files.update(
            agent_files(
                f"answer_{lang}",
                {"answerer": inline_hook("answerer", lang, ANSWER[lang], "on_error: ignore\n")},
            )
        )
        files.update(
            agent_files(f"reshape_{lang}", {"reshape": inline_hook("reshape", lang, RESHAPE[lang])})
        )
        files.update(
            agent_files(f"narrow_{lang}", {"narrow": inline_hook("narrow", lang, NARROW[lang])})
        )
        files.update(
            agent_files(
                f"stock_{lang}",
                {
                    "redact_secrets": "kind: script_hook\nname: redact_secrets\n"
                    f"script: ../../../scripts/redact_secrets.{lang}\n"
                },
            )
        )
        shipped = REPO / "config" / "scripts" / f"redact_secrets.{lang}"
        files[f"scripts/redact_secrets.{lang}"] = shipped.read_text(encoding="utf-8")
        for case, code in INVALID.items():
            source = (
                f"def on_tool_call(event, host):\n    {code['py']}\n"
                if lang == "py"
                else f"function on_tool_call(event, host) {{\n  {code['js']}\n}}\n"
            )
            files.update(
                agent_files(f"invalid_{case}_{lang}", {"g": inline_hook("g", lang, source)})
            )
    files.update(agent_files("bare", {"note": "kind: inject\nname: note\nnotice: hi\n"}))
    write(root / "config", files)
    with Engine.load(root / "config", db=str(root / "store.db")) as eng:
        yield eng


NON_JSON_NUMBERS = [float("nan"), math.inf, -math.inf]


@pytest.mark.parametrize("bad", NON_JSON_NUMBERS, ids=["nan", "inf", "-inf"])
def test_non_json_numbers_in_an_event_are_raised_naming_the_path(
    engine: Engine, bad: float
) -> None:
    agent = engine.agent("redact_py")
    with pytest.raises(EventError) as info:
        agent.tool_result("fetch", {"limit": 1}, {"score": 1, "list": [2, bad]})
    assert info.value.errors == [
        {"loc": ["result", "list", 1], "msg": f"{bad} is not a JSON number"}
    ]
    with pytest.raises(EventError) as info:
        engine.agent("guard_js").tool_call("shell", {"cmd": "ls", "n": bad})
    assert [e["loc"] for e in info.value.errors] == [["input", "n"]]


@pytest.mark.parametrize("lang", LANGS)
def test_a_5mb_result_is_withheld_not_handed_to_the_redactor_cut(engine: Engine, lang: str) -> None:
    big = f"head {SECRET} " + "x" * 5_000_000 + f" tail {SECRET}"
    out = engine.agent(f"redact_{lang}").tool_result("read", {"path": "a"}, big)
    assert out.hooks[0].status == "skipped" and out.blocked
    assert SECRET not in out.result and out.result.startswith("[result withheld: ")
    assert "event.result: cut at the event's size cap" in out.result


@pytest.mark.parametrize("lang", LANGS)
def test_a_5mb_result_never_passes_with_or_without_a_hook(engine: Engine, lang: str) -> None:
    big = "x" * 5_000_000 + f" tail {SECRET}"
    for agent in ("bare", f"stock_{lang}"):  # bare: no hook at tool_result
        out = engine.agent(agent).tool_result("read", {}, f"{SECRET} " + big)
        assert out.blocked and SECRET not in json.dumps(out.result) and "withheld" in out.result


@pytest.mark.parametrize("lang", LANGS)
def test_nesting_past_the_depth_cap_withholds_the_result(engine: Engine, lang: str) -> None:
    deep: Any = {"note": SECRET}
    for _ in range(300):
        deep = {"n": deep, "k": SECRET}
    out = engine.agent(f"redact_{lang}").tool_result("read", {}, deep)
    assert out.hooks[0].status == "skipped" and out.blocked
    assert SECRET not in json.dumps(out.result) and "event's depth cap" in out.result
    assert "nested deeper than 64" in (out.input_error or "")


@pytest.mark.parametrize("lang", LANGS)
def test_a_withheld_result_does_not_name_the_results_own_keys(engine: Engine, lang: str) -> None:
    # the path of what was cut goes to the host (input_error) and the record, not to the model
    result = {"tokens": {SECRET: "x" * 3_000_000}}
    out = engine.agent(f"redact_{lang}").tool_result("read", {}, result)
    assert out.blocked and SECRET not in json.dumps([out.result, out.reason])
    assert "event.result: cut at the event's size cap" in out.result
    assert SECRET in (out.input_error or "")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\udc80\ud800x"])
def test_lone_surrogates_reach_hooks_as_replacement_characters(
    engine: Engine, lang: str, text: str
) -> None:
    out = engine.agent(f"redact_{lang}").tool_result("read", {"q": text}, f"{text} {SECRET}")
    assert out.hooks[0].status == "decided" and out.result == "[redacted]"
    answer = engine.agent(f"answer_{lang}").before_assistant_message(
        text, f"{text} {SECRET}", user_id=f"s-{lang}"
    )
    assert answer.hooks[0].status == "decided", answer.hooks[0].error
    assert answer.answer is not None and SECRET not in answer.answer and "\ufffd" in answer.answer
    engine.flush()
    (record,) = engine.records(agent=f"answer_{lang}", scope=f"user:s-{lang}", limit=1)
    assert "\ufffd" in record.event["answer"]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("big", [2**53 + 1, 9007199254740993, -(2**70)])
def test_big_integers_reach_every_hook_as_the_same_string(
    engine: Engine, lang: str, big: int
) -> None:
    agent = engine.agent(f"guard_{lang}")
    out = agent.tool_call("fetch", {"id": big, "n": big})
    if big == 9007199254740993:
        assert out.blocked and out.reason == "id 9007199254740993"
    else:
        assert not out.blocked and out.notices == [
            f'seen "{big}"' if lang == "js" else f"seen {big}"
        ]
    assert out.input == {"id": str(big), "n": str(big)}


@pytest.mark.parametrize("lang", LANGS)
class Gadget:
    """A host object that is not JSON data (say, the tool itself)."""


NON_JSON_INPUTS = [
    ({"data": b"\x00secret"}, ["input", "data"], "bytes is not JSON"),
    ({"ids": {1, 2}}, ["input", "ids"], "set is not JSON"),
    ({"tool": Gadget()}, ["input", "tool"], "Gadget is not JSON"),
    ({"x": math.nan}, ["input", "x"], "nan is not a JSON number"),
    ({"by_id": {7: "a"}}, ["input", "by_id"], "a key of type int is not JSON (keys are text)"),
    (
        {"a": [{"b": {"c": [0, {"d": b""}]}}]},
        ["input", "a", 0, "b", "c", 1, "d"],
        "bytes is not JSON",
    ),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("value", "loc", "msg"), NON_JSON_INPUTS, ids=["bytes", "set", "object", "nan", "key", "deep"]
)
def test_a_non_json_value_in_tool_input_is_raised_naming_its_path_and_nothing_is_recorded(
    engine: Engine, lang: str, value: dict[str, Any], loc: list[Any], msg: str
) -> None:
    scope = f"nonjson-{lang}-{'-'.join(map(str, loc))}"
    with pytest.raises(EventError) as info:
        engine.agent(f"guard_{lang}").tool_call("shell", value, user_id=scope)
    assert info.value.errors == [{"loc": loc, "msg": msg}]
    assert ".".join(map(str, loc)) in str(info.value)
    engine.flush()
    assert engine.records(agent=f"guard_{lang}", scope=f"user:{scope}") == []


@pytest.mark.parametrize(
    ("value", "loc", "msg"), NON_JSON_INPUTS, ids=["bytes", "set", "object", "nan", "key", "deep"]
)
def test_a_non_json_value_is_raised_by_the_async_form_too(
    engine: Engine, value: dict[str, Any], loc: list[Any], msg: str
) -> None:
    import asyncio

    agent = engine.agent("guard_py")
    with pytest.raises(EventError) as info:
        asyncio.run(agent.atool_call("shell", value))
    assert info.value.errors == [{"loc": loc, "msg": msg}]
    with pytest.raises(EventError) as info:
        asyncio.run(agent.aevaluate("tool_call", {"name": "shell", "input": value}))
    assert info.value.errors == [{"loc": loc, "msg": msg}]


def test_every_non_json_value_of_an_event_is_named_at_once_at_every_point(engine: Engine) -> None:
    agent = engine.agent("redact_py")
    with pytest.raises(EventError) as info:
        agent.before_call("i", [{"role": "user", "content": "x", "n": math.inf}], tools=[print])
    assert [e["loc"] for e in info.value.errors] == [["messages", 0, "n"], ["tools", 0]]
    with pytest.raises(EventError) as info:
        agent.after_turn("q", "a", tool_calls=[{"x": {1}}])
    assert info.value.errors[0]["loc"] == ["tool_calls", 0, "x"]
    with pytest.raises(EventError) as info:
        agent.evaluate("tool_call", {"name": "t", "input": {"k": b""}, "extra": 1})
    assert sorted(e["loc"] for e in info.value.errors) == [["extra"], ["input", "k"]]


def test_a_tuple_is_json_data_a_list(engine: Engine) -> None:
    out = engine.agent("guard_py").tool_call("shell", {"args": ("ls", ("-l",))})
    assert not out.blocked and out.input == {"args": ["ls", ["-l"]]}


def test_a_text_over_its_cap_still_fails_each_point_closed(engine: Engine) -> None:
    agent = engine.agent("redact_py")
    result = agent.tool_result("r" * 201, {}, f"the key is {SECRET}")
    assert result.blocked and result.result.startswith("[result withheld: ")
    assert SECRET not in json.dumps(result.to_dict())
    answer = agent.before_assistant_message("q", "a" * 200_001)
    assert answer.blocked and answer.answer == WITHHELD_ANSWER
    user = agent.before_user_message("q" * 100_001)
    assert user.blocked and "event.question" in (user.reason or "")
    after = agent.after_turn("q", "a" * 200_001)
    assert not after.blocked and "event.answer" in (after.input_error or "")


def test_a_field_of_the_wrong_type_is_raised_to_the_host_not_refused(engine: Engine) -> None:
    agent = engine.agent("redact_py")
    for call, loc in [
        (lambda: agent.before_user_message(b"hi"), ["question"]),  # type: ignore[arg-type]
        (lambda: agent.before_assistant_message("q", {"answer": {1, 2}}), ["answer"]),  # type: ignore[arg-type]
        (lambda: agent.evaluate("feedback", {"rating": "meh"}, turn_id="t1"), ["rating"]),
    ]:
        with pytest.raises(EventError) as info:
            call()
        assert info.value.errors[0]["loc"] == loc


def test_replay_normalises_recorded_events_by_the_same_rule(engine: Engine, tmp_path: Path) -> None:
    from engine.replay import Replayer
    from engine.store import Record

    replayer = Replayer(engine)
    record = Record.model_construct(
        id="r1",
        time="2026-01-01T00:00:00+00:00",
        agent="redact_js",
        point="tool_result",
        scope={},
        scope_key="process:test",
        event={
            "agent": "redact_js",
            "point": "tool_result",
            "scope": {},
            "time": "t",
            "turn_id": None,
            "name": "read",
            "input": {},
            "result": {"v": float("nan"), "s": SECRET},
            "call_id": None,
        },
        hooks=[],
        outcome={},
        generation=0,
    )
    out = replayer.outcome(record)
    assert out.hooks[0].status == "decided" and out.result == "[redacted]"
    record.event["input"] = {"b": b"x"}
    refused = replayer.outcome(record)
    assert refused.blocked and "event.input.b: bytes is not JSON" in (refused.input_error or "")


# -- invalid results ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_guard_result_blocks_the_tool(engine: Engine, lang: str, case: str) -> None:
    out = engine.agent(f"invalid_{case}_{lang}").tool_call("delete_file", {"path": "a"})
    assert (
        out.blocked and "'g'" in (out.reason or "") and "the tool was not run" in (out.reason or "")
    )
    (run,) = out.hooks
    assert run.status == "failed" and run.cause == "plugin"
    assert "invalid result" in (run.error or "") or "block" in (run.error or "")


TOOLS = [
    {
        "name": "shell",
        "description": "runs ls only",
        "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}},
    },
    {"name": "read", "description": "reads a file", "parameters": {"type": "object"}},
]


@pytest.mark.parametrize("lang", LANGS)
def test_a_before_call_hook_cannot_rewrite_a_tool_definition(engine: Engine, lang: str) -> None:
    out = engine.agent(f"reshape_{lang}").before_call("i", tools=TOOLS)
    (run,) = out.hooks
    assert run.status == "failed" and run.cause == "plugin"
    assert "'shell' changes the definition" in (run.error or "")
    assert out.blocked  # a script's default on_error is fail: the turn is refused
    narrowed = engine.agent(f"narrow_{lang}").before_call("i", tools=TOOLS)
    assert narrowed.hooks[0].status == "decided" and narrowed.tools == [TOOLS[1]]


@pytest.mark.parametrize("lang", LANGS)
def test_the_shipped_redactor_redacts_beside_nulls_and_big_integers(
    engine: Engine, lang: str
) -> None:
    out = engine.agent(f"stock_{lang}").tool_result(
        "fetch", {"limit": None}, {"score": None, "key": SECRET, "rows": [2**60, "ok"]}
    )
    assert out.hooks[0].status == "decided", out.hooks[0].error
    assert out.result == {"score": None, "key": "[REDACTED]", "rows": [str(2**60), "ok"]}
