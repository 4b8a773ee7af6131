"""The configuration models: engine.yaml, agent.yaml, and one model per hook kind.

YAML keys are the field names, so errors use the user's own words. Unknown fields are refused.
Field docstrings are the reference documentation (docs/hooks.md follows them).

Every command imports these models, so they are cheap to define: a model's validator is built
when it first validates (``defer_build``), and the field docstrings stay in the source rather
than being read into the models (``use_attribute_docstrings`` reads and parses this file's
source once per model: a third of the time it takes to import).
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from engine.errors import EventError, InputError
from engine.points import Point, make_event
from engine.policy import Mode, OnError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _no_bool(kind: str) -> BeforeValidator:
    """Refuse ``true`` and ``false`` where a number goes: pydantic takes them as 1 and 0, so
    ``timeout_ms: true`` would be a 1 ms budget. ``kind`` is the error type a wrong number
    has, so the message and the hint are the usual ones (``must be a whole number``)."""

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError(kind, "must be a number, not true or false")
        return value

    return BeforeValidator(check)


Int = Annotated[int, _no_bool("int_type")]
"""A whole number of the config; never a boolean."""
Float = Annotated[float, _no_bool("float_type")]
"""A number of the config; never a boolean."""

Loc = tuple[str | int, ...]


def _json_data(config: dict[str, Any]) -> dict[str, Any]:
    """Refuse, at its own key, a value a script cannot be given: ``host.config`` reaches the
    script as JSON, so a date, binary data, a set or a NaN would load and fail every call."""
    bad = _not_json(config, ())
    if bad is None:
        return config
    loc, value = bad
    error = PydanticCustomError(
        "json_data",
        "must be JSON data (text, a number, true or false, null, a list or a mapping), as the "
        "script is given it; got {got}",
        {"got": _described(value)},
    )
    raise ValidationError.from_exception_data(
        "config", [InitErrorDetails(type=error, loc=loc, input=value)]
    )


def _not_json(value: Any, loc: Loc) -> tuple[Loc, Any] | None:
    """The first place in ``value`` that is not JSON data, and what is there."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str | int | float | bool | None):
                return (*loc, str(key)), key
            found = _not_json(item, (*loc, key if isinstance(key, str | int) else str(key)))
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):  # a tuple of the Python API is sent as a list
        found_items = (_not_json(item, (*loc, i)) for i, item in enumerate(value))
        return next((found for found in found_items if found is not None), None)
    if isinstance(value, float) and not math.isfinite(value):
        return loc, value
    return None if value is None or isinstance(value, str | int | float) else (loc, value)


def _described(value: Any) -> str:
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()!r} (put it in quotes to give it as text)"
    if isinstance(value, bytes):
        return "binary data (!!binary)"
    if isinstance(value, set):
        return "a set (!!set); write a list"
    if isinstance(value, float):
        return f"{value} (JSON has no NaN or infinity)"
    return type(value).__name__


JsonConfig = Annotated[dict[str, Any], AfterValidator(_json_data)]
"""A script's ``config:`` (its ``host.config``): a mapping of JSON data."""


# -- hook tests --------------------------------------------------------------------------------


class HookTestExpect(Strict):
    """What a hook test expects of the outcome; only the fields given are checked."""

    blocked: bool | None = None
    """Whether the point is refused (at tool_call: the tool must not run)."""
    reason_contains: str | None = None
    """A text the block reason contains."""
    answer: str | None = None
    """The answer equals this (``null``: no answer)."""
    answer_contains: str | None = None
    """A text the answer contains."""
    question: str | None = None
    """The (rewritten) question equals this."""
    messages: list[dict[str, Any]] | None = None
    """The messages equal these ({role, content} each)."""
    messages_contain: str | None = None
    """A text some message's content contains."""
    input: dict[str, Any] | None = None
    """tool_call: the input the tool runs with equals this."""
    input_contains: dict[str, Any] | None = None
    """tool_call: the input has these keys with these values."""
    result: Any = None
    """tool_result: the result equals this."""
    result_contains: str | None = None
    """tool_result: the result, as text, contains this."""
    notices_contain: str | None = None
    """A text some notice contains."""
    no_change: bool | None = None
    """true: the hook changed nothing (no block, answer, messages, notice, ...)."""


class HookTestStep(Strict):
    """An event evaluated before a test's own, in the same scope (e.g. an earlier message)."""

    point: Point
    """The point to evaluate."""
    event: dict[str, Any] = Field(default_factory=dict)
    """The point's event fields (question, name, input, answer, ...)."""
    scope: dict[str, str] = Field(default_factory=dict)
    """Scope values of this step over the test's (e.g. another ``session_id``)."""
    time: str | None = None
    """This step's time (``host.now()``); the test's ``time`` when not given."""


class HookTest(Strict):
    """One test of a hook: a point, an event, and what the outcome must be."""

    name: str = ""
    """What the test checks (shown in results)."""
    point: Point
    """The point to evaluate."""
    event: dict[str, Any] = Field(default_factory=dict)
    """The point's event fields (question, name, input, answer, ...)."""
    scope: dict[str, str] = Field(default_factory=dict)
    """user_id, session_id, template, process."""
    time: str = "2025-01-01T12:00:00+00:00"
    """The event's time (``host.now()``)."""
    given: list[HookTestStep] = Field(default_factory=list)
    """Events evaluated first, in the same scope, their outcomes not checked."""
    expect: HookTestExpect
    """The expectations on the outcome."""

    @model_validator(mode="after")
    def _event_fits_point(self) -> HookTest:
        steps = [
            (f"given[{i}].event", s.point, s.event, {**self.scope, **s.scope})
            for i, s in enumerate(self.given)
        ]
        for where, point, fields, scope in [*steps, ("event", self.point, self.event, self.scope)]:
            try:
                make_event(point, agent="test", time=self.time, scope=scope, **fields)
            except (ValidationError, TypeError, InputError, EventError) as exc:
                loc, message = _first_error(exc)
                at = ".".join([where, *loc]) if loc else where
                raise ValueError(f"{at}: {message} (in a {point.value} event)") from exc
        return self


def _first_error(exc: Exception) -> tuple[list[str], str]:
    """The first mistake of a test's event: its path inside the event, and what is wrong."""
    if isinstance(exc, EventError):
        loc, msg = exc.errors[0]["loc"], exc.errors[0]["msg"]
    elif isinstance(exc, ValidationError):
        loc, msg = list(exc.errors()[0]["loc"]), exc.errors()[0]["msg"]
    else:
        return [], str(exc)
    for python, yaml in _YAML_TERMS:
        msg = msg.replace(python, yaml)
    return [str(p) for p in loc], msg


_YAML_TERMS = ((", got a str ", ", got text "), ("must be a dict", "must be a mapping"))
"""The event's checks speak to host code (Python terms); a test's event is YAML."""


# -- hooks -----------------------------------------------------------------------------------


class HookBase(Strict):
    """Fields every hook has."""

    kind: str
    """Selects the hook's kind: inject, escalate, faq_cache, memory, script_hook, compaction,
    approval."""
    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]{1,100}$")
    """Unique within an agent; records and errors use it."""
    description: str = ""
    """Free text for people reading the config."""
    on_error: OnError | None = None
    """ignore | fail. Default: ignore for built-in kinds, fail for script_hook. At tool_call a
    failure always blocks the tool."""
    mode: Mode = Mode.ENFORCE
    """enforce | shadow. A shadow hook runs and is recorded, but its change is not applied."""
    tests: list[HookTest] = Field(default_factory=list)
    """Tests of this hook (also read from a sibling ``<name>.test.yaml``); ``hookengine test``
    runs them, and a reload whose new version fails them is refused."""

    default_on_error: ClassVar[OnError] = OnError.IGNORE

    @property
    def effective_on_error(self) -> OnError:
        return self.on_error or self.default_on_error


class InjectMessage(Strict):
    role: Literal["system", "user", "assistant"]
    """Who the message is from: system, user or assistant."""
    content: str
    """The text; ``{{question}}`` is replaced by the incoming user message."""


class InjectConfig(HookBase):
    """Adds messages to the context on user messages (before_user_message)."""

    kind: Literal["inject"]
    first_n: Int | None = Field(default=None, ge=1)
    """Fire only on the first N user messages per scope (in this process); unset: always."""
    notice: str = ""
    """A notice shown to the UI when the hook fires."""
    messages: list[InjectMessage] = Field(default_factory=list)
    """Messages to inject, in order."""


class EscalateConfig(HookBase):
    """Hands the user a human contact when the agent cannot help."""

    kind: Literal["escalate"]
    message: str = Field(min_length=1)
    """The contact message."""
    off_topic_keywords: list[str] = Field(default_factory=list)
    """Words that mark a question as off-topic (case-insensitive; Russian and English word
    forms match)."""
    suppress_on_off_topic: bool = False
    """On an off-topic question, answer with the message directly and skip the LLM."""
    empty_answer_patterns: list[str] = Field(default_factory=list)
    """Phrases (case-insensitive substrings) that mark an answer as not helping."""
    min_answer_chars: Int = Field(default=0, ge=0)
    """An answer shorter than this did not help. 0 turns the length check off."""
    remind_next_turn: bool = False
    """After an escalation, append the message to the next turn's answer in the same scope."""


class FaqStore(Strict):
    enabled: bool = True
    """Store new (question, answer) pairs after each turn."""
    min_question_chars: Int = Field(default=8, ge=0)
    """Shorter questions are not stored."""
    min_answer_chars: Int = Field(default=8, ge=0)
    """Shorter answers are not stored."""


class FaqCacheConfig(HookBase):
    """Answers repeated or similar questions from stored (question, answer) pairs."""

    kind: Literal["faq_cache"]
    db_path: str | None = None
    """SQLite file for the pairs (relative to the project); default: the engine's store."""
    db_url: str | None = None
    """A database URL (``postgresql://...``) instead of db_path."""
    max_candidates: Int = Field(default=5, ge=1, le=100)
    """How many prefiltered candidates the judge sees."""
    min_confidence: Float = Field(default=0.7, ge=0, le=1)
    """The judge's confidence needed for a hit."""
    short_circuit: bool = True
    """On a hit: answer directly and skip the LLM (true) or inject a hint (false)."""
    hit_notice: str = ""
    """Notice shown when the answer came from the cache."""
    hint_template: str = ""
    """The hint injected when short_circuit is false: ``{{question}}``, ``{{answer}}``."""
    fallback_score: Float = Field(default=0.6, ge=0, le=1)
    """Token-overlap score needed for a hit when no judge is available."""
    judge_instructions: str = ""
    """The judge's prompt (it answers in JSON)."""
    judge_model: str = ""
    """A model for the judge (default: the provider's model)."""
    store: FaqStore = Field(default_factory=FaqStore)
    """When new pairs are stored."""
    scope: Literal["global", "user"] = "global"
    """Who shares the pairs. ``global``: every user, so an answer that used per-user context
    (memory recalled for the turn) is never stored. ``user``: such answers are stored for
    that user only (and found only for them); answers without it are shared."""


class MemoryStore(Strict):
    enabled: bool = True
    """Extract and store facts after turns."""
    min_question_chars: Int = Field(default=4, ge=0)
    """Turns with shorter questions are not memorized."""
    min_answer_chars: Int = Field(default=20, ge=0)
    """Turns with shorter answers are not memorized."""
    extractor_instructions: str = ""
    """The memorizer's prompt."""
    memorizer_model: str = ""
    """A model for the memorizer (default: the provider's model)."""
    memorize_every: Int = Field(default=1, ge=1)
    """Run the memorizer every N turns."""
    max_episodes_per_scope: Int = Field(default=1000, ge=0)
    """Episodes (whole turns, both sides) kept per scope; recall searches them."""
    summary_max_chars: Int = Field(default=2000, ge=0)
    """The rolling summary's size limit."""


class MemoryConfig(HookBase):
    """Long-term memory per user that survives sessions."""

    kind: Literal["memory"]
    db_path: str | None = None
    """SQLite file for the memory (relative to the project); default: the engine's store."""
    db_url: str | None = None
    """A database URL (``postgresql://...``) instead of db_path."""
    max_candidates: Int = Field(default=30, ge=1, le=200)
    """How many facts and episodes a recall takes from the store, best first (the judge, when
    live, sees them all)."""
    recall_budget_chars: Int = Field(default=2000, ge=100, le=100_000)
    """The injected message's size limit in characters: the best recalled facts and episodes
    go in first, then lines of the rolling summary, while they fit."""
    min_confidence: Float = Field(default=0.6, ge=0, le=1)
    """A live judge's confidence needed to inject a fact or episode (offline, the engine's
    ranking and the budget decide)."""
    notice: str = ""
    """Notice when facts or episodes were recalled (``{{count}}``)."""
    inject_template: str = ""
    """Template of the injected system message: ``{{facts}}``, ``{{episodes}}``,
    ``{{summaries}}``, ``{{memories}}`` (all three with headings)."""
    judge_instructions: str = ""
    """The relevance judge's prompt."""
    judge_model: str = ""
    """A cheaper model for the judge."""
    backfill: bool = True
    """false: skip candidates with weak token overlap."""
    max_memories_per_scope: Int = Field(default=200, ge=1)
    """Facts kept per scope; the least important and oldest go first."""
    dedup_threshold: Float = Field(default=0.8, ge=0, le=1)
    """Similarity above which a new fact is a duplicate of an old one."""
    store: MemoryStore = Field(default_factory=MemoryStore)
    """When and how facts are extracted."""


class ScriptHookConfig(HookBase):
    """A user hook written in Python (RestrictedPython) or JavaScript (QuickJS)."""

    kind: Literal["script_hook"]
    script: str | None = None
    """A ``.py`` or ``.js`` file, relative to this YAML file; the suffix picks the runtime."""
    language: Literal["python", "javascript"] | None = None
    """With ``source``: the language of an inline script."""
    source: str | None = None
    """An inline script (with ``language``)."""
    points: list[Point] | None = None
    """Points to subscribe to; default: every ``on_<point>`` the script defines."""
    timeout_ms: Int | None = Field(default=None, gt=0, le=60_000)
    """Time budget per call; default from engine.yaml (scripts.timeout_ms), at most
    scripts.max_timeout_ms."""
    memory_mb: Int | None = Field(default=None, gt=0, le=4096)
    """Memory budget; default from engine.yaml (scripts.memory_mb), at most
    scripts.max_memory_mb."""
    config: JsonConfig = Field(default_factory=dict)
    """The script's settings, shown to it as ``host.config``."""

    default_on_error: ClassVar[OnError] = OnError.FAIL

    @field_validator("points")
    @classmethod
    def _some_points(cls, points: list[Point] | None) -> list[Point] | None:
        if points == []:  # a guard subscribed to nothing would pass every check silently
            raise ValueError(
                "an empty list subscribes the hook to no point, so it would never run (name "
                "the points, or drop points: to take every on_<point> the script defines)"
            )
        return points

    @model_validator(mode="after")
    def _one_source(self) -> ScriptHookConfig:
        if (self.script is None) == (self.source is None):
            raise ValueError(
                "script: give either script: (a file) or language: + source: (inline), "
                "not both and not neither"
            )
        if self.source is not None and self.language is None:
            raise ValueError(
                "source: an inline script needs a language (add language: python or "
                "language: javascript)"
            )
        if self.script is not None and self.language is not None:
            raise ValueError("language: is taken from the script's suffix (drop language:)")
        if self.script is not None and not self.script.endswith((".py", ".js")):
            raise ValueError(
                f"script: must name a .py or .js file, got {self.script!r} (rename the file: "
                "its suffix picks the language)"
            )
        return self


class CompactionConfig(HookBase):
    """Keeps a long conversation short: older turns are folded into a summary, and the model
    is shown the summary and the recent turns only (after_turn, before_call)."""

    kind: Literal["compaction"]
    keep: Int = Field(default=20, ge=1, le=100)
    """Turns shown to the model as they were (the newest); older ones only as the summary."""
    every: Int = Field(default=10, ge=1, le=100)
    """Turns past ``keep`` that wait before a fold: a fold happens when more than
    ``keep + every`` turns are not summarised, and folds all but the newest ``keep``."""
    summarizer: Literal["offline", "provider", "script"] = "offline"
    """offline (extractive, deterministic), provider (the OpenAI-compatible provider of
    engine.yaml), or script (``summarize(earlier_summary, turns)`` in the sandbox)."""
    script: str | None = None
    """With ``summarizer: script``: a ``.py`` or ``.js`` file defining ``summarize``, relative
    to this YAML file."""
    language: Literal["python", "javascript"] | None = None
    """With ``source``: the language of an inline summarize script."""
    source: str | None = None
    """With ``summarizer: script``: an inline script defining ``summarize`` (with
    ``language``)."""
    model: str = ""
    """With ``summarizer: provider``: the model (default: the provider's model)."""
    max_tokens: Int = Field(default=512, gt=0, le=32_000)
    """With ``summarizer: provider``: the token budget of one summary."""
    instructions: str = ""
    """With ``summarizer: provider``: the summarizer's prompt (default: the engine's)."""
    max_summary_chars: Int = Field(default=3000, ge=100, le=3000)
    """The summary's size limit (it is kept as an entry, which holds at most 4096 bytes)."""
    heading: str = "Summary of the conversation so far:"
    """The first line of the instruction section that shows the summary."""

    @model_validator(mode="after")
    def _script_for_script(self) -> CompactionConfig:
        given = self.script is not None or self.source is not None
        if self.summarizer != "script" and given:
            raise ValueError("summarizer: script: and source: are for summarizer: script")
        if self.summarizer == "script" and (self.script is None) == (self.source is None):
            raise ValueError(
                "summarizer: script needs either script: (a file) or language: + source: "
                "(inline), not both and not neither"
            )
        if self.source is not None and self.language is None:
            raise ValueError("source: an inline script needs a language (python or javascript)")
        if self.script is not None and not self.script.endswith((".py", ".js")):
            raise ValueError(f"script: must name a .py or .js file, got {self.script!r}")
        return self


class ApprovalWhen(Strict):
    """An inline script whose ``when(event, host)`` says whether to ask: a truthy answer
    asks, a falsy one lets the call through. Sandboxed like a script hook."""

    language: Literal["python", "javascript"]
    """The script's language."""
    source: str = Field(min_length=1)
    """The script; it defines ``when(event, host)``."""


class ApprovalConfig(HookBase):
    """Asks a person before a tool runs (tool_call); runs after every other tool_call hook,
    on the input they left."""

    kind: Literal["approval"]
    tools: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    """Tool names to ask about, as globs (``delete_*``); default: every tool."""
    when: ApprovalWhen | None = None
    """A condition over the event; unset: always ask for the tools above."""
    message: str = Field(default="Allow {{tool}} with {{input}}?", min_length=1)
    """What the person is shown: ``{{tool}}``, ``{{input}}`` (JSON), ``{{input.<key>}}``,
    ``{{call_id}}``."""
    timeout_s: Float = Field(default=300.0, gt=0, le=7 * 24 * 3600)
    """Seconds after the first ask past which the call is denied."""
    remember: Literal["none", "session", "user"] = "none"
    """An approval also allows the same tool with the same input later: in this session,
    for this user, or never."""

    default_on_error: ClassVar[OnError] = OnError.FAIL


HookConfig = Annotated[
    InjectConfig
    | EscalateConfig
    | FaqCacheConfig
    | MemoryConfig
    | ScriptHookConfig
    | CompactionConfig
    | ApprovalConfig,
    Field(discriminator="kind"),
]
"""Any hook's configuration; ``kind`` selects the model."""

KINDS: dict[str, type[HookBase]] = {
    "inject": InjectConfig,
    "escalate": EscalateConfig,
    "faq_cache": FaqCacheConfig,
    "memory": MemoryConfig,
    "script_hook": ScriptHookConfig,
    "compaction": CompactionConfig,
    "approval": ApprovalConfig,
}


# -- agents and the engine -------------------------------------------------------------------


class RecordsSettings(Strict):
    enabled: bool = True
    """Write a record for every evaluation."""
    mask: list[str] = Field(default_factory=list)
    """Dotted paths replaced by ``***`` in stored records, e.g. ``event.input.password``."""


class EngineRecordsSettings(RecordsSettings):
    """engine.yaml ``records``: the agents' defaults plus the writer's retry buffer."""

    buffer_max: Int = Field(default=50_000, ge=1, le=10_000_000)
    """Records held at most while the store is down (written or waiting); past it new
    records are dropped and counted as ``overflow``."""
    retry_s: Float = Field(default=120.0, gt=0, le=86_400)
    """How long a record waits for a store that is down; older ones are dropped and counted
    as ``expired``."""


class AgentConfig(Strict):
    """config/agents/<agent>/agent.yaml"""

    description: str = ""
    """Free text."""
    hook_files: list[str] = Field(default_factory=list)
    """Hook YAML files, relative to the agent's folder, in order."""
    hooks: list[str] = Field(default_factory=list)
    """Hook names, resolved to ``hooks/<name>.yaml``; they run after hook_files."""
    tool_files: list[str] = Field(default_factory=list)
    """Tool YAML files, relative to the agent's folder (docs/tools.md)."""
    tools: list[str] = Field(default_factory=list)
    """Tool names, resolved to ``tools/<name>.yaml``."""
    records: RecordsSettings | None = None
    """Per-agent records settings (default: engine.yaml's)."""


class ScriptSettings(Strict):
    timeout_ms: Int = Field(default=50, gt=0, le=60_000)
    """Default time budget of a script call."""
    memory_mb: Int = Field(default=32, gt=0, le=1024)
    """Default memory budget of a script."""
    workers: Int = Field(default=2, ge=1, le=64)
    """Sandbox worker processes."""
    max_timeout_ms: Int = Field(default=1000, gt=0, le=60_000)
    """Ceiling of any hook's ``timeout_ms``; a hook above it does not load."""
    max_memory_mb: Int = Field(default=256, gt=0, le=1024)
    """Ceiling of any hook's ``memory_mb``; a hook above it does not load."""
    max_workers_per_hook: Int | None = Field(default=None, ge=1, le=64)
    """Workers one hook may hold at once (its other calls wait, within their own time);
    default: ``workers`` - 1, at least 1, so one hook cannot hold the whole pool."""
    respawns_per_s: Float = Field(default=1.0, gt=0, le=100)
    """Replacement workers started per second after kills (the first 2 start at once)."""
    quarantine_kills: Int = Field(default=5, ge=1, le=1000)
    """Worker kills (timeouts past the grace, crashes, memory recycles) by one hook within
    ``quarantine_window_s`` that quarantine it: its calls fail at once until it is reloaded."""
    quarantine_window_s: Float = Field(default=60.0, gt=0, le=86_400)
    """The window ``quarantine_kills`` counts in."""
    max_contexts: Int = Field(default=64, ge=1, le=4096)
    """Prepared JavaScript contexts one worker keeps at most. Workers keep one per loaded
    JavaScript script hook (per agent) up to this; above it a warning is logged, and with
    more scripts than this in rotation a call may have to prepare its context on its own
    time (milliseconds). Each context costs worker memory (``python
    bench/bench_js_runtime.py`` prints how much a small script's holds)."""

    @model_validator(mode="after")
    def _defaults_within_ceilings(self) -> ScriptSettings:
        if self.timeout_ms > self.max_timeout_ms:
            raise ValueError(
                f"timeout_ms {self.timeout_ms} is above max_timeout_ms {self.max_timeout_ms}"
            )
        if self.memory_mb > self.max_memory_mb:
            raise ValueError(
                f"memory_mb {self.memory_mb} is above max_memory_mb {self.max_memory_mb}"
            )
        return self


class ProviderSettings(Strict):
    kind: Literal["offline", "openai"] = "offline"
    """offline (deterministic, no network) or openai (any OpenAI-compatible server)."""
    base_url: str = "https://api.openai.com/v1"
    """Chat-completions base URL (OpenAI, Ollama, vLLM, llama.cpp server)."""
    model: str = "gpt-4o-mini"
    """Default model for judges and memorizers."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key."""
    timeout_s: Float = Field(default=10.0, gt=0)
    """Per-request timeout."""
    max_tokens: Int = Field(default=512, gt=0)
    """Token budget per judge or memorizer call."""


class TokenSpec(Strict):
    """One bearer token of the HTTP service: its name, where it lives, what it may do."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    """Names the token in logs and errors (the token itself never appears there)."""
    env: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the token."""
    scopes: list[Literal["decide", "approve", "admin"]] = Field(min_length=1)
    """What the token may do: ``decide`` asks for decisions, ``approve`` answers the tool calls
    waiting on a person (a person's token, never the host's), ``admin`` calls the admin
    routes (and may approve too)."""


def _unique_names(tokens: list[TokenSpec]) -> list[TokenSpec]:
    seen: set[str] = set()
    for i, token in enumerate(tokens):
        if token.name in seen:
            error = PydanticCustomError(
                "duplicate_name", f"token name {token.name!r} is used twice"
            )
            detail = InitErrorDetails(type=error, loc=(i, "name"), input=token.name)
            raise ValidationError.from_exception_data("tokens", [detail])
        seen.add(token.name)
    return tokens


class HttpSettings(Strict):
    host: str = "127.0.0.1"
    """Address to bind."""
    port: Int = Field(default=8765, ge=0, le=65535)
    """Port to bind."""
    token_env: str = "HOOKENGINE_ADMIN_TOKEN"
    """Environment variable holding the admin bearer token; without one admin calls refuse."""
    token: str = ""
    """The admin bearer token itself (the environment variable wins). Prefer the variable:
    a token in a file is a secret in a file."""
    max_body_bytes: Int = Field(default=65536, gt=0)
    """Larger requests are refused with 413."""
    read_timeout_s: Float = Field(default=10.0, gt=0, le=3600)
    """A request (line, headers and body) must arrive within this many seconds of the
    connection opening or the previous response ending; else the connection is closed."""
    keep_alive_s: Int = Field(default=5, gt=0, le=3600)
    """An idle connection between requests is closed after this many seconds."""
    max_connections: Int = Field(default=64, gt=0, le=100_000)
    """Connections open at once; one more is answered 503 and closed at once."""
    max_header_bytes: Int = Field(default=16384, ge=1024, le=1_048_576)
    """The request line and headers together; larger heads get 400 and are closed."""
    tokens: Annotated[list[TokenSpec], AfterValidator(_unique_names)] = Field(default_factory=list)
    """Named bearer tokens with their scopes. ``token_env`` / ``token`` above, when set, is
    one more token with the ``admin`` scope."""
    max_concurrency: Int = Field(default=64, gt=0, le=100_000)
    """Decisions evaluated at once; one more is answered 429."""
    max_decision_body_bytes: Int = Field(default=1_048_576, gt=0, le=64 * 1_048_576)
    """Larger decision requests are refused with 413 (other routes keep ``max_body_bytes``)."""


class StoreSettings(Strict):
    connect_timeout_s: Float = Field(default=5.0, gt=0, le=600)
    """Time to get a database connection (a pooled one, or a new one through the server's
    start-up); past it the store call fails."""
    statement_timeout_s: Float = Field(default=5.0, gt=0, le=3600)
    """Time a store call's statements may take: PostgreSQL's ``statement_timeout``, and 1 s
    later the client drops a connection whose server stopped answering; SQLite's wait for a
    lock (busy timeout)."""


class ToolSettings(Strict):
    """Tool calls and the artifacts they make (docs/tools.md)."""

    timeout_ms: Int = Field(default=30_000, gt=0, le=3_600_000)
    """A tool call's time limit when its YAML sets none."""
    artifacts_dir: str = "data/artifacts"
    """Where artifact files live, relative to the project folder."""
    max_artifact_bytes: Int = Field(default=10_000_000, gt=0)
    """Largest artifact."""
    max_session_bytes: Int = Field(default=100_000_000, gt=0)
    """Bytes of artifacts one session may hold."""
    max_session_artifacts: Int = Field(default=1000, gt=0)
    """Artifacts one session may hold."""


class EngineSettings(Strict):
    """config/engine.yaml"""

    process: str = "hookengine"
    """The process name: the last fallback of a scope."""
    db_path: str = "data/hookengine.db"
    """The SQLite store (records, state, default for memory and FAQ), relative to the project."""
    db_url: str | None = None
    """A database URL (``postgresql://user@host/db``) instead of db_path."""
    store: StoreSettings = Field(default_factory=StoreSettings)
    """Timeouts of every store (the engine's, and memory's and FAQ's own)."""
    hook_files: list[str] = Field(default_factory=list)
    """Host-layer hook files, relative to the config folder; they run after every agent's."""
    hooks: list[str] = Field(default_factory=list)
    """Host-layer hook names, resolved to ``hooks/<name>.yaml`` in the config folder."""
    records: EngineRecordsSettings = Field(default_factory=EngineRecordsSettings)
    """Default records settings, and the record writer's retry buffer."""
    retention: Int = Field(default=100_000, ge=0)
    """Records kept at most (oldest go first); 0 keeps all."""
    scripts: ScriptSettings = Field(default_factory=ScriptSettings)
    """Script limits and workers."""
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    """The LLM judge and memorizer provider."""
    http: HttpSettings = Field(default_factory=HttpSettings)
    """The admin HTTP service."""
    tools: ToolSettings = Field(default_factory=ToolSettings)
    """Tool calls and artifacts."""

    def store_url(self, base_dir: Path) -> str:
        """The engine's store: ``db_url``, or ``db_path`` resolved against the project folder."""
        if self.db_url:
            return self.db_url
        path = Path(self.db_path)
        return str(path if path.is_absolute() else base_dir / path)
