"""Every broken config input is a ConfigError (``hookengine check``: exit 2, ``file:line: …``),
never a crash, a hang or a balloon: hostile YAML, recursion, huge numbers and files, special
files, bad paths, unreadable folders, a read-only project folder."""

from __future__ import annotations

import errno
import itertools
import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import hookengine
from engine.config import load_project, yamlfile
from engine.errors import ConfigError, StoreError
from engine.runtime import Engine
from tests.conftest import copy_demo

HOOK = "agents/demo/hooks/no_deletes.yaml"
AGENT = "agents/demo/agent.yaml"
TEST_FILE = "agents/demo/hooks/no_deletes.test.yaml"
YAML_FILES = ("engine.yaml", AGENT, HOOK)
CALL = {"tool": "shell", "arguments": {"command": "ls"}, "session_id": "s1", "user_id": "u1"}


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return copy_demo(tmp_path)


def run_check(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``hookengine check`` on a thread that must end (a hang fails instead of blocking)."""
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(hookengine.main(["check", str(config)])))
    thread.daemon = True
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "hookengine check hung"
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return result[0], out.err


def problems_of(config: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_project(config)
    return [str(p) for p in caught.value.problems]


def append(config: Path, rel: str, text: str) -> str:
    path = config / rel
    path.write_text(path.read_text() + text)
    return rel


def line_count(config: Path, rel: str) -> int:
    return len((config / rel).read_text().splitlines())


def assert_reported(err: str, rel: str, line: int | None, *words: str) -> None:
    """A line of ``err`` names ``rel`` (at ``line``; any line or none if None) and ``words``."""
    where = re.escape(rel) + (rf":{line}(:\d+)?: " if line else r"(:\d+)*: ")
    found = [x for x in err.splitlines() if re.search(where, x)]
    assert found, err
    assert all(w in found[0] for w in words), found[0]


# -- YAML the safe constructor refuses -----------------------------------------------------

REFUSED = {
    "python object": ("x: !!python/object/apply:os.system ['true']\n", "constructor"),
    "python name": ("x: !!python/name:os.system\n", "constructor"),
    "local tag": ("x: !foo bar\n", "constructor for the tag '!foo'"),
    "complex key": ("? [a, b]\n: 1\n", "unhashable key"),
    "mapping key": ("? {a: 1}\n: 1\n", "unhashable key"),
    "merge of a scalar": ("<<: 5\n", "for merging"),
    "merge of scalars": ("<<: [1, 2]\n", "for merging"),
    "bad base64": ("x: !!binary 'not base64!'\n", "base64"),
    "bad date": ("x: 2020-13-45\n", "cannot read the value"),
    "int tag on text": ("x: !!int abc\n", "cannot read the value"),
}


@pytest.mark.parametrize("rel", YAML_FILES)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_yaml_the_safe_loader_refuses_is_a_problem_at_its_line(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, words = REFUSED[case]
    line = line_count(demo, rel) + 1
    append(demo, rel, text)
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, rel, line, words)


def test_a_refused_tag_in_a_hook_test_file_is_a_problem_at_its_line(demo: Path) -> None:
    from engine.yamltests import collect

    line = line_count(demo, TEST_FILE) + 1
    append(demo, TEST_FILE, "x: !!python/object/apply:os.system ['true']\n")
    project = load_project(demo)
    spec = next(s for s in project.agents["demo"].hooks if s.name == "no_deletes")
    _, problems = collect(spec)
    assert [p.line for p in problems] == [line]
    assert problems[0].path.endswith("no_deletes.test.yaml")


def test_engine_load_raises_config_error_for_a_refused_tag(demo: Path) -> None:
    append(demo, "engine.yaml", "x: !!python/object/apply:os.system ['touch /tmp/pwned']\n")
    with pytest.raises(ConfigError) as caught:
        Engine.load(demo, records=False, db=":memory:")
    assert caught.value.path is not None and caught.value.path.endswith("engine.yaml")
    assert caught.value.line == line_count(demo, "engine.yaml")


# -- recursion and depth -------------------------------------------------------------------

RECURSIVE = {
    "list holding itself": "x: &r [*r]\n",
    "mapping holding itself": "x: &m {a: *m}\n",
    "deeper self reference": "x: &d\n  a:\n    - b: *d\n",
    "block list holding itself": "x: &b\n  - 1\n  - *b\n",
}


@pytest.mark.parametrize("rel", YAML_FILES)
@pytest.mark.parametrize("case", sorted(RECURSIVE))
def test_a_recursive_alias_is_refused_at_its_line(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = RECURSIVE[case]
    line = line_count(demo, rel) + len(text.splitlines())
    append(demo, rel, text)
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, rel, line, "recursive alias")


def alias_nest(outer: int, inner: int) -> str:
    """An anchor ``inner`` lists deep, and its alias inside ``outer`` lists (below the root)."""
    return f"a: &a {'[' * inner}1{']' * inner}\nb: {'[' * outer}*a{']' * outer}\n"


DEEP = {
    "flow lists": "x: " + "[" * 1000 + "]" * 1000 + "\n",
    "flow mappings": "x: " + "{a: " * 700 + "1" + "}" * 700 + "\n",
    "block mappings": "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n",
    "block lists": "x:\n" + "".join("  " * i + "-\n" for i in range(1, 120)),
    "just past the limit": "x: " + "[" * (yamlfile.MAX_DEPTH + 1) + "]" * (yamlfile.MAX_DEPTH + 1),
    "an alias one level past the limit": alias_nest(32, 32),
    "a chain of aliases": "".join(  # each nests the one before 62 levels deeper
        f"a{k}: &a{k} " + "[" * 62 + (f"*a{k - 1}" if k else "1") + "]" * 62 + "\n"
        for k in range(16)
    ),
}


@pytest.mark.parametrize("case", sorted(DEEP))
def test_nesting_past_the_depth_limit_is_refused(
    demo: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (demo / "engine.yaml").write_text(DEEP[case])
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, "engine.yaml", None, "levels deep")  # the tmp path says "nest"


def test_an_alias_nesting_within_the_limit_is_read_and_validated_as_usual(demo: Path) -> None:
    (demo / "engine.yaml").write_text(alias_nest(31, 32))  # 1 + 31 + 32 levels
    found = problems_of(demo)
    assert [p.split("engine.yaml:")[1][:30] for p in found] == [
        "1: a: unknown field 'a' (field",
        "2: b: unknown field 'b' (field",
    ]


def test_nesting_within_the_limit_is_read_and_validated_as_usual(demo: Path) -> None:
    depth = yamlfile.MAX_DEPTH - 2
    append(demo, "engine.yaml", "extra: " + "[" * depth + "]" * depth + "\n")
    (problem,) = problems_of(demo)
    where = f"{demo / 'engine.yaml'}:{line_count(demo, 'engine.yaml')}"
    assert problem.startswith(f"{where}: extra: unknown field 'extra' (fields: process, ")


# -- numbers -------------------------------------------------------------------------------

BIG_INTS = {
    "decimal past Python's limit": "9" * 5000,
    "just past ours": "1" * (yamlfile.MAX_INT_DIGITS + 1),
    "negative": "-" + "7" * 4400,
    "hexadecimal": "0x" + "f" * 5000,
    "with underscores": "1_" * 3000 + "1",
}


@pytest.mark.parametrize("field", ["retention", "process"])
@pytest.mark.parametrize("case", sorted(BIG_INTS))
def test_a_huge_integer_is_refused_at_its_line(
    demo: Path, field: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = line_count(demo, "engine.yaml") + 1
    append(demo, "engine.yaml", f"extra_{field}: {BIG_INTS[case]}\n")
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, "engine.yaml", line, "integer of more than")


def test_a_long_integer_within_the_limit_reaches_validation(demo: Path) -> None:
    text = (
        (demo / "engine.yaml").read_text().replace("retention: 100000", "retention: " + "9" * 999)
    )
    (demo / "engine.yaml").write_text(text)
    assert load_project(demo).settings.retention == int("9" * 999)


# -- alias expansion (billion laughs) ------------------------------------------------------


def laughs(levels: int, width: int) -> str:
    names = [f"l{i}" for i in range(levels)]
    text = f"{names[0]}: &{names[0]} [{', '.join(['x'] * width)}]\n"
    for prev, name in itertools.pairwise(names):
        text += f"{name}: &{name} [{', '.join([f'*{prev}'] * width)}]\n"
    return text


LAUGHS = {
    "classic 9 x 10": laughs(9, 10),
    "deep and narrow 30 x 2": laughs(30, 2),
    "shallow and wide 3 x 200": laughs(3, 200),
    "one big anchor many times": "a: &a ["
    + ", ".join(["x"] * 500)
    + "]\n"
    + "b: ["
    + ", ".join(["*a"] * 100)
    + "]\n",
}


@pytest.mark.parametrize("rel", YAML_FILES)
@pytest.mark.parametrize("case", sorted(LAUGHS))
def test_aliases_past_the_expansion_budget_are_refused_at_the_alias(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = line_count(demo, rel) + 1
    append(demo, rel, LAUGHS[case])
    code, err = run_check(demo, capsys)
    assert code == 2
    match = re.search(re.escape(rel) + r":(\d+): aliases expand the file past", err)
    assert match, err
    assert int(match.group(1)) > first  # the line of an alias, not of the first anchor


@pytest.mark.parametrize("lang", ["py", "js"])
def test_aliases_within_the_budget_load_and_the_agent_answers(
    demo: Path, tmp_path: Path, lang: str
) -> None:
    hook = (demo / HOOK).read_text()
    hook = hook.replace("no_deletes.js", f"no_deletes.{lang}")
    hook = hook.replace("forbidden: [delete_file, drop_table]", "forbidden: &f [delete_file]")
    hook = hook.replace("shell_tools: [shell]", "shell_tools: [shell]\n  also: [*f, *f, *f]")
    (demo / HOOK).write_text(hook)
    with Engine.load(demo, records=False, db=str(tmp_path / "s.db")) as engine:
        agent = engine.agent("demo")
        assert agent.tool_call("delete_file", {"path": "a"}, user_id="u1").blocked
        assert not agent.tool_call("read_file", {"path": "a"}, user_id="u1").blocked


MANY = {
    "many keys": "".join(f"k{i}: {i}\n" for i in range(yamlfile.MAX_VALUES)),
    "a long flow list": "x: [" + ", ".join(["1"] * yamlfile.MAX_VALUES) + "]\n",
    "many hook files": "hook_files:\n" + "".join(f"  - h{i}.yaml\n" for i in range(12_000)),
    "many empty lists": "x: [" + ", ".join(["[]"] * 11_000) + "]\n",
}


@pytest.mark.parametrize("rel", YAML_FILES)
@pytest.mark.parametrize("case", sorted(MANY))
def test_a_file_of_more_values_than_the_limit_is_refused(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (demo / rel).write_text(MANY[case])
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, rel, None, f"more than {yamlfile.MAX_VALUES} values")


# -- size ------------------------------------------------------------------------------------

BIG = {
    "a long comment": "#" + "x" * yamlfile.MAX_CONFIG_BYTES + "\n",
    "many keys": "".join(f"k{i}: {i}\n" for i in range(40_000)),
    "one long string": "x: '" + "y" * 300_000 + "'\n",
}


@pytest.mark.parametrize("rel", YAML_FILES)
@pytest.mark.parametrize("case", sorted(BIG))
def test_a_file_past_the_size_cap_is_refused_by_name(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    append(demo, rel, BIG[case])
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, rel, None, f"larger than {yamlfile.MAX_CONFIG_BYTES} bytes")


def test_a_sparse_giant_is_refused_from_its_size_without_being_read(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open(demo / "engine.yaml", "wb") as file:
        file.truncate(50 * 2**30)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    [problem] = problems_of(demo)
    assert "larger than" in problem and "(53687091200 bytes)" in problem
    assert not reads


def test_a_file_just_under_the_cap_loads(demo: Path) -> None:
    path = demo / "engine.yaml"
    room = yamlfile.MAX_CONFIG_BYTES - path.stat().st_size - 10
    append(demo, "engine.yaml", "#" + "c" * room + "\n")
    assert load_project(demo).settings.process == "demo-host"


# -- special files ---------------------------------------------------------------------------


def fifo(path: Path) -> str:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return "is a FIFO, not a regular file"


def folder(path: Path) -> str:
    path.unlink(missing_ok=True)
    path.mkdir()
    return "is a directory, not a regular file"


def dev_zero(path: Path) -> str:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")
    return "is a character device, not a regular file"


def unix_socket(path: Path) -> str:
    path.unlink(missing_ok=True)
    here = Path.cwd()
    os.chdir(path.parent)  # a socket's path is limited to ~100 bytes: bind by its name
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path.name)
        sock.close()
    finally:
        os.chdir(here)
    return "is a socket, not a regular file"


def loop(path: Path) -> str:
    path.unlink(missing_ok=True)
    path.symlink_to(path.name)
    return "symlink loop"


SPECIAL: dict[str, Callable[[Path], str]] = {
    "fifo": fifo,
    "folder": folder,
    "dev zero": dev_zero,
    "socket": unix_socket,
    "symlink loop": loop,
}


@pytest.mark.parametrize("rel", [*YAML_FILES, "agents/demo/hooks/rate_limit.yaml"])
@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_special_file_in_place_of_a_config_file_is_refused_without_a_hang(
    demo: Path, rel: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    words = SPECIAL[case](demo / rel)
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, rel, None, words)


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_special_file_in_place_of_a_hook_test_file_is_reported(demo: Path, case: str) -> None:
    from engine.yamltests import collect

    words = SPECIAL[case](demo / TEST_FILE)
    with Engine.load(demo, records=False, db=":memory:") as engine:  # no hang on load
        assert "demo" in engine.agents
    spec = next(s for s in load_project(demo).agents["demo"].hooks if s.name == "no_deletes")
    _, problems = collect(spec)
    assert len(problems) == 1 and words in problems[0].message


@pytest.mark.parametrize("lang", ["py", "js"])
@pytest.mark.parametrize("case", ["fifo", "dev zero", "folder"])
def test_a_special_file_as_a_script_is_refused_at_the_script_key(
    demo: Path, lang: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = (demo / HOOK).read_text().replace("no_deletes.js", f"no_deletes.{lang}")
    (demo / HOOK).write_text(hook)
    SPECIAL[case](demo / "scripts" / f"no_deletes.{lang}")
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, HOOK, 3, "script:")


TOOL = """kind: script_tool
name: t
description: a tool whose script is not a file
script: t.py
input_schema: {type: object}
"""


@pytest.mark.parametrize("case", ["fifo", "dev zero", "folder"])
def test_a_special_file_as_a_tool_script_is_refused_without_a_hang(
    demo: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    append(demo, AGENT, "tools: [t]\n")
    (demo / "agents/demo/tools").mkdir()
    (demo / "agents/demo/tools/t.yaml").write_text(TOOL)
    SPECIAL[case](demo / "agents/demo/tools/t.py")  # read for the tool's version too
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, "agents/demo/tools/t.yaml", 4, "script:")


# -- a script's config: JSON data only ---------------------------------------------------------

NOT_JSON = {
    # the config's lines, the field named, and the problem's line past the file's first config
    "an unquoted date": ("  since: 2024-01-31\n", "config.since", "the date '2024-01-31'"),
    "a timestamp in a list": ("  at: [1, 2001-12-14t21:59:43Z]\n", "config.at[1]", "the date"),
    "binary data": ("  blob: !!binary AAAA\n", "config.blob", "binary data"),
    "a set": ("  names: !!set {a, b}\n", "config.names", "a set"),
    "NaN": ("  deep: {ratio: .nan}\n", "config.deep.ratio", "nan"),
    "infinity": ("  top: -.inf\n", "config.top", "inf"),
    "a date as a key": ("  by_day: {2024-01-31: 1}\n", "config.by_day.2024-01-31", "the date"),
}


@pytest.mark.parametrize("case", sorted(NOT_JSON))
def test_a_script_config_value_that_is_not_json_is_refused_at_its_key(
    demo: Path, case: str
) -> None:
    lines, field, words = NOT_JSON[case]
    hook = (demo / HOOK).read_text()
    (demo / HOOK).write_text(hook.replace("config:\n", "config:\n" + lines, 1))
    line = hook.splitlines().index("config:") + 2
    (problem,) = problems_of(demo)
    assert f"no_deletes.yaml:{line}: {field}: must be JSON data" in problem
    assert words in problem


def test_a_reload_with_a_date_in_a_script_config_keeps_the_last_good_version(
    demo: Path,
) -> None:
    with Engine.load(demo, records=False, db=":memory:") as engine:
        hook = (demo / HOOK).read_text()
        (demo / HOOK).write_text(hook.replace("config:\n", "config:\n  since: 2024-01-31\n"))
        assert not engine.reload_agent("demo")
        assert "config.since" in str(engine.status()["agents"]["demo"]["error"])
        agent = engine.agent("demo")
        assert agent.tool_call("delete_file", {"path": "a"}, user_id="u1").blocked
        assert not agent.tool_call("read_file", {"path": "a"}, user_id="u1").blocked


# -- huge keys and values in messages ---------------------------------------------------------

LONG = "k" * 120_000
KEY = "k" * 1000  # YAML's longest key: a longer one is a syntax error at the key
HUGE = {
    # the text appended to the hook file, and its problem's line past the file's last
    "an unknown key": (f"{KEY}: 1\n", 1),
    "a duplicate key": (f"{KEY}: 1\n{KEY}: 2\n", 2),
    "a key too long for YAML": (f"{LONG}: 1\n", 1),
    "a script path": (None, None),
}


@pytest.mark.parametrize("case", sorted(HUGE))
def test_a_huge_key_or_path_is_shown_cut_in_its_problem(
    demo: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, past = HUGE[case]
    line = 3 if past is None else line_count(demo, HOOK) + past
    if text is None:
        hook = (demo / HOOK).read_text().replace("no_deletes.js", f"{LONG}.js")
        (demo / HOOK).write_text(hook)
    else:
        append(demo, HOOK, text)
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, HOOK, line, "kkk…")
    assert len(err) < 1_000


def test_an_unknown_kind_of_huge_text_is_shown_cut(demo: Path) -> None:
    (demo / HOOK).write_text(f"kind: {LONG}\nname: no_deletes\n")
    (problem,) = problems_of(demo)
    assert ":1: kind: unknown kind 'kkk" in problem and len(problem) < 500


# -- paths -----------------------------------------------------------------------------------

PATHS = {
    "a name too long": ("a" * 5000 + ".yaml", "the path is too long"),
    "a component too long": ("hooks/" + "b" * 300 + ".yaml", "the path is too long"),
    "a NUL": ("hooks/a\\0b.yaml", "NUL"),
    "a symlink loop": ("loop.yaml", "symlink loop"),
    "a device": ("/dev/zero", "character device"),
    "a folder": ("hooks", "directory"),
}


@pytest.mark.parametrize("owner", ["engine.yaml", AGENT])
@pytest.mark.parametrize("case", sorted(PATHS))
def test_a_bad_hook_file_path_is_reported_without_a_crash(
    demo: Path, owner: str, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name, words = PATHS[case]
    (demo / owner).parent.joinpath("loop.yaml").symlink_to("loop.yaml")
    text = (demo / owner).read_text()
    text = re.sub(r"^hook_files:\n", "", text, flags=re.M)
    (demo / owner).write_text(f'hook_files:\n  - "{name}"\n' + text.replace("hooks:", "hooks:", 1))
    code, err = run_check(demo, capsys)
    assert code == 2
    assert words in err, err


@pytest.mark.parametrize("lang", ["py", "js"])
@pytest.mark.parametrize(
    "script, words",
    [
        ('"guard\\0.{lang}"', "NUL character"),
        ('"../../../scripts/plain.{lang}"', "which is not a"),
        ('"{long}.{lang}"', "the path is too long"),
        ('"../../../scripts/loop.{lang}"', "symlink loop"),
    ],
)
def test_a_bad_script_path_is_a_problem_at_the_script_key(
    demo: Path, lang: str, script: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scripts = demo / "scripts"
    (scripts / "plain").write_text((scripts / f"no_deletes.{lang}").read_text())
    (scripts / f"plain.{lang}").symlink_to("plain")
    (scripts / f"loop.{lang}").symlink_to(f"loop.{lang}")
    value = script.format(lang=lang, long="c" * 4200)
    text = re.sub(r"script: .*", lambda _: f"script: {value}", (demo / HOOK).read_text())
    (demo / HOOK).write_text(text)
    code, err = run_check(demo, capsys)
    assert code == 2
    assert_reported(err, HOOK, 3, "script:", words)


# -- agent folders ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_an_unusable_agent_yaml_is_one_problem_per_agent_folder(
    demo: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("b", "c"):
        (demo / "agents" / name).mkdir()
        words = SPECIAL[case](demo / "agents" / name / "agent.yaml")
    problems = problems_of(demo)
    assert len(problems) == 2, problems
    for name, problem in zip(("b", "c"), problems, strict=True):
        assert f"agents/{name}/agent.yaml: " in problem and words in problem
    code, err = run_check(demo, capsys)
    assert code == 2 and err.count("agent.yaml: ") == 2


def test_a_dangling_agent_yaml_is_reported_not_skipped(demo: Path) -> None:
    (demo / "agents" / "b").mkdir()
    (demo / "agents" / "b" / "agent.yaml").symlink_to("gone.yaml")
    [problem] = problems_of(demo)
    assert "agents/b/agent.yaml: file not found" in problem


def test_a_folder_without_agent_yaml_is_still_not_an_agent(demo: Path) -> None:
    (demo / "agents" / "notes").mkdir()
    assert list(load_project(demo).agents) == ["demo"]


# -- permissions (the suite may run as root, so the OS errors are injected) ------------------


def deny(monkeypatch: pytest.MonkeyPatch, part: str) -> None:
    """Every stat, open and listing of a path under ``part`` fails as chmod 000 makes it."""
    for name in ("stat", "lstat", "open", "listdir", "scandir"):
        real = getattr(os, name)

        def denied(path: object, *args: object, _real: object = real, **kw: object) -> object:
            if part in str(path):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return _real(path, *args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(os, name, denied)


@pytest.mark.parametrize(
    "part, rel",
    [
        ("/config/hooks/", "hooks/house_rules.yaml"),
        ("/agents/demo/hooks/", HOOK),
        ("/config/engine.yaml", "engine.yaml"),
        ("/agents/demo/agent.yaml", AGENT),
    ],
)
def test_an_unreadable_folder_or_file_is_permission_denied(
    demo: Path, monkeypatch: pytest.MonkeyPatch, part: str, rel: str
) -> None:
    deny(monkeypatch, part)
    problems = problems_of(demo)
    assert any(rel in p and "permission denied" in p for p in problems), problems


def test_an_unlistable_agents_folder_is_one_problem(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deny(monkeypatch, "/config/agents")
    problems = problems_of(demo)
    assert problems == [f"{demo / 'agents'}: cannot list the folder: permission denied"]


@pytest.mark.parametrize("db_path", ["/proc/hookengine-test/x.db", "data/x.db"])
def test_a_read_only_project_folder_is_a_store_error_not_a_raw_os_error(
    demo: Path, db_path: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = re.sub(r"db_path: .*", f"db_path: {db_path}", (demo / "engine.yaml").read_text())
    (demo / "engine.yaml").write_text(text)
    real_mkdir = Path.mkdir

    def read_only(self: Path, *args: object, **kw: object) -> None:
        if self == demo.parent / "data":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real_mkdir(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(StoreError, match="cannot create the store's folder"):
        Engine.load(demo)
    code = hookengine.main(
        ["demo", "--config", str(demo), "--db", str(demo.parent / "data" / "demo.db")]
    )
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_writable_project_folder_still_gets_its_data_folder(demo: Path) -> None:
    with Engine.load(demo) as engine:
        assert not engine.agent("demo").tool_call("read_file", {"path": "a"}, user_id="u").blocked
    assert (demo.parent / "data" / "hookengine.db").is_file()


# -- as a host meets them: Engine.load refuses, the repaired folder loads and answers -------


def _hostile_text(rel: str) -> Callable[[Path], str]:
    def breaks(config: Path) -> str:
        append(config, rel, "x: !!python/object/apply:os.system ['true']\n")
        return "YAML value not allowed"

    return breaks


HOST_CASES: dict[str, tuple[str, Callable[[Path], str]]] = {
    "tag": (HOOK, _hostile_text(HOOK)),
    "recursive alias": (AGENT, lambda c: append(c, AGENT, "x: &r [*r]\n") and "recursive alias"),
    "depth": ("engine.yaml", lambda c: append(c, "engine.yaml", DEEP["flow lists"]) and "nested"),
    "big integer": (HOOK, lambda c: append(c, HOOK, f"x: {'9' * 5000}\n") and "integer"),
    "laughs": (AGENT, lambda c: append(c, AGENT, LAUGHS["classic 9 x 10"]) and "aliases"),
    "size": ("engine.yaml", lambda c: append(c, "engine.yaml", BIG["a long comment"]) and "larger"),
    "fifo": (HOOK, lambda c: fifo(c / HOOK)),
    "dev zero": ("engine.yaml", lambda c: dev_zero(c / "engine.yaml")),
    "loop": (AGENT, lambda c: loop(c / AGENT)),
}


@pytest.mark.parametrize("lang", ["py", "js"])
@pytest.mark.parametrize("case", sorted(HOST_CASES))
def test_engine_load_refuses_each_class_and_loads_once_repaired(
    demo: Path, tmp_path: Path, case: str, lang: str
) -> None:
    hook = (demo / HOOK).read_text().replace("no_deletes.js", f"no_deletes.{lang}")
    (demo / HOOK).write_text(hook)
    rel, breaks = HOST_CASES[case]
    good = (demo / rel).read_text()
    words = breaks(demo)
    with pytest.raises(ConfigError) as caught:
        Engine.load(demo, records=False, db=str(tmp_path / "s.db"))
    assert caught.value.path is not None and caught.value.path.endswith(rel)
    assert words in str(caught.value)
    (demo / rel).unlink()
    (demo / rel).write_text(good)
    with Engine.load(demo, records=False, db=str(tmp_path / "s.db")) as engine:
        agent = engine.agent("demo")
        assert agent.tool_call("delete_file", {"path": "a"}, user_id="u1").blocked
        assert not agent.tool_call("read_file", {"path": "a"}, user_id="u1").blocked
