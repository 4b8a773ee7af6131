"""Batches: the script hooks of a point run in order on one worker, in one request."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.errors import ScriptError, ScriptLimitError, ScriptRuntimeError
from engine.sandbox import BatchCall, CallResult, CompiledScript, Language, Limits, WorkerPool
from engine.sandbox import batch as batch_module
from engine.sandbox.pool import Worker, WorkerDied

LIMITS = Limits(timeout_ms=200, memory_mb=32, compile_timeout_ms=2000)
SET_INPUT = "function on_tool_call(event, host) { return { input: host.config.input }; }\n"
SEE_INPUT = (
    "function on_tool_call(event, host) {\n"
    "  return { notice: host.config.tag + ':' + JSON.stringify(event.input) };\n}\n"
)
SEE_INPUT_PY = (
    "def on_tool_call(event, host):\n"
    "    pairs = sorted(event['input'].items())\n"
    "    return {'notice': host.config['tag'] + ':' + ','.join(k + '=' + v for k, v in pairs)}\n"
)
BLOCK = "function on_tool_call(event, host) { return { block: 'no' }; }\n"
FAIL = "def on_tool_call(event, host):\n    raise ValueError('bad')\n"
# uninterruptible in-process: C-level sorts run past the wall deadline; the parent kills
LOOP = (
    "def on_tool_call(event, host):\n"
    "    sorted(sorted(sorted(sorted(range(1000000), key=str), key=str), key=str), key=str)\n"
)
EVENT = {"name": "shell", "input": {"command": "ls"}, "call_id": "c1"}


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(size=2, limits=LIMITS) as p:
        yield p


def compiled(pool: WorkerPool, source: str, name: str) -> CompiledScript:
    language = Language.JAVASCRIPT if source.startswith("function") else Language.PYTHON
    ext = "js" if language is Language.JAVASCRIPT else "py"
    return pool.compile(source, filename=f"{name}.{ext}", language=language, key_owner=name)


def call(
    script: CompiledScript,
    owner: str,
    config: dict[str, Any] | None = None,
    *,
    apply: bool = True,
    state: dict[str, Any] | None = None,
    limits: Limits = LIMITS,
) -> BatchCall:
    config = config or {}
    return BatchCall(
        script=script,
        function="on_tool_call",
        config=config,
        config_key=hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest(),
        state=state if state is not None else {},
        limits=limits,
        owner=owner,
        apply=apply,
    )


def values(results: list[CallResult | ScriptError]) -> list[Any]:
    return [r.value if isinstance(r, CallResult) else type(r).__name__ for r in results]


def test_each_call_sees_the_event_as_changed_by_the_calls_before(pool: WorkerPool) -> None:
    setter = compiled(pool, SET_INPUT, "setter")
    js, py = compiled(pool, SEE_INPUT, "see-js"), compiled(pool, SEE_INPUT_PY, "see-py")
    results = pool.call_batch(
        "tool_call",
        EVENT,
        [
            call(js, "a", {"tag": "before"}),
            call(setter, "b", {"input": {"command": "pwd"}}),
            call(py, "c", {"tag": "after-py"}),
            call(js, "d", {"tag": "after-js"}),
        ],
    )
    assert values(results) == [
        {"notice": 'before:{"command":"ls"}'},
        {"input": {"command": "pwd"}},
        {"notice": "after-py:command=pwd"},
        {"notice": 'after-js:{"command":"pwd"}'},
    ]
    assert all(isinstance(r, CallResult) and r.duration_ms >= 0 for r in results)


def test_a_shadow_call_changes_nothing_for_later_calls(pool: WorkerPool) -> None:
    setter, see = compiled(pool, SET_INPUT, "setter"), compiled(pool, SEE_INPUT, "see-js")
    blocker = compiled(pool, BLOCK, "blocker")
    results = pool.call_batch(
        "tool_call",
        EVENT,
        [
            call(setter, "b", {"input": {"command": "rm"}}, apply=False),
            call(blocker, "x", apply=False),  # a shadow block does not end the batch either
            call(see, "a", {"tag": "t"}),
        ],
    )
    assert values(results)[2] == {"notice": 't:{"command":"ls"}'}


@pytest.mark.parametrize("stopper", ["block", "error"])
def test_a_block_or_an_error_ends_the_batch(pool: WorkerPool, stopper: str) -> None:
    see = compiled(pool, SEE_INPUT, "see-js")
    stop = compiled(pool, BLOCK if stopper == "block" else FAIL, stopper)
    results = pool.call_batch(
        "tool_call", EVENT, [call(see, "a", {"tag": "1"}), call(stop, "s"), call(see, "c")]
    )
    assert len(results) == 2
    if stopper == "block":
        assert values(results)[1] == {"block": "no"}
    else:
        error = results[1]
        assert isinstance(error, ScriptRuntimeError)
        with pytest.raises(ScriptRuntimeError) as info:  # the very error call() raises
            pool.call(stop, "on_tool_call", EVENT, config={}, state={}, owner="s")
        assert (error.message, error.cause, error.line) == (
            info.value.message,
            info.value.cause,
            info.value.line,
        )


def test_an_answer_the_worker_cannot_apply_ends_the_batch(pool: WorkerPool) -> None:
    bad = pool.compile(
        "function on_before_assistant_message(event, host) { return { append: 5 }; }\n",
        filename="bad.js",
        language=Language.JAVASCRIPT,
    )
    calls = [
        BatchCall(bad, "on_before_assistant_message", {}, "{}", {}, LIMITS, owner)
        for owner in ("a", "b")
    ]
    results = pool.call_batch("before_assistant_message", {"question": "q", "answer": "a"}, calls)
    assert values(results) == [{"append": 5}]


def test_a_timeout_in_the_middle_kills_the_worker_and_blames_its_hook() -> None:
    with WorkerPool(size=2, limits=LIMITS) as pool:
        see, loop = compiled(pool, SEE_INPUT, "see-js"), compiled(pool, LOOP, "loop")
        fast = Limits(timeout_ms=50, memory_mb=256)
        results = pool.call_batch(
            "tool_call",
            EVENT,
            [call(see, "first", {"tag": "x"}), call(loop, "slow", limits=fast), call(see, "last")],
        )
        assert values(results)[0] == {"notice": 'x:{"command":"ls"}'}
        assert len(results) == 2
        error = results[1]
        assert isinstance(error, ScriptLimitError) and error.cause == "timeout"
        assert "within 50 ms" in error.message
        kills = pool._workers._kills
        assert (kills.recent("slow"), kills.recent("first"), kills.recent("last")) == (1, 0, 0)
        assert pool.health()["busy"] == 0


def test_a_worker_that_lost_a_script_is_sent_it_again_in_the_middle() -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        see = compiled(pool, SEE_INPUT, "see-js")
        unknown = see.owned_by("never-sent")  # a key the worker has no source for
        (worker,) = pool._workers._idle
        worker.known.add(unknown.key)
        results = pool.call_batch(
            "tool_call",
            EVENT,
            [
                call(see, "a", {"tag": "1"}),
                call(unknown, "b", {"tag": "2"}),
                call(see, "c", {"tag": "3"}),
            ],
        )
        assert values(results) == [
            {"notice": '1:{"command":"ls"}'},
            {"notice": '2:{"command":"ls"}'},
            {"notice": '3:{"command":"ls"}'},
        ]
        assert unknown.key in worker.known and pool.health()["spawned_total"] == 1


def sent_requests(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    sent: list[bytes] = []
    send = Worker.send

    def spy(self: Worker, data: bytes) -> None:
        sent.append(data)
        send(self, data)

    monkeypatch.setattr(Worker, "send", spy)
    return sent


def test_a_config_is_sent_to_a_worker_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        see = compiled(pool, SEE_INPUT, "see-js")
        sent = sent_requests(monkeypatch)
        config = {"tag": "deny-" + "x" * 1000}
        for _ in range(3):
            results = pool.call_batch("tool_call", EVENT, [call(see, "a", config)])
            assert values(results) == [{"notice": config["tag"] + ':{"command":"ls"}'}]
        assert [b'"configs"' in data for data in sent] == [True, False, False]
        assert [data.count(b"x" * 1000) for data in sent] == [1, 0, 0]


def test_expect_scripts_is_sent_once_to_each_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        see = compiled(pool, SEE_INPUT, "see-js")
        sent = sent_requests(monkeypatch)
        pool.expect_scripts(40)
        for _ in range(2):
            pool.call_batch("tool_call", EVENT, [call(see, "a", {"tag": "t"})])
        assert [b'"contexts":40' in data for data in sent] == [True, False]


def test_inputs_that_cannot_be_sent_fail_their_call_only(pool: WorkerPool) -> None:
    see = compiled(pool, SEE_INPUT, "see-js")
    spawned = pool.health()["spawned_total"]
    results = pool.call_batch(
        "tool_call",
        EVENT,
        [call(see, "a", {"tag": "1"}), call(see, "b", {"tag": "2"}, state={"k": object()})],
    )
    assert values(results)[0] == {"notice": '1:{"command":"ls"}'}
    assert isinstance(results[1], ScriptRuntimeError) and len(results) == 2
    assert "must be JSON" in results[1].message
    not_json = pool.call_batch("tool_call", {"name": object()}, [call(see, "a")])
    assert values(not_json) == ["ScriptRuntimeError"]
    assert pool.health()["spawned_total"] == spawned


def test_a_malformed_answer_in_the_middle_fails_its_call_and_retires_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        see = compiled(pool, SEE_INPUT, "see-js")
        read = Worker.read_answer
        answers = iter([None, {"ok": True, "value": 5}])

        def garbled(self: Worker, deadline: float, max_bytes: int) -> dict[str, Any]:
            real = read(self, deadline, max_bytes)
            return next(answers, None) or real

        monkeypatch.setattr(Worker, "read_answer", garbled)
        results = pool.call_batch(
            "tool_call", EVENT, [call(see, "a", {"tag": "1"}), call(see, "b"), call(see, "c")]
        )
        assert values(results) == [{"notice": '1:{"command":"ls"}'}, "ScriptLimitError"]
        assert results[1].cause == "crashed"  # type: ignore[union-attr]
        assert pool._workers._kills.recent("b") == 0  # a worker bug blames no hook
        monkeypatch.setattr(Worker, "read_answer", read)
        deadline = time.monotonic() + 20
        while pool.health()["workers"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        again = pool.call_batch("tool_call", EVENT, [call(see, "a", {"tag": "1"})])
        assert values(again) == [{"notice": '1:{"command":"ls"}'}]


def test_a_quarantined_hook_in_the_middle_ends_the_batch_with_its_error(pool: WorkerPool) -> None:
    see = compiled(pool, SEE_INPUT, "see-js")
    workers = pool._workers
    for _ in range(workers.policy.quarantine_kills):
        workers._kills.record("bad", time.monotonic(), time.time())
    try:
        results = pool.call_batch(
            "tool_call", EVENT, [call(see, "a", {"tag": "1"}), call(see, "bad"), call(see, "c")]
        )
    finally:
        pool.forget("bad")
    assert len(results) == 2
    assert isinstance(results[1], ScriptLimitError) and results[1].cause == "quarantined"
    assert pool.health()["busy"] == 0


def test_a_hook_at_its_share_waits_for_its_own_worker_and_sees_the_changed_event() -> None:
    with WorkerPool(size=2, limits=LIMITS) as pool:  # one worker per hook
        setter, see = compiled(pool, SET_INPUT, "setter"), compiled(pool, SEE_INPUT, "see-js")
        blocker = compiled(pool, BLOCK, "blocker")
        calls = [
            call(setter, "a", {"input": {"command": "pwd"}}),
            call(see, "held", {"tag": "t"}),
        ]
        held = pool._workers.take("held", timeout_s=1)
        timer = threading.Timer(
            0.1, lambda: pool._workers.give_back(held, healthy=True, owner="held")
        )
        timer.start()
        results = pool.call_batch("tool_call", EVENT, calls)
        timer.join()
        assert values(results) == [{"input": {"command": "pwd"}}, {"notice": 't:{"command":"pwd"}'}]
        held = pool._workers.take("held", timeout_s=1)
        results = pool.call_batch("tool_call", EVENT, calls)
        blocked = pool.call_batch("tool_call", EVENT, [call(blocker, "a"), calls[1]])
        pool._workers.give_back(held, healthy=True, owner="held")
        assert values(results)[0] == {"input": {"command": "pwd"}}
        assert isinstance(results[1], ScriptLimitError) and results[1].cause == "busy"
        assert values(blocked) == [{"block": "no"}]  # the block ends it: no wait for "held"
        assert pool.health()["busy"] == 0


def test_an_unreadable_answer_in_the_middle_kills_the_worker_and_blames_that_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        see = compiled(pool, SEE_INPUT, "see-js")
        read = Worker.read_answer
        reads = 0

        def unreadable(self: Worker, deadline: float, max_bytes: int) -> dict[str, Any]:
            nonlocal reads
            reads += 1
            if reads == 2:
                raise WorkerDied("worker answered malformed JSON")
            return read(self, deadline, max_bytes)

        monkeypatch.setattr(Worker, "read_answer", unreadable)
        results = pool.call_batch(
            "tool_call", EVENT, [call(see, "a", {"tag": "1"}), call(see, "b"), call(see, "c")]
        )
        assert values(results) == [{"notice": '1:{"command":"ls"}'}, "ScriptLimitError"]
        assert results[1].cause == "crashed"  # type: ignore[union-attr]
        assert "malformed JSON" in results[1].message  # type: ignore[union-attr]
        kills = pool._workers._kills
        assert (kills.recent("a"), kills.recent("b"), kills.recent("c")) == (0, 1, 0)


def test_a_batch_too_large_for_one_request_goes_in_several(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with WorkerPool(size=1, limits=LIMITS) as pool:
        setter, see = compiled(pool, SET_INPUT, "setter"), compiled(pool, SEE_INPUT, "see-js")
        sent = sent_requests(monkeypatch)
        monkeypatch.setattr(batch_module, "REQUEST_CHARS", 1)  # one call per request
        calls = [
            call(see, "a", {"tag": "1"}),
            call(setter, "b", {"input": {"command": "pwd"}}),
            call(see, "c", {"tag": "2"}),
            call(setter, "d", {"input": {"block": "me"}}, apply=False),
            call(see, "e", {"tag": "3"}),
        ]
        results = pool.call_batch("tool_call", EVENT, calls)
        assert values(results) == [
            {"notice": '1:{"command":"ls"}'},
            {"input": {"command": "pwd"}},
            {"notice": '2:{"command":"pwd"}'},  # applied by the host between requests
            {"input": {"block": "me"}},
            {"notice": '3:{"command":"pwd"}'},
        ]
        assert len(sent) == 5


class FakeWorkers:
    """Shares without limits; records what is given back."""

    def __init__(self) -> None:
        self.given: list[dict[str, Any]] = []

    def charge_all(self, owners: list[str]) -> tuple[int, None]:
        return len(owners), None

    def release(self, owner: str) -> None:
        pass

    def give_back(self, worker: object, **kw: Any) -> None:
        self.given.append(kw)


class FakeWorker:
    def __init__(self) -> None:
        self.known: set[str] = set()
        self.contexts = 0


def test_each_calls_deadline_counts_from_the_answer_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(batch_module.hostclock, "now", lambda: now[0])
    script = CompiledScript(Language.JAVASCRIPT, "s.js", SEE_INPUT, frozenset({"on_tool_call"}))
    calls = [
        call(script, "a", limits=Limits(timeout_ms=100)),
        call(script, "b", limits=Limits(timeout_ms=300)),
    ]
    batch = batch_module.Batch("tool_call", EVENT, calls)
    workers = FakeWorkers()
    exchange = batch_module.Exchange(
        batch,
        FakeWorker(),  # type: ignore[arg-type]
        workers,  # type: ignore[arg-type]
        configs=batch_module.ConfigTexts(),
        contexts=0,
    )
    exchange.sent()
    assert exchange.deadline == pytest.approx(100 + 0.2 + 0.25)
    now[0] = 100.4  # the first answer comes late in its own time
    ok = {"ok": True, "value": None, "logs": [], "emits": [], "state_writes": {}}
    exchange.answered({**ok, "state_ttls": {}})
    assert exchange.deadline == pytest.approx(100.4 + 0.6 + 0.25)
    exchange.died(WorkerDied("worker overran its deadline", timed_out=True))
    exchange.finish()
    assert isinstance(batch.results[1], ScriptLimitError)
    assert "within 300 ms" in batch.results[1].message
    assert workers.given == [{"healthy": False, "owner": "b", "also": []}]
