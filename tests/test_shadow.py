"""Shadow mode: a shadow hook runs and is recorded, but never changes an outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Engine
from engine.cli.hookengine import main as hookengine
from engine.kinds.base import Memo, Mode
from engine.pipeline import Services, evaluate
from engine.points import Point, make_event
from engine.replay import load_records, replay
from engine.store import Store, open_store
from tests.conftest import pipeline, raising, returning
from tests.guard_kind import guard_kind  # noqa: F401 - the fixture

CHANGES = {
    Point.TOOL_CALL: st.sampled_from(
        [
            None,
            {"block": "no"},
            {"input": {"a": 2}},
            {"notice": "n"},
            {"input": {"b": 1}, "notice": "m"},
        ]
    ),
    Point.BEFORE_USER_MESSAGE: st.sampled_from(
        [
            None,
            {"answer": "cached"},
            {"question": "rewritten"},
            {"block": "off"},
            {"messages": [{"role": "system", "content": "ctx"}]},
            {"notice": "x"},
        ]
    ),
}
EVENTS = {
    Point.TOOL_CALL: {"name": "shell", "input": {"a": 1}},
    Point.BEFORE_USER_MESSAGE: {"question": "hello"},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = open_store(str(tmp_path_factory.mktemp("shadow") / "s.db"))
    yield s
    s.close()


def run(store: Store, point: Point, hooks: list[Any]) -> Any:
    memos: dict[tuple[str, str], Memo] = {}
    services = Services(store, lambda a, h: memos.setdefault((a, h), Memo()), None)
    event = make_event(point, agent="test", time="2025-01-01T00:00:00+00:00", **EVENTS[point])
    return evaluate(pipeline(*hooks), point, event, services)


hook_specs = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(point=st.sampled_from(list(CHANGES)), layout=hook_specs, data=st.data())
def test_shadow_hooks_never_change_outcomes(
    store: Store, point: Point, layout: list[tuple[bool, bool]], data: st.DataObject
) -> None:
    hooks, enforced = [], []
    for n, (shadow, fails) in enumerate(layout):
        mode = Mode.SHADOW if shadow else Mode.ENFORCE
        if fails and shadow:
            hook = raising(f"h{n}", RuntimeError("boom"), mode=mode)
        else:
            hook = returning(f"h{n}", data.draw(CHANGES[point]), mode=mode)
        hooks.append(hook)
        if not shadow:
            enforced.append(hook)
    with_shadow = run(store, point, hooks)
    without = run(store, point, enforced) if enforced else None
    if without is not None:
        assert with_shadow.decision() == without.decision()
    else:
        assert not with_shadow.changed and not with_shadow.blocked
    assert not with_shadow.failed  # a shadow failure blocks nothing, even at tool_call


@pytest.mark.usefixtures("guard_kind")
def test_a_shadow_guard_is_recorded_and_shown_next_to_enforced_decisions(
    project: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [guard, canary]\n",
            "agents/a/hooks/guard.yaml": "kind: test_guard\nname: guard\nforbidden: [rm]\n",
            "agents/a/hooks/canary.yaml": "kind: test_guard\nname: canary\nmode: shadow\n"
            "say_version: false\nforbidden: [shell, rm]\n",
        }
    )
    db = str(tmp_path / "s.db")
    with Engine.load(root, db=db) as engine:
        out = engine.agent("a").tool_call("shell", {})
        assert not out.blocked
        assert out.shadow == [{"hook": "canary", "change": {"block": "shell is forbidden"}}]
        assert engine.agent("a").tool_call("rm", {}).blocked
    assert hookengine(["records", "--config", str(root), "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "canary [shadow] decided" in shown
    assert "=> shadow: canary would have blocked: shell is forbidden" in shown
    assert "=> BLOCKED: rm is forbidden" in shown


@pytest.mark.usefixtures("guard_kind")
def test_replay_counts_shadow_decisions_before_and_after(project: Any, tmp_path: Path) -> None:
    canary = "kind: test_guard\nname: canary\nmode: shadow\nsay_version: false\nforbidden: {f}\n"
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [canary]\n",
            "agents/a/hooks/canary.yaml": canary.format(f="[shell]"),
        }
    )
    db = str(tmp_path / "s.db")
    with Engine.load(root, db=db) as engine:
        for tool in ("shell", "ls", "shell", "rm"):
            engine.agent("a").tool_call(tool, {})
    (root / "agents/a/hooks/canary.yaml").write_text(canary.format(f="[shell, rm]"))
    with Engine.load(root, db=db, records=False) as engine:
        report = replay(engine, load_records(engine))
    assert report.shadow_before["canary"] == 2 and report.shadow_after["canary"] == 3
    assert report.kinds == {}  # enforced decisions never changed: the canary is in shadow
    assert report.same == 4 and not report.differences
    [diff] = report.shadow_differences  # rm: the canary would now block it
    assert diff.record.event["name"] == "rm" and diff.shadow_before == []
    assert diff.shadow_after[0]["change"]["block"].startswith("rm is forbidden")
