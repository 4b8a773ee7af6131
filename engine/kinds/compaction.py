"""Kind ``compaction``: fold a long conversation's older turns into a summary, kept as entries.

Built only from public pieces: each turn is kept as an entry at ``after_turn``; when more than
``keep + every`` turns are not summarised, every turn but the newest ``keep`` is folded into a
summary entry (which says the last turn it covers: the cut). At ``before_call`` the summary is
a section of the instruction and the messages of the turns before the cut are left out. The
summary and the cut go into the record, and a replay reads them from there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from engine.changes import Change
from engine.config.loader import HookSpec
from engine.config.models import CompactionConfig
from engine.errors import ConfigError, Problem, ScriptRuntimeError
from engine.kinds import BuildEnv
from engine.kinds.base import HookContext
from engine.kinds.common import SpecHook
from engine.kinds.personal import PersonalTurns, shared
from engine.points import Point
from engine.providers import OpenAIProvider, ProviderError
from engine.sandbox import CompiledScript, Language, WorkerPool

TURN_CHARS = 1500
"""Characters of a turn's question and of its answer kept in its entry (and summarised)."""
SUMMARIZER_PROMPT = (
    "You keep a running summary of a conversation between a user and an assistant. You are "
    "given the summary so far (possibly empty) and the turns that follow it. Answer with the "
    "new summary only, as plain text: keep every fact, decision, name, number and open "
    "question a later turn may need; drop small talk. At most {max} characters."
)
_SHIMS = {
    Language.PYTHON: "\n\ndef on_after_turn(event, host):\n"
    "    return {'summary': summarize(event['earlier_summary'], event['turns'])}\n",
    Language.JAVASCRIPT: "\nfunction on_after_turn(event, host) {\n"
    "  return {summary: summarize(event.earlier_summary, event.turns)};\n}\n",
}
"""Appended to a summarize script (after its last line, so its line numbers stay): the
sandbox calls point functions, and this one hands ``summarize`` its two arguments."""
_SENTENCE = re.compile(r"(?<=[.!?])\s")


@dataclass
class CompactionHook(SpecHook):
    """Keeps each turn as an entry, folds old turns into a summary entry, and shows the model
    the summary and the recent turns only."""

    config: CompactionConfig
    points = frozenset({Point.AFTER_TURN, Point.BEFORE_CALL})
    blocks = True  # the store, and a provider or the sandbox when it folds
    provider: OpenAIProvider | None = None
    pool: WorkerPool | None = None
    script: CompiledScript | None = None
    personal: PersonalTurns | None = None
    """The engine's ledger of turns that used per-user context: a turn shown the summary of
    the conversation's earlier turns is one (a shared FAQ cache does not learn it)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        stem = self.name[:50]
        self.turn_kind, self.summary_kind = f"{stem}.turn", f"{stem}.summary"
        # the summarize script's calls in the pool's fairness rules: a rebuild is a new owner
        self._owner = f"{self.spec.shown}:{self.name}#{id(self):x}"

    def close(self) -> None:
        if self.pool is not None:
            self.pool.forget(self._owner)

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        session = event.get("scope", {}).get("session_id")
        if not session:
            ctx.extras["skipped"] = "no session_id: a conversation needs one"
            return None
        if point is Point.AFTER_TURN:
            self._after_turn(session, event, ctx)
            return None
        return self._before_call(session, event, ctx)

    # -- after_turn: keep the turn, fold when due -------------------------------------------

    def _after_turn(self, session: str, event: dict[str, Any], ctx: HookContext) -> None:
        keep, every = self.config.keep, self.config.every
        store, agent = ctx.store, ctx.agent
        recent = store.entries_list(agent, session, self.turn_kind, last=keep + every + 1)
        n = recent[-1]["data"]["n"] + 1 if recent else 1
        turn = {
            "n": n,
            "question": str(event.get("question", ""))[:TURN_CHARS],
            "answer": str(event.get("answer", ""))[:TURN_CHARS],
        }
        self._add(ctx, session, event, self.turn_kind, turn)
        ctx.extras["turn"] = n
        summary = self._summary(ctx, session)
        through = summary["through"] if summary else 0
        if n - through <= keep + every:
            return
        cut = n - keep
        folded = [e["data"] for e in recent if through < e["data"]["n"] <= cut]
        earlier = summary["text"] if summary else ""
        text = self._summarize(earlier, folded, ctx)
        self._add(ctx, session, event, self.summary_kind, {"text": text, "through": cut, "at": n})
        ctx.extras |= {"folded": [through + 1, cut], "summary": text, "through": cut}

    def _summarize(self, earlier: str, turns: list[dict[str, Any]], ctx: HookContext) -> str:
        """The new summary: recorded during a replay, else the configured summarizer's."""
        if ctx.replay is not None and isinstance(ctx.replay.get("summary"), str):
            return str(ctx.replay["summary"])
        limit = self.config.max_summary_chars
        ctx.extras["summarizer"] = self.config.summarizer
        if self.config.summarizer == "script":
            return clip(self._script_summary(earlier, turns), limit)
        if self.config.summarizer == "provider":
            text = self._provider_summary(earlier, turns, ctx)
            if text is not None:
                return clip(text, limit)
        return offline_summary(earlier, turns, limit)

    def _provider_summary(
        self, earlier: str, turns: list[dict[str, Any]], ctx: HookContext
    ) -> str | None:
        """The provider's summary; None (and the record says why) if there is no provider or
        it failed: the offline summary stands in."""
        if self.provider is None:
            ctx.extras["fallback"] = "no provider is configured (engine.yaml provider.kind)"
            return None
        system = (self.config.instructions or SUMMARIZER_PROMPT).replace(
            "{max}", str(self.config.max_summary_chars)
        )
        user = json.dumps({"earlier_summary": earlier, "turns": turns}, ensure_ascii=False)
        endpoint = self.provider.endpoint
        request = {
            "model": self.config.model or endpoint.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": endpoint.max_tokens,
            "temperature": 0,
        }
        try:
            call = self.provider.complete(request)
        except ProviderError as exc:
            ctx.extras |= {"fallback": str(exc), "provider_call": exc.call}
            return None
        ctx.extras["provider_call"] = call
        answer = call.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            ctx.extras["fallback"] = "the provider answered no summary"
            return None
        return answer.strip()

    def _script_summary(self, earlier: str, turns: list[dict[str, Any]]) -> str:
        """``summarize(earlier_summary, turns)`` of the hook's script, in the sandbox.

        Raises:
            ScriptError: the script failed or returned something other than text.
        """
        assert self.pool is not None and self.script is not None  # built so for script
        result = self.pool.call(
            self.script,
            "on_after_turn",
            {"earlier_summary": earlier, "turns": turns},
            config={},
            state={},
            owner=self._owner,
        )
        text = (result.value or {}).get("summary")
        if not isinstance(text, str):
            raise ScriptRuntimeError(
                f"{self.script.filename}: summarize must return text, not {type(text).__name__}",
                hook=self.name,
                language=self.script.language.value,
            )
        return text

    # -- before_call: the summary and the recent turns --------------------------------------

    def _before_call(self, session: str, event: dict[str, Any], ctx: HookContext) -> Change | None:
        recorded = ctx.replay or {}
        if isinstance(recorded.get("summary"), str) and isinstance(recorded.get("through"), int):
            text, through = str(recorded["summary"]), int(recorded["through"])
        else:
            summary = self._summary(ctx, session)
            if summary is None:
                return None
            text, through = summary["text"], summary["through"]
            if self.personal is not None:  # the answer may use what the user said before
                why = f"compaction hook {self.name} showed the conversation's summary"
                turn, question = event.get("turn_id"), event.get("question")
                self.personal.mark(ctx.scope_key, turn, question, why, session=session)
        messages = recent_messages(event.get("messages") or [], through)
        dropped = len(event.get("messages") or []) - len(messages)
        ctx.extras |= {"summary": text, "through": through, "messages_dropped": dropped}
        section = f"{self.config.heading}\n{text}" if self.config.heading else text
        return Change(sections=[section], messages=messages)

    # -- entries ---------------------------------------------------------------------------

    def _summary(self, ctx: HookContext, session: str) -> dict[str, Any] | None:
        found = ctx.store.entries_list(ctx.agent, session, self.summary_kind, last=1)
        return found[0]["data"] if found else None

    def _add(
        self,
        ctx: HookContext,
        session: str,
        event: dict[str, Any],
        kind: str,
        data: dict[str, Any],
    ) -> None:
        ctx.store.entries_add(
            ctx.agent,
            session,
            [{"kind": kind, "data": data}],
            user_id=event.get("scope", {}).get("user_id"),
            turn=event.get("turn_id"),
            time=event["time"],
        )
        ctx.extras.setdefault("entries_added", []).append({"kind": kind, "data": data})


def recent_messages(messages: list[Any], through: int) -> list[Any]:
    """``messages`` (the whole conversation, oldest first) without the turns up to and
    including turn ``through``: a turn starts at its user message; system messages stay."""
    users = 0
    kept: list[Any] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user":
            users += 1
        if role == "system" or users > through:
            kept.append(message)
    return kept


def offline_summary(earlier: str, turns: list[dict[str, Any]], limit: int) -> str:
    """An extractive summary: the earlier one, then a line per turn (the first sentence of
    the question and of the answer); past ``limit`` the oldest lines go. Deterministic."""
    lines = [line for line in earlier.splitlines() if line.strip()]
    for turn in turns:
        question, answer = _first_sentence(turn["question"]), _first_sentence(turn["answer"])
        lines.append(f"Turn {turn['n']}: the user asked: {question} The answer: {answer}")
    while len(lines) > 1 and len("\n".join(lines)) > limit:
        lines.pop(0)
    return clip("\n".join(lines), limit)


def _first_sentence(text: str, cap: int = 160) -> str:
    first = _SENTENCE.split(" ".join(text.split()), maxsplit=1)[0]
    return first if len(first) <= cap else first[: cap - 1] + "…"


def clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters (a cut one ends with an ellipsis)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def build(spec: HookSpec, env: BuildEnv) -> CompactionHook:
    """The runnable hook of a validated ``compaction`` spec; a summarize script is compiled.

    Raises:
        ScriptCompileError: the summarize script does not compile.
        ConfigError: the script defines no ``summarize``.
    """
    config: CompactionConfig = spec.config
    hook = CompactionHook(spec, config, personal=shared(env.extra))
    if config.summarizer == "provider":
        live = getattr(env.providers(), "live", None)
        if live is not None:
            endpoint = replace(live.endpoint, max_tokens=config.max_tokens, json_mode=False)
            hook.provider = OpenAIProvider(endpoint)
    if config.summarizer == "script":
        hook.pool, hook.script = _compile(spec, config, env)
    return hook


def _compile(
    spec: HookSpec, config: CompactionConfig, env: BuildEnv
) -> tuple[WorkerPool, CompiledScript]:
    if spec.script_path is not None:
        language = Language.PYTHON if spec.script_path.suffix == ".py" else Language.JAVASCRIPT
        source, filename = spec.script_text or "", str(spec.script_path)
    else:
        language = Language(config.language or Language.PYTHON)  # the model requires one
        source, filename = config.source or "", spec.shown
    if not re.search(r"\bsummarize\b", source):
        field = "script" if spec.script_path is not None else "source"
        problem = "the summarize script defines no summarize(earlier_summary, turns)"
        raise ConfigError([Problem(spec.shown, spec.line(field), field, problem)])
    pool: WorkerPool = env.sandbox()
    return pool, pool.compile(source + _SHIMS[language], filename=filename, language=language)
