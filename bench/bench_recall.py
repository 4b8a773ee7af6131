"""Evidence recall of the ``memory`` hook against plain baselines, at the same budget.

    .venv/bin/python bench/bench_recall.py [--budget 2000] [--set bench/recall_set.json]
                                           [--db PATH_OR_URL] [--only memory]

The conversation set is bench/recall_set.json (made by bench/bench_recall_data.py). Every
system gets the whole conversation before the questions and answers each question with at
most ``--budget`` characters of text to inject (longer text is cut there). An evidence turn
counts as recalled when at least half of its content words (function words of both
languages dropped, compared as lower-case words) occur in the injected text. The score is the
share of all evidence turns recalled. On "when" questions it also counts how often the
injected text carries the date (YYYY-MM-DD) of the evidence turn.

Systems:

- ``memory``: the memory hook with its defaults, offline (rules memorize, overlap judges),
  fed every exchange through ``after_turn`` with the turn's time;
- ``memory-raised``: the same with raised caps (episodes and facts kept: 5,000);
- ``bm25-turns``: Okapi BM25 (k1 1.2, b 0.75, Snowball stems) over single turns, best first;
- ``bm25-pairs``: the same over (user, assistant) exchanges;
- ``last-n``: the last ``--budget`` characters of the chat.

Raw turns are rendered ``[YYYY-MM-DD] speaker: text`` for the BM25 and last-N systems.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_recall_data import OUT, Question, Turn, User, load
from engine.text import content_tokens, stem, tokens

BUDGET = 2000
HALF = 0.5
"""Share of an evidence turn's content words the injected text must carry."""

Answerer = Callable[[User, Question], str]


# -- scoring --------------------------------------------------------------------------------


def recalled(turn: Turn, injected: str) -> bool:
    """Whether ``injected`` carries at least half of ``turn``'s content words."""
    words = set(content_tokens(turn.text))
    if not words:
        return True
    shown = set(tokens(injected))
    return len(words & shown) / len(words) >= HALF


def score(users: Sequence[User], answer: Answerer, budget: int) -> dict[str, float]:
    """Evidence recall overall and per question kind, and the date rate on "when" questions."""
    hits: Counter[str] = Counter()
    total: Counter[str] = Counter()
    dated = dates = 0
    for user in users:
        by_id = {t.id: t for t in user.turns}
        for q in user.questions:
            injected = answer(user, q)[:budget]
            for evidence in q.evidence:
                ok = recalled(by_id[evidence], injected)
                for key in ("all", q.kind):
                    total[key] += 1
                    hits[key] += ok
                if q.kind == "date":
                    dates += 1
                    dated += by_id[evidence].time[:10] in injected
    result = {key: hits[key] / total[key] for key in total}
    result["date carried"] = dated / dates if dates else 0.0
    return result


# -- baselines ------------------------------------------------------------------------------


def render(turn: Turn) -> str:
    return f"[{turn.time[:10]}] {turn.speaker}: {turn.text}"


def fill(texts: Sequence[str], budget: int) -> str:
    """Texts in order, one per line, up to ``budget`` characters."""
    out: list[str] = []
    used = 0
    for text in texts:
        if used + len(text) + 1 > budget:
            continue
        out.append(text)
        used += len(text) + 1
    return "\n".join(out)


def bm25_rank(docs: Sequence[str], query: str, *, k1: float = 1.2, b: float = 0.75) -> list[int]:
    """Indexes of ``docs`` by Okapi BM25 against ``query`` (stems of content words)."""
    bags = [Counter(stem(w) for w in content_tokens(d)) for d in docs]
    avg = sum(sum(bag.values()) for bag in bags) / max(1, len(bags))
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    asked = {stem(w) for w in content_tokens(query)}
    n = len(docs)

    def bm25(bag: Counter[str]) -> float:
        size = sum(bag.values())
        total = 0.0
        for term in asked & bag.keys():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            tf = bag[term]
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * size / avg))
        return total

    scores = [bm25(bag) for bag in bags]
    return sorted((i for i in range(n) if scores[i] > 0), key=lambda i: (-scores[i], -i))


def bm25_turns(budget: int) -> Answerer:
    def answer(user: User, q: Question) -> str:
        docs = [render(t) for t in user.turns]
        return fill([docs[i] for i in bm25_rank(docs, q.question)], budget)

    return answer


def bm25_pairs(budget: int) -> Answerer:
    def answer(user: User, q: Question) -> str:
        turns = user.turns
        docs = [f"{render(turns[i])}\n{render(turns[i + 1])}" for i in range(0, len(turns), 2)]
        return fill([docs[i] for i in bm25_rank(docs, q.question)], budget)

    return answer


def last_n(budget: int) -> Answerer:
    def answer(user: User, q: Question) -> str:
        return "\n".join(render(t) for t in user.turns)[-budget:]

    return answer


# -- the memory hook ------------------------------------------------------------------------


def memory_hook(db: str | None, hook: dict[str, object]) -> tuple[Answerer, Callable[[], None]]:
    """An answerer that asks a memory hook, fed each user's conversation on first use."""
    from engine.runtime import Engine

    root = Path(tempfile.mkdtemp(prefix="bench_recall_"))
    (root / "agents/a/hooks").mkdir(parents=True)
    (root / "engine.yaml").write_text("process: bench\n", encoding="utf-8")
    (root / "agents/a/agent.yaml").write_text("hooks: [mem]\n", encoding="utf-8")
    spec = {"kind": "memory", "name": "mem", **hook}
    (root / "agents/a/hooks/mem.yaml").write_text(json.dumps(spec), encoding="utf-8")
    engine = Engine.load(root, db=db or str(root / "store.db"), records=False)
    agent = engine.agent("a")
    fed: set[str] = set()

    def feed(user: User) -> None:
        turns = user.turns
        for i in range(0, len(turns), 2):
            said, reply = turns[i], turns[i + 1]
            agent.after_turn(
                said.text,
                reply.text,
                user_id=user.id,
                session_id=f"{user.id}-s{said.session}",
                time=said.time,
            )

    def answer(user: User, q: Question) -> str:
        if user.id not in fed:
            feed(user)
            fed.add(user.id)
        out = agent.before_user_message(
            q.question, user_id=user.id, session_id=f"{user.id}-ask", time=q.time
        )
        return "\n".join(m["content"] for m in out.messages)

    return answer, engine.close


# -- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--set", type=Path, default=OUT)
    parser.add_argument("--db", help="the memory hook's store (file or postgresql:// URL)")
    parser.add_argument("--only", help="run only this system")
    args = parser.parse_args()
    users = load(args.set)
    evidence = sum(len(q.evidence) for u in users for q in u.questions)
    print(
        f"set: {len(users)} users, {sum(len(u.turns) for u in users)} turns, "
        f"{sum(len(u.questions) for u in users)} questions, {evidence} evidence turns; "
        f"budget {args.budget} characters"
    )
    raised = {"max_memories_per_scope": 5000, "store": {"max_episodes_per_scope": 5000}}
    systems: dict[str, Callable[[], tuple[Answerer, Callable[[], None]]]] = {
        "memory": lambda: memory_hook(args.db, {}),
        "memory-raised": lambda: memory_hook(args.db, raised),
        "bm25-turns": lambda: (bm25_turns(args.budget), lambda: None),
        "bm25-pairs": lambda: (bm25_pairs(args.budget), lambda: None),
        "last-n": lambda: (last_n(args.budget), lambda: None),
    }
    print(
        f"{'system':<14} {'recall':>7} {'single':>7} {'multi':>7} {'date':>7} {'dated':>7} {'s':>6}"
    )
    for name, make in systems.items():
        if args.only and name != args.only:
            continue
        started = time.perf_counter()
        answer, close = make()
        try:
            r = score(users, answer, args.budget)
        finally:
            close()
        took = time.perf_counter() - started
        print(
            f"{name:<14} {r['all']:>7.1%} {r.get('single', 0):>7.1%} {r.get('multi', 0):>7.1%} "
            f"{r.get('date', 0):>7.1%} {r['date carried']:>7.1%} {took:>6.1f}"
        )


if __name__ == "__main__":
    main()
