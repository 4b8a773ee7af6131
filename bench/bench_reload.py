"""Time from a file save to the first evaluation that uses the new version (real watching)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Engine

EDITS = 20
HOOK = (
    "kind: escalate\nname: esc\nmessage: call us\noff_topic_keywords: [{word}]\n"
    "suppress_on_off_topic: true\n"
)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "config"
        (root / "agents/a/hooks").mkdir(parents=True)
        (root / "agents/a/agent.yaml").write_text("hooks: [esc]\n")
        hook = root / "agents/a/hooks/esc.yaml"
        hook.write_text(HOOK.format(word="w0"))
        with Engine.load(root, watch=True, records=False, db=str(Path(tmp) / "b.db")) as engine:
            print(report(measure(engine, hook)))


def measure(engine: Engine, hook: Path) -> list[float]:
    """Save EDITS times; a busy evaluator notes when an answer first shows the new word."""
    agent, seen, stop = engine.agent("a"), {}, threading.Event()

    def evaluate() -> None:
        while not stop.is_set():
            for n in range(1, EDITS + 1):
                if n not in seen and agent.before_user_message(f"w{n}").answer is not None:
                    seen[n] = time.perf_counter()

    worker = threading.Thread(target=evaluate)
    worker.start()
    delays = []
    try:
        for n in range(1, EDITS + 1):
            saved = time.perf_counter()
            hook.write_text(HOOK.format(word=f"w{n}"))
            while n not in seen:
                time.sleep(0.001)
            delays.append(seen[n] - saved)
            time.sleep(0.05)
    finally:
        stop.set()
        worker.join()
    return delays


def report(delays: list[float]) -> str:
    ms = sorted(d * 1000 for d in delays)
    return (
        f"save -> first evaluation on the new version, {len(ms)} edits: "
        f"p50 {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms, min {ms[0]:.1f} ms"
    )


if __name__ == "__main__":
    main()
