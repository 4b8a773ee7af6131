"""bench/soak.py keeps working as the engine changes: its config, its host traffic, its verdict.

The soak itself runs for minutes (the lead runs it); these tests drive a few of its sessions
without pacing and check the verdict's arithmetic on made-up samples, so nothing here is timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from engine import Engine
from engine.points import Point
from tests.conftest import REPO


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak", REPO / "bench/soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _scripts(agent: Path) -> dict[str, str]:
    found = {}
    for path in (agent / "hooks").glob("*.yaml"):
        hook = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if hook.get("kind") == "script_hook":
            found[hook["name"]] = Path(hook["script"]).name
    return found


def test_soak_config_runs_every_example_script_in_both_languages(
    soak: ModuleType, tmp_path: Path
) -> None:
    root = soak.make_project(tmp_path)
    demo, mirror = _scripts(root / "agents/demo"), _scripts(root / "agents/mirror")
    assert demo.keys() == mirror.keys()
    for name, script in demo.items():
        assert Path(script).stem == Path(mirror[name]).stem
        assert {Path(script).suffix, Path(mirror[name]).suffix} == {".js", ".py"}, name
    shipped = {p.name for p in (REPO / "config/scripts").iterdir()}
    assert set(demo.values()) | set(mirror.values()) == shipped
    wired = yaml.safe_load((root / "agents/demo/agent.yaml").read_text(encoding="utf-8"))
    assert wired["hook_files"][-1] == "hooks/allow_commands.yaml"
    with Engine.load(root, records=False) as engine:
        assert engine.agents == ["demo", "mirror"]


def test_soak_sessions_reach_every_point_keep_every_record_and_hold_the_guards(
    soak: ModuleType, tmp_path: Path
) -> None:
    root = soak.make_project(tmp_path)
    tally = soak.Tally()
    args = argparse.Namespace(users=3, rate=0, threads=1)
    with Engine.load(root) as engine:
        host = soak.Host(engine, 0, args, tally)
        for n in range(12):
            host.session(f"t-{n}", soak.threading.Event())
        tally.add(host.counts, host.failures, host.problems)
        engine.flush()
        health = engine.status()["records"]
    points = [point.value for point in Point]  # the soak calls one host method per point
    assert all(tally.counts[p] > 0 for p in points), tally.counts
    assert sum(tally.counts[p] for p in points) == tally.counts["decisions"]
    assert tally.counts["destructive"] > 0 and tally.counts["secrets"] > 0, tally.counts
    assert tally.problems == [] and tally.hook_failures == {}
    assert health["dropped"] == {} and health["written"] == tally.counts["decisions"]
    assert soak.store_bytes(tmp_path / "data") > 0


def _samples(soak: ModuleType, rss_mb: list[float], fds: list[int]) -> list[object]:
    """One sample a minute with these RSS values (MB) and fd counts; the rest steady."""
    steady = {"threads": 6, "workers": 2, "zombies": 0, "worker_rss": 0}
    return [
        soak.Sample(
            t=60.0 * i, decisions=i, rss=int(mb * 2**20), fds=f, cpu=0.0, worker_cpu=0.0, **steady
        )
        for i, (mb, f) in enumerate(zip(rss_mb, fds, strict=True))
    ]


@pytest.mark.parametrize(
    ("rss_mb", "levelled"),
    [
        ([70, 90, 100, 104, 105, 105, 106, 105, 106, 106, 106], True),  # warms up, then flat
        ([70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170], False),  # a steady leak
        ([70, 71, 72, 73, 74, 75, 90, 105, 120, 135, 150], False),  # a leak that starts late
        ([70, 72, 71, 73, 72, 74, 73, 75, 74, 76, 75], True),  # noise under the tolerance
    ],
)
def test_soak_verdict_tells_a_plateau_from_a_leak(
    soak: ModuleType, capsys: pytest.CaptureFixture[str], rss_mb: list[float], levelled: bool
) -> None:
    args = argparse.Namespace(rss_tolerance_mb=8.0)
    checks = soak.verdict(_samples(soak, rss_mb, [30] * len(rss_mb)), 60.0, args)
    assert checks[0] is levelled
    expected = "yes" if levelled else "no"
    assert f"RSS levelled off: {expected} (first half +" in capsys.readouterr().out


def test_soak_verdict_fails_on_growing_file_descriptors(soak: ModuleType) -> None:
    args = argparse.Namespace(rss_tolerance_mb=8.0)
    fds = [30, 30, 31, 34, 36, 38, 40, 42, 44, 46, 48]
    levelled, fds_ok, threads_ok = soak.verdict(_samples(soak, [70] * 11, fds), 60.0, args)
    assert levelled and threads_ok and not fds_ok
