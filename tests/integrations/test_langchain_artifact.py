"""A ``ToolMessage``'s ``artifact`` goes on only as the ``tool_result`` hooks saw it: it is the
event's ``data``, dropped with a result the hooks replaced, and dropped when it is not JSON
data (no hook could see it). The real middleware and the shipped ``redact_secrets`` hook."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest

from engine import Engine
from engine.integrations.langchain import HookMiddleware
from tests.conftest import REPO, write

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [redact_secrets]\n",
            "agents/a/hooks/redact_secrets.yaml": (
                "kind: script_hook\nname: redact_secrets\nscript: redact_secrets.py\n"
            ),
            "agents/a/hooks/redact_secrets.py": (
                REPO / "config/scripts/redact_secrets.py"
            ).read_text(),
        },
    )
    with Engine.load(root, db=str(tmp_path / "store.db"), records=False) as loaded:
        yield loaded


def checked(engine: Engine, content: Any, artifact: Any) -> ToolMessage:
    call = {"name": "lookup", "args": {"key": "api"}, "id": "c1", "type": "tool_call"}
    request = ToolCallRequest(tool_call=call, tool=None, state={"messages": []}, runtime=None)
    reply = ToolMessage(content=content, artifact=artifact, tool_call_id="c1", name="lookup")
    out = HookMiddleware(engine.agent("a")).wrap_tool_call(request, lambda r: reply)
    assert isinstance(out, ToolMessage)
    return out


def test_a_secret_in_the_artifact_does_not_go_on(engine: Engine) -> None:
    out = checked(engine, "looked up api", {"value": SECRET})
    assert SECRET not in json.dumps(out.artifact) and SECRET not in str(out.content)


def test_an_artifact_goes_on_with_a_redacted_content_no_more(engine: Engine) -> None:
    out = checked(engine, f"the key is {SECRET}", {"value": SECRET})
    assert "[REDACTED]" in str(out.content) and out.artifact is None


def test_a_clean_artifact_goes_on(engine: Engine) -> None:
    out = checked(engine, "looked up api", {"value": "blue"})
    assert out.content == "looked up api" and out.artifact == {"value": "blue"}


def test_an_artifact_no_hook_could_see_is_dropped(engine: Engine) -> None:
    class Opaque:
        secret = SECRET

    out = checked(engine, "looked up api", Opaque())
    assert out.content == "looked up api" and out.artifact is None
