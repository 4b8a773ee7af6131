"""Value types of the sandbox interface: languages, limits, compiled scripts, call results."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any


class Language(StrEnum):
    """A script language the sandbox runs."""

    PYTHON = "python"
    """RestrictedPython plus the engine's own policy."""
    JAVASCRIPT = "javascript"
    """QuickJS (the ``quickjs-ng`` binding) with frozen built-ins."""


@dataclass(frozen=True)
class Limits:
    """Budgets of one script call; the defaults apply unless engine.yaml or the hook overrides."""

    timeout_ms: int = 50
    """CPU/wall time of one call (compile and load get ``compile_timeout_ms``)."""
    memory_mb: int = 32
    """Heap the script may use (QuickJS memory limit; address space for Python)."""
    stack_kb: int = 256
    """JavaScript stack size; Python gets ``max_recursion`` frames instead."""
    max_recursion: int = 200
    """Python call depth of a script."""
    compile_timeout_ms: int = 2000
    """Time to parse, check and load a script (top-level code included)."""
    max_source_bytes: int = 256_000
    """Largest script source accepted."""
    max_result_bytes: int = 65_536
    """Largest result, as compact JSON in UTF-8."""
    max_depth: int = 32
    """Deepest nesting of any JSON value a script hands over (result, state, emit)."""
    max_log_lines: int = 50
    """Lines host.log keeps per call; later ones are counted and dropped."""
    max_log_chars: int = 1000
    """Characters kept of one log line."""
    max_emits: int = 20
    """host.emit calls per call."""
    max_emit_bytes: int = 8192
    """Largest emitted event, as compact JSON."""
    max_state_keys: int = 64
    """Keys one hook may keep per scope."""
    max_state_key_chars: int = 128
    """Longest state key."""
    max_state_value_bytes: int = 16_384
    """Largest state value, as compact JSON."""
    max_text_chars: int = 1_000_000
    """Longest string host functions accept (log, match, redact)."""
    max_pattern_chars: int = 512
    """Longest pattern (and redact replacement)."""
    max_patterns: int = 32
    """Patterns per host.redact call."""
    max_sequence: int = 1_000_000
    """Largest string/bytes/list a Python script may build with ``*``, ``%``, padding,
    ``replace``, ``translate``, ``join``, ``range`` or ``str()``; checked before it is built."""
    max_int_bits: int = 100_000
    """Largest integer a Python script may build with ``*``, ``**``, ``<<`` or ``pow``."""
    max_input_bytes: int = 4_000_000
    """Largest request (event + config + state + entries) sent to a worker."""
    max_artifacts: int = 8
    """``host.add_artifact`` calls per tool call (``run``)."""
    max_artifact_bytes: int = 65_536
    """Largest artifact text, in UTF-8."""
    max_entry_bytes: int = 4096
    """Largest conversation entry (``host.entries.add``'s data), as compact JSON."""
    max_entry_kind_chars: int = 64
    """Longest entry kind."""
    max_entry_adds: int = 16
    """``host.entries.add`` calls per call."""
    max_entries: int = 256
    """Entries one conversation keeps; the oldest go first (the store applies the same cap)."""

    def as_wire(self) -> dict[str, int]:
        """The limits as a JSON object for the worker (computed once: this is on every call)."""
        wire: dict[str, int] | None = self.__dict__.get("_wire")
        if wire is None:
            wire = asdict(self)
            object.__setattr__(self, "_wire", wire)
        return wire

    @property
    def key(self) -> str:
        """A short digest of the wire form: a worker that has these limits is sent only this."""
        key: str | None = self.__dict__.get("_key")
        if key is None:
            text = json.dumps(self.as_wire(), sort_keys=True)
            key = hashlib.sha256(text.encode()).hexdigest()[:16]
            object.__setattr__(self, "_key", key)
        return key


@dataclass(frozen=True)
class CompiledScript:
    """A script that compiled and loaded; cheap to hold, JSON-able parts only."""

    language: Language
    filename: str
    source: str
    functions: frozenset[str]
    """Names of the on_<point> functions the script defines."""
    key: str = field(default="", compare=False)
    """Content hash (with the owner, see ``owned_by``); workers cache compiled code and keep a
    prepared JavaScript context under it."""

    def __post_init__(self) -> None:
        if not self.key:
            digest = hashlib.sha256(f"{self.language}\0{self.filename}\0{self.source}".encode())
            object.__setattr__(self, "key", digest.hexdigest()[:32])

    @property
    def top_level(self) -> dict[str, Any] | None:
        """For JavaScript, the plan for running the top level once per prepared context (see
        engine/sandbox/jsscope.py); None: it runs on every call. Computed once, on first use;
        sent to a worker with the source."""
        if "_top_level" not in self.__dict__:
            plan = None
            if self.language is Language.JAVASCRIPT:
                from engine.sandbox.jsscope import top_level_plan  # the parser, only when needed

                plan = top_level_plan(self.source)
            object.__setattr__(self, "_top_level", plan)
        top: dict[str, Any] | None = self.__dict__["_top_level"]
        return top

    def owned_by(self, owner: str) -> CompiledScript:
        """The same script under a key of its own for ``owner`` (e.g. agent and hook).

        Workers keep one prepared context per key, so scripts of different owners never share
        one, even when their files are identical.
        """
        content = replace(self, key="").key  # the content hash, even if self is owned already
        digest = hashlib.sha256(f"{owner}\0{content}".encode())
        return replace(self, key=digest.hexdigest()[:32])


@dataclass(frozen=True)
class BatchCall:
    """One script call of a batch (``WorkerPool.call_batch``): the hooks of a point in a row."""

    script: CompiledScript
    function: str
    """The script function to call, e.g. ``on_tool_call``."""
    config: dict[str, Any]
    config_key: str
    """Names the config value: the same value, the same key (a worker is sent a config once)."""
    state: dict[str, Any]
    limits: Limits
    owner: str
    """The hook in the pool's fairness rules (its worker share, kills, quarantine)."""
    apply: bool = True
    """False (shadow mode): the call's answer does not change the event later calls see."""
    entries: list[dict[str, Any]] | None = None
    """The conversation's entries, oldest first (``{kind, data, turn}``), for
    ``host.entries.list``; None: not loaded (the script never mentions entries)."""


@dataclass
class CallResult:
    """What one successful script call produced; every part is checked plain JSON."""

    value: dict[str, Any] | None
    logs: list[str]
    emits: list[dict[str, Any]]
    state_writes: dict[str, Any]
    """Keys the script set (``None`` means deleted); persist them only on success."""
    duration_ms: float
    state_ttls: dict[str, float] = field(default_factory=dict)
    """Of ``state_writes``, the keys set with a TTL: seconds after the event's time."""
    entries_added: list[dict[str, Any]] = field(default_factory=list)
    """``{kind, data}`` the script added with ``host.entries.add``, in order; stored only on
    success."""
    entries_read: bool = False
    """Whether the script called ``host.entries.list`` (its record then keeps what it saw)."""


def config_key(config: Any) -> str:
    """The same config value, the same key: a digest of its canonical JSON (a worker keeps the
    parsed config per key, so the key must change whenever the value does). A value that is
    not JSON gets a key of its own that no worker is sent: its calls fail before sending,
    naming the problem."""
    try:
        text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return f"unsent:{id(config)}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
