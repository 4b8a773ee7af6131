"""Shared fixtures of the sandbox suites: one worker pool per module, small limits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.sandbox import Limits, WorkerPool

TEST_LIMITS = Limits(timeout_ms=100, memory_mb=32, compile_timeout_ms=1000)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(size=2, limits=TEST_LIMITS) as p:
        yield p
