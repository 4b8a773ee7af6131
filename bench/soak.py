"""A soak: host threads drive every point through Engine.load and print the engine's health.

    python bench/soak.py [--minutes 30] [--threads 4] [--rate 80] [--users 300] [--keep DIR]

The config is a copy of the demo (config/) in a temp folder, with two agents: ``demo`` as
shipped plus the allow-list guard, and ``mirror``, the same hooks with every script swapped
to its other language, so each example script (no_deletes, rate_limit, allow_commands,
inject_context, redact_secrets) runs in JavaScript and in RestrictedPython. Next to them run the
demo's built-in kinds: faq_cache, memory (writes facts and summaries for many users and
sessions), inject, escalate, and the host layer.

Each thread plays sessions of a few turns, a random user and agent each: before_user_message,
before_call, tool_call (safe and destructive shell commands, file reads), tool_result (some
with API keys), before_call again, before_assistant_message (some with card numbers),
after_turn, often feedback, and after_loop at the session's end. ``--rate`` caps the decisions
per second over all threads (0: as fast as the machine goes), so the load stays realistic.

Every minute one line: elapsed time, decisions so far and per second, host RSS, open file
descriptors, OS threads, live worker processes (children of this process) and their RSS,
record health from ``Engine.status()["records"]`` and the stores' size on disk. At the end,
after a warm-up (a tenth of the run, at most a minute) is left out: whether host RSS levelled
off (growth in the second half against the first), whether fds, threads and workers stayed
stable, whether every record was written (0 dropped), whether the guards held (no destructive
command allowed, no secret shown); the exit status is 1 if any of these failed. ``uptime``
is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine import Engine  # noqa: E402 - after the path insert, as in the other benches
from engine.points import Point  # noqa: E402

AGENTS = ("demo", "mirror")
LAST_HOOK = "  - hooks/redact_secrets.yaml\n"
"""The allow-list guard goes after this line, so the other guards see shell calls first."""
SAMPLE_S = 5.0
FD_SLACK = 8
"""Open fds may differ by this much between samples (a worker respawn opens pipes)."""
THREAD_SLACK = 4

NAMES = ("Alex", "Bob", "Maria", "Ivan", "Olga", "Sam", "Lena", "Kim")
CITIES = ("Berlin", "Moscow", "Paris", "Riga", "Oslo", "Kazan", "Tver", "Porto")
THINGS = ("green tea", "jazz", "mountain bikes", "old maps", "board games", "sushi")
STATEMENTS = (
    "My name is {name}.",
    "I live in {city}.",
    "I love {thing}.",
    "Меня зовут {name}.",
    "Я живу в {city}.",
)
"""What the memory hook learns from (one turn in five)."""
RECALLS = ("What is my name?", "Which city do I live in?", "Где моя доставка iPhone?")
"""Asked again and again: the FAQ cache and escalate answer these without the LLM."""
QUESTIONS = (
    "Where is my order ORD-{n:06d}? It was due on {day}.",
    "Is item SKU-{n:06d} in stock in {city}?",
    "Can you check invoice INV-{n:06d} from {day}?",
    "Why was payment {n:06d} declined on {day}?",
    "Can you clean up my exports for order ORD-{n:06d}?",
    "How long does parcel P{n:06d} take to reach {city}?",
    "Do you ship {thing} to {city} before {day}? Order ORD-{n:06d}.",
)
"""Shop questions with details that rarely repeat: these go to the LLM, tools and all."""
EXTRA_WORDS = (
    "gift wrap fragile weekend courier pickup locker invoice refund discount coupon warranty "
    "size colour blue black large small express standard insured signature neighbour "
    "doorbell office reception floor balcony garage parcel return exchange voucher"
)
EXTRAS = tuple(EXTRA_WORDS.split())
"""Words a user adds (three per question), so two shop questions rarely look alike."""
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "1 March", "12 May")
ANSWERS = (
    "Shipping to {city} takes 3 to 5 working days.",
    "Your order ORD-2024-{n:06d} is packed and ships tomorrow from Moscow.",
    "I could not find",
    "Your card 4111 1111 1111 1111 is on file; the order ships on Monday.",
    "Hello {name}! We ship {thing} to {city} within a week.",
)
SAFE = ("ls -la", "cat README.md", "git status", "git log --oneline -5", "grep -r TODO .")
DESTRUCTIVE = (
    "rm -rf /srv/data",
    "git reset --hard HEAD~3",
    "find . -name '*.log' -delete",
    "shred -u secrets.txt",
    "ls *.tmp | xargs rm",
    "dd if=/dev/zero of=disk.img bs=1M count=1",
)
CARD = "4111 1111 1111 1111"


# -- the config ------------------------------------------------------------------------------


def make_project(folder: Path) -> Path:
    """Copy the demo config under ``folder``, add the allow-list guard and the ``mirror``
    agent; return the config folder."""
    root = folder / "config"
    shutil.copytree(REPO / "config", root)
    demo = root / "agents/demo"
    agent_yaml = demo / "agent.yaml"
    text = agent_yaml.read_text(encoding="utf-8")
    if LAST_HOOK not in text:
        raise SystemExit(f"{agent_yaml}: no line {LAST_HOOK.strip()!r} to add the guard after")
    agent_yaml.write_text(
        text.replace(LAST_HOOK, LAST_HOOK + "  - hooks/allow_commands.yaml\n"),
        encoding="utf-8",
    )
    mirror = root / "agents/mirror"
    shutil.copytree(demo, mirror)
    for hook in (mirror / "hooks").glob("*.yaml"):
        hook.write_text(swap_language(hook.read_text(encoding="utf-8")), encoding="utf-8")
    return root


def swap_language(text: str) -> str:
    """``script: x.js`` becomes ``x.py`` and back."""
    other = {"js": "py", "py": "js"}
    return re.sub(
        r"^(script: .*\.)(js|py)$", lambda m: m[1] + other[m[2]], text, flags=re.MULTILINE
    )


def store_bytes(data: Path) -> int:
    """Bytes of every file under ``data`` (the SQLite stores with their -wal files)."""
    return sum(p.stat().st_size for p in data.rglob("*") if p.is_file())


# -- what a host would do --------------------------------------------------------------------


@dataclass
class Tally:
    """Counts shared by the threads (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: Counter[str] = field(default_factory=Counter)
    hook_failures: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def add(self, local: Counter[str], failures: Counter[str], problems: list[str]) -> None:
        with self.lock:
            self.counts.update(local)
            self.hook_failures.update(failures)
            self.problems.extend(problems[: max(0, 20 - len(self.problems))])

    def decided(self) -> None:
        with self.lock:
            self.counts["decisions"] += 1

    def decisions(self) -> int:
        with self.lock:
            return self.counts["decisions"]


class Pacer:
    """Spaces calls ``interval`` seconds apart; a thread that fell behind does not burst."""

    def __init__(self, per_second: float) -> None:
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self.next_at = time.monotonic()

    def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        self.next_at = max(self.next_at + self.interval, now - 1.0)
        if self.next_at > now:
            time.sleep(self.next_at - now)


class Host:
    """One host thread: plays sessions until ``stop`` is set."""

    def __init__(self, engine: Engine, index: int, args: argparse.Namespace, tally: Tally):
        self.agents = {name: engine.agent(name) for name in AGENTS}
        self.index = index
        self.rng = random.Random(index)
        self.users = args.users
        self.pacer = Pacer(args.rate / args.threads)
        self.tally = tally
        self.counts: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.problems: list[str] = []

    def run(self, stop: threading.Event) -> None:
        session = 0
        while not stop.is_set():
            session += 1
            try:
                self.session(f"s{self.index}-{session}", stop)
            except Exception as exc:  # noqa: BLE001 - a host call that raises is a finding
                self.counts["raised"] += 1
                self.problems.append(f"a host call raised {type(exc).__name__}: {exc}")
            self.tally.add(self.counts, self.failures, self.problems)
            self.counts, self.failures, self.problems = Counter(), Counter(), []

    def call(self, agent_name: str, method: str, *args: Any, **kw: Any) -> Any:
        self.pacer.wait()
        out = getattr(self.agents[agent_name], method)(*args, **kw)
        self.tally.decided()
        self.counts[method] += 1
        self.counts["recalled"] += any("🧠" in notice for notice in out.notices)
        for run in out.hooks:
            if run.status == "failed":
                self.failures[f"{agent_name}/{run.name}: {run.cause}"] += 1
        return out

    def session(self, session_id: str, stop: threading.Event) -> None:
        rng = self.rng
        agent = rng.choice(AGENTS)
        scope = {"user_id": f"u{rng.randrange(self.users)}", "session_id": session_id}
        for _ in range(rng.randint(1, 6)):
            if stop.is_set():
                break
            self.turn(agent, scope)
        self.call(agent, "after_loop", rng.choice(("job_done", "cancelled")), **scope)

    def turn(self, agent: str, scope: dict[str, str]) -> None:
        rng = self.rng
        words = {
            "name": rng.choice(NAMES),
            "city": rng.choice(CITIES),
            "thing": rng.choice(THINGS),
            "n": rng.randrange(1_000_000),
            "day": rng.choice(DAYS),
        }
        extra = " ".join(rng.sample(EXTRAS, 3))
        pick = rng.random()
        asked = STATEMENTS if pick < 0.2 else RECALLS if pick < 0.3 else QUESTIONS
        question = rng.choice(asked).format(**words)
        if asked is QUESTIONS:
            question += f" ({extra})"
        first = self.call(agent, "before_user_message", question, **scope)
        if (
            first.short_circuit
            and self.agents[agent].pipeline.by_point[Point.BEFORE_ASSISTANT_MESSAGE]
        ):
            # the answer went through the agent's before_assistant_message hooks as well: one
            # more decision, with its own record
            self.tally.decided()
            self.counts["before_assistant_message"] += 1
        answer, tool_calls = first.answer, []
        self.counts["answered"] += answer is not None
        if answer is None and not first.blocked:
            self.call(agent, "before_call", "You are a shop assistant.", tools=["shell"], **scope)
            tool_calls = [self.tool(agent, scope) for _ in range(rng.randint(1, 2))]
            self.call(agent, "before_call", "You are a shop assistant.", **scope)
            answer = self.answer(agent, question, rng.choice(ANSWERS).format(**words), scope)
        self.call(agent, "after_turn", question, answer or "", tool_calls, **scope)
        if rng.random() < 0.4:
            rating = rng.choice(("like", "dislike"))
            self.call(agent, "feedback", first.turn_id or "", rating, **scope)

    def tool(self, agent: str, scope: dict[str, str]) -> dict[str, Any]:
        rng = self.rng
        if rng.random() < 0.3:
            name, args = "read_file", {"path": rng.choice(("config.env", "notes.md"))}
        else:
            command = rng.choice(DESTRUCTIVE if rng.random() < 0.3 else SAFE)
            name, args = "shell", {"command": command}
        out = self.call(agent, "tool_call", name, args, **scope)
        self.counts["tool_blocked"] += out.blocked
        if name == "shell" and args["command"] in DESTRUCTIVE:
            self.counts["destructive"] += 1
            if not out.blocked:
                self.problems.append(f"{agent}: {args['command']!r} was allowed")
        if not out.blocked:
            self.result(agent, name, args, scope)
        return {"name": name, "input": args, "blocked": out.blocked}

    def result(self, agent: str, name: str, args: dict[str, Any], scope: dict[str, str]) -> None:
        secret = None
        if self.rng.random() < 0.5:
            secret = f"sk-live-{self.rng.getrandbits(128):032x}"
            value: Any = {"text": f"API_KEY={secret}", "lines": 1}
        else:
            value = f"total 8\n-rw-r--r-- 1 shop shop 120 {args}"
        out = self.call(agent, "tool_result", name, args, value, **scope)
        if secret is not None:
            self.counts["secrets"] += 1
            if secret in json.dumps(out.result) and not out.blocked:
                self.problems.append(f"{agent}: a key passed tool_result")

    def answer(self, agent: str, question: str, text: str, scope: dict[str, str]) -> str:
        out = self.call(agent, "before_assistant_message", question, text, **scope)
        shown = out.answer or ""
        if CARD in text:
            self.counts["cards"] += 1
            if CARD in shown and not out.blocked:
                self.problems.append(f"{agent}: a card number reached the user")
        return shown


# -- what the process looks like ---------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    t: float
    decisions: int
    rss: int
    fds: int
    threads: int
    workers: int
    zombies: int
    worker_rss: int
    cpu: float
    """CPU seconds of this process so far."""
    worker_cpu: float
    """CPU seconds of the live workers so far (a respawned worker starts at 0)."""


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_of(pid: int | str) -> int:
    """Resident bytes of a process (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def os_threads() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def children() -> tuple[list[int], int]:
    """Live child pids of this process, and how many children are zombies."""
    me, live, zombies = os.getpid(), [], 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended while we looked
        if int(fields[1]) == me:
            if fields[0] == b"Z":
                zombies += 1
            else:
                live.append(int(entry.name))
    return live, zombies


def sample(started: float, tally: Tally) -> Sample:
    live, zombies = children()
    return Sample(
        t=time.monotonic() - started,
        decisions=tally.decisions(),
        rss=rss_of("self"),
        fds=len(os.listdir("/proc/self/fd")) - 1,  # less the one listdir itself holds
        threads=os_threads(),
        workers=len(live),
        zombies=zombies,
        worker_rss=sum(rss_of(pid) for pid in live),
        cpu=sum(os.times()[:2]),
        worker_cpu=sum(cpu_of(pid) for pid in live),
    )


def mb(n: float) -> str:
    return f"{n / 2**20:.1f} MB"


def minute_line(s: Sample, before: Sample, engine: Engine) -> str:
    """One line of health: ``before`` is the sample the CPU shares are taken against."""
    span = max(s.t - before.t, 1e-9)
    cpu = (
        f"cpu host {100 * (s.cpu - before.cpu) / span:.0f}% "
        f"workers {100 * max(0.0, s.worker_cpu - before.worker_cpu) / span:.0f}%"
    )
    records = engine.status()["records"] or {}
    dropped = records.get("dropped", {})
    causes = ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))
    zombies = f" +{s.zombies} zombie" if s.zombies else ""
    return (
        f"{int(s.t) // 60:3d}:{int(s.t) % 60:02d}  decisions {s.decisions} "
        f"({s.decisions / max(s.t, 1e-9):.1f}/s)  rss {mb(s.rss)}  fds {s.fds}  "
        f"threads {s.threads}  workers {s.workers}{zombies} ({mb(s.worker_rss)})  {cpu}  "
        f"records written {records.get('written')} dropped {sum(dropped.values())}"
        f"{f' ({causes})' if causes else ''} queued {records.get('queued')}  "
        f"store {mb(store_bytes(engine.project.base_dir / 'data'))}"
    )


# -- the verdict -----------------------------------------------------------------------------


def growth(samples: list[Sample]) -> float:
    """RSS growth over ``samples`` in bytes: the least-squares slope times their span."""
    if len(samples) < 2:
        return 0.0
    ts, ys = [s.t for s in samples], [s.rss for s in samples]
    mt, my = sum(ts) / len(ts), sum(ys) / len(ys)
    var = sum((t - mt) ** 2 for t in ts)
    slope = sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / var
    return slope * (ts[-1] - ts[0])


def verdict(samples: list[Sample], warm_s: float, args: argparse.Namespace) -> list[bool]:
    """Print the end-of-run checks; one bool per check."""
    steady = [s for s in samples if s.t >= warm_s] or samples
    mid = steady[0].t + (steady[-1].t - steady[0].t) / 2
    first = growth([s for s in steady if s.t <= mid])
    second = growth([s for s in steady if s.t >= mid])
    levelled = second <= max(args.rss_tolerance_mb * 2**20, first / 2)
    print(
        f"RSS levelled off: {'yes' if levelled else 'no'} (first half {first / 2**20:+.1f} MB, "
        f"second half {second / 2**20:+.1f} MB; after a {warm_s:.0f} s warm-up, "
        f"{mb(steady[0].rss)} -> {mb(steady[-1].rss)})"
    )
    checks = [levelled]
    for name, slack in (("fds", FD_SLACK), ("threads", THREAD_SLACK)):
        values = [getattr(s, name) for s in steady]
        ok = max(values) <= values[0] + slack
        checks.append(ok)
        print(
            f"{name} stable: {'yes' if ok else 'no'} ({values[0]} -> {values[-1]}, "
            f"max {max(values)}, allowed +{slack})"
        )
    return checks


def workers_verdict(samples: list[Sample], size: int, left: int) -> bool:
    steady = [s.workers for s in samples[1:]] or [0]
    zombies = samples[-1].zombies
    ok = steady[-1] >= 1 and max(steady) <= size and zombies == 0 and left == 0
    print(
        f"workers stable: {'yes' if ok else 'no'} ({steady[0]} -> {steady[-1]}, max "
        f"{max(steady)}, pool size {size}, zombies {zombies}, processes left after close {left})"
    )
    return ok


def records_verdict(health: dict[str, Any], decisions: int) -> bool:
    dropped = sum(health["dropped"].values())
    ok = dropped == 0 and health["written"] == decisions and health["queued"] == 0
    causes = ", ".join(f"{k} {v}" for k, v in sorted(health["dropped"].items())) or "none"
    print(
        f"records dropped: {dropped} ({'ok' if ok else 'FAILED'}: written {health['written']} "
        f"of {decisions} decisions, queued {health['queued']}, causes: {causes}, "
        f"last error: {health['last_error']})"
    )
    return ok


def guards_verdict(tally: Tally) -> bool:
    c = tally.counts
    ok = not tally.problems and not c["raised"]
    print(
        f"guards held: {'yes' if ok else 'no'} ({c['destructive']} destructive commands, "
        f"{c['secrets']} keys in tool results, {c['cards']} card numbers in answers; "
        f"{len(tally.problems)} let through, {c['raised']} host calls raised)"
    )
    for problem in tally.problems:
        print(f"  {problem}")
    failures = ", ".join(f"{k} x{v}" for k, v in tally.hook_failures.most_common(8))
    print(f"hook failures (reported, not judged): {failures or 'none'}")
    return ok


def traffic_line(tally: Tally) -> str:
    c = tally.counts
    return (
        f"traffic: before_user_message {c['before_user_message']} (answered without the LLM "
        f"{c['answered']}, memories recalled {c['recalled']}), before_call {c['before_call']}, "
        f"tool_call {c['tool_call']} (blocked {c['tool_blocked']}), tool_result "
        f"{c['tool_result']}, before_assistant_message {c['before_assistant_message']}, "
        f"after_turn {c['after_turn']}, feedback {c['feedback']}, after_loop {c['after_loop']}"
    )


# -- the run ---------------------------------------------------------------------------------


def uptime(when: str) -> None:
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    print(f"uptime at {when}: {out.stdout.strip() or out.stderr.strip()}", flush=True)


def watch(engine: Engine, tally: Tally, started: float, seconds: float) -> list[Sample]:
    """Sample every SAMPLE_S seconds until ``seconds`` after ``started``; print a line each
    minute."""
    samples = [sample(started, tally)]
    shown, next_line = samples[0], 60.0
    try:
        while samples[-1].t < seconds:
            time.sleep(min(SAMPLE_S, max(0.0, seconds - samples[-1].t)))
            samples.append(sample(started, tally))
            if samples[-1].t >= next_line - SAMPLE_S / 2:
                print(minute_line(samples[-1], shown, engine), flush=True)
                shown, next_line = samples[-1], next_line + 60.0
    except KeyboardInterrupt:
        print("interrupted: judging what ran so far", flush=True)
    return samples


def run(args: argparse.Namespace, folder: Path) -> int:
    root = make_project(folder)
    tally = Tally()
    stop = threading.Event()
    with Engine.load(root) as engine:
        size = engine.settings.scripts.workers
        print(
            f"soak: {args.minutes} min, {args.threads} threads, rate "
            f"{args.rate or 'unlimited'}/s, {args.users} users, agents {', '.join(AGENTS)}, "
            f"pool size {size}, config {root}",
            flush=True,
        )
        hosts = [Host(engine, i, args, tally) for i in range(args.threads)]
        threads = [threading.Thread(target=h.run, args=(stop,), daemon=True) for h in hosts]
        started = time.monotonic()
        for t in threads:
            t.start()
        samples = watch(engine, tally, started, args.minutes * 60)
        stop.set()
        for t in threads:
            t.join()
        engine.flush()
        health = engine.status()["records"]
        print(f"end:  {minute_line(sample(started, tally), samples[0], engine)}")
        print(traffic_line(tally))
    live, zombies = children()
    left = len(live) + zombies
    warm_s = min(60.0, samples[-1].t / 10)
    checks = verdict(samples, warm_s, args)
    checks.append(workers_verdict(samples, size, left))
    checks.append(records_verdict(health, tally.counts["decisions"]))
    checks.append(guards_verdict(tally))
    print(f"soak: {'PASSED' if all(checks) else 'FAILED'}")
    return 0 if all(checks) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--rate", type=float, default=80.0, help="decisions per second over all threads; 0: no cap"
    )
    parser.add_argument("--users", type=int, default=300, help="distinct user ids")
    parser.add_argument(
        "--rss-tolerance-mb",
        type=float,
        default=8.0,
        help="second-half RSS growth always accepted as levelled (noise)",
    )
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (stores, config)")
    args = parser.parse_args()
    uptime("start")
    try:
        if args.keep:
            if args.keep.exists() and any(args.keep.iterdir()):
                parser.error(f"--keep {args.keep}: the folder is not empty")
            args.keep.mkdir(parents=True, exist_ok=True)
            return run(args, args.keep)
        with tempfile.TemporaryDirectory(prefix="hookengine-soak-") as tmp:
            return run(args, Path(tmp))
    finally:
        uptime("end")


if __name__ == "__main__":
    sys.exit(main())
