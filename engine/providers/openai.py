"""The OpenAI-compatible provider: chat completions over httpx (OpenAI, Ollama, vLLM,
llama.cpp server). Judges and memorizers answer in JSON; anything else is a ProviderError."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.providers.tasks import (
    FactChange,
    Judgement,
    JudgeTask,
    LearnedFact,
    Memorization,
    MemorizeTask,
    ProviderError,
)

if TYPE_CHECKING:
    import httpx

FAQ_JUDGE = (
    "You are a question similarity judge. A user asked a new question; below are questions "
    "answered before. For each candidate, say how confident you are (0..1) that its answer "
    "also answers the new question."
)
MEMORY_JUDGE = (
    "You pick what an assistant should remember about the user before answering. For each "
    "remembered fact, say how confident you are (0..1) that it helps answer the message."
)
JUDGE_FORMAT = 'Answer with JSON only: {"matches": [{"id": <candidate id>, "confidence": <0..1>}]}.'
MEMORIZER = (
    "You keep long-term memory about a user. From the latest turns extract durable facts "
    "about the user (who they are, where they live, preferences, plans) worth remembering "
    "across sessions. Do not repeat known facts. When a new fact contradicts a known one, "
    "list the known fact's id in supersedes. You may correct known facts (changes) or mark "
    "them stale. Roll the summary forward."
)
MEMORIZE_FORMAT = (
    'Answer with JSON only: {"facts": [{"text": str, "importance": 0..1, "keywords": [str], '
    '"supersedes": [id]}], "changes": [{"id": id, "text": str?, "importance": 0..1?, '
    '"stale": bool?}], "summary": str}. The summary is at most {max} characters.'
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class _Match(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: int
    confidence: float = Field(ge=0, le=1)


class _JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    matches: list[_Match]


class _Fact(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str = Field(min_length=1, max_length=2000)
    importance: float = Field(default=0.5, ge=0, le=1)
    keywords: list[str] = Field(default_factory=list, max_length=50)
    supersedes: list[int] = Field(default_factory=list)
    key: str | None = None


class _Change(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: int
    text: str | None = None
    importance: float | None = Field(default=None, ge=0, le=1)
    stale: bool | None = None


class _MemorizeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    facts: list[_Fact] = Field(default_factory=list)
    changes: list[_Change] = Field(default_factory=list)
    summary: str | None = None


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call: an OpenAI-compatible ``/chat/completions``."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 10.0
    max_tokens: int = 512
    json_mode: bool = True
    """Ask for ``response_format: json_object`` (OpenAI, Ollama, vLLM and llama.cpp take it)."""


class OpenAIProvider:
    """Judge and memorizer on an OpenAI-compatible server. Each call opens its own client,
    so nothing is left open between calls (and nothing needs closing)."""

    name = "openai"

    def __init__(self, endpoint: Endpoint, *, transport: httpx.BaseTransport | None = None):
        self.endpoint = endpoint
        self._transport = transport

    def judge(self, task: JudgeTask) -> Judgement:
        request = self._judge_request(task)
        call = self.complete(request)
        return self.read_judgement(task, call)

    def read_judgement(self, task: JudgeTask, call: dict[str, Any]) -> Judgement:
        """A judgement from a call's answer (a live one, or one recorded for replay)."""
        answer = _parse(call, _JudgeAnswer)
        known = {c.id for c in task.candidates}
        scores = {m.id: m.confidence for m in answer.matches if m.id in known}
        return Judgement(scores, self.name, call)

    def memorize(self, task: MemorizeTask) -> Memorization:
        call = self.complete(self._memorize_request(task))
        return self.read_memorization(task, call)

    def read_memorization(self, task: MemorizeTask, call: dict[str, Any]) -> Memorization:
        """A memorization from a call's answer (live or recorded)."""
        answer = _parse(call, _MemorizeAnswer)
        known = {k.id for k in task.known}
        facts = tuple(
            LearnedFact(
                f.text,
                f.importance,
                f.key,
                tuple(f.keywords),
                tuple(i for i in f.supersedes if i in known),
            )
            for f in answer.facts
        )
        changes = tuple(
            FactChange(c.id, c.text, c.importance, c.stale) for c in answer.changes if c.id in known
        )
        summary = answer.summary
        if summary is not None:
            summary = summary[: task.summary_max_chars]
        return Memorization(facts, changes, summary, self.name, call)

    # -- requests --------------------------------------------------------------------------

    def _judge_request(self, task: JudgeTask) -> dict[str, Any]:
        system = task.instructions.strip() or (FAQ_JUDGE if task.kind == "faq" else MEMORY_JUDGE)
        user = {
            "question": task.question,
            "candidates": [{"id": c.id, "text": c.text} for c in task.candidates],
        }
        return self._body(task.model, f"{system}\n\n{JUDGE_FORMAT}", user)

    def _memorize_request(self, task: MemorizeTask) -> dict[str, Any]:
        system = task.instructions.strip() or MEMORIZER
        fmt = MEMORIZE_FORMAT.replace("{max}", str(task.summary_max_chars))
        user = {
            "turns": [{"user": q, "assistant": a} for q, a in task.turns],
            "known_facts": [
                {"id": k.id, "text": k.text, "importance": k.importance} for k in task.known
            ],
            "summary": task.summary,
        }
        return self._body(task.model, f"{system}\n\n{fmt}", user)

    def _body(self, model: str, system: str, user: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model or self.endpoint.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": json.dumps(user, ensure_ascii=False)},
            ],
            "max_tokens": self.endpoint.max_tokens,
            "temperature": 0,
        }
        if self.endpoint.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    # -- the HTTP call ---------------------------------------------------------------------

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST a chat completion; the call record (request, answer, usage, time).

        Raises:
            ProviderError: timeout, connection or HTTP error, or a body that is not a chat
                completion. ``.call`` holds what was sent.
        """
        call: dict[str, Any] = {
            "provider": self.name,
            "model": request["model"],
            "request": request,
        }
        started = time.perf_counter()
        try:
            data = self._post(request)
        except ProviderError as exc:
            call["error"] = str(exc)
            raise ProviderError(str(exc), call=call) from exc
        finally:
            call["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 2)
        call["usage"] = data.get("usage") or {}
        try:
            choice = data["choices"][0]
            call["answer"] = choice["message"]["content"]
            call["finish_reason"] = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError) as exc:
            call["error"] = "not a chat completion"
            raise ProviderError("malformed response: not a chat completion", call=call) from exc
        return call

    def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx  # a sixth of a second to import: offline engines never load it

        url = self.endpoint.base_url.rstrip("/") + "/chat/completions"
        try:
            with httpx.Client(timeout=self.endpoint.timeout_s, transport=self._transport) as client:
                response = client.post(url, json=request, headers=self._headers())
                response.raise_for_status()
                data = response.json()
        except httpx.TimeoutException as exc:
            raise ProviderError(f"timeout after {self.endpoint.timeout_s}s") from exc
        except httpx.HTTPStatusError as exc:
            raise ProviderError(f"HTTP {exc.response.status_code} from {url}") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"cannot reach {url}: {type(exc).__name__}") from exc
        except ValueError as exc:
            raise ProviderError("malformed response: body is not JSON") from exc
        if not isinstance(data, dict):
            raise ProviderError("malformed response: body is not a JSON object")
        return data

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.endpoint.api_key_env, "")
        return {"Authorization": f"Bearer {key}"} if key else {}


def _parse(call: dict[str, Any], model: type[BaseModel]) -> Any:
    content = call.get("answer")
    if not isinstance(content, str):
        raise ProviderError("malformed answer: no content", call=call)
    try:
        return model.model_validate(json.loads(_FENCE.sub("", content)))
    except (ValueError, ValidationError) as exc:
        why = (
            "truncated at max_tokens"
            if call.get("finish_reason") == "length"
            else "not the JSON asked for"
        )
        raise ProviderError(f"malformed answer: {why}", call=call) from exc
