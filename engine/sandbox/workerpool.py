"""WorkerPool: the Sandbox the engine holds; compiles and calls scripts in supervised workers."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from engine.errors import Problem, ScriptCompileError, ScriptLimitError, ScriptRuntimeError
from engine.points import Point, suggest
from engine.sandbox.limits import CallResult, CompiledScript, Language, Limits
from engine.sandbox.pool import GRACE_S, Worker, WorkerDied, Workers
from engine.sandbox.supervise import PoolPolicy

_POINTS = [p.value for p in Point]


class WorkerPool:
    """A small pool of pre-started worker processes; thread-safe, many threads may call at once.

    Args:
        size: worker processes kept running.
        limits: defaults for every call (a call may pass its own).
    """

    def __init__(
        self,
        *,
        size: int = 2,
        limits: Limits = Limits(),  # noqa: B008 - frozen
        policy: PoolPolicy = PoolPolicy(),  # noqa: B008 - frozen
    ) -> None:
        self.limits = limits
        self._workers = Workers(size, policy)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker and reap it; calls after this fail with cause 'crashed'."""
        self._workers.close()

    def health(self) -> dict[str, Any]:
        """``{workers, busy, size, per_hook, spawned_total, spawn_failures, last_spawn_error,
        respawns_last_minute, respawns_pending, quarantined: [{hook, kills, window_s, since}]}``"""
        return self._workers.health()

    def forget(self, owner: str) -> None:
        """The hook ``owner`` names was rebuilt or closed: clear its kills and quarantine."""
        self._workers.forget(owner)

    def compile(
        self, source: str, *, filename: str, language: Language | str, key_owner: str | None = None
    ) -> CompiledScript:
        """Check a script and load it once in a worker (its top-level code runs, bounded).

        With ``key_owner`` the script comes back keyed for it (see CompiledScript.owned_by), and
        the context its load prepared serves that owner's first calls.

        Raises:
            ScriptCompileError: every syntax and policy problem, with line and column; a function
                named like a point that is not one, with a suggestion.
        """
        lang = Language(language)
        limits = self.limits
        if len(source.encode("utf-8", "surrogatepass")) > limits.max_source_bytes:
            raise ScriptCompileError(
                [
                    Problem(
                        filename, 1, None, f"script is larger than {limits.max_source_bytes} bytes"
                    )
                ],
                language=lang.value,
            )
        script = CompiledScript(lang, filename, source, frozenset())
        if key_owner is not None:
            script = script.owned_by(key_owner)
        message = {
            "op": "compile",
            "language": lang.value,
            "source": source,
            "filename": filename,
            "key": script.key,
            "top_level": script.top_level,
        }
        try:
            answer = self._exchange(message, lang, limits, budget_ms=limits.compile_timeout_ms)
        except ScriptRuntimeError as exc:
            raise ScriptCompileError(
                [Problem(filename, exc.line, None, exc.message)], language=lang.value
            ) from exc
        except ScriptLimitError as exc:
            raise ScriptCompileError(
                [Problem(filename, None, None, f"while loading: {exc.message}")],
                language=lang.value,
            ) from exc
        if not answer["ok"]:
            raise ScriptCompileError(
                [_problem(filename, p) for p in answer.get("problems", [])], language=lang.value
            )
        functions = [f for f in answer["functions"] if isinstance(f, str)]
        problems = check_functions(functions, source, filename=filename, language=lang)
        if problems:
            raise ScriptCompileError(problems, language=lang.value)
        return CompiledScript(lang, filename, source, frozenset(functions), key=script.key)

    def call(
        self,
        script: CompiledScript,
        function: str,
        event: dict[str, Any],
        *,
        config: dict[str, Any],
        state: dict[str, Any],
        limits: Limits | None = None,
        owner: str | None = None,
    ) -> CallResult:
        """Run ``function(event, host)`` of a compiled script in fresh interpreter state.

        ``owner`` names the hook for the pool's fairness rules (its share of the workers, its
        kill count and quarantine); default: the script's key.

        Raises:
            ScriptRuntimeError: cause 'error' (the script raised or misused host) or
                'invalid_result' (its return is not None/a plain JSON object within the caps).
            ScriptLimitError: cause 'timeout', 'memory', 'crashed' (its worker died), 'busy'
                (no worker came free within the call's time) or 'quarantined' (the hook kept
                killing workers; it stays so until rebuilt).
        """
        limits = limits or self.limits
        message = {
            "op": "call",
            "language": script.language.value,
            "function": function,
            "script": {"key": script.key, "filename": script.filename},
            "event": event,
            "config": config,
            "state": state,
        }
        answer = self._exchange(
            message,
            script.language,
            limits,
            budget_ms=limits.timeout_ms,
            script=script,
            owner=owner or script.key,
        )
        if not answer["ok"]:
            raise ScriptRuntimeError(
                str(answer.get("message", "script failed")),
                language=script.language.value,
                cause="error",
            )
        return _result(answer, script.language)

    def _exchange(
        self,
        message: dict[str, Any],
        language: Language,
        limits: Limits,
        *,
        budget_ms: int,
        script: CompiledScript | None = None,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """One request on one worker; worker failures become ScriptLimitError, bad answers too.

        The call's wall-clock deadline is bounded in two parts: the wait for a worker (at
        most one budget plus the grace, then the call fails as ``busy``) and the run (twice
        the budget plus the grace, counted from when the worker was taken). Twice, because
        the in-process limits count CPU time, which lags wall time on a loaded machine, and a
        call may first have to load its script (when no prepared context was ready), which
        gets a budget of its own. So a call never takes longer than ``3 * budget + 2 * grace``.
        A worker is sent a script's source and a set of limits only until it has them.
        """
        cap = _answer_cap(limits)
        message["limits_key"] = limits.key
        worker = self._workers.take(owner, timeout_s=budget_ms / 1000 + GRACE_S)
        end = time.monotonic() + 2 * budget_ms / 1000 + GRACE_S
        healthy = True  # a request that was never sent leaves the worker as it was
        try:
            data = _encode(message, worker, limits, script, language)
            healthy = False
            answer = worker.request(data, deadline_s=end - time.monotonic(), max_bytes=cap)
            if answer.get("kind") == "need_source" and script is not None:
                worker.known.discard(script.key)
                worker.known.discard(limits.key)
                data = _encode(message, worker, limits, script, language)
                answer = worker.request(data, deadline_s=end - time.monotonic(), max_bytes=cap)
            healthy = not answer.get("recycle") and answer.get("kind") != "crashed"
            if healthy:
                worker.known.add(limits.key)
                if script is not None:
                    worker.known.add(script.key)
        except WorkerDied as exc:
            if exc.timed_out:
                raise ScriptLimitError(
                    f"did not finish within {budget_ms} ms; its worker was stopped",
                    language=language.value,
                    cause="timeout",
                ) from exc
            raise ScriptLimitError(
                f"the script's worker died: {exc}", language=language.value, cause="crashed"
            ) from exc
        finally:
            self._workers.give_back(worker, healthy=healthy, owner=owner)
        _raise_failure(answer, language)
        return answer


def _encode(
    message: dict[str, Any],
    worker: Worker,
    limits: Limits,
    script: CompiledScript | None,
    language: Language,
) -> bytes:
    """The request line for ``worker``: source and limits only if it lacks them; size-capped."""
    if script is not None and script.key not in worker.known:
        message["script"]["source"] = script.source
        message["script"]["top_level"] = script.top_level
    else:
        message.get("script", {}).pop("source", None)
        message.get("script", {}).pop("top_level", None)
    if limits.key not in worker.known:
        message["limits"] = limits.as_wire()
    else:
        message.pop("limits", None)
    try:
        data = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError) as exc:
        raise ScriptRuntimeError(
            f"event, config and state must be JSON: {exc}", language=language.value
        ) from exc
    if len(data) > limits.max_input_bytes + len(script.source if script else ""):
        raise ScriptRuntimeError(
            f"event, config and state are larger than {limits.max_input_bytes} bytes",
            language=language.value,
        )
    return data + b"\n"


def _raise_failure(answer: dict[str, Any], language: Language) -> None:
    if answer.get("ok") is True or answer.get("kind") == "compile":
        return
    kind, message = answer.get("kind"), str(answer.get("message", "script failed"))
    if kind == "runtime":
        raise ScriptRuntimeError(
            message,
            language=language.value,
            line=_int(answer.get("line")),
            column=_int(answer.get("column")),
            cause="invalid_result" if answer.get("cause") == "invalid_result" else "error",
        )
    if kind == "limit":
        cause = answer.get("cause") if answer.get("cause") in ("timeout", "memory") else "crashed"
        raise ScriptLimitError(message, language=language.value, cause=cause)
    raise ScriptLimitError(message, language=language.value, cause="crashed")


def _result(answer: dict[str, Any], language: Language) -> CallResult:
    value, logs, emits, writes = (answer.get(k) for k in ("value", "logs", "emits", "state_writes"))
    ttls = answer.get("state_ttls")
    if not (
        (value is None or type(value) is dict)
        and type(logs) is list
        and type(emits) is list
        and type(writes) is dict
        and type(ttls) is dict
        and all(type(t) in (int, float) and k in writes for k, t in ttls.items())
        and all(type(x) is str for x in logs)
        and all(type(e) is dict for e in emits)
    ):
        raise ScriptLimitError(
            "the worker answered a malformed result", language=language.value, cause="crashed"
        )
    duration = answer.get("duration_ms")
    return CallResult(
        value=value,
        logs=logs,
        emits=emits,
        state_writes=writes,
        duration_ms=float(duration) if isinstance(duration, (int, float)) else 0.0,
        state_ttls={k: float(t) for k, t in ttls.items()},
    )


def check_functions(
    functions: list[str], source: str, *, filename: str, language: Language
) -> list[Problem]:
    """Problems with the script's on_<name> functions: misspelt points, or none at all."""
    problems = []
    for name in sorted(functions):
        if name[3:] in _POINTS:
            continue
        close = suggest(name[3:], _POINTS)
        line, column = _definition(source, name, language)
        problems.append(
            Problem(
                filename,
                line,
                None,
                f"{name} is not a point function",
                hint=f"did you mean 'on_{close}'?" if close else None,
                column=column,
            )
        )
    if not problems and not functions:
        problems.append(
            Problem(
                filename,
                1,
                None,
                "the script defines no on_<point> function",
                hint="e.g. on_tool_call(event, host)",
                column=1,
            )
        )
    return problems


def _definition(source: str, name: str, language: Language) -> tuple[int | None, int | None]:
    keyword = "def" if language is Language.PYTHON else "function"
    m = re.search(rf"^(.*?\b){keyword}\s+{re.escape(name)}\b", source, re.MULTILINE)
    if m is None:
        return None, None
    return source.count("\n", 0, m.start()) + 1, len(m.group(1)) + 1


def _problem(filename: str, raw: Any) -> Problem:
    raw = raw if isinstance(raw, dict) else {}
    return Problem(
        filename,
        _int(raw.get("line")),
        None,
        str(raw.get("message", "invalid script")),
        column=_int(raw.get("column")),
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _answer_cap(limits: Limits) -> int:
    escaped = 6  # \\uXXXX: the worst case of one character in JSON
    return (
        limits.max_result_bytes * escaped
        + limits.max_log_lines * (limits.max_log_chars + 8) * escaped
        + limits.max_emits * limits.max_emit_bytes * escaped
        + limits.max_state_keys
        * (limits.max_state_value_bytes + 2 * limits.max_state_key_chars + 32)
        * escaped
        + 65_536
    )
