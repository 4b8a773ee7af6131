"""The worker's side of a batch, with scripted runtimes: order, apply, stop marks, caches."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.sandbox import worker as worker_module
from engine.sandbox.worker import Served, run_batch


class ScriptedRuntime:
    """Answers each call with the value its config names; records what it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.prepared = 0

    def call_v2(self, call: dict[str, Any], event_text: str) -> dict[str, Any] | str:
        self.seen.append((call["function"], json.loads(event_text)))
        config = json.loads(call["config_text"])
        if "fail" in config:
            return {"ok": False, "kind": "runtime", "message": config["fail"]}
        answer = {"ok": True, "value": config.get("value"), "logs": [], "emits": []}
        answer.update(state_writes={}, state_ttls={}, duration_ms=0.1)
        if config.get("as_text"):
            return json.dumps(answer, separators=(",", ":"))
        return answer

    def prepare(self) -> None:
        self.prepared += 1


def served() -> tuple[Served, ScriptedRuntime, ScriptedRuntime]:
    py, js = ScriptedRuntime(), ScriptedRuntime()
    return Served(py, js), py, js  # type: ignore[arg-type]


def header(*configs: dict[str, Any], language: str = "python", **extra: Any) -> dict[str, Any]:
    calls = []
    for i, config in enumerate(configs):
        calls.append(
            {
                "language": config.pop("language", language),
                "function": f"f{i}",
                "script": {"key": f"s{i}", "filename": f"s{i}.py"},
                "limits_key": "L",
                "config_key": f"c{i}",
                "state": {},
                "apply": config.pop("apply", True),
            }
        )
    texts = {f"c{i}": c for i, c in enumerate(configs)}
    return (
        {"op": "batch", "point": "tool_call", "calls": calls, "limits": {"L": {}}}
        | {"configs": texts}
        | extra
    )


def run(
    s: Served, head: dict[str, Any], event: dict[str, Any]
) -> tuple[bool, list[dict[str, Any]]]:
    lines: list[str] = []
    s.learn(head)
    keep = run_batch(head, json.dumps(event), s, lines.append)
    return keep, [json.loads(line) for line in lines]


EVENT = {"name": "shell", "input": {"command": "ls"}}


def test_calls_run_in_order_each_on_the_event_the_answers_before_made() -> None:
    s, py, js = served()
    head = header(
        {"value": {"input": {"command": "pwd"}}},
        {"value": {"notice": "n"}, "language": "javascript", "as_text": True},
        {"value": {"input": {"command": "rm"}}, "apply": False},
        {"value": None},
    )
    keep, answers = run(s, head, EVENT)
    assert keep and len(answers) == 4 and not any("end" in a for a in answers)
    seen = {f: e["input"]["command"] for f, e in py.seen + js.seen}
    assert seen == {"f0": "ls", "f1": "pwd", "f2": "pwd", "f3": "pwd"}  # f2's "rm": a shadow
    assert js.prepared == 1  # after the JavaScript call, before the next one


def test_a_block_ends_the_batch_marked_end_unless_it_is_a_shadow() -> None:
    s, _, _ = served()
    keep, answers = run(s, header({"value": {"block": "x"}}, {"value": None}), EVENT)
    assert keep and len(answers) == 1 and answers[0]["end"] is True
    shadow = header({"value": {"block": "x"}, "apply": False}, {"value": None})
    _, answers = run(s, shadow, EVENT)
    assert len(answers) == 2 and not any("end" in a for a in answers)


def test_the_last_call_is_never_marked_and_a_failure_ends_the_batch_unmarked() -> None:
    s, _, _ = served()
    _, answers = run(s, header({"value": None}, {"value": {"block": "x"}}), EVENT)
    assert [a.get("end") for a in answers] == [None, None]
    _, answers = run(s, header({"fail": "bad"}, {"value": None}), EVENT)
    assert len(answers) == 1 and answers[0]["ok"] is False and "end" not in answers[0]


def test_an_answer_the_worker_cannot_apply_ends_the_batch() -> None:
    s, _, _ = served()
    head = header({"value": {"append": 5}}, {"value": None})
    head["point"] = "before_assistant_message"
    _, answers = run(s, head, {"question": "q", "answer": "a"})
    assert len(answers) == 1 and answers[0]["end"] is True


def test_a_worker_without_the_config_or_limits_asks_for_them() -> None:
    s, _, _ = served()
    head = header({"value": None}, {"value": None})
    s.learn(head)
    del s.configs["c1"]
    lines: list[str] = []
    for call in head["calls"]:
        call.pop("config_text", None)
    run_batch({**head, "configs": {}, "limits": {}}, json.dumps(EVENT), s, lines.append)
    answers = [json.loads(line) for line in lines]
    assert answers[-1] == {"ok": False, "kind": "need_source"} and len(answers) == 2
    s.limits.clear()
    lines.clear()
    run_batch({**head, "configs": {}, "limits": {}}, json.dumps(EVENT), s, lines.append)
    assert [json.loads(line) for line in lines] == [{"ok": False, "kind": "need_source"}]


def test_configs_are_kept_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "_CONFIG_CHARS_KEPT", 1000)
    s, _, _ = served()
    for i in range(300):
        s.learn({"configs": {f"k{i}": {"deny": "x" * 90}}})
    assert len(s.configs) < 12 and "k299" in s.configs and "k0" not in s.configs
