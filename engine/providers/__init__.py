"""LLM judges and memorizers: the Provider protocol, offline and OpenAI-compatible backends,
and ``Providers``, which falls back to offline on any failure and replays recorded answers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from engine.config.models import ProviderSettings
from engine.providers.offline import OfflineProvider
from engine.providers.openai import Endpoint, OpenAIProvider
from engine.providers.tasks import (
    Candidate,
    FactChange,
    Judgement,
    JudgeTask,
    KnownFact,
    LearnedFact,
    Memorization,
    MemorizeTask,
    ProviderError,
)

log = logging.getLogger("engine.providers")


class Provider(Protocol):
    """A judge and memorizer backend. Methods raise ProviderError on any failure."""

    name: str

    def judge(self, task: JudgeTask) -> Judgement:
        """Confidence per candidate that it helps with the task's question."""
        ...

    def memorize(self, task: MemorizeTask) -> Memorization:
        """Durable facts, corrections and the rolled summary from the task's turns."""
        ...


class Providers:
    """What kinds call. Uses the live provider when there is one; any failure of it falls
    back to the offline path, and the call record says so (``fallback``, ``error``).

    ``recorded`` (a call record from an earlier run) replays: a recorded live answer is
    read again instead of asking, so replays are deterministic and offline.
    """

    def __init__(self, live: OpenAIProvider | None = None) -> None:
        self.live = live
        self.offline = OfflineProvider()
        self._reader = live or OpenAIProvider(Endpoint(base_url="", model=""))

    @property
    def name(self) -> str:
        return self.live.name if self.live else self.offline.name

    def judge(self, task: JudgeTask, *, recorded: Mapping[str, Any] | None = None) -> Judgement:
        """Judge ``task``; never raises for a provider's failure."""
        if not task.candidates:
            return Judgement({}, self.offline.name, {"provider": self.offline.name})
        replayed = _replayable(recorded)
        try:
            if replayed is not None:
                return self._reader.read_judgement(task, replayed)
            if self.live is not None:
                return self.live.judge(task)
        except ProviderError as exc:
            return _fallback_judgement(self.offline.judge(task), exc)
        return self.offline.judge(task)

    def memorize(
        self, task: MemorizeTask, *, recorded: Mapping[str, Any] | None = None
    ) -> Memorization:
        """Memorize ``task``'s turns; never raises for a provider's failure."""
        replayed = _replayable(recorded)
        try:
            if replayed is not None:
                return self._reader.read_memorization(task, replayed)
            if self.live is not None:
                return self.live.memorize(task)
        except ProviderError as exc:
            result = self.offline.memorize(task)
            log.warning("memorizer fell back to offline: %s", exc)
            return Memorization(
                result.facts, result.changes, result.summary, result.source, _fallback_call(exc)
            )
        return self.offline.memorize(task)

    def close(self) -> None:
        """Nothing is held between calls; kept so owners can close what they open."""


def _replayable(recorded: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A recorded live answer to read again (offline records are recomputed: same result)."""
    if not recorded or recorded.get("fallback") or recorded.get("answer") is None:
        return None
    return {**recorded, "replayed": True}


def _fallback_call(exc: ProviderError) -> dict[str, Any]:
    return {**exc.call, "fallback": "offline", "error": str(exc)}


def _fallback_judgement(result: Judgement, exc: ProviderError) -> Judgement:
    log.warning("judge fell back to offline: %s", exc)
    return Judgement(result.scores, result.source, _fallback_call(exc))


def make_providers(settings: ProviderSettings, *, live: bool) -> Providers:
    """The providers kinds use: OpenAI-compatible when configured (``kind: openai``) or asked
    for (``live``, e.g. ``hook_tool --live``), offline otherwise."""
    if not (live or settings.kind == "openai"):
        return Providers()
    endpoint = Endpoint(
        base_url=settings.base_url,
        model=settings.model,
        api_key_env=settings.api_key_env,
        timeout_s=settings.timeout_s,
        max_tokens=settings.max_tokens,
    )
    return Providers(OpenAIProvider(endpoint))


__all__ = [
    "Candidate",
    "FactChange",
    "JudgeTask",
    "Judgement",
    "KnownFact",
    "LearnedFact",
    "Memorization",
    "MemorizeTask",
    "OfflineProvider",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "Providers",
    "make_providers",
]
