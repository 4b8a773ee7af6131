"""The tutorial of docs/index.md runs exactly as written, once with each language's guard.

Every `sh` block runs in bash, every `console` command runs and prints at least the lines the
page shows (in order; times and record ids may differ, ids are carried from where `dev`
printed them to where the page uses them), `dev` is driven over a pty with pexpect, and the
Python blocks run as a host program. The `.venv/bin` commands the page names are this
checkout's CLI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pytest

from tests.conftest import REPO

PAGE = (REPO / "docs" / "index.md").read_text()
TUTORIAL = PAGE.split("## A first agent in five minutes", 1)[1].split("\n## Concepts", 1)[0]
TOKENS = re.compile(
    r"(?P<time>\d{4}-\d\d-\d\dT[\d:.]+\+00:00)|(?P<hash>[0-9a-f]{12,})"
    r"|(?P<duration>\d+\.\d+ ?m?s\b)|(?P<id>\b[0-9a-f]{8}\b)"
)
"""What differs from run to run: times, hashes (of a hook's file: per language), durations,
and record ids (8 characters)."""
ANY = {"time": r"[\d\-T:.+]+", "hash": r"[0-9a-f]{12,}", "duration": r"\d+\.\d+ ?m?s"}
ENV = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "COLUMNS": "200"}


def tutorial_blocks() -> list[tuple[str, str]]:
    """The page's code blocks in order, as (language, body)."""
    return re.findall(r"```(\w+)\n(.*?)```", TUTORIAL, flags=re.S)


def make_venv(folder: Path) -> None:
    """`.venv/bin/hookengine` and `.venv/bin/hook_tool` running this checkout."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for command in ("hookengine", "hook_tool"):
        script = bin_dir / command
        script.write_text(f'#!/bin/sh\nexec {sys.executable} -m engine.cli.{command} "$@"\n')
        script.chmod(0o755)


@dataclass
class Reader:
    """Runs the tutorial's blocks in order, as a reader who picked `language` would."""

    folder: Path
    language: str
    ids: dict[str, str] = field(default_factory=dict)
    host_code: list[str] = field(default_factory=list)
    dev: pexpect.spawn | None = None

    def run(self, language: str, body: str) -> None:
        if language == "sh":
            self.shell(body)
        elif language == "python":
            self.python(body)
        elif language == "console":
            self.console(body)

    def shell(self, body: str) -> None:
        picked = re.search(r"language: (\w+)", body)
        if picked and picked.group(1) != self.language:
            return  # the other language's version of the guard
        done = subprocess.run(
            ["bash", "-e", "-c", body], cwd=self.folder, env=ENV, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{body}\n{done.stdout}\n{done.stderr}"

    def python(self, body: str) -> None:
        """The first block opens the engine; later ones run inside its `with`, as a host
        that kept `shop` would."""
        self.host_code.append(body)
        if len(self.host_code) == 1:
            return
        first, *rest = self.host_code
        program = first + "".join(_indent(code) for code in rest)
        done = subprocess.run(
            [sys.executable, "-c", program],
            cwd=self.folder,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "The user's city is Moscow" in done.stdout and "city context active" in done.stdout

    def console(self, body: str) -> None:
        lines = body.rstrip("\n").split("\n")
        if not lines[0].startswith("$ "):
            self.talk(lines)
            return
        command = self.with_ids(lines[0][2:])
        if " dev " in command:
            self.dev = pexpect.spawn(
                "bash", ["-c", command], cwd=self.folder, env=ENV, encoding="utf-8", timeout=20
            )
            self.talk(lines[1:])
            return
        done = subprocess.run(
            ["bash", "-c", command], cwd=self.folder, env=ENV, capture_output=True, text=True
        )
        expected_code = 1 if "--fail-on-diff" in command else 0
        assert done.returncode == expected_code, f"{command}\n{done.stdout}\n{done.stderr}"
        self.assert_shows(done.stdout, lines[1:])

    def assert_shows(self, output: str, expected: list[str]) -> None:
        """Each line the page shows is a line of the output, in order."""
        printed = [line.rstrip() for line in output.splitlines()]
        at = 0
        for line in expected:
            regex, shown = self.pattern(line.rstrip())
            found = next(
                (n for n in range(at, len(printed)) if re.fullmatch(regex, printed[n])), None
            )
            assert found is not None, f"{line!r} not printed (in order) in:\n{output}"
            self.learn(shown, re.fullmatch(regex, printed[found]))  # type: ignore[arg-type]
            at = found + 1

    def talk(self, lines: list[str]) -> None:
        """Drive `dev`: `> text` is typed; every other line must be printed, in order."""
        assert self.dev is not None, "a console block continues a dev session that is not open"
        for line in lines:
            if line.startswith("> "):
                self.dev.sendline(line[2:])
                if line == "> :quit":
                    self.dev.expect(pexpect.EOF)
                    self.dev.close()
                    assert self.dev.exitstatus == 0
                    self.dev = None
                continue
            regex, shown = self.pattern(line)
            self.dev.expect(r"(?:^|[\r\n])(?:> )?" + regex + r"\r\n")  # a whole line
            self.learn(shown, self.dev.match)

    def pattern(self, line: str) -> tuple[str, list[str]]:
        """A regex for a line the page shows, and the record ids it will learn from a match:
        an id seen before must be the same record, a new one is any id."""
        parts, pos, learn = [], 0, []
        for token in TOKENS.finditer(line):
            parts.append(re.escape(line[pos : token.start()]))
            kind, text = token.lastgroup or "", token.group()
            if kind != "id":
                parts.append(ANY[kind])
            elif text in self.ids:
                parts.append(self.ids[text])
            else:
                parts.append("([0-9a-f]{8})")
                learn.append(text)
            pos = token.end()
        return "".join(parts) + re.escape(line[pos:]), learn

    def learn(self, shown: list[str], match: re.Match[str]) -> None:
        self.ids.update(zip(shown, match.groups(), strict=True))

    def with_ids(self, text: str) -> str:
        for shown, real in self.ids.items():
            text = text.replace(shown, real)
        return text


def _indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.splitlines())


@pytest.mark.parametrize("language", ["javascript", "python"])
def test_the_tutorial_runs_exactly_as_written(tmp_path: Path, language: str) -> None:
    make_venv(tmp_path)
    reader = Reader(tmp_path, language)
    try:
        for block_language, body in tutorial_blocks():
            reader.run(block_language, body)
    finally:
        if reader.dev is not None:
            reader.dev.close(force=True)
    assert reader.dev is None, "the tutorial leaves dev running"
    assert (tmp_path / "data" / "hookengine.db").is_file(), "records are not where it says"
    assert len(reader.ids) == 4, "the record ids the tutorial shows were all printed"


def test_the_tutorial_shows_both_languages_and_the_whole_loop() -> None:
    blocks = tutorial_blocks()
    shell = "\n".join(body for language, body in blocks if language == "sh")
    console = "\n".join(body for language, body in blocks if language == "console")
    assert "language: javascript" in shell and "language: python" in shell
    assert "no_deletes.test.yaml" in shell
    for command in (
        "hookengine test",
        "hookengine records",
        "hookengine dev",
        "replay --config myconfig",
        "--fail-on-diff",
        "explain ",
    ):
        assert command in console, command


def test_a_missing_config_folder_suggests_config(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli.hookengine", "check"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "config: config folder not found: name the folder that holds agents/ with " in (
        done.stderr
    )
    assert "--config DIR" in done.stderr
