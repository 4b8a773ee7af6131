"""A failed bookkeeping write does not fail recall: memory still injects what it recalled and
faq_cache still answers when noting the recall or counting the hit fails; the failure is
logged, counted in the hook's memo and kept in the record."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import StoreError
from engine.kinds.common import BOOKKEEPING_FAILURES
from engine.runtime import Agent, Engine
from tests.backends import write_locked
from tests.conftest import write

HOOKS = {
    "memory": "kind: memory\nname: mem\n",
    "faq_cache": "kind: faq_cache\nname: faq\n",
}
WRITE = {"memory": "memory_note_recall", "faq_cache": "faq_hit"}
# memory learns what a user tells of themselves; the FAQ cache shares only what is not personal
TEACH = {
    "memory": ("My name is Alex and I live in Berlin", "Nice to meet you, Alex!"),
    "faq_cache": ("How long does shipping to Berlin take?", "Shipping takes 3 to 5 working days."),
}
ASK = {"memory": "Where do I live?", "faq_cache": "How long does shipping to Berlin take?"}


def refusing(store: Any, name: str) -> Callable[..., None]:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise StoreError(f"store {store.display_url}: write failed: connection lost")

    return fail


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    files = {
        "engine.yaml": "process: t\nstore: {statement_timeout_s: 0.3}\n",
        "agents/memory/agent.yaml": "hooks: [mem]\n",
        "agents/memory/hooks/mem.yaml": HOOKS["memory"],
        "agents/faq_cache/agent.yaml": "hooks: [faq]\n",
        "agents/faq_cache/hooks/faq.yaml": HOOKS["faq_cache"],
    }
    with Engine.load(write(tmp_path / "config", files), db=str(tmp_path / "s.db")) as eng:
        yield eng


def recalled(kind: str, out: Any) -> bool:
    if kind == "memory":
        return any("lives in Berlin" in m["content"] for m in out.messages)
    return out.answer == TEACH["faq_cache"][1]


def failures(engine: Engine, kind: str) -> int:
    hook = "mem" if kind == "memory" else "faq"
    return int(engine.memo_for(kind, hook).get(BOOKKEEPING_FAILURES, 0))


@pytest.mark.parametrize("kind", sorted(HOOKS))
def test_a_locked_store_does_not_fail_recall(
    engine: Engine, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent: Agent = engine.agent(kind)
    agent.after_turn(*TEACH[kind], user_id="u1", turn_id="t0")
    engine.flush()
    with caplog.at_level(logging.WARNING, "engine.kinds"), write_locked(tmp_path / "s.db"):
        out = agent.before_user_message(ASK[kind], user_id="u1", turn_id="t1")
    assert recalled(kind, out) and not out.blocked
    (run,) = out.hooks
    assert run.cause is None and run.error is None
    assert failures(engine, kind) == 1
    assert any("failed (1 failures so far)" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", sorted(HOOKS))
def test_a_failing_bookkeeping_write_is_counted_and_recorded(engine: Engine, kind: str) -> None:
    agent: Agent = engine.agent(kind)
    agent.after_turn(*TEACH[kind], user_id="u1", turn_id="t0")
    store: Any = agent.pipeline.slots[0].hook.store  # type: ignore[attr-defined]
    setattr(store, WRITE[kind], refusing(store, WRITE[kind]))
    try:
        outs = [agent.before_user_message(ASK[kind], user_id="u1", turn_id=f"t{i}") for i in (1, 2)]
    finally:
        delattr(store, WRITE[kind])
    assert all(recalled(kind, out) for out in outs)
    assert failures(engine, kind) == 2
    engine.flush()
    (record,) = engine.records(agent=kind, point="before_user_message", limit=1)
    extras = record.hooks[0].extras  # type: ignore[union-attr]
    assert "connection lost" in extras["bookkeeping_error"]
    out = agent.before_user_message(ASK[kind], user_id="u1", turn_id="t3")
    assert recalled(kind, out) and failures(engine, kind) == 2


@pytest.mark.parametrize("kind", sorted(HOOKS))
def test_a_failing_read_still_fails_the_hook(engine: Engine, kind: str) -> None:
    """Only bookkeeping is forgiven: a recall that cannot read is a failed hook."""
    agent: Agent = engine.agent(kind)
    store: Any = agent.pipeline.slots[0].hook.store  # type: ignore[attr-defined]
    read = "memory_recall" if kind == "memory" else "faq_candidates"
    setattr(store, read, refusing(store, read))
    try:
        out = agent.before_user_message(ASK[kind], user_id="u1", turn_id="t1")
    finally:
        delattr(store, read)
    (run,) = out.hooks
    assert run.cause == "store" and "connection lost" in (run.error or "")
