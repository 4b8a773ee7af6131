"""The clock the pool's deadlines run on: wall-clock time minus the host's own collector pauses.

A full collection of a large host process stops every thread of it, for hundreds of
milliseconds on a loaded 2-core machine (tests/test_load_timeouts.py names the longest pauses
when it fails), while the worker it waits for has long answered. Counting that pause against
a script's deadline (or a call's wait for a worker) refused harmless calls as timeouts or
``busy``. The
pause is the host's, not the script's: the pool's deadlines do not count it. A runaway script
is still stopped: the worker counts its own CPU time, and the collector's pauses are bounded.
"""

from __future__ import annotations

import gc
import time
from typing import Any

_paused = 0.0
_started = 0.0


def _on_collect(phase: str, info: dict[str, Any]) -> None:
    global _paused, _started
    if phase == "start":
        _started = time.monotonic()
    elif _started:
        _paused += time.monotonic() - _started
        _started = 0.0


def paused() -> float:
    """Seconds the host spent in its collector so far."""
    return _paused


def now() -> float:
    """Monotonic seconds without the host's collector pauses (a deadline is ``now() + s``).

    While a collection is finishing the clock stands still: another thread can run before the
    collector's "stop" callback has added the pause (the callback is Python code, where the
    interpreter may switch threads), and that thread must not see the pause as its own time.
    """
    started, paused = _started, _paused
    return (started if started else time.monotonic()) - paused


if _on_collect not in gc.callbacks:
    gc.callbacks.append(_on_collect)
