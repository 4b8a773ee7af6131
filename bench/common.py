"""Timing helpers for the benchmarks: many runs, percentiles, ratios printed side by side."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(fn: Callable[[], object], *, runs: int, warmup: int = 50) -> list[float]:
    """Seconds per call of ``fn`` for ``runs`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(rows: list[tuple[str, list[float]]], *, baseline: str) -> None:
    """Print p50/p99 per row in µs and each row's p50 ratio to ``baseline``'s."""
    base = statistics.median(dict(rows)[baseline])
    print(f"{'case':<44} {'p50 µs':>10} {'p99 µs':>10} {'x ' + baseline:>18}")
    for name, times in rows:
        p50 = statistics.median(times)
        print(f"{name:<44} {p50 * 1e6:>10.1f} {pct(times, 0.99) * 1e6:>10.1f} {p50 / base:>18.1f}")
