"""Script hooks in batches: one round trip per run of consecutive script hooks, with the
error policy, shadow mode, blocks and records exactly as when each hook ran on its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.changes import Change, parse_change
from engine.errors import ScriptError, ScriptLimitError, ScriptRuntimeError
from engine.kinds.base import HookContext, Mode, OnError
from engine.pipeline import Pipeline, Services, aevaluate, evaluate
from engine.points import Point, make_event
from engine.sandbox import effects
from engine.sandbox.limits import CallResult
from tests.conftest import FakeHook, pipeline, returning

Script = Callable[[dict[str, Any]], Any]
"""A fake script: the event in, the answer out (or it raises a ScriptError)."""


@dataclass
class FakeCall:
    hook: str
    script: Script
    apply: bool


@dataclass
class FakePool:
    """A pool with ``call_batch`` by the rules of engine/sandbox/workerpool.py: calls run in
    order, each sees the raw answers before it applied, the batch stops after an error, a
    block, or an answer that cannot be applied."""

    trips: list[list[str]] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)

    def call_batch(
        self, point: str, event: dict[str, Any], calls: Sequence[FakeCall]
    ) -> list[CallResult | ScriptError]:
        self.trips.append([c.hook for c in calls])
        self.threads.append(threading.get_ident())
        results: list[CallResult | ScriptError] = []
        for call in calls:
            try:
                value = call.script(event)
            except ScriptError as exc:
                results.append(exc)
                break
            results.append(CallResult(value, [f"{call.hook} ran"], [], {}, 1.0))
            if not call.apply:
                continue
            after = effects.apply_raw(point, event, value)
            if effects.stops(value) or after is None:
                break
            event = after
        return results

    async def acall_batch(
        self, point: str, event: dict[str, Any], calls: Sequence[FakeCall]
    ) -> list[CallResult | ScriptError]:
        return self.call_batch(point, event, calls)


@dataclass
class FakeScriptHook:
    """A hook that runs in batches, like ScriptHook, on a FakePool."""

    name: str
    script: Script
    pool: FakePool
    points: frozenset[Point] = frozenset(Point)
    kind: str = "script_hook"
    version: str = "v1"
    on_error: OnError = OnError.FAIL
    mode: Mode = Mode.ENFORCE
    source: Path = Path("fake.yaml")
    seen: list[dict[str, Any]] = field(default_factory=list)

    def run(self, point: Point, event: dict[str, Any], ctx: HookContext) -> Any:
        raise AssertionError("a batched hook is not run one by one")

    def prepare_call(self, point: Point, event: dict[str, Any], ctx: HookContext) -> FakeCall:
        def script(ev: dict[str, Any]) -> Any:
            self.seen.append(ev)
            return self.script(ev)

        return FakeCall(self.name, script, self.mode is not Mode.SHADOW)

    def finish_call(
        self, point: Point, event: dict[str, Any], ctx: HookContext, result: Any
    ) -> Change:
        if isinstance(result, ScriptError):
            raise result
        ctx.logs.extend(result.logs)
        return parse_change(point, result.value, hook=self.name, event=event)

    def send_batch(self, point: str, event: dict[str, Any], calls: list[FakeCall]) -> Any:
        return self.pool.call_batch(point, event, calls)

    async def asend_batch(self, point: str, event: dict[str, Any], calls: list[FakeCall]) -> Any:
        return await self.pool.acall_batch(point, event, calls)

    def close(self) -> None:
        return None


EVENTS = {
    Point.BEFORE_USER_MESSAGE: {"question": "q"},
    Point.BEFORE_CALL: {"instruction": "i", "messages": [], "tools": [], "settings": {}},
    Point.TOOL_CALL: {"name": "t", "input": {"n": 0}, "call_id": None},
    Point.TOOL_RESULT: {"name": "t", "input": {}, "result": "r", "call_id": None},
    Point.BEFORE_ASSISTANT_MESSAGE: {"question": "q", "answer": "a"},
    Point.AFTER_TURN: {"question": "q", "answer": "a", "tool_calls": []},
    Point.AFTER_LOOP: {"status": "job_done"},
    Point.FEEDBACK: {"rating": "like"},
}


def event(point: Point) -> dict[str, Any]:
    return make_event(
        point,
        agent="test",
        time="2026-01-01T00:00:00+00:00",
        scope={"user_id": "u1"},
        turn_id="t1" if point is Point.FEEDBACK else None,
        **EVENTS[point],
    )


def noting(name: str) -> Script:
    """A script that changes nothing at any point (and can be told apart in ``seen``)."""
    return lambda ev: None


def counting(ev: dict[str, Any]) -> Any:
    """tool_call: add one to input.n (each hook sees the ones before it)."""
    return {"input": {"n": ev["input"]["n"] + 1}}


def failing(ev: dict[str, Any]) -> Any:
    raise ScriptRuntimeError("boom", cause="error", language="javascript")


def hooks(pool: FakePool, scripts: list[Script], **kw: Any) -> list[FakeScriptHook]:
    return [FakeScriptHook(f"s{i}", s, pool, **kw) for i, s in enumerate(scripts)]


def run(pipe: Pipeline, point: Point, services: Services) -> Any:
    return evaluate(pipe, point, event(point), services)


def test_ten_script_hooks_go_in_one_round_trip_each_seeing_the_ones_before(
    services: Services,
) -> None:
    pool = FakePool()
    pipe = pipeline(*hooks(pool, [counting] * 10))
    out = run(pipe, Point.TOOL_CALL, services)
    assert pool.trips == [[f"s{i}" for i in range(10)]]
    assert out.input == {"n": 10}
    assert [r.status for r in out.hooks] == ["decided"] * 10
    assert [r.logs for r in out.hooks] == [[f"s{i} ran"] for i in range(10)]
    assert all(r.duration_ms >= 1.0 for r in out.hooks), "the worker's time plus its share"


@pytest.mark.parametrize("point", [p for p in Point])
def test_a_failing_hook_in_the_middle_of_a_batch_follows_the_error_policy(
    services: Services, point: Point
) -> None:
    pool = FakePool()
    scripts: list[Script] = [noting("a")] * 4 + [failing] + [noting("b")] * 5
    batch = hooks(pool, scripts, on_error=OnError.IGNORE)
    out = run(pipeline(*batch), point, services)
    statuses = [r.status for r in out.hooks]
    assert statuses[4] == "failed" and out.failed == ["s4"]
    if point is Point.TOOL_CALL:  # always fail-closed: the rest is skipped
        assert out.blocked and "s4" in (out.reason or "")
        assert statuses == ["decided"] * 4 + ["failed"] + ["skipped"] * 5
        assert pool.trips == [[f"s{i}" for i in range(10)]]
    else:  # ignore: the chain goes on in a second batch
        assert not out.blocked
        assert statuses == ["decided"] * 4 + ["failed"] + ["decided"] * 5
        assert pool.trips == [[f"s{i}" for i in range(10)], [f"s{i}" for i in range(5, 10)]]


@pytest.mark.parametrize(
    "point",
    [
        Point.BEFORE_USER_MESSAGE,
        Point.TOOL_RESULT,
        Point.BEFORE_ASSISTANT_MESSAGE,
        Point.AFTER_TURN,
    ],
)
def test_a_failing_script_with_on_error_fail_refuses_and_skips_the_rest(
    services: Services, point: Point
) -> None:
    pool = FakePool()
    batch = hooks(pool, [noting("a"), failing, noting("b")])
    out = run(pipeline(*batch), point, services)
    if point.hears_only:
        assert [r.status for r in out.hooks] == ["decided", "failed", "decided"]
        assert not out.blocked
    else:
        assert [r.status for r in out.hooks] == ["decided", "failed", "skipped"]
        assert out.blocked and "s1" in (out.reason or "")


def test_a_shadow_hook_in_a_batch_is_recorded_and_not_applied(services: Services) -> None:
    pool = FakePool()
    shadow = FakeScriptHook("shadow", lambda ev: {"block": "would block"}, pool, mode=Mode.SHADOW)
    rewrite = FakeScriptHook("rewrite", lambda ev: {"input": {"n": 7}}, pool, mode=Mode.SHADOW)
    after = FakeScriptHook("after", counting, pool)
    out = run(pipeline(shadow, rewrite, after), Point.TOOL_CALL, services)
    assert pool.trips == [["shadow", "rewrite", "after"]]
    assert not out.blocked and out.input == {"n": 1}
    assert after.seen[0]["input"] == {"n": 0}, "a shadow answer never reaches the next hook"
    assert out.shadow == [
        {"hook": "shadow", "change": {"block": "would block"}},
        {"hook": "rewrite", "change": {"input": {"n": 7}}},
    ]


def test_a_blocking_hook_ends_the_batch_and_the_chain(services: Services) -> None:
    pool = FakePool()
    batch = hooks(pool, [counting, lambda ev: {"block": "no"}, counting])
    out = run(pipeline(*batch), Point.TOOL_CALL, services)
    assert out.blocked and out.reason == "no"
    assert [r.status for r in out.hooks] == ["decided", "decided", "skipped"]
    assert pool.trips == [["s0", "s1", "s2"]] and batch[2].seen == []


def test_an_invalid_block_is_judged_by_the_host_and_the_rest_sent_again(
    services: Services,
) -> None:
    pool = FakePool()
    batch = hooks(pool, [lambda ev: {"block": "  "}, noting("b")], on_error=OnError.IGNORE)
    ev = event(Point.BEFORE_USER_MESSAGE)
    out = evaluate(pipeline(*batch), Point.BEFORE_USER_MESSAGE, ev, services)
    assert not out.blocked and out.failed == ["s0"]
    assert pool.trips == [["s0", "s1"], ["s1"]]


def test_an_answer_the_host_refuses_is_not_seen_by_the_next_hook(services: Services) -> None:
    pool = FakePool()
    bad = FakeScriptHook("bad", lambda ev: {"question": 5}, pool, on_error=OnError.IGNORE)
    later = FakeScriptHook("later", lambda ev: {"question": ev["question"] + "!"}, pool)
    out = run(pipeline(bad, later), Point.BEFORE_USER_MESSAGE, services)
    assert out.failed == ["bad"] and out.question == "q!"
    assert later.seen[-1]["question"] == "q"
    assert pool.trips == [["bad", "later"], ["later"]]


def test_an_answer_the_host_normalises_is_sent_again_with_the_host_s_event(
    services: Services,
) -> None:
    pool = FakePool()
    lone = FakeScriptHook("lone", lambda ev: {"question": "a\ud800"}, pool)
    later = FakeScriptHook("later", lambda ev: {"question": ev["question"] + "!"}, pool)
    out = run(pipeline(lone, later), Point.BEFORE_USER_MESSAGE, services)
    assert out.question == "a\ufffd!"
    assert pool.trips == [["lone", "later"], ["later"]]


def test_a_built_in_hook_between_script_hooks_splits_the_batch(services: Services) -> None:
    pool = FakePool()
    first = hooks(pool, [counting, counting])
    middle = FakeHook("middle", lambda p, e, c: {"input": {"n": e["input"]["n"] * 10}})
    last = [FakeScriptHook(f"t{i}", counting, pool) for i in range(2)]
    out = run(pipeline(*first, middle, *last), Point.TOOL_CALL, services)
    assert pool.trips == [["s0", "s1"], ["t0", "t1"]]
    assert middle.calls[0]["input"] == {"n": 2}
    assert out.input == {"n": 22}


def test_a_crashed_batch_fails_its_first_hook_and_goes_on(services: Services) -> None:
    class Broken(FakePool):
        def call_batch(self, point: str, event: dict[str, Any], calls: Sequence[FakeCall]) -> Any:
            self.trips.append([c.hook for c in calls])
            if len(self.trips) == 1:
                raise ScriptLimitError("the pool is closed", cause="crashed")
            return super().call_batch(point, event, calls)

    pool = Broken()
    batch = hooks(pool, [noting("a"), noting("b")], on_error=OnError.IGNORE)
    out = run(pipeline(*batch), Point.BEFORE_USER_MESSAGE, services)
    assert [r.status for r in out.hooks] == ["failed", "decided"]
    assert out.hooks[0].cause == "crashed"


def test_records_of_a_batch_name_each_hook(services: Services) -> None:
    pool = FakePool()
    batch = hooks(pool, [counting, failing], on_error=OnError.IGNORE)
    out = run(pipeline(*batch, returning("after", None)), Point.TOOL_CALL, services)
    (record,) = services.recorded  # type: ignore[attr-defined]
    assert record.id == out.id
    assert [(h.name, h.status) for h in record.hooks] == [
        ("s0", "decided"),
        ("s1", "failed"),
        ("after", "skipped"),
    ]
    assert record.outcome["blocked"] is True


def test_the_async_driver_awaits_batches_on_the_loop_with_the_same_outcome(
    services: Services,
) -> None:
    pool = FakePool()
    asking = FakeScriptHook("asking", lambda ev: {"question": ev["question"] + "?"}, pool)
    pipe = pipeline(asking, *hooks(pool, [failing, noting("c")], on_error=OnError.IGNORE))
    ev = event(Point.BEFORE_USER_MESSAGE)
    sync = evaluate(pipe, Point.BEFORE_USER_MESSAGE, ev, services)
    asynced = asyncio.run(aevaluate(pipe, Point.BEFORE_USER_MESSAGE, ev, services))
    assert asynced.question == "q?"
    assert pool.threads == [threading.get_ident()] * 4, "no thread hop"
    assert [(r.name, r.status) for r in asynced.hooks] == [(r.name, r.status) for r in sync.hooks]
    assert asynced.decision() == sync.decision()


# -- real script hooks through Engine -------------------------------------------------------

COUNT_JS = """function on_tool_call(event, host) {
  host.state.set('seen', event.input.n);
  return {input: {n: event.input.n + 1}, notice: 'saw ' + event.input.n};
}
"""
COUNT_PY = """def on_tool_call(event, host):
    host.state.set('seen', event['input']['n'])
    return {'input': {'n': event['input']['n'] + 1}, 'notice': 'saw ' + str(event['input']['n'])}
"""


def script_agent(project: Callable[[dict[str, str]], Path], sources: list[str]) -> Path:
    names = [f"s{i}" for i in range(len(sources))]
    files = {"agents/a/agent.yaml": f"hooks: [{', '.join(names)}]\n"}
    for name, source in zip(names, sources, strict=True):
        language = "python" if source.startswith("def") else "javascript"
        files[f"agents/a/hooks/{name}.yaml"] = (
            f"kind: script_hook\nname: {name}\nlanguage: {language}\nsource: |\n"
            + "".join(f"  {line}\n" for line in source.splitlines())
        )
    return project(files)


def test_ten_real_script_hooks_decide_as_in_a_chain(
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = script_agent(project, [COUNT_JS, COUNT_PY] * 5)
    engine = load(root)
    agent = engine.agent("a")
    trips: list[int] = []
    pool = engine.sandbox()
    real = pool.call_batch

    def counted(point: str, ev: dict[str, Any], calls: Sequence[Any]) -> Any:
        trips.append(len(calls))
        return real(point, ev, calls)

    monkeypatch.setattr(pool, "call_batch", counted)
    monkeypatch.setattr(pool, "ahead", lambda: False)  # no half sent ahead: see below
    out = agent.tool_call("t", {"n": 0}, user_id="u1")
    assert out.input == {"n": 10}
    assert out.notices == [f"saw {i}" for i in range(10)]
    assert [r.extras["state_writes"] for r in out.hooks] == [{"seen": i} for i in range(10)]
    assert trips == [10]  # one round trip for the ten hooks
    again = asyncio.run(agent.atool_call("t", {"n": 0}, user_id="u1"))
    assert again.input == {"n": 10} and again.notices == out.notices


def test_a_script_hook_whose_state_cannot_be_loaded_fails_alone(services: Services) -> None:
    from engine.errors import StoreError

    class NoState(FakeScriptHook):
        def prepare_call(self, point: Point, event: dict[str, Any], ctx: HookContext) -> FakeCall:
            raise StoreError("the store is down")

    pool = FakePool()
    first = FakeScriptHook("first", counting, pool)
    broken = NoState("broken", counting, pool, on_error=OnError.IGNORE)
    last = FakeScriptHook("last", counting, pool)
    out = run(pipeline(first, broken, last), Point.TOOL_CALL, services)
    assert [r.status for r in out.hooks] == ["decided", "failed", "skipped"]
    assert out.hooks[1].cause == "store" and out.blocked
    assert pool.trips == [["first"]]
    ev = event(Point.BEFORE_USER_MESSAGE)
    mild = [FakeScriptHook("a", noting("a"), pool), NoState("b", noting("b"), pool,
            on_error=OnError.IGNORE), FakeScriptHook("c", noting("c"), pool)]  # fmt: skip
    out = evaluate(pipeline(*mild), Point.BEFORE_USER_MESSAGE, ev, services)
    assert [r.status for r in out.hooks] == ["decided", "failed", "decided"]
    assert pool.trips[-2:] == [["a"], ["c"]]


def test_the_async_driver_runs_only_blocking_hooks_in_a_thread(services: Services) -> None:
    threads: dict[str, int] = {}

    def note(name: str) -> Callable[[Point, dict[str, Any], HookContext], Any]:
        return lambda p, e, c: threads.setdefault(name, threading.get_ident()) and None

    inline = FakeHook("inline", note("inline"))
    waits = FakeHook("waits", note("waits"))
    waits.blocks = True  # type: ignore[attr-defined]  # as memory and faq_cache declare
    ev = event(Point.TOOL_CALL)
    out = asyncio.run(aevaluate(pipeline(inline, waits), Point.TOOL_CALL, ev, services))
    assert [r.status for r in out.hooks] == ["decided", "decided"]
    assert threads["inline"] == threading.get_ident()
    assert threads["waits"] != threading.get_ident()


def test_the_kinds_that_wait_on_a_store_or_an_llm_say_so() -> None:
    from engine.kinds.escalate import EscalateHook
    from engine.kinds.faq_cache import FaqCacheHook
    from engine.kinds.inject import InjectHook
    from engine.kinds.memory import MemoryHook

    assert MemoryHook.blocks and FaqCacheHook.blocks
    assert not InjectHook.blocks and not EscalateHook.blocks


# -- the second half sent ahead (send_split) -------------------------------------------------


@dataclass
class SplitPool(FakePool):
    """``call_split`` by the rules of WorkerPool.call_split: both halves run on the event as
    it is now (the second as if the first changed nothing), or, with ``spare`` False, the
    whole batch runs in turn and the second list is None."""

    spare: bool = True
    splits: list[int] = field(default_factory=list)

    def call_split(
        self, point: str, event: dict[str, Any], calls: Sequence[FakeCall], at: int
    ) -> tuple[list[CallResult | ScriptError], list[CallResult | ScriptError] | None]:
        self.splits.append(at)
        if not self.spare:
            return self.call_batch(point, event, calls), None
        ahead = self.call_batch(point, event, calls[at:])  # runs first here: order is free
        return self.call_batch(point, event, calls[:at]), ahead


@dataclass
class SplitHook(FakeScriptHook):
    def send_split(self, point: str, event: dict[str, Any], calls: list[FakeCall], at: int) -> Any:
        assert isinstance(self.pool, SplitPool)
        return self.pool.call_split(point, event, calls, at)


def split_hooks(pool: FakePool, scripts: list[Script], **kw: Any) -> list[FakeScriptHook]:
    return [SplitHook(f"s{i}", s, pool, **kw) for i, s in enumerate(scripts)]


def outcome_shape(out: Any) -> tuple[Any, ...]:
    """What a host and the records see of an outcome: the decision and each hook's part."""
    hooks_seen = [(r.name, r.status, r.logs, r.cause) for r in out.hooks]
    return out.decision(), out.input, out.question, out.failed, out.shadow, hooks_seen


def blocking(ev: dict[str, Any]) -> Any:
    return {"block": "no"}


SPLIT_CASES: dict[str, tuple[list[Script], dict[str, Any]]] = {
    "all pass": ([noting("x")] * 10, {}),
    "a change in the first half": ([noting("x")] * 2 + [counting] + [noting("x")] * 7, {}),
    "a change in each half": ([counting] + [noting("x")] * 5 + [counting] * 4, {}),
    "a change in the second half": ([noting("x")] * 7 + [counting] * 3, {}),
    "a block in the first half": ([noting("x")] * 3 + [blocking] + [counting] * 6, {}),
    "a block in the second half": ([noting("x")] * 8 + [blocking] + [counting], {}),
    "a failure in the first half, ignored": (
        [noting("x")] + [failing] + [noting("x")] * 4,
        {"on_error": OnError.IGNORE},
    ),
    "a failure in the second half, ignored": (
        [noting("x")] * 5 + [failing],
        {"on_error": OnError.IGNORE},
    ),
    "a failure in the second half": ([noting("x")] * 5 + [failing], {}),
    "shadow hooks": ([blocking, counting, noting("x"), counting], {"mode": Mode.SHADOW}),
    "four hooks": ([noting("x")] * 4, {}),
}


@pytest.mark.parametrize("point", [Point.TOOL_CALL, Point.AFTER_TURN])
@pytest.mark.parametrize("case", list(SPLIT_CASES))
def test_a_half_sent_ahead_gives_the_outcome_of_the_hooks_run_in_turn(
    services: Services, case: str, point: Point
) -> None:
    scripts, kw = SPLIT_CASES[case]
    if point is Point.AFTER_TURN:  # after_turn takes no input: count in a notice instead
        scripts = [noting("x") if s is counting else s for s in scripts]
    serial_pool, split_pool = FakePool(), SplitPool()
    serial = run(pipeline(*hooks(serial_pool, scripts, **kw)), point, services)
    ahead = run(pipeline(*split_hooks(split_pool, scripts, **kw)), point, services)
    assert outcome_shape(ahead) == outcome_shape(serial)
    n = len(scripts)
    assert split_pool.splits[0] == n - n // 2, "the first half is the larger"


def test_the_half_ahead_is_kept_when_the_first_changed_nothing(services: Services) -> None:
    pool = SplitPool()
    batch = split_hooks(pool, [noting("x")] * 5 + [counting] * 5)
    out = run(pipeline(*batch), Point.TOOL_CALL, services)
    assert pool.trips == [[f"s{i}" for i in range(5, 10)], [f"s{i}" for i in range(5)]]
    assert out.input == {"n": 5} and [len(h.seen) for h in batch] == [1] * 10


def test_the_half_ahead_goes_again_in_turn_after_a_change_before_it(services: Services) -> None:
    pool = SplitPool()
    batch = split_hooks(pool, [counting] + [noting("x")] * 9)
    out = run(pipeline(*batch), Point.TOOL_CALL, services)
    ahead, first, *again = pool.trips
    assert ahead == [f"s{i}" for i in range(5, 10)] and first == [f"s{i}" for i in range(5)]
    assert again == [["s8", "s9"], ["s5", "s6", "s7"]] and pool.splits == [5, 3]
    assert out.input == {"n": 1}
    assert batch[9].seen[-1]["input"] == {"n": 1}, "the hook ran again on the changed event"


def test_a_block_before_the_half_ahead_leaves_it_unrecorded(services: Services) -> None:
    pool = SplitPool()
    batch = split_hooks(pool, [blocking] + [counting] * 5)
    out = run(pipeline(*batch), Point.TOOL_CALL, services)
    assert out.blocked and out.reason == "no"
    assert [r.status for r in out.hooks] == ["decided"] + ["skipped"] * 5
    assert all(r.logs == [] for r in out.hooks[1:]), "what ran ahead left no trace"


def test_no_spare_worker_runs_the_batch_in_turn(services: Services) -> None:
    pool = SplitPool(spare=False)
    out = run(pipeline(*split_hooks(pool, [counting] * 6)), Point.TOOL_CALL, services)
    assert pool.trips == [[f"s{i}" for i in range(6)]] and out.input == {"n": 6}


def test_fewer_than_four_calls_are_never_split(services: Services) -> None:
    pool = SplitPool()
    out = run(pipeline(*split_hooks(pool, [counting] * 3)), Point.TOOL_CALL, services)
    assert pool.splits == [] and pool.trips == [["s0", "s1", "s2"]] and out.input == {"n": 3}


def test_the_async_driver_runs_a_splittable_batch_in_turn(services: Services) -> None:
    pool = SplitPool()
    pipe = pipeline(*split_hooks(pool, [counting] * 6))
    ev = event(Point.TOOL_CALL)
    out = asyncio.run(aevaluate(pipe, Point.TOOL_CALL, ev, services))
    assert pool.splits == [] and pool.trips == [[f"s{i}" for i in range(6)]]
    assert out.input == {"n": 6}


PASS_JS = """function on_tool_call(event, host) {
  host.state.set('seen', event.input.n);
  return null;
}
"""
PASS_PY = """def on_tool_call(event, host):
    host.state.set('seen', event['input']['n'])
    return None
"""
BLOCK_JS = "function on_tool_call(event, host) { return {block: 'stop here'}; }\n"
LOOP_JS = "function on_tool_call(event, host) { for (;;) {} }\n"


def split_shape(out: Any) -> tuple[Any, ...]:
    hooks_seen = [(r.name, r.status, r.cause, r.extras.get("state_writes")) for r in out.hooks]
    return out.decision(), out.input, out.notices, out.failed, hooks_seen


@pytest.mark.parametrize(
    "sources",
    [
        [PASS_JS, PASS_PY] * 3,  # nothing changes: the half ahead is kept
        [COUNT_JS, PASS_JS, PASS_PY, PASS_JS, COUNT_PY, PASS_PY],  # a change before it
        [PASS_JS] * 4 + [COUNT_JS, COUNT_PY],  # changes only in the half ahead
        [PASS_JS, BLOCK_JS, PASS_JS, LOOP_JS, PASS_JS, PASS_JS],  # a block, a loop ahead
        [PASS_JS, PASS_PY, PASS_JS, LOOP_JS, PASS_JS, PASS_JS],  # the loop decides
    ],
    ids=["kept", "changed-before", "changed-ahead", "block-before-loop", "loop-ahead"],
)
def test_real_script_hooks_sent_ahead_decide_as_in_turn(
    project: Callable[[dict[str, str]], Path],
    load: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    sources: list[str],
) -> None:
    engine = load(script_agent(project, sources))
    agent, pool = engine.agent("a"), engine.sandbox()
    went: list[bool] = []
    real = pool.call_split

    def noted(point: str, ev: dict[str, Any], calls: Sequence[Any], at: int) -> Any:
        first, ahead = real(point, ev, calls, at)
        went.append(ahead is not None)
        return first, ahead

    trips: list[int] = []
    in_turn = pool.call_batch

    def counted(point: str, ev: dict[str, Any], calls: Sequence[Any]) -> Any:
        trips.append(len(calls))
        return in_turn(point, ev, calls)

    monkeypatch.setattr(pool, "call_split", noted)
    monkeypatch.setattr(pool, "call_batch", counted)
    outcomes, batches = {}, {}
    for ahead in (False, True):
        monkeypatch.setattr(pool, "ahead", lambda ahead=ahead: ahead)
        trips.clear()
        outcomes[ahead] = agent.tool_call("t", {"n": 0}, user_id=f"u-{ahead}")
        batches[ahead] = list(trips)
    assert split_shape(outcomes[True]) == split_shape(outcomes[False])
    assert went == [False, True], "in turn, then the second half ahead on a spare worker"
    assert batches[False] == [6]
    if sources[0] == PASS_JS and COUNT_JS not in sources[:3] and BLOCK_JS not in sources:
        assert batches[True] == [3], "the three calls ahead were kept: none ran again"
    elif COUNT_JS in sources[:3]:
        assert batches[True] == [3, 3], "the three calls ahead ran again on the changed event"
    if LOOP_JS in sources and BLOCK_JS not in sources:
        assert outcomes[True].blocked and "s3" in (outcomes[True].reason or "")
