"""Script hooks in batches: one round trip per run of consecutive script hooks, with the
error policy, shadow mode, blocks and records exactly as when each hook ran on its own."""

from __future__ import annotations

import asyncio
import threading
import time
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
from engine.runtime import Engine
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


# -- a store that waits holds no event loop --------------------------------------------------

STATE_COUNTER = (
    "def on_tool_call(event, host):\n"
    "    host.state.set('n', (host.state.get('n') or 0) + 1)\n"
    "    return None\n"
)


async def _loop_gap_of(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """``await call()``'s outcome, how long it took, and the longest the loop went without
    running another task meanwhile (a ticker waking every 10 ms)."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    started = time.monotonic()
    out = await call()
    took = time.monotonic() - started
    done.set()
    await ticker
    return out, took, max(gaps)


def test_a_locked_sqlite_store_fails_the_guard_without_holding_the_event_loop(
    tmp_path: Path, project: Callable[[dict[str, str]], Path]
) -> None:
    """A state write that waits on SQLite's lock (another process holds it) waits in a
    thread: the host's loop (the HTTP sidecar's, the MCP gateway's) serves meanwhile."""
    from tests.backends import write_locked

    db = tmp_path / "locked.db"
    root = script_agent(project, [STATE_COUNTER])
    settings = "store: {statement_timeout_s: 0.5}\nrecords: {enabled: false}\n"
    (root / "engine.yaml").write_text(settings)
    with Engine.load(root, db=str(db)) as engine:
        agent = engine.agent("a")
        assert not agent.tool_call("t", {}, user_id="u1").blocked
        with write_locked(db):
            out, took, gap = asyncio.run(
                _loop_gap_of(lambda: agent.atool_call("t", {}, user_id="u1"))
            )
        assert out.blocked and out.hooks[0].cause == "store" and took >= 0.4
        assert gap < 0.25, f"the event loop was held {gap:.2f} s"
        assert not asyncio.run(agent.atool_call("t", {}, user_id="u1")).blocked


@pytest.mark.postgres
def test_a_frozen_postgresql_store_fails_the_guard_without_holding_the_event_loop(
    tmp_path: Path, project: Callable[[dict[str, str]], Path]
) -> None:
    """``atool_call`` (the MCP gateway's, LangChain's and the OpenAI Agents guardrails'
    path) with a script reading ``host.state`` from a server that stopped answering."""
    from urllib.parse import urlsplit

    from tests.backends import pg_schema
    from tests.store.test_timeouts import FreezableProxy

    root = script_agent(project, [STATE_COUNTER])
    with pg_schema() as url:
        parts = urlsplit(url)
        proxy = FreezableProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        netloc = parts.netloc.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{proxy.port}")
        (root / "engine.yaml").write_text(
            f"db_url: '{parts._replace(netloc=netloc).geturl()}'\nrecords: {{enabled: false}}\n"
            "store: {connect_timeout_s: 1, statement_timeout_s: 1}\n"
        )
        try:
            with Engine.load(root) as engine:
                agent = engine.agent("a")
                assert not agent.tool_call("t", {}, user_id="u1").blocked
                proxy.freeze()
                try:
                    out, took, gap = asyncio.run(
                        _loop_gap_of(lambda: agent.atool_call("t", {}, user_id="u1"))
                    )
                finally:
                    proxy.thaw()
                assert out.blocked and out.hooks[0].cause == "store" and took >= 0.5
                assert gap < 0.25, f"the event loop was held {gap:.2f} s"
        finally:
            proxy.close()
