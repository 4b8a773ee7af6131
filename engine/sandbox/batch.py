"""A batch on the host side: the calls left, the event they see, and one request on one worker.

``WorkerPool.call_batch`` runs a ``Batch`` as one or more ``Exchange``s: a request carrying
the calls that can go together (each hook within its share of the pool, every input JSON) and
the answers streamed back, one per call. The pool's sync and async paths differ only in how
they wait; everything else is here.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import ScriptError, ScriptLimitError, ScriptRuntimeError
from engine.sandbox import effects, hostclock
from engine.sandbox.limits import BatchCall, CallResult, Language, Limits
from engine.sandbox.pool import GRACE_S, Worker, WorkerDied, Workers

_CONFIGS_KEPT = 4096
dumps = json.JSONEncoder(separators=(",", ":")).encode
"""Compact JSON; one encoder for all (``json.dumps`` with separators makes one per call)."""
REQUEST_CHARS = 1_000_000
"""A request carries calls while its header stays within this (sources and configs counted);
one call always goes. A worker reads lines of at most 8 MB, which escaped text could reach."""


class Batch:
    """The calls of one ``call_batch`` and their results so far (``results[i]`` is call i's)."""

    def __init__(self, point: str, event: dict[str, Any], calls: Sequence[BatchCall]) -> None:
        self.point = point
        self.calls = calls
        self.results: list[CallResult | ScriptError] = []
        self.done = not calls
        self._event = event
        self._unapplied: list[Any] = []
        """Values of apply=True answers not yet in ``_event`` (the worker applied them)."""

    @property
    def finished(self) -> bool:
        """No call is left to run: all have results, or one of them ended the batch."""
        if self.done or len(self.results) >= len(self.calls):
            return True
        return self.event() is None  # a cut batch whose last answer ends the chain

    @property
    def next(self) -> BatchCall:
        """The first call without a result."""
        return self.calls[len(self.results)]

    def fail(self, exc: ScriptError) -> None:
        """The next call failed before it ran: the batch ends with its error."""
        self.results.append(exc)
        self.done = True

    def succeed(self, result: CallResult, *, apply: bool) -> None:
        self.results.append(result)
        if apply and result.value is not None:
            self._unapplied.append(result.value)

    def event(self) -> dict[str, Any] | None:
        """The event the next call sees: the answers so far applied (the host does what the
        worker did); None when one of them ends the batch."""
        for value in self._unapplied:
            event = (
                None if effects.stops(value) else effects.apply_raw(self.point, self._event, value)
            )
            if event is None:
                self.done = True
                return None
            self._event = event
        self._unapplied.clear()
        return self._event


class Exchange:
    """One request on one worker: the calls of a batch that go together, and their answers.

    The worker was taken for the first call's owner; the owners of the following calls are
    charged for it too (a hook's share of the pool counts every worker that may run its code)
    and released as their last answer comes in. A call whose owner holds its share already
    starts a new exchange later; one whose owner is quarantined, or whose inputs cannot be
    sent, ends the batch with that error in its place if the batch gets there.
    """

    def __init__(
        self,
        batch: Batch,
        worker: Worker,
        workers: Workers,
        *,
        configs: ConfigTexts,
        contexts: int,
    ) -> None:
        self.batch, self.worker, self.workers = batch, worker, workers
        self.start = len(batch.results)
        self.healthy = True
        self.blamed: str | None = None
        self._left: dict[str, int] = {}
        """Charged owners: calls of theirs in this exchange without an answer yet."""
        self._pending: ScriptError | None = None
        stop = self._charge()
        self._request = encode(batch, worker, self.start, stop, configs=configs, contexts=contexts)
        self.data, self.stop = self._request.data, self._request.stop
        if self.stop < stop:  # a call that cannot be sent: its error ends the batch there
            if self._request.error is not None:
                self._pending = self._request.error
            self._uncharge(stop)
        self.next = self.start
        self.deadline = 0.0

    # -- before sending --

    def _charge(self) -> int:
        """Charge the owners of the calls that can run on this worker now; where they end."""
        calls = self.batch.calls
        self._left[calls[self.start].owner] = 0
        new = []
        for call in calls[self.start + 1 :]:
            if call.owner not in self._left and call.owner not in new:
                new.append(call.owner)
        charged, error = self.workers.charge_all(new)
        for owner in new[:charged]:
            self._left[owner] = 0
        stop = self.start
        while stop < len(calls) and calls[stop].owner in self._left:
            self._left[calls[stop].owner] += 1
            stop += 1
        if error is not None and stop < len(calls) and calls[stop].owner == new[charged]:
            self._pending = error
        return stop

    def _uncharge(self, stop: int) -> None:
        """Release the owners of calls ``self.stop``..``stop`` that will not run here."""
        for call in self.batch.calls[self.stop : stop]:
            self._left[call.owner] -= 1
            if not self._left[call.owner]:
                del self._left[call.owner]
                self.workers.release(call.owner)

    @property
    def expecting(self) -> bool:
        """Whether an answer is still to come."""
        return self.healthy and self.next < self.stop and not self.batch.done

    def sent(self) -> None:
        """The request is written: the first call's deadline runs from now."""
        self.deadline = _deadline(self.batch.calls[self.next].limits)

    @property
    def cap(self) -> int:
        return answer_cap(self.batch.calls[self.next].limits)

    # -- answers --

    def answered(self, answer: dict[str, Any]) -> None:
        """Take the next call's answer."""
        index, call = self.next, self.batch.calls[self.next]
        self.next += 1
        language = call.script.language
        if answer.get("kind") == "need_source" and not self._request.complete[index - self.start]:
            # It lost something it had been sent (its caches are bounded): send it again.
            self._forget(call)
            self.next = self.stop  # the worker ended this request; the batch goes on
            return
        failure = failure_of(answer, language)
        if failure is not None:
            self.batch.fail(failure)
            if answer.get("kind") == "crashed" or answer.get("recycle"):
                self.healthy, self.blamed = False, call.owner
            elif answer.get("kind") == "need_source":  # the worker is broken, not the script
                self.healthy = False
            else:
                self.worker.known.add(call.script.key)
            return
        try:
            result = result_of(answer, language)
        except ScriptLimitError as exc:
            self.batch.fail(exc)
            self.healthy = self.next >= self.stop  # an answer may follow: not the worker to keep
            return
        self.batch.succeed(result, apply=call.apply)
        self.worker.known.add(call.script.key)
        if answer.get("end"):
            self.batch.done = True
        elif answer.get("recycle"):
            self.healthy, self.blamed = False, call.owner
        else:
            self._answered_owner(call.owner)
            if self.next < self.stop:
                self.deadline = _deadline(self.batch.calls[self.next].limits)

    def _answered_owner(self, owner: str) -> None:
        self._left[owner] -= 1
        if not self._left[owner] and self.next < self.stop:
            del self._left[owner]
            self.workers.release(owner)

    def _forget(self, call: BatchCall) -> None:
        for key in (call.script.key, call.limits.key, call.config_key):
            self.worker.known.discard(key)
            self._request.sent.discard(key)

    def died(self, exc: WorkerDied) -> None:
        """The worker did not answer the next call in time, or died: that call's failure."""
        call = self.batch.calls[self.next]
        self.healthy, self.blamed = False, call.owner
        language = call.script.language.value
        if exc.timed_out:
            error: ScriptError = ScriptLimitError(
                f"did not finish within {call.limits.timeout_ms} ms; its worker was stopped",
                language=language,
                cause="timeout",
            )
        else:
            error = ScriptLimitError(
                f"the script's worker died: {exc}", language=language, cause="crashed"
            )
        error.__cause__ = exc
        self.batch.fail(error)

    def abandon(self) -> None:
        """Nobody waits for the answers any more and they cannot be read: stop the worker,
        blaming no hook."""
        self.healthy, self.blamed = False, None

    def finish(self) -> bool:
        """Give the worker back (killed if it failed) and release every charge; whether a
        task waiting on this thread's loop got a worker (``Workers.give_back``)."""
        if self.healthy:  # limits and configs are kept on arrival, a script when it runs
            scripts = {call.script.key for call in self.batch.calls[self.start : self.stop]}
            self.worker.known.update(self._request.sent - scripts)
        pending = self._pending is not None and not self.batch.done
        if pending and len(self.batch.results) == self.stop:
            self.batch.fail(self._pending)  # type: ignore[arg-type]
        also = [owner for owner in self._left if owner != self.blamed]
        return self.workers.give_back(
            self.worker, healthy=self.healthy, owner=self.blamed, also=also
        )


class ConfigTexts:
    """Config values as JSON text, encoded once per config key."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def text(self, call: BatchCall) -> str:
        text = self._texts.get(call.config_key)
        if text is None:
            text = dumps(call.config)
            self.keep(call.config_key, text)
        return text

    def keep(self, key: str, text: str) -> None:
        if len(self._texts) >= _CONFIGS_KEPT:
            self._texts.clear()
        self._texts[key] = text


@dataclass
class Request:
    """What an exchange sends, and what it knows about it."""

    data: bytes = b""
    """The header line and the event line; empty when no call can be sent."""
    stop: int = 0
    """The calls sent end before this index."""
    complete: list[bool] = field(default_factory=list)
    """Per call sent: whether the request carried its source, limits and config."""
    sent: set[str] = field(default_factory=set)
    """Keys of the scripts, limits and configs the request carried."""
    error: ScriptError | None = None
    """Why call ``stop`` cannot be sent (inputs that are not JSON, or too large)."""


def encode(
    batch: Batch, worker: Worker, start: int, stop: int, *, configs: ConfigTexts, contexts: int
) -> Request:
    """The request for calls ``start``..``stop``, cut before the first whose inputs cannot go."""
    event = batch.event()
    if event is None:
        return Request(stop=start)
    try:
        event_text = dumps(event)
    except (TypeError, ValueError, RecursionError) as exc:
        return Request(stop=start, error=_not_json(exc, batch.calls[start]))
    req = Request(stop=start)
    parts: list[str] = []
    limits: dict[str, Any] = {}
    texts: dict[str, str] = {}
    size = 0
    for index in range(start, stop):
        call = batch.calls[index]
        if parts and size + _new_chars(call, worker, req.sent, configs) > REQUEST_CHARS:
            break  # the rest goes in a request of its own
        try:
            part = _call_part(call, worker, req.sent, len(event_text), configs, limits, texts)
        except ScriptError as exc:
            req.error = exc
            break
        size += len(part) + (len(texts[call.config_key]) if call.config_key in texts else 0)
        parts.append(part)
        sent = req.sent
        req.complete.append(
            call.script.key in sent and call.limits.key in sent and call.config_key in sent
        )
        req.stop = index + 1
    if parts:
        req.data = _request(batch.point, parts, limits, texts, event_text, worker, contexts)
    return req


def _new_chars(call: BatchCall, worker: Worker, sent: set[str], configs: ConfigTexts) -> int:
    """About how much a call adds to a request's header: its source and config if new."""
    size = 512
    if call.script.key not in worker.known and call.script.key not in sent:
        size += len(call.script.source)
    if call.config_key not in worker.known and call.config_key not in sent:
        with contextlib.suppress(TypeError, ValueError, RecursionError):  # failed in _call_part
            size += len(configs.text(call))
    return size


def _call_part(
    call: BatchCall,
    worker: Worker,
    sent: set[str],
    event_size: int,
    configs: ConfigTexts,
    limits: dict[str, Any],
    texts: dict[str, str],
) -> str:
    """One call's entry in the header; what the worker lacks goes into ``limits``/``texts``.

    Raises:
        ScriptRuntimeError: config or state are not JSON, or event, config and state together
            are larger than the call's ``max_input_bytes``.
    """
    try:
        config_text = configs.text(call)
        state = call.state
        state_text = "{}" if type(state) is dict and not state else dumps(state)
        if call.entries is not None:
            state_text += ',"entries":' + dumps(call.entries)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _not_json(exc, call) from exc
    if event_size + len(config_text) + len(state_text) > call.limits.max_input_bytes:
        raise ScriptRuntimeError(
            f"event, config, state and entries are larger than {call.limits.max_input_bytes} bytes",
            language=call.script.language.value,
        )
    script: dict[str, Any] = {"key": call.script.key, "filename": call.script.filename}
    if call.script.key not in worker.known and call.script.key not in sent:
        script["source"] = call.script.source
        script["top_level"] = call.script.top_level
        sent.add(call.script.key)
    if call.limits.key not in worker.known and call.limits.key not in sent:
        limits[call.limits.key] = call.limits.as_wire()
        sent.add(call.limits.key)
    if call.config_key not in worker.known and call.config_key not in sent:
        texts[call.config_key] = config_text
        sent.add(call.config_key)
    return _head(call, script) + state_text + "}"


_HEADS: dict[tuple[str, str, str, str, str, bool], str] = {}
_HEADS_KEPT = 4096


def _head(call: BatchCall, script: dict[str, Any]) -> str:
    """A call's header entry up to its state; the same for every call of a hook once the
    worker has the source, so it is encoded once."""
    key = (
        call.script.key,
        call.script.filename,
        call.function,
        call.limits.key,
        call.config_key,
        call.apply,
    )
    text = None if "source" in script else _HEADS.get(key)
    if text is None:
        entry = {
            "language": call.script.language.value,
            "function": call.function,
            "script": script,
            "limits_key": call.limits.key,
            "config_key": call.config_key,
            "apply": call.apply,
        }
        text = dumps(entry)[:-1] + ',"state":'
        if "source" not in script:
            if len(_HEADS) >= _HEADS_KEPT:
                _HEADS.clear()
            _HEADS[key] = text
    return text


def _request(
    point: str,
    parts: list[str],
    limits: dict[str, Any],
    texts: dict[str, str],
    event_text: str,
    worker: Worker,
    contexts: int,
) -> bytes:
    extra = ""
    if limits:
        extra += ',"limits":' + dumps(limits)
    if texts:  # as JSON, not as strings of it: no escaping on either side
        extra += ',"configs":{' + ",".join(f"{dumps(k)}:{t}" for k, t in texts.items()) + "}"
    if contexts and worker.contexts != contexts:
        extra += f',"contexts":{contexts}'
        worker.contexts = contexts
    calls = ",".join(parts)
    header = f'{{"op":"batch","point":{dumps(point)},"calls":[{calls}]{extra}}}'
    return (header + "\n" + event_text + "\n").encode("utf-8", "surrogatepass")


def _not_json(exc: Exception, call: BatchCall) -> ScriptError:
    return ScriptRuntimeError(
        f"event, config and state must be JSON: {exc}", language=call.script.language.value
    )


def _deadline(limits: Limits) -> float:
    """A call's wall-clock deadline from now: twice its budget (CPU time lags wall time on a
    loaded machine, and a call may first load its script) plus the grace."""
    return hostclock.now() + 2 * limits.timeout_ms / 1000 + GRACE_S


def failure_of(answer: dict[str, Any], language: Language) -> ScriptError | None:
    """The error a failed call's answer stands for (None: it succeeded)."""
    if answer.get("ok") is True:
        return None
    kind, message = answer.get("kind"), str(answer.get("message", "script failed"))
    if kind == "runtime":
        return ScriptRuntimeError(
            message,
            language=language.value,
            line=_int(answer.get("line")),
            column=_int(answer.get("column")),
            cause="invalid_result" if answer.get("cause") == "invalid_result" else "error",
        )
    if kind == "limit":
        cause = answer.get("cause") if answer.get("cause") in ("timeout", "memory") else "crashed"
        return ScriptLimitError(message, language=language.value, cause=cause)
    if kind == "compile":
        return ScriptRuntimeError(message, language=language.value, cause="error")
    if kind == "need_source":
        message = "the worker lost the script it was just sent"
    return ScriptLimitError(message, language=language.value, cause="crashed")


def result_of(answer: dict[str, Any], language: Language) -> CallResult:
    """A successful call's answer, checked.

    Raises:
        ScriptLimitError: cause 'crashed': the answer is not what a worker answers.
    """
    get = answer.get
    value, logs, emits, writes = get("value"), get("logs"), get("emits"), get("state_writes")
    ttls, added, read = get("state_ttls"), get("entries_added", []), get("entries_read", False)
    if not (
        (value is None or type(value) is dict)
        and type(logs) is list
        and type(emits) is list
        and type(writes) is dict
        and type(ttls) is dict
        and type(added) is list
        and type(read) is bool
        and (not ttls or all(type(t) in (int, float) and k in writes for k, t in ttls.items()))
        and (not logs or all(type(x) is str for x in logs))
        and (not emits or all(type(e) is dict for e in emits))
        and (not added or all(_entry_ok(e) for e in added))
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
        state_ttls={k: float(t) for k, t in ttls.items()} if ttls else {},
        entries_added=added,
        entries_read=read,
    )


def _entry_ok(entry: Any) -> bool:
    return type(entry) is dict and type(entry.get("kind")) is str and "data" in entry


def answer_cap(limits: Limits) -> int:
    """The longest answer line a call with ``limits`` can make (every cap at its worst);
    worked out once per ``Limits`` (they are frozen), as ``Limits.key`` is."""
    cap: int | None = limits.__dict__.get("_answer_cap")
    if cap is None:
        cap = _worst_answer(limits)
        object.__setattr__(limits, "_answer_cap", cap)
    return cap


def _worst_answer(limits: Limits) -> int:
    escaped = 6  # \\uXXXX: the worst case of one character in JSON
    return (
        limits.max_result_bytes * escaped
        + limits.max_log_lines * (limits.max_log_chars + 8) * escaped
        + limits.max_emits * limits.max_emit_bytes * escaped
        + limits.max_artifacts * (limits.max_artifact_bytes + 512) * escaped
        + limits.max_state_keys
        * (limits.max_state_value_bytes + 2 * limits.max_state_key_chars + 32)
        * escaped
        # and a delete of each key the scope held (deleting one it does not hold writes nothing)
        + limits.max_state_keys * (2 * limits.max_state_key_chars + 32) * escaped
        + limits.max_entry_adds
        * (limits.max_entry_bytes + limits.max_entry_kind_chars + 32)
        * escaped
        + 65_536
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None
