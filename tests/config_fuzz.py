"""A seeded mutator of the demo config and a harness that runs ``hookengine check`` on each.

Used by tests/test_config_fuzz.py (a few hundred mutations in CI) and bench/fuzz_config.py
(thousands). A mutation copies the demo config and breaks it once to three times: edits to a
YAML or script text (hostile YAML, cut lines, random bytes), or the file itself replaced (a
FIFO, a folder, a symlink to /dev/zero, a loop, a sparse 10 GB file). A run is a crash when
``check`` raises or prints a traceback, and a hang when it passes the time cap.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from engine.cli import hookengine

DEMO = Path(__file__).resolve().parent.parent / "config"

SNIPPETS = (
    "x: !!python/object/apply:os.system ['true']\n",
    "x: !!python/name:os.system\n",
    "x: !foo bar\n",
    "? [a, b]\n: 1\n",
    "? {a: 1}\n: 1\n",
    "<<: 5\n",
    "<<: [1, 2]\n",
    "x: &r [*r]\n",
    "x: &m {a: *m}\n",
    "x: *undefined\n",
    "x: " + "[" * 700 + "]" * 700 + "\n",
    "x: " + "{a: " * 300 + "1" + "}" * 300 + "\n",
    "x: " + "9" * 5000 + "\n",
    "x: 0x" + "f" * 5000 + "\n",
    "x: 2020-13-45\n",
    "x: !!binary 'not base64!'\n",
    "x: !!int abc\n",
    "x: !!float [1]\n",
    "---\nx: 1\n",
    "%YAML 1.1\n---\n",
    "x: '" + "y" * 100_000 + "'\n",
    'x: "\\0"\n',
    "\t- tab\n",
    "x: [1, 2\n",
    "- just a list\n",
    "x: ~\n",
    "",
)
LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
TOKENS = ("", "0", "-1", "null", "[]", "{}", "true", "'x'", "9" * 4400, "é", "../../x.py", "\\0")


@dataclass
class Mutant:
    """One broken copy of the demo config and the steps that broke it."""

    root: Path
    steps: list[str] = field(default_factory=list)


def _files(config: Path) -> list[Path]:
    """The demo's text files still there as small regular files (earlier steps may have
    replaced some with a FIFO or a sparse giant)."""
    return sorted(
        p
        for p in config.rglob("*")
        if p.suffix in (".yaml", ".py", ".js")
        and p.is_file()
        and not p.is_symlink()
        and p.stat().st_size < 2**20
    )


def _text_edit(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True) or [""]
    i = rng.randrange(len(lines))
    how = rng.choice(("insert", "insert", "delete", "duplicate", "swap", "token", "cut", "byte"))
    if how == "insert":
        snippet = rng.choice((*SNIPPETS, LAUGHS))
        indent = " " * rng.choice((0, 0, 2, 4))
        lines.insert(i, "".join(indent + s for s in snippet.splitlines(keepends=True)))
    elif how == "delete":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "token" and ":" in lines[i]:
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {rng.choice(TOKENS)}\n"
    elif how == "cut":
        return text[: rng.randrange(len(text) + 1)], f"cut {how}"
    else:
        pos = rng.randrange(len(text) + 1)
        char = chr(rng.choice((0, 7, 9, 0x85, 0xFEFF, 0xD7FF, rng.randrange(32, 0x2FFF))))
        return text[:pos] + char + text[pos:], "byte"
    return "".join(lines), f"{how} at line {i + 1}"


def _file_edit(rng: random.Random, path: Path) -> str:
    how = rng.choice(("fifo", "folder", "dev_zero", "loop", "dangling", "sparse", "empty", "gone"))
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "folder":
        path.mkdir()
    elif how == "dev_zero":
        path.symlink_to("/dev/zero")
    elif how == "loop":
        path.symlink_to(path.name)
    elif how == "dangling":
        path.symlink_to(path.name + ".missing")
    elif how == "sparse":
        with open(path, "wb") as file:
            file.truncate(10 * 2**30)
    elif how == "empty":
        path.write_bytes(b"")
    return how


def _bytes_edit(rng: random.Random, path: Path) -> str:
    data = path.read_bytes()
    pos = rng.randrange(len(data) + 1)
    junk = rng.choice((b"\xff\xfe", b"\xc3", b"\x00", b"\xef\xbb\xbf", rng.randbytes(8)))
    path.write_bytes(data[:pos] + junk + data[pos:])
    return "bytes"


def mutate(rng: random.Random, folder: Path) -> Mutant:
    """A copy of the demo config under ``folder``, broken by 1–3 random steps."""
    if folder.exists():
        shutil.rmtree(folder)
    config = folder / "config"
    shutil.copytree(DEMO, config)
    mutant = Mutant(config)
    for _ in range(rng.choice((1, 1, 2, 3))):
        files = _files(config)
        if not files:
            break
        path = rng.choice(files)
        kind = rng.random()
        if kind < 0.12:
            step = _file_edit(rng, path)
        elif kind < 0.2:
            step = _bytes_edit(rng, path)
        else:
            text, step = _text_edit(rng, path.read_text(encoding="utf-8", errors="replace"))
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        mutant.steps.append(f"{path.relative_to(config)}: {step}")
    return mutant


# -- running check -----------------------------------------------------------------------


@dataclass
class Run:
    """What one ``hookengine check`` did."""

    code: int | None
    seconds: float
    output: str
    crash: str | None = None

    @property
    def ok(self) -> bool:
        return self.crash is None and self.code in (0, 2) and "Traceback" not in self.output


def check_in_process(config: Path, *, timeout: float = 30.0) -> Run:
    """``hookengine check`` through ``main`` in this process, its output captured.

    It runs on a daemon thread so that a hang is reported (``crash="hang"``) instead of
    stopping the fuzzer; a hung thread is left behind, which is why one hang is a failure."""
    out = io.StringIO()
    result: dict[str, object] = {}

    def body() -> None:
        try:
            result["code"] = hookengine.main(["check", str(config)])
        except BaseException as exc:  # noqa: BLE001 - the whole point: nothing may escape
            result["crash"] = f"{type(exc).__name__}: {str(exc)[:300]}"

    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        thread = threading.Thread(target=body, daemon=True)
        thread.start()
        thread.join(timeout)
    seconds = time.perf_counter() - start
    if thread.is_alive():
        return Run(None, seconds, out.getvalue(), crash="hang")
    code = result.get("code")
    crash = result.get("crash")
    return Run(
        code if isinstance(code, int) else None,
        seconds,
        out.getvalue(),
        crash if isinstance(crash, str) else None,
    )


def _memory_cap(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def check_in_subprocess(
    config: Path, *, timeout: float = 20.0, memory: int = 2 * 2**30
) -> tuple[Run, int]:
    """The real ``hookengine`` console script under an address-space cap; the run and the
    child's own peak RSS in KiB (0 if it had to be killed).

    The peak is the child's, from ``os.wait4``: ``RUSAGE_CHILDREN`` would be the largest of
    every child this test process ever waited for (mypy's, in an earlier test of the same
    xdist worker)."""
    script = Path(sys.executable).parent / "hookengine"
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
        proc = subprocess.Popen(
            [str(script), "check", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_memory_cap(memory),
            env={**os.environ, "PYTHONPATH": str(DEMO.parent)},
        )
        late = threading.Event()

        def kill() -> None:
            late.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        output = out.read()
    if late.is_set():
        return Run(None, time.perf_counter() - start, "", crash="timeout"), 0
    return Run(proc.returncode, time.perf_counter() - start, output), usage.ru_maxrss


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
