"""One before_user_message through a pipeline of 10 inject hooks, against plain functions.

Run: python bench/bench_pipeline.py [--runs N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import measure, report

from engine import Engine

HOOKS = 10


def write_config(root: Path) -> Path:
    config = root / "config"
    hooks = config / "agents" / "bench" / "hooks"
    hooks.mkdir(parents=True)
    names = [f"ctx{i}" for i in range(HOOKS)]
    (config / "agents" / "bench" / "agent.yaml").write_text(f"hooks: [{', '.join(names)}]\n")
    for name in names:
        (hooks / f"{name}.yaml").write_text(
            f"kind: inject\nname: {name}\nnotice: '{name} fired'\nmessages:\n"
            f"  - role: system\n    content: 'Context from {name} for: {{{{question}}}}'\n"
        )
    return config


def plain_functions() -> object:
    """The same decision as plain Python: ten functions building the injected messages."""

    def make(name: str):  # type: ignore[no-untyped-def]
        def inject(question: str) -> dict[str, object]:
            return {
                "messages": [{"role": "system", "content": f"Context from {name} for: {question}"}],
                "notice": [f"{name} fired"],
            }

        return inject

    functions = [make(f"ctx{i}") for i in range(HOOKS)]

    def run() -> object:
        messages: list[object] = []
        notices: list[object] = []
        for fn in functions:
            change = fn("Где мой заказ?")
            messages += change["messages"]  # type: ignore[operator]
            notices += change["notice"]  # type: ignore[operator]
        return messages, notices

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp))
        rows = [("plain Python functions (10)", measure(plain_functions(), runs=args.runs))]
        with Engine.load(config, db=str(Path(tmp) / "bench.db"), records=False) as engine:
            agent = engine.agent("bench")
            rows.append(
                (
                    "engine, 10 inject hooks, records off",
                    measure(
                        lambda: agent.before_user_message("Где мой заказ?", user_id="u1"),
                        runs=args.runs,
                    ),
                )
            )
        with Engine.load(config, db=str(Path(tmp) / "bench2.db")) as engine:
            agent = engine.agent("bench")
            rows.append(
                (
                    "engine, 10 inject hooks, records on",
                    measure(
                        lambda: agent.before_user_message("Где мой заказ?", user_id="u1"),
                        runs=args.runs,
                    ),
                )
            )
    print(f"before_user_message through {HOOKS} inject hooks, {args.runs} runs each")
    report(rows, baseline="plain Python functions (10)")


if __name__ == "__main__":
    main()
