"""The config fuzzer in CI: 200 seeded mutations of the demo config through ``hookengine
check`` exit 0 or 2, print no traceback, each within a time cap and in bounded memory; a few
go through the real console script under an address-space cap. bench/fuzz_config.py runs
more (``--mutations N``)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.config_fuzz import check_in_process, check_in_subprocess, mutate, peak_rss_kib

MUTATIONS = 200
SECONDS = 5.0
"""Per check; a fixed config takes milliseconds to 0.5 s, the cap leaves room on a busy CI
machine while a hang (the bug this guards: a FIFO read forever) is still caught."""
GROWTH_MIB = 400
"""Growth of this process's peak RSS the whole run may cause (the bug: 4.3 GB on 7 KB)."""


def test_mutated_configs_give_exit_0_or_2_without_a_traceback_in_bounded_time_and_memory(
    tmp_path: Path,
) -> None:
    rng = random.Random(9)
    before = peak_rss_kib()
    codes = {0: 0, 2: 0}
    for i in range(MUTATIONS):
        mutant = mutate(rng, tmp_path / "m")
        run = check_in_process(mutant.root, timeout=SECONDS * 4)
        assert run.ok, (i, mutant.steps, run.code, run.crash, run.output[-2000:])
        assert run.seconds < SECONDS, (i, mutant.steps, run.seconds)
        codes[run.code or 0] += 1
    assert codes[2] > MUTATIONS // 4, codes  # the mutator really breaks configs
    assert (peak_rss_kib() - before) // 1024 < GROWTH_MIB


def test_mutated_configs_through_the_console_script_under_a_memory_cap(tmp_path: Path) -> None:
    rng = random.Random(21)
    for i in range(6):
        mutant = mutate(rng, tmp_path / "m")
        run, peak = check_in_subprocess(mutant.root, timeout=30.0, memory=2 * 2**30)
        assert run.ok, (i, mutant.steps, run.code, run.crash, run.output[-2000:])
        assert run.code in (0, 2)
        assert 0 < peak < 1024 * 1024  # KiB: under 1 GiB
