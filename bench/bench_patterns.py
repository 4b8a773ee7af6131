"""The pattern engine behind host.match and host.redact (engine/sandbox/js/regex.js), timed
in QuickJS as a worker runs it, against Python's ``re`` on the same patterns and texts.

Rows: the lean key pattern of bench_mcp.py on a short tool result; the fifteen patterns of
config/scripts/redact_secrets.js on the same result and on 1 KB and 10 KB of prose (a few
numbers, a password, a bearer token, a card number); and the name check of no_deletes.js.
Each row prints µs per ``redact`` call (p50 of rounds), the same for ``re`` (a loop of
``sub`` over the patterns, the engine's semantics aside), and ours / re. ``re`` backtracks
and runs in C; ours is a linear-time VM in script code: the ratio says how far apart they are,
not a target. Every answer is checked against ``re``'s.

Run: python bench/bench_patterns.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import _quickjs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import uptime  # noqa: E402 (after the path insert)


def secret_patterns() -> list[str]:
    source = (ROOT / "config" / "scripts" / "redact_secrets.js").read_text(encoding="utf-8")
    found = re.findall(r'^\s*\[\[?[^\n]*?\]?, ("(?:[^"\\]|\\.)*")\],?\s*(?://.*)?$', source, re.M)
    return [json.loads(literal) for literal in found]


KEY = "sk-" + "bench0123456789abcdefXYZ"
RESULT = f"API_KEY={KEY}\nregion=eu\n"
PROSE = (
    "The deploy finished at 10:30 after 1234 retries; the report for ticket 4711 follows. "
    "Users asked about the password reset flow and the bearer tokens in the logs. "
) * 6 + "Card 4111 1111 1111 1111, password = hunter2, Authorization: Bearer abcDEF123456789. "
DELETING = (
    "(^|_)(delete|del|remove|rm|drop|destroy|erase|purge|wipe|truncate|unlink|rmdir|shred)(_|$)"
)


def cases() -> list[tuple[str, list[str], str]]:
    secrets = secret_patterns()
    ten_kb = PROSE * (10_000 // len(PROSE) + 1)
    return [
        ("lean key, tool result (56 chars)", ["sk-[A-Za-z0-9]{20,}"], RESULT),
        ("15 secret patterns, tool result", secrets, RESULT),
        (f"15 secret patterns, prose ({len(PROSE)} chars)", secrets, PROSE),
        (f"15 secret patterns, prose ({len(ten_kb)} chars)", secrets, ten_kb),
        ("no_deletes name check, delete_file", [DELETING], "delete_file"),
    ]


def python_redact(patterns: list[str], text: str) -> str:
    for pattern in patterns:
        flags = re.ASCII | (re.IGNORECASE if pattern.startswith("(?i)") else 0)
        compiled = re.compile(pattern.removeprefix("(?i)").replace("$", "\\Z"), flags)
        text = compiled.sub(lambda m: "#" if m.end() > m.start() else m.group(0), text)
    return text


def timed(fn: object, runs: int, rounds: int) -> float:
    per = []
    for _ in range(rounds):
        begin = time.perf_counter()
        for _ in range(runs):
            fn()  # type: ignore[operator]
        per.append((time.perf_counter() - begin) / runs)
    return statistics.median(per) * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    print(f"start: {uptime()}")
    ctx = _quickjs.Context()
    ctx.set("__src", (ROOT / "engine" / "sandbox" / "js" / "regex.js").read_text("utf-8"))
    ctx.eval("var RX = (0, eval)(__src); 0")
    print(f"{'case':48s} {'ours µs':>10s} {'re µs':>9s} {'ours/re':>8s}")
    for name, patterns, text in cases():
        ctx.set("__p", json.dumps(patterns))
        ctx.set("__t", text)
        ctx.eval("var P = JSON.parse(__p), T = __t; 0")
        ours = json.loads(ctx.eval("JSON.stringify(RX.redact(T, P, '#'))"))
        expected = python_redact(patterns, text)
        if ours != expected:
            print(f"{name}: the engine's redaction differs from re's", file=sys.stderr)
            return 1
        runs = max(5, min(2000, 200_000 // max(len(text), 1) // len(patterns)))
        code = f"for (var i = 0; i < {runs}; i++) {{ RX.redact(T, P, '#'); }} 0"
        ours_us = timed(lambda code=code: ctx.eval(code), 1, args.rounds) / runs
        theirs_us = timed(
            lambda patterns=patterns, text=text: python_redact(patterns, text), runs, args.rounds
        )
        print(f"{name:48s} {ours_us:10.1f} {theirs_us:9.1f} {ours_us / theirs_us:7.1f}x")
    print(f"end: {uptime()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
