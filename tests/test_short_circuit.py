"""An answer given at ``before_user_message`` (a cached answer, an off-topic reply: the host
skips the LLM) goes out like any answer: the agent's ``before_assistant_message`` hooks see it
first, at every host, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from engine import Engine
from engine.pipeline import WITHHELD_ANSWER

SECRET = "sk-" + "cached0123456789abcdefXYZ"
ANSWERS_JS = f"""
function on_before_user_message(event, host) {{
  if (event.question.indexOf("key") >= 0) {{ return {{ answer: "the key is {SECRET}" }}; }}
  return null;
}}
"""
REDACT_JS = """
function on_before_assistant_message(event, host) {
  if (event.answer.indexOf("crash") >= 0) { throw new Error("redaction broke"); }
  return { answer: host.redact(event.answer, ["sk-[A-Za-z0-9]{16,}"], "[REDACTED]") };
}
"""


def files(*, redact: bool, fail_on: str = "") -> dict[str, str]:
    hooks = ["answers"] + (["redact", "footer"] if redact else [])
    found = {
        "agents/a/agent.yaml": f"hooks: [{', '.join(hooks)}]\n",
        "agents/a/hooks/answers.yaml": "kind: script_hook\nname: answers\n"
        "script: ../../../answers.js\npoints: [before_user_message]\n",
        "agents/a/hooks/redact.yaml": "kind: script_hook\nname: redact\n"
        "script: ../../../redact.js\npoints: [before_assistant_message]\n",
        "agents/a/hooks/footer.yaml": "kind: script_hook\nname: footer\n"
        "script: ../../../footer.js\npoints: [before_assistant_message]\n",
        "answers.js": ANSWERS_JS.replace("the key is", f"{fail_on}the key is"),
        "redact.js": REDACT_JS,
        "footer.js": "function on_before_assistant_message(event, host) {\n"
        '  return { append: ["Questions? help@example.com"] };\n}\n',
    }
    return found


def test_a_short_circuit_answer_passes_the_answer_hooks_sync_and_async(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(files(redact=True)))
    agent = engine.agent("a")
    out = agent.before_user_message("what is the key?", user_id="bob", session_id="s1")
    assert out.short_circuit and not out.blocked
    assert out.answer == "the key is [REDACTED]\n\nQuestions? help@example.com"
    assert SECRET not in str([out.answer, out.notices, out.events])
    assert out.appended == ["Questions? help@example.com"]
    aout = asyncio.run(agent.abefore_user_message("what is the key?", user_id="bob"))
    assert aout.answer == out.answer
    engine.flush()
    said = engine.records(agent="a", point="before_assistant_message")
    assert len(said) == 2 and {r.outcome["answer"] for r in said} == {out.answer}
    asked = engine.records(agent="a", point="before_user_message", limit=1)[0]
    # the host waited for both evaluations: the outcome's time covers them
    newest = said[0].outcome["duration_ms"]  # the async call's records come last
    assert aout.duration_ms >= asked.outcome["duration_ms"] + newest - 0.01
    assert said[0].event["turn_id"] is not None
    # a question the hooks do not answer: no answer to pass on, no second evaluation
    out = agent.before_user_message("hello", user_id="bob")
    assert out.answer is None and not out.short_circuit
    engine.flush()
    assert len(engine.records(agent="a", point="before_assistant_message")) == 2


def test_an_answer_the_answer_hooks_cannot_check_is_withheld(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    agent = load(project(files(redact=True, fail_on="crash: "))).agent("a")
    out = agent.before_user_message("what is the key?", user_id="bob")
    assert out.short_circuit and out.answer == WITHHELD_ANSWER
    assert out.failed == ["redact"] and SECRET not in str([out.answer, out.notices])


def test_without_answer_hooks_the_answer_goes_out_as_given(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    engine = load(project(files(redact=False)))
    out = engine.agent("a").before_user_message("what is the key?", user_id="bob")
    assert out.answer == f"the key is {SECRET}"
    engine.flush()
    assert engine.records(agent="a", point="before_assistant_message") == []
