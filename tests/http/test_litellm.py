"""The LiteLLM Generic Guardrail API route, driven by LiteLLM's own client: its
``GenericGuardrailAPI`` guardrail and its OpenAI chat handler (the code a LiteLLM proxy runs
before and after each call), against a real uvicorn server on loopback."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from engine.http.auth import Auth, Token, digest, require
from engine.http.errors import install_error_handlers
from engine.http.litellm import PATH, find_question, rewrite_question, router
from engine.runtime import Engine
from tests.conftest import write

# litellm fetches its model price map over the network at import unless told not to
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
try:
    import litellm  # noqa: F401  (the test-integrations extra)
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip(
        "LITELLM CLIENT TESTS SKIPPED: litellm is not installed "
        "(pip install -e '.[test-integrations]'); CI runs them",
        allow_module_level=True,
    )

from litellm import ModelResponse
from litellm.exceptions import GuardrailRaisedException
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
from litellm.llms.openai.chat.guardrail_translation.handler import (
    OpenAIChatCompletionsHandler,
)
from litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api import (
    GenericGuardrailAPI,
)

TOKEN = "litellm-decide-token"

# pydantic warns, inside litellm's own request model, that it cannot guard a ReadOnly TypedDict
# item; the warning is about litellm's types, not this route, and pytest makes it an error.
pytestmark = pytest.mark.filterwarnings("ignore:.* using the `ReadOnly` qualifier")

GUARD = """\
kind: script_hook
name: guard
language: python
source: |
  def on_before_user_message(event, host):
      q = event["question"]
      if "password" in q:
          return {"block": "please do not share passwords"}
      if q.startswith("hours?"):
          return {"answer": "We are open 9 to 5."}
      if "colour" in q:
          return {"question": q.replace("colour", "color")}
      if "remind me" in q:
          return {"messages": [{"role": "system", "content": "The user is in Berlin."}]}
  def on_before_call(event, host):
      if event["settings"].get("model") == "forbidden-model":
          return {"block": "this model is not allowed here"}
  def on_tool_call(event, host):
      if event["name"] == "delete_file":
          return {"block": "deleting files is not allowed here"}
      if event["name"] == "shell":
          return {"input": {"command": "echo safe"}}
      if event["name"] == "flaky":
          raise ValueError("the guard broke")
  def on_before_assistant_message(event, host):
      if "crash" in event["answer"]:
          raise ValueError("the redactor broke")
      redacted = host.redact(event["answer"], ["sk-[A-Za-z0-9]{8,}"], "[redacted]")
      if redacted != event["answer"]:
          return {"answer": redacted}
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("litellm")
    config = write(
        root / "config",
        {
            "engine.yaml": "process: proxy\n",
            "agents/guard/agent.yaml": "hooks: [guard]\n",
            "agents/guard/hooks/guard.yaml": GUARD,
        },
    )
    eng = Engine.load(config, db=str(root / "engine.db"))
    yield eng
    eng.close()


def serve(app: FastAPI) -> Iterator[str]:
    """Run ``app`` on a real uvicorn server on a loopback port until the test ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def base(engine: Engine) -> Iterator[str]:
    app = FastAPI()
    install_error_handlers(app)
    app.state.auth = Auth((Token("litellm", digest(TOKEN), frozenset({"decide"})),))
    app.include_router(router(engine, require("decide")))
    yield from serve(app)


def guarded(base: str, run: Callable[[GenericGuardrailAPI], Awaitable[Any]], **options: Any) -> Any:
    """Run ``run`` with LiteLLM's guardrail pointed at ``base`` (the sidecar), fail closed."""
    options.setdefault("api_key", TOKEN)
    options.setdefault("unreachable_fallback", "fail_closed")
    options.setdefault("additional_provider_specific_params", {"agent": "guard"})

    async def main() -> Any:
        handler = AsyncHTTPHandler(timeout=10)
        guardrail = GenericGuardrailAPI(
            api_base=base,
            guardrail_name="hookengine",
            event_hook="pre_call",
            default_on=True,
            async_handler=handler,
            **options,
        )
        try:
            return await run(guardrail)
        finally:
            await handler.close()

    return asyncio.run(main())


LOGGING = SimpleNamespace(litellm_call_id="call-1", litellm_trace_id="trace-1")
"""What the guardrail reads of LiteLLM's logging object: the call and trace ids."""


def chat_request(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": list(messages),
        "metadata": {"user_api_key_end_user_id": "end-user-7"},
        **extra,
    }


def check_request(base: str, data: dict[str, Any], **options: Any) -> dict[str, Any]:
    """The proxy's pre-call path: LiteLLM's chat handler with the guardrail applied."""
    chat = OpenAIChatCompletionsHandler()
    return guarded(  # type: ignore[no-any-return]
        base,
        lambda g: chat.process_input_messages(data, g, litellm_logging_obj=LOGGING),
        **options,
    )


def check_response(base: str, response: ModelResponse) -> ModelResponse:
    """The proxy's post-call path."""
    chat = OpenAIChatCompletionsHandler()
    return guarded(  # type: ignore[no-any-return]
        base,
        lambda g: chat.process_output_response(
            response, g, litellm_logging_obj=LOGGING, request_data={"metadata": {}}
        ),
    )


def model_response(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return ModelResponse(model="gpt-4o", choices=[{"index": 0, "message": message}])


SYSTEM = {"role": "system", "content": "You are a shop assistant."}


def test_an_allowed_request_passes_unchanged(base: str, engine: Engine) -> None:
    data = chat_request(SYSTEM, {"role": "user", "content": "What do you sell?"})
    out = check_request(base, data)
    assert out["messages"] == [SYSTEM, {"role": "user", "content": "What do you sell?"}]
    records = engine.records(agent="guard", scope="end-user-7", oldest_first=True)
    assert [r.point for r in records][:2] == ["before_user_message", "before_call"]
    assert records[0].event["question"] == "What do you sell?"
    assert records[0].scope["session_id"] == "trace-1"


def test_the_action_is_none_for_an_allowed_request(base: str) -> None:
    body = {
        "input_type": "request",
        "texts": ["Hello"],
        "structured_messages": [{"role": "user", "content": "Hello"}],
        "request_data": {},
        "additional_provider_specific_params": {"agent": "guard"},
    }
    answer = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN}).json()
    assert answer["action"] == "NONE"
    assert answer["texts"] is None and answer["blocked_reason"] is None
    assert len(answer["decision_ids"]) == 2


def test_a_rewritten_question_is_written_into_the_request(base: str) -> None:
    data = chat_request(
        SYSTEM,
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": [{"type": "text", "text": "What colour is the sky?"}]},
    )
    out = check_request(base, data)
    assert out["messages"][3]["content"] == [{"type": "text", "text": "What color is the sky?"}]
    assert out["messages"][:3] == data["messages"][:3]
    assert out["messages"][1]["content"] == "Hi"


def test_a_blocked_question_raises_guardrail_raised_exception(base: str) -> None:
    data = chat_request({"role": "user", "content": "my password is hunter2"})
    with pytest.raises(GuardrailRaisedException, match="please do not share passwords"):
        check_request(base, data)


def test_an_answer_from_a_hook_blocks_the_call_with_the_answer(base: str) -> None:
    data = chat_request({"role": "user", "content": "hours? on sunday"})
    with pytest.raises(GuardrailRaisedException, match=r"We are open 9 to 5\."):
        check_request(base, data)


def test_before_call_blocks_a_forbidden_model(base: str) -> None:
    data = chat_request({"role": "user", "content": "hello"}, model="forbidden-model")
    with pytest.raises(GuardrailRaisedException, match="this model is not allowed here"):
        check_request(base, data)


def test_a_tool_call_in_the_request_is_checked(base: str) -> None:
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "delete_file", "arguments": '{"path": "/etc"}'},
    }
    data = chat_request(
        {"role": "user", "content": "clean up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    )
    with pytest.raises(GuardrailRaisedException, match="'delete_file' blocked: deleting files"):
        check_request(base, data)


def test_a_tool_call_in_the_response_is_blocked_naming_the_tool(base: str) -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "delete_file", "arguments": "{}"}},
    ]
    with pytest.raises(GuardrailRaisedException, match="tool 'delete_file' blocked"):
        check_response(base, model_response("Cleaning up.", calls))


def test_a_secret_in_the_answer_is_redacted(base: str) -> None:
    out = check_response(base, model_response("Your key is sk-ABCDEFGH1234, keep it."))
    assert out.choices[0].message.content == "Your key is [redacted], keep it."


def test_an_unchanged_answer_is_left_alone(base: str) -> None:
    out = check_response(base, model_response("We sell shoes."))
    assert out.choices[0].message.content == "We sell shoes."


def test_the_response_action_for_a_changed_answer_is_guardrail_intervened(base: str) -> None:
    body = {
        "input_type": "response",
        "texts": ["fine", "key sk-ABCDEFGH1234"],
        "request_data": {},
        "additional_provider_specific_params": {"agent": "guard"},
    }
    answer = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN}).json()
    assert answer["action"] == "GUARDRAIL_INTERVENED"
    assert answer["texts"] == ["fine", "key [redacted]"]


def test_a_change_litellm_cannot_apply_is_reported(base: str) -> None:
    body = {
        "input_type": "request",
        "texts": ["remind me of my city"],
        "request_data": {},
        "additional_provider_specific_params": {"agent": "guard"},
    }
    answer = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN}).json()
    assert answer["action"] == "NONE"
    assert [(u["hook"], u["field"], u["host"]) for u in answer["unsupported"]] == [
        ("guard", "messages", "litellm")
    ]


def ask(base: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_text_completion_prompt_is_the_last_text(base: str) -> None:
    body = {**GOOD, "texts": ["Earlier text", "What colour is it?"]}
    answer = ask(base, body)
    assert answer["action"] == "GUARDRAIL_INTERVENED"
    assert answer["texts"] == ["Earlier text", "What color is it?"]


def test_the_params_may_name_the_user_and_session(base: str, engine: Engine) -> None:
    params = {"agent": "guard", "user_id": "param-user", "session_id": "param-session"}
    body = {
        **GOOD,
        "additional_provider_specific_params": params,
        "request_data": {"user_api_key_end_user_id": "metadata-user"},
        "litellm_trace_id": "trace-ignored",
        "litellm_call_id": "call-param",
    }
    answer = ask(base, body)
    records = engine.records(agent="guard", scope="param-user")
    assert {r.id for r in records} == set(answer["decision_ids"])
    assert {r.scope["session_id"] for r in records} == {"param-session"}
    assert {r.event["turn_id"] for r in records} == {"call-param"}


def test_the_answer_is_checked_with_the_question_of_its_request(base: str, engine: Engine) -> None:
    trace = {"litellm_trace_id": "trace-question", "litellm_call_id": "call-question"}
    ask(base, {**GOOD, **trace, "texts": ["Which shoes are waterproof?"]})
    answer = ask(base, {**GOOD, **trace, "input_type": "response", "texts": ["The red ones."]})
    (record,) = [r for r in engine.records(agent="guard") if r.id == answer["decision_ids"][0]]
    assert record.point == "before_assistant_message"
    assert record.event["question"] == "Which shoes are waterproof?"


def test_a_tool_input_rewrite_litellm_cannot_carry_blocks_the_call(base: str) -> None:
    call = {"id": "c3", "function": {"name": "shell", "arguments": '{"command": "rm -rf /"}'}}
    answer = ask(base, {**GOOD, "input_type": "response", "tool_calls": [call]})
    assert answer["action"] == "BLOCKED"
    assert "'shell' blocked" in answer["blocked_reason"]
    assert "input" in answer["blocked_reason"] and "litellm" in answer["blocked_reason"]


def test_a_failing_answer_hook_blocks_the_answer(base: str) -> None:
    answer = ask(base, {**GOOD, "input_type": "response", "texts": ["a crash course"]})
    assert answer["action"] == "BLOCKED"
    assert answer["blocked_reason"]


def test_a_failing_tool_guard_blocks_the_tool(base: str) -> None:
    call = {"id": "c4", "function": {"name": "flaky", "arguments": "{}"}}
    answer = ask(base, {**GOOD, "input_type": "response", "tool_calls": [call]})
    assert answer["action"] == "BLOCKED"
    assert answer["blocked_reason"].startswith("tool 'flaky' blocked: ")
    assert "guard" in answer["blocked_reason"]


def test_a_refused_scope_value_names_its_body_field(base: str) -> None:
    response = httpx.post(
        base + PATH, json={**GOOD, "litellm_call_id": "c" * 300}, headers={"x-api-key": TOKEN}
    )
    assert response.status_code == 422
    assert response.json()["message"].startswith("body.litellm_call_id: ")


def test_the_sidecar_down_fails_closed(base: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    down = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening
    try:
        data = chat_request({"role": "user", "content": "What do you sell?"})
        with pytest.raises(Exception, match="Generic Guardrail API failed"):
            check_request(down, data)
        # the same call with fail_open passes: the setting is what keeps it closed
        opened = chat_request({"role": "user", "content": "What do you sell?"})
        out = guarded(
            down,
            lambda g: OpenAIChatCompletionsHandler().process_input_messages(opened, g),
            unreachable_fallback="fail_open",
        )
        assert out["messages"][0]["content"] == "What do you sell?"
    finally:
        sock.close()


def test_a_wrong_token_fails_closed(base: str) -> None:
    data = chat_request({"role": "user", "content": "What do you sell?"})
    with pytest.raises(Exception, match="401"):
        check_request(base, data, api_key="not-the-token")


def test_an_unknown_agent_fails_closed(base: str) -> None:
    data = chat_request({"role": "user", "content": "What do you sell?"})
    with pytest.raises(Exception, match="404"):
        check_request(base, data, additional_provider_specific_params={"agent": "nobody"})


GOOD = {
    "input_type": "request",
    "texts": ["hi"],
    "request_data": {},
    "additional_provider_specific_params": {"agent": "guard"},
}
PARAMS = ["body", "additional_provider_specific_params"]


@pytest.mark.parametrize(
    ("body", "status", "loc"),
    [
        ({**GOOD, "additional_provider_specific_params": None}, 422, [*PARAMS, "agent"]),
        ({**GOOD, "additional_provider_specific_params": {"agent": 5}}, 422, [*PARAMS, "agent"]),
        ({**GOOD, "additional_provider_specific_params": {"agent": ""}}, 422, [*PARAMS, "agent"]),
        ({**GOOD, "additional_provider_specific_params": {"agent": "x" * 5000}}, 404, None),
        (
            {**GOOD, "additional_provider_specific_params": {"agent": "guard", "user_id": []}},
            422,
            [*PARAMS, "user_id"],
        ),
        ({**GOOD, "input_type": "sideways"}, 422, ["body", "input_type"]),
        ({k: v for k, v in GOOD.items() if k != "input_type"}, 422, ["body", "input_type"]),
        ({**GOOD, "texts": "hi"}, 422, ["body", "texts"]),
        ({**GOOD, "texts": [1, None]}, 422, ["body", "texts", 0]),
        (
            {**GOOD, "structured_messages": [["user", "hi"]]},
            422,
            ["body", "structured_messages", 0],
        ),
        ({**GOOD, "tool_calls": [{"id": "c"}]}, 422, ["body", "tool_calls", 0, "function"]),
        ({**GOOD, "tool_calls": {"id": "c"}}, 422, ["body", "tool_calls"]),
        ({**GOOD, "request_data": "me"}, 422, ["body", "request_data"]),
        ({**GOOD, "litellm_call_id": "c" * 300}, 422, ["body", "litellm_call_id"]),
        ({**GOOD, "litellm_trace_id": "t" * 300}, 422, ["body", "litellm_trace_id"]),
        ([GOOD], 422, ["body"]),
        ("request", 422, ["body"]),
        (None, 422, ["body"]),
    ],
)
def test_hostile_bodies_are_a_4xx_with_the_error_body(
    base: str, body: Any, status: int, loc: list[Any] | None
) -> None:
    response = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN})
    assert response.status_code == status, response.text
    error = response.json()
    assert set(error) == {"code", "message", "errors"} and error["message"]
    if loc is not None:
        assert loc in [e["loc"] for e in error["errors"]], error


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        (b"{", {"content-type": "application/json"}),
        (b'{"input_type": "request", "texts": ["\\ud800"]}', {"content-type": "application/json"}),
        (b"[" * 100_000 + b"]" * 100_000, {"content-type": "application/json"}),
        (b'{"input_type": 1e999999}', {"content-type": "application/json"}),
        (b"\x00\xff\xfe", {"content-type": "application/json"}),
        (b"input_type=request", {"content-type": "application/x-www-form-urlencoded"}),
    ],
)
def test_malformed_bytes_are_a_4xx_never_a_5xx(
    base: str, content: bytes, headers: dict[str, str]
) -> None:
    response = httpx.post(base + PATH, content=content, headers={"x-api-key": TOKEN, **headers})
    assert 400 <= response.status_code < 500, response.text
    assert set(response.json()) == {"code", "message", "errors"}


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ("not json", "Expecting value"),
        ("[1, 2]", "a JSON list"),
        ("[" * 50_000 + "]" * 50_000, "nested deeper than 64 levels"),
        # last-wins showed the guard "ls"; the tool may run "rm -rf /"
        ('{"command": "rm -rf /", "command": "ls"}', "key 'command' appears twice"),
        ('{"n": ' + "9" * 5000 + "}", "an integer of 5000 digits is too large"),
    ],
)
def test_tool_arguments_that_are_not_an_object_block_the_call(
    base: str, arguments: str, why: str
) -> None:
    body = {
        **GOOD,
        "input_type": "response",
        "tool_calls": [{"id": "c7", "function": {"name": "shell", "arguments": arguments}}],
    }
    answer = httpx.post(base + PATH, json=body, headers={"x-api-key": TOKEN}).json()
    assert answer["action"] == "BLOCKED"
    reason = answer["blocked_reason"]
    assert reason.startswith("tool call c7 has arguments that are not a JSON object (")
    assert why in reason


def test_no_token_is_401_with_the_error_body(base: str) -> None:
    response = httpx.post(base + PATH, json=GOOD)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_schemathesis_finds_no_server_error_on_the_route(base: str) -> None:
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    (operation,) = [result.ok() for result in schema.get_all_operations()]
    seen: list[int] = []

    @given(case=operation.as_strategy())
    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    def probe(case) -> None:  # type: ignore[no-untyped-def]
        response = case.call(headers={"x-api-key": TOKEN})
        seen.append(response.status_code)
        assert response.status_code < 500, response.text
        if isinstance(case.body, dict):  # the same body naming the agent: decisions are made
            case.body["additional_provider_specific_params"] = {"agent": "guard"}
            response = case.call(headers={"x-api-key": TOKEN})
            seen.append(response.status_code)
            assert response.status_code < 500, response.text

    probe()
    assert 200 in seen and all(code < 500 for code in seen)


def test_a_rewrite_of_a_question_in_parts_fills_the_first_and_empties_the_rest() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colour"},
                image,
                {"type": "text", "text": "is it?"},
            ],
        },
    ]
    texts = ["Be brief.", "What colour", "is it?"]
    question = find_question(messages, texts)
    assert question is not None and question.text == "What colour\nis it?"
    rewrite_question(question, "What color is it?", texts, messages)
    assert texts == ["Be brief.", "What color is it?", ""]
    assert messages[1]["content"] == [
        {"type": "text", "text": "What color is it?"},
        image,
        {"type": "text", "text": ""},
    ]


def test_a_request_without_a_user_message_asks_no_question() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "tool", "content": "42"}]
    assert find_question(messages, ["Be brief.", "42"]) is None
