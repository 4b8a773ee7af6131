"""Exports: openai's own types accept our specs, ``strict`` is claimed exactly when openai's
``pydantic_function_tool`` would leave the schema as it is, MCP tools validate, and our spec
runs as a FunctionTool under the OpenAI Agents SDK's ScriptedModel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, Optional

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import pydantic_function_tool
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from openai.types.shared_params import FunctionDefinition
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from engine import Engine
from engine.tools.schemas import strict_ok

OUTPUT = """
output_schema:
  type: object
  properties:
    n: {type: integer}
annotations:
  readOnlyHint: true
"""


@pytest.fixture
def agent(tool_engine: Callable[..., Engine]) -> Any:
    from tests.tools.conftest import ECHO_PY

    return tool_engine({"agents/a/tools/echo_py.yaml": ECHO_PY + OUTPUT}).agent("a")


def keys_of(kind: Any) -> set[str]:
    return set(kind.__required_keys__ | kind.__optional_keys__)


def validate(kind: Any, spec: dict[str, Any]) -> None:
    """``spec`` is a ``kind`` (a TypedDict: pydantic checks the types, we check no key is
    one ``kind`` lacks)."""
    TypeAdapter(kind).validate_python(spec)
    assert set(spec) <= keys_of(kind), set(spec) - keys_of(kind)


def test_openai_chat_specs_are_chat_completion_function_tools(agent: Any) -> None:
    specs = agent.tool_specs("openai-chat")
    assert len(specs) == 8
    for spec in specs:
        validate(ChatCompletionFunctionToolParam, spec)
        validate(FunctionDefinition, spec["function"])
    strict = {s["function"]["name"]: s["function"].get("strict") for s in specs}
    assert strict["echo_py"] is True  # closed, all required: it qualifies as written
    assert strict["echo_js"] is None  # parameters: make an open object: never claimed


def test_openai_responses_specs_are_function_tool_params(agent: Any) -> None:
    for spec in agent.tool_specs("openai-responses"):
        validate(FunctionToolParam, spec)
        assert spec["strict"] is strict_ok(spec["parameters"])


def test_mcp_specs_are_mcp_tools_with_output_schema_and_annotations(agent: Any) -> None:
    (echo,) = [s for s in agent.tool_specs("mcp") if s["name"] == "echo_py"]
    tool = mcp_types.Tool.model_validate(echo)
    assert tool.output_schema == {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert tool.annotations is not None and tool.annotations.read_only_hint is True


def test_anthropic_specs_carry_the_schema_as_declared(agent: Any) -> None:
    (echo,) = [s for s in agent.tool_specs("anthropic") if s["name"] == "echo_py"]
    assert set(echo) == {"name", "description", "input_schema"}
    assert echo["input_schema"]["additionalProperties"] is False


def test_specs_are_made_once_per_loaded_version(agent: Any) -> None:
    first, second = agent.tool_specs("mcp"), agent.tool_specs("mcp")
    assert first == second and all(a is b for a, b in zip(first, second, strict=True))
    with pytest.raises(ValueError, match="unknown tool spec format 'gemini'"):
        agent.tool_specs("gemini")


# -- strict, with openai's own rules as the oracle ------------------------------------------------


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int


FIELD_TYPES: list[Any] = [
    str,
    int,
    float,
    bool,
    list[str],
    list[Inner],
    Optional[int],  # noqa: UP045 - the typing form is what users write
    Literal["a", "b"],
    Colour,
    Inner,
]


@st.composite
def models(draw: st.DrawFn) -> type[BaseModel]:
    count = draw(st.integers(1, 4))
    fields: dict[str, Any] = {}
    for i in range(count):
        kind = draw(st.sampled_from(FIELD_TYPES))
        default = draw(st.sampled_from(["required", "none", "value", "described"]))
        if default == "none":
            fields[f"f{i}"] = (kind, None)
        elif default == "value" and kind in (str, int, bool):
            fields[f"f{i}"] = (kind, kind())
        elif default == "described":
            fields[f"f{i}"] = (kind, Field(description="a field"))
        else:
            fields[f"f{i}"] = (kind, ...)
    extra = draw(st.sampled_from(["forbid", "ignore"]))
    return create_model("Args", __config__=ConfigDict(extra=extra), **fields)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models())
def test_strict_is_claimed_exactly_when_openai_would_leave_the_schema_unchanged(
    model: type[BaseModel],
) -> None:
    schema = model.model_json_schema()
    oracle = pydantic_function_tool(model)["function"]["parameters"] == schema
    assert strict_ok(schema) is oracle


@pytest.mark.parametrize("extra", [True, {"type": "integer"}])
def test_an_open_object_never_qualifies_even_when_openai_would_not_touch_it(extra: Any) -> None:
    """The one place we are stricter than the oracle: ``to_strict_json_schema`` leaves an
    ``additionalProperties`` that is set alone, but strict mode refuses an open object, so
    claiming strict for it would make the API refuse the tool (models with ``extra="allow"``
    or a ``dict[str, X]`` field, left out of the generated models above for this reason)."""
    model = create_model(
        "Open", __config__=ConfigDict(extra="forbid"), values=(dict[str, int], ...)
    )
    schema = model.model_json_schema()
    assert pydantic_function_tool(model)["function"]["parameters"] == schema
    assert not strict_ok(schema)
    direct = {"type": "object", "properties": {}, "required": [], "additionalProperties": extra}
    assert not strict_ok(direct)


# -- under the OpenAI Agents SDK ---------------------------------------------------------------


def test_our_spec_runs_as_a_function_tool_under_the_scripted_model(agent: Any) -> None:
    from agents import Agent, FunctionTool, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)
    try:
        (spec,) = [s for s in agent.tool_specs("openai-responses") if s["name"] == "echo_py"]

        async def invoke(ctx: Any, arguments: str) -> str:
            result = await agent.acall_tool(spec["name"], json.loads(arguments), session_id="r")
            return result.content

        tool = FunctionTool(
            name=spec["name"],
            description=spec["description"],
            params_json_schema=spec["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=spec["strict"],
        )
        model = ScriptedModel(
            [
                [function_call("echo_py", {"text": "token secret99"}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        run = Agent(name="helper", model=model, tools=[tool])
        result = asyncio.run(Runner.run(run, "echo something"))
        assert result.final_output == "done"
        items = model.calls[1].input
        outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
        assert outputs == ["echo: token [REDACTED]"]  # the agent's hooks ran on the call
        sent = model.calls[0].tools[0]
        assert sent.params_json_schema == spec["parameters"]
    finally:
        set_tracing_disabled(False)
