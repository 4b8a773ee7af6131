"""docs/litellm.md runs: its engine.yaml, hook and LiteLLM config.yaml, loaded by the engine
and by the LiteLLM proxy's own guardrail registry, block and redact over loopback; its curl
example answers what the page says."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from fastapi import FastAPI

from engine.http.auth import load_auth, require
from engine.http.errors import install_error_handlers
from engine.http.litellm import router
from engine.runtime import Engine
from tests.conftest import REPO, write
from tests.http.test_litellm import model_response, serve

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from litellm.exceptions import GuardrailRaisedException
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
from litellm.llms.openai.chat.guardrail_translation.handler import OpenAIChatCompletionsHandler
from litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api import initialize_guardrail
from litellm.secret_managers.main import get_secret
from litellm.types.guardrails import LitellmParams

pytestmark = pytest.mark.filterwarnings("ignore:.* using the `ReadOnly` qualifier")

DOC = (REPO / "docs" / "litellm.md").read_text(encoding="utf-8")
DOC_URL = "http://127.0.0.1:8765"
TOKEN = "docs-litellm-token"


def block(language: str, marker: str) -> str:
    found = [b for b in re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S) if marker in b]
    assert len(found) == 1, f"one {language} block with {marker!r} in docs/litellm.md"
    return found[0]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("litellm-docs")
    config = write(
        root / "config",
        {
            "engine.yaml": block("yaml", "tokens:"),
            "agents/shop/agent.yaml": "hooks: [guard]\n",
            "agents/shop/hooks/guard.yaml": block("yaml", "kind: script_hook"),
        },
    )
    env = yaml.safe_load(block("yaml", "tokens:"))["http"]["tokens"][0]["env"]
    os.environ[env] = TOKEN
    engine = Engine.load(config, db=str(root / "engine.db"))
    try:
        app = FastAPI()
        install_error_handlers(app)
        app.state.auth = load_auth(engine.settings.http)
        app.include_router(router(engine, require("decide")))
        yield from serve(app)
    finally:
        engine.close()
        os.environ.pop(env, None)


def proxy_guardrail(base: str) -> Any:
    """The guardrail of the doc's config.yaml as the LiteLLM proxy builds it (its params
    model, its ``os.environ/`` lookup, the guardrail's own initializer), pointed at the
    test's server. (The proxy's registry itself needs litellm's proxy extras.)"""
    entry = yaml.safe_load(block("yaml", "guardrails:"))["guardrails"][0]
    params = LitellmParams(**entry["litellm_params"])
    assert params.api_base == DOC_URL
    params.api_base = base
    params.api_key = str(get_secret(params.api_key))
    return initialize_guardrail(params, entry)


def test_the_documented_litellm_config_blocks_and_redacts(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKENGINE_LITELLM_TOKEN", TOKEN)
    guardrail = proxy_guardrail(base)
    assert guardrail.unreachable_fallback == "fail_closed"
    chat = OpenAIChatCompletionsHandler()
    logging_obj = SimpleNamespace(litellm_call_id="c-1", litellm_trace_id="t-1")

    async def main() -> None:
        guardrail.async_handler = AsyncHTTPHandler(timeout=10)
        try:
            data = {"model": "m", "messages": [{"role": "user", "content": "my password: x"}]}
            with pytest.raises(GuardrailRaisedException, match="do not share passwords"):
                await chat.process_input_messages(data, guardrail, litellm_logging_obj=logging_obj)
            answer = model_response("the key is sk-ABCDEFGH1234")
            out = await chat.process_output_response(
                answer, guardrail, litellm_logging_obj=logging_obj, request_data={}
            )
            assert out.choices[0].message.content == "the key is [redacted]"
        finally:
            await guardrail.async_handler.close()

    try:
        asyncio.run(main())
    finally:
        litellm.logging_callback_manager.remove_callback_from_all_lists(guardrail)


def test_the_documented_curl_answers_as_shown(base: str, tmp_path: Path) -> None:
    shell = block("sh", "curl -s")
    command = "\n".join(line for line in shell.splitlines() if not line.startswith("#"))
    done = subprocess.run(
        ["bash", "-c", command.replace(DOC_URL, base)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        env={**os.environ, "HOOKENGINE_LITELLM_TOKEN": TOKEN},
    )
    answer = json.loads(done.stdout)
    shown = json.loads("".join(line.lstrip("# ") for line in shell.splitlines() if "#" in line))
    assert answer["action"] == shown["action"] == "BLOCKED"
    assert answer["blocked_reason"] == shown["blocked_reason"]
    assert len(answer["decision_ids"]) == 1
