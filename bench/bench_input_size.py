"""Time of before_user_message against the question's size, per built-in kind (prints a table).

    .venv/bin/python bench/bench_input_size.py [--sizes 1000,10000,50000,100000] [--runs 3]

Each kind (faq_cache, memory, inject, escalate) runs alone in its own agent, against a store
seeded with a few pairs and facts. Questions are made of distinct Russian and English words,
a fresh one per run (the worst case for stemming and term lookup). The last columns show µs
per 1,000 characters: flat or falling when the cost is linear. A question past the cap
(docs/points.md) is refused before any hook runs; the final row shows that refusal's time for
a 10 MB question.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Engine
from engine.points import TEXT_CAPS, Point

KINDS = {
    "faq_cache": "kind: faq_cache\nname: h\nfallback_score: 0.8\n",
    "memory": "kind: memory\nname: h\n",
    "inject": "kind: inject\nname: h\nmessages: [{role: system, content: 'Q: {{question}}'}]\n",
    "escalate": "kind: escalate\nname: h\nmessage: call us\n"
    "off_topic_keywords: [iphone, доставка заказа, return policy]\n",
}
LETTERS = "abcdefghijklmnopqrstuvwxyzабвгдежзиклмнопрстуфхцчшщэюя"


def question(chars: int, rng: random.Random) -> str:
    """Distinct-ish words of 3..10 letters, Latin or Cyrillic, until ``chars`` characters."""
    words, size = [], 0
    while size < chars:
        alphabet = LETTERS[:26] if rng.random() < 0.5 else LETTERS[26:]
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 10)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def build(root: Path) -> Engine:
    for kind, text in KINDS.items():
        folder = root / "agents" / kind
        (folder / "hooks").mkdir(parents=True)
        (folder / "agent.yaml").write_text("hooks: [h]\n")
        (folder / "hooks" / "h.yaml").write_text(textwrap.dedent(text))
    engine = Engine.load(root, db=str(root / "store.db"), records=False)
    for kind in ("faq_cache", "memory"):
        agent = engine.agent(kind)
        for i in range(20):
            q = f"how long does shipping to city {i} take, and what does delivery cost"
            agent.after_turn(
                q, f"Shipping to city {i} takes {i} days and costs {i} euro.", user_id="u"
            )
    return engine


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,25000,50000,100000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(9)
    # a fresh question per run: no stem is cached from an earlier run (the worst case)
    questions = {(n, r): question(n, rng) for n in sizes for r in range(args.runs)}
    logging.getLogger("engine").setLevel(logging.ERROR)  # the refusal's warning
    with tempfile.TemporaryDirectory() as tmp:
        engine = build(Path(tmp))
        print(f"{'kind':<10} " + " ".join(f"{n:>10}" for n in sizes) + "   µs per 1k chars")
        for kind in KINDS:
            agent, times = engine.agent(kind), []
            for n in sizes:
                runs = []
                for r in range(args.runs):
                    start = time.perf_counter()
                    out = agent.before_user_message(questions[n, r], user_id="u")
                    runs.append(time.perf_counter() - start)
                    assert not out.input_error, out.input_error
                times.append(statistics.median(runs))
            per_k = " ".join(f"{t / n * 1e9:>8.0f}" for t, n in zip(times, sizes, strict=True))
            print(f"{kind:<10} " + " ".join(f"{t * 1e3:>8.1f}ms" for t in times) + "   " + per_k)
        huge = "x" * 10_000_000
        start = time.perf_counter()
        out = engine.agent("faq_cache").before_user_message(huge, user_id="u")
        took = time.perf_counter() - start
        cap = TEXT_CAPS[Point.BEFORE_USER_MESSAGE]["question"]
        print(f"10 MB question (cap {cap}): refused={out.blocked} in {took * 1e3:.1f} ms")
        engine.close()


if __name__ == "__main__":
    main()
