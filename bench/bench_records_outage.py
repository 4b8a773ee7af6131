"""Records through a real store outage (issue 9, item 2): is every acknowledged record written?

Through ``Engine.load`` of a temp config (a Python script hook, a JavaScript one, a plain
inject agent), 4 threads call ``tool_call`` without pause while the store goes away for
``--outage`` seconds: PostgreSQL behind a TCP proxy on loopback that closes every connection
and refuses new ones (``--store postgres``, the server on 127.0.0.1:5432), or an SQLite file
on a 128 MB tmpfs filled to the last byte (``--store disk``, needs the right to mount). Printed:
records acknowledged, written, dropped by cause, the most waiting at once, and how long after
the fault ended the writer had written everything.

Run: python bench/bench_records_outage.py [--store postgres|disk] [--outage 35] [--seconds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.runtime import Engine
from engine.store import RecordQuery
from tests.backends import pg_schema
from tests.test_records_outage import Proxy, config, through


def hammer(engine: Engine, stop: threading.Event, counts: list[int], k: int) -> None:
    agents = [engine.agent(a) for a in ("py", "js", "plain")]
    i = 0
    while not stop.is_set():
        agents[i % 3].tool_call("read", {"n": i, "t": k}, user_id=f"u{k}")
        counts[k] += 1
        i += 1


def run(engine: Engine, fault: contextlib.AbstractContextManager[None], args: Any) -> None:
    stop = threading.Event()
    counts = [0] * 4
    threads = [threading.Thread(target=hammer, args=(engine, stop, counts, k)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    most = 0
    with fault:
        end = time.monotonic() + args.outage
        while time.monotonic() < end:
            most = max(most, engine.status()["records"]["queued"])
            time.sleep(0.2)
    healed = time.monotonic()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join()
    acked = sum(counts)
    while engine.status()["records"]["queued"] and time.monotonic() - healed < 60:
        time.sleep(0.05)
    caught_up = time.monotonic() - healed
    h = engine.status()["records"]
    stored = len(engine.store.query_records(RecordQuery(limit=10_000_000)))
    print(
        f"outage {args.outage:g} s on {args.store}; calls for {args.outage + 2 * args.seconds:g} s"
    )
    print(f"acknowledged {acked}, written {h['written']}, in the store {stored}")
    print(f"dropped {h['dropped'] or 'none'}, most waiting at once {most}")
    print(f"all written {caught_up:.1f} s after the fault ended (calls went on {args.seconds:g} s)")
    print(f"accounted: {h['written'] + sum(h['dropped'].values()) == acked}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak RSS of this process {peak} MB")


@contextlib.contextmanager
def cut(proxy: Proxy) -> Iterator[None]:
    proxy.cut()
    try:
        yield
    finally:
        proxy.mend()


@contextlib.contextmanager
def filled(folder: Path) -> Iterator[None]:
    filler = folder / "filler"
    with contextlib.suppress(OSError), open(filler, "wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    try:
        yield
    finally:
        filler.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["postgres", "disk"], default="postgres")
    parser.add_argument("--outage", type=float, default=35.0)
    parser.add_argument("--seconds", type=float, default=5.0, help="calls before and after")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = config(Path(tmp) / "config")
        if args.store == "postgres":
            with pg_schema() as url:
                target = urlsplit(url)
                proxy = Proxy(target.hostname or "127.0.0.1", target.port or 5432)
                with Engine.load(root, db=through(proxy, url)) as engine:
                    run(engine, cut(proxy), args)
                proxy.close()
            return
        disk = Path(tmp) / "disk"
        disk.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", str(disk)]
        subprocess.run(command, check=True)
        try:
            with Engine.load(root, db=str(disk / "store.db")) as engine:
                run(engine, filled(disk), args)
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)


if __name__ == "__main__":
    main()
