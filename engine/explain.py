"""Explain an agent: the effective order of hooks per point, and warnings found statically.

The order is the pipeline's (an agent's, or a session's: agent, session, then host layer).

The warnings are heuristics, and say so. Found: a hook that never runs because an enforced hook
before it blocks unconditionally (a script whose ``on_<point>`` starts with ``return
{block: ...}``); a hook that can never change anything (inject without messages or notice,
escalate without any trigger); two enforced hooks replacing the same field at a point; a hook
that changes a tool result or an answer with ``on_error: ignore`` (its failure lets the unchanged
data through). Not
found: blocks behind conditions that are always true, fields set through variables or helper
functions, anything decided by data at run time.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from engine.changes import REPLACE
from engine.config.loader import HookSpec, show
from engine.config.models import EscalateConfig, FaqCacheConfig, InjectConfig
from engine.hosts import HostProfile
from engine.kinds import Hook, Mode
from engine.kinds.base import OnError
from engine.pipeline import Pipeline
from engine.points import ACCEPTED, Point

_C = TypeVar("_C")


@dataclass(frozen=True)
class Entry:
    """A hook at one point, in the order it runs."""

    name: str
    kind: str
    version: str
    mode: str
    layer: str
    on_error: str
    source: str


@dataclass
class Explanation:
    """An agent's pipeline per point, and what looks wrong."""

    agent: str
    generation: int
    points: dict[str, list[Entry]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def explain(pipeline: Pipeline, point: Point | None = None) -> Explanation:
    """The order of ``pipeline``'s hooks at every point (or one), with warnings."""
    result = Explanation(pipeline.agent, pipeline.generation)
    for p in [point] if point else list(Point):
        slots = pipeline.by_point[p]
        result.points[p.value] = [_entry(s.hook, s.layer) for s in slots]
        result.warnings += _point_warnings(p, [s.hook for s in slots])
    if point is None:
        result.warnings += [w for s in pipeline.slots for w in _idle_warnings(s.hook)]
    return result


def explain_agent(
    agent: Any,
    point: Point | None = None,
    *,
    session_hooks: list[str] | None = None,
    drop_agent_hooks: bool = False,
) -> Explanation:
    """``explain`` of an agent's live pipeline, or of a session's with ``session_hooks``
    (``Agent.session``: its hooks between the agent's and the host layer's).

    Raises:
        ConfigError: a session hook is not in the agent's hooks/ folder (naming the folder
            and the hooks there) or does not load.
    """
    if session_hooks is None:
        return explain(agent.pipeline, point)
    hooks = [name.strip() for name in session_hooks if name.strip()]
    with agent.session("explain", hooks, drop_agent_hooks=drop_agent_hooks) as session:
        return explain(session.pipeline, point)


def _entry(hook: Hook, layer: str) -> Entry:
    return Entry(
        hook.name,
        hook.kind,
        hook.version,
        hook.mode.value,
        layer,
        hook.on_error.value,
        str(hook.source),
    )


def _point_warnings(point: Point, hooks: list[Hook]) -> list[str]:
    warnings = []
    for i, hook in enumerate(hooks):
        if hook.mode is Mode.ENFORCE and always_blocks(hook, point) and hooks[i + 1 :]:
            later = ", ".join(h.name for h in hooks[i + 1 :])
            warnings.append(
                f"{point.value}: {hook.name} blocks unconditionally, so {later} never run"
            )
            break
    warnings += [w for hook in hooks if (w := ignore_warning(hook, point))]
    setters: dict[str, str] = {}
    for hook in hooks:
        if hook.mode is not Mode.ENFORCE:
            continue
        for name in sorted(replaced_fields(hook, point)):
            if name in setters:
                warnings.append(
                    f"{point.value}: {setters[name]} and {hook.name} both replace "
                    f"{name!r}; when both fire, {hook.name}'s wins"
                )
            setters[name] = hook.name
    return warnings


OUTPUT_FIELDS = {Point.TOOL_RESULT: "result", Point.BEFORE_ASSISTANT_MESSAGE: "answer"}
"""The points whose change stands between data and its reader, and the field it changes."""


def ignore_warning(hook: Hook, point: Point) -> str | None:
    """A warning if ``hook`` changes what reaches the model or the user at ``point`` (a
    script subscribed to tool_result or before_assistant_message, or a kind that replaces
    the result or answer) and runs with ``on_error: ignore``: if it fails, the unchanged
    result or answer (the secret it would have redacted) passes."""
    what = OUTPUT_FIELDS.get(point)
    if what is None or hook.mode is not Mode.ENFORCE or hook.on_error is not OnError.IGNORE:
        return None
    if hook.kind != "script_hook" and what not in replaced_fields(hook, point):
        return None
    reader = "the model" if point is Point.TOOL_RESULT else "the user"
    return (
        f"{_on_error_at(hook)}: {hook.name} changes the {what} at {point.value} with "
        f"on_error: ignore; if it fails, the unchanged {what} reaches {reader} "
        "(on_error: fail withholds it)"
    )


def _on_error_at(hook: Hook) -> str:
    """Where the hook's on_error is decided: the key's file and line, else the file."""
    spec = getattr(hook, "spec", None)
    shown = getattr(spec, "shown", None) or _shown(str(hook.source))
    set_here = getattr(getattr(spec, "config", None), "on_error", None) is not None
    line = spec.line("on_error") if set_here and isinstance(spec, HookSpec) else None
    return f"{shown}:{line}" if line else f"{shown} (on_error: ignore is the {hook.kind} default)"


def _idle_warnings(hook: Hook) -> list[str]:
    if hook.kind == "inject":
        inject = _config(hook, InjectConfig)
        if not (inject.messages or inject.notice):
            return [f"{hook.name}: inject has no messages and no notice; it never changes anything"]
    if hook.kind == "escalate":
        escalate = _config(hook, EscalateConfig)
        if not (
            escalate.off_topic_keywords
            or escalate.empty_answer_patterns
            or escalate.min_answer_chars
        ):
            return [
                f"{hook.name}: escalate has no off_topic_keywords, empty_answer_patterns or "
                "min_answer_chars; it never fires"
            ]
    return []


def _config(hook: Hook, config_type: type[_C]) -> _C:
    """The config of a built-in kind's hook (its spec's config, by the kind's discriminator)."""
    config = getattr(hook, "config", None)
    if not isinstance(config, config_type):
        raise TypeError(f"{hook.name}: a {hook.kind} hook without a {config_type.__name__}")
    return config


# -- what a hook does, statically -----------------------------------------------------------------


def replaced_fields(hook: Hook, point: Point) -> set[str]:
    """The fields ``hook`` may replace at ``point`` (a later change of them wins)."""
    replaceable = set(REPLACE) | ({"messages"} if point is Point.BEFORE_CALL else set())
    replaceable &= ACCEPTED[point]
    if hook.kind == "escalate" and point is Point.BEFORE_USER_MESSAGE:
        return {"answer"} if _config(hook, EscalateConfig).suppress_on_off_topic else set()
    if hook.kind == "faq_cache" and point is Point.BEFORE_USER_MESSAGE:
        return {"answer"} if _config(hook, FaqCacheConfig).short_circuit else set()
    source = _script_source(hook)
    if source is None:
        return set()
    return {f for f in replaceable if f in _returned_keys(source, point)}


KIND_FIELDS: dict[str, dict[Point, frozenset[str]]] = {
    "inject": {Point.BEFORE_USER_MESSAGE: frozenset({"messages", "notice"})},
    "escalate": {
        Point.BEFORE_USER_MESSAGE: frozenset({"answer", "notice"}),
        Point.BEFORE_ASSISTANT_MESSAGE: frozenset({"append", "notice"}),
    },
    "faq_cache": {Point.BEFORE_USER_MESSAGE: frozenset({"answer", "notice", "messages"})},
    "memory": {Point.BEFORE_USER_MESSAGE: frozenset({"messages", "notice"})},
    "approval": {Point.TOOL_CALL: frozenset({"block"})},
}
"""The change fields each built-in kind may produce, per point."""


def host_warnings(hook: Hook, point: Point, host: HostProfile) -> list[str]:
    """What ``host`` cannot do with ``hook`` at ``point``, found statically: the point has no
    event on the host (the hook never runs there), or the hook may change fields the host
    cannot apply (at ``tool_call`` those block the tool). A script's changes are read from
    its handler's source (a loose scan) and are known for sure only when it runs."""
    if hook.mode is not Mode.ENFORCE or not ACCEPTED[point]:
        return []
    if point not in host.applies:
        return [f"{hook.name} ({hook.kind}) handles {point.value}, where {host.name} asks nothing"]
    cannot = ACCEPTED[point] - host.applies[point]
    if hook.kind == "script_hook":
        may, how = _script_fields(hook, point), "returns"
    else:
        may, how = KIND_FIELDS.get(hook.kind, {}).get(point, frozenset()), "may change"
    unsupported = sorted(may & cannot)
    if not unsupported:
        if hook.kind != "script_hook" or may or not cannot:
            return []
        return [
            f"{hook.name} (script_hook) handles {point.value}: what it changes is known only "
            f"when it runs; {host.name} cannot apply {', '.join(sorted(cannot))} there"
        ]
    then = (
        "; the tool would be blocked"
        if point is Point.TOOL_CALL and set(unsupported) - {"notice"}
        else "; listed as unsupported when it does"
    )
    return [
        f"{hook.name} ({hook.kind}) {how} {', '.join(unsupported)} at {point.value}, which "
        f"{host.name} cannot apply{then}"
    ]


def _script_fields(hook: Hook, point: Point) -> frozenset[str]:
    source = _script_source(hook)
    if source is None:
        return frozenset()
    return frozenset(_returned_keys(source, point) & ACCEPTED[point])


def always_blocks(hook: Hook, point: Point) -> bool:
    """Whether ``hook``'s handler of ``point`` starts by returning a block (scripts only;
    the built-in kinds never block unconditionally)."""
    source = _script_source(hook)
    if source is None:
        return False
    language = getattr(getattr(hook, "config", None), "language", None)
    script = str(getattr(getattr(hook, "config", None), "script", "") or "")
    if language == "python" or script.endswith(".py"):
        return _python_first_block(source, f"on_{point.value}")
    return _js_first_block(source, f"on_{point.value}")


def _script_source(hook: Hook) -> str | None:
    spec = getattr(hook, "spec", None)
    text = getattr(spec, "script_text", None)
    if text is None:
        text = getattr(getattr(hook, "config", None), "source", None)
    return text if isinstance(text, str) else None


def _python_first_block(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            body = [s for s in node.body if not _is_docstring(s)]
            return bool(body) and _returns_block(body[0])
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _returns_block(stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Dict)):
        return False
    return any(isinstance(k, ast.Constant) and k.value == "block" for k in stmt.value.keys)


_JS_FIRST_BLOCK = r"function\s+{name}\s*\([^)]*\)\s*\{{\s*return\s*\{{\s*['\"]?block['\"]?\s*:"


def _js_first_block(source: str, name: str) -> bool:
    return re.search(_JS_FIRST_BLOCK.format(name=re.escape(name)), source) is not None


def _returned_keys(source: str, point: Point) -> set[str]:
    """Keys that appear as ``key:`` / ``"key":`` inside the handler of ``point`` (a loose
    textual scan: it may see keys of other dicts in the handler too)."""
    body = _handler_text(source, f"on_{point.value}")
    return set(re.findall(r"['\"]?\b([a-z_]+)\b['\"]?\s*:", body)) if body else set()


def _handler_text(source: str, name: str) -> str:
    match = re.search(rf"(def|function)\s+{re.escape(name)}\s*\(", source)
    if match is None:
        return ""
    rest = source[match.end() :]
    following = re.search(r"\n(def|function)\s+\w+\s*\(", rest)
    return rest[: following.start()] if following else rest


def explanation_lines(ex: Explanation) -> list[str]:
    """The explanation as the command line prints it."""
    lines = [f"agent {ex.agent} (generation {ex.generation})"]
    width = max([5, *(len(e.layer) for entries in ex.points.values() for e in entries)])
    for point, entries in ex.points.items():
        lines.append(f"{point}:" + ("" if entries else "  (no hooks)"))
        for n, e in enumerate(entries, 1):
            lines.append(
                f"  {n}. {e.name:<20} {e.kind:<12} {e.version}  {e.mode:<7}  "
                f"{e.layer:<{width}}  on_error={e.on_error}  {_shown(e.source)}"
            )
    lines += [f"warning: {w}" for w in ex.warnings] or ["no warnings"]
    return lines


def _shown(path: str) -> str:
    return show(Path(path))


def as_data(ex: Explanation) -> dict[str, Any]:
    return {
        "agent": ex.agent,
        "generation": ex.generation,
        "warnings": ex.warnings,
        "points": {p: [e.__dict__ for e in entries] for p, entries in ex.points.items()},
    }


__all__ = [
    "Entry",
    "Explanation",
    "always_blocks",
    "as_data",
    "explain",
    "explain_agent",
    "explanation_lines",
    "host_warnings",
    "ignore_warning",
    "replaced_fields",
]
