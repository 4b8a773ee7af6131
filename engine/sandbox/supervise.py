"""Pool policy: how many workers one hook may hold, how fast dead workers come back, and when a
hook that keeps killing workers is quarantined."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class PoolPolicy:
    """The operator's rules for sharing the worker pool (engine.yaml ``scripts``)."""

    workers_per_hook: int | None = None
    """Workers one hook may hold at once; None: the pool size minus one, at least one."""
    respawns_per_s: float = 1.0
    """Replacement workers started per second, on average, after the first ``respawn_burst``."""
    respawn_burst: int = 2
    """Replacements that may start at once before the rate applies."""
    quarantine_kills: int = 5
    """Worker kills (timeouts past the grace, crashes, memory recycles) by one hook ..."""
    quarantine_window_s: float = 60.0
    """... within this many seconds quarantine the hook until it is rebuilt (a reload)."""

    def per_hook(self, size: int) -> int:
        if self.workers_per_hook is not None:
            return max(1, min(self.workers_per_hook, size))
        return max(1, size - 1)


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` per second; the caller passes the clock."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._at = now

    def delay(self, now: float) -> float:
        """Seconds until a token is there (0: one is there now)."""
        self._refill(now)
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.rate

    def take(self, now: float) -> None:
        self._refill(now)
        self._tokens -= 1

    def _refill(self, now: float) -> None:
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now


@dataclass
class Quarantined:
    """Why a hook's calls fail at once: its recent kills."""

    owner: str
    kills: int
    window_s: float
    since: float
    """time.time() when the hook was quarantined."""

    @property
    def reason(self) -> str:
        return (
            f"quarantined after {self.kills} worker kills in {self.window_s:g} s; "
            "fix the script and save to reload"
        )


class KillLog:
    """Worker kills per hook within a sliding window; the hooks over the limit, quarantined."""

    def __init__(self, kills: int, window_s: float) -> None:
        self.kills = max(1, kills)
        self.window_s = window_s
        self._recent: dict[str, deque[float]] = {}
        self.quarantined: dict[str, Quarantined] = {}

    def record(self, owner: str, now: float, wall: float) -> None:
        """Count one kill by ``owner`` at monotonic ``now``; quarantine it past the limit."""
        times = self._recent.setdefault(owner, deque())
        times.append(now)
        while times and times[0] < now - self.window_s:
            times.popleft()
        if len(times) >= self.kills and owner not in self.quarantined:
            self.quarantined[owner] = Quarantined(owner, len(times), self.window_s, wall)

    def recent(self, owner: str) -> int:
        """Kills by ``owner`` within the window (as of its last recorded kill)."""
        return len(self._recent.get(owner, ()))

    def forget(self, owner: str) -> None:
        """The hook is gone (rebuilt or closed): drop its kills and any quarantine."""
        self._recent.pop(owner, None)
        self.quarantined.pop(owner, None)
