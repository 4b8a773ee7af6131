"""``script:`` resolves inside the config folder; every bad script file is a ConfigError at the
``script:`` line (through Engine.load and ``hookengine check``) that never quotes the file."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import hook_tool, hookengine
from engine.config import scriptfile, yamlfile
from engine.errors import ConfigError
from engine.runtime import Engine
from engine.sandbox import Limits
from tests.conftest import write

LANGS = ("py", "js")
SECRET = "secret_token_4f9a8b7c"
VALID = {
    "py": "def on_tool_call(event, host):\n    return None\n",
    "js": "function on_tool_call(event, host) { return null; }\n",
}
Setup = Callable[[Path, str], str]
"""Prepares files under the config folder for one language; returns the ``script:`` value."""


def hook_yaml(script: str) -> str:
    return f'kind: script_hook\nname: g\nscript: "{script}"\n'


def outside(config: Path, lang: str) -> str:
    target = config.parent / "elsewhere" / f"guard.{lang}"
    target.parent.mkdir(exist_ok=True)
    target.write_text(VALID[lang])
    return str(target)


def dotdot(config: Path, lang: str) -> str:
    outside(config, lang)
    return f"../../../../elsewhere/guard.{lang}"


def link_out(config: Path, lang: str) -> str:
    (config / "scripts" / f"guard.{lang}").symlink_to(outside(config, lang))
    return f"../../../scripts/guard.{lang}"


def link_to_passwd(config: Path, lang: str) -> str:
    (config / "scripts" / f"guard.{lang}").symlink_to("/etc/passwd")
    return f"../../../scripts/guard.{lang}"


def link_to_dev_zero(config: Path, lang: str) -> str:
    (config / "scripts" / f"guard.{lang}").symlink_to("/dev/zero")
    return f"../../../scripts/guard.{lang}"


def link_to_txt(config: Path, lang: str) -> str:
    (config / "scripts" / "notes.txt").write_text(f"{SECRET}\non_tool_call\n")
    (config / "scripts" / f"guard.{lang}").symlink_to("notes.txt")
    return f"../../../scripts/guard.{lang}"


def link_to_no_suffix(config: Path, lang: str) -> str:
    (config / "scripts" / "token").write_text(VALID[lang])
    (config / "scripts" / f"guard.{lang}").symlink_to("token")
    return f"../../../scripts/guard.{lang}"


def link_to_other_language(config: Path, lang: str) -> str:
    other = "js" if lang == "py" else "py"
    (config / "scripts" / f"real.{other}").write_text(VALID[other])
    (config / "scripts" / f"guard.{lang}").symlink_to(f"real.{other}")
    return f"../../../scripts/guard.{lang}"


def missing(config: Path, lang: str) -> str:
    return f"../../../scripts/nothing.{lang}"


def dangling(config: Path, lang: str) -> str:
    (config / "scripts" / f"guard.{lang}").symlink_to(config / "scripts" / f"gone.{lang}")
    return f"../../../scripts/guard.{lang}"


def loop(config: Path, lang: str) -> str:
    (config / "scripts" / f"a.{lang}").symlink_to(f"b.{lang}")
    (config / "scripts" / f"b.{lang}").symlink_to(f"a.{lang}")
    return f"../../../scripts/a.{lang}"


def directory(config: Path, lang: str) -> str:
    (config / "scripts" / f"guard.{lang}").mkdir()
    return f"../../../scripts/guard.{lang}"


def fifo(config: Path, lang: str) -> str:
    os.mkfifo(config / "scripts" / f"guard.{lang}")
    return f"../../../scripts/guard.{lang}"


def nul_in_path(config: Path, lang: str) -> str:
    return f"../../../scripts/gu\\0ard.{lang}"


def too_long(config: Path, lang: str) -> str:
    return f"../../../scripts/{'a' * 300}.{lang}"


def write_bytes(data: bytes) -> Setup:
    def setup(config: Path, lang: str) -> str:
        (config / "scripts" / f"guard.{lang}").write_bytes(data)
        return f"../../../scripts/guard.{lang}"

    return setup


CASES: dict[str, tuple[Setup, str]] = {
    "absolute path outside": (outside, "outside the config folder"),
    "../ path outside": (dotdot, "outside the config folder"),
    "symlink out of the folder": (link_out, "outside the config folder"),
    "symlink to /etc/passwd": (link_to_passwd, "outside the config folder"),
    "symlink to /dev/zero": (link_to_dev_zero, "outside the config folder"),
    "symlink to a .txt file": (link_to_txt, "which is not a"),
    "symlink to a file without suffix": (link_to_no_suffix, "which is not a"),
    "symlink to the other language": (link_to_other_language, "which is not a"),
    "missing file": (missing, "script file not found"),
    "dangling symlink": (dangling, "symlink whose target is missing"),
    "symlink loop": (loop, "symlink loop"),
    "directory": (directory, "is a directory"),
    "fifo": (fifo, "is a FIFO"),
    "nul in path": (nul_in_path, "NUL character"),
    "path too long": (too_long, "too long"),
    "non-utf-8 content": (write_bytes(b"on_tool_call \xff\xfe " + SECRET.encode()), "not UTF-8"),
    "binary file": (write_bytes(b"\x7fELF\0\0on_tool_call" + SECRET.encode()), "NUL byte"),
    "empty file": (write_bytes(b""), "is empty"),
    "whitespace only": (write_bytes(b"  \n\n"), "is empty"),
    "not a script": (write_bytes(f"{SECRET} = hunter2\n".encode()), "no on_<point> function"),
    "too large": (
        write_bytes(b"// on_tool_call\n" + b"x" * scriptfile.MAX_SCRIPT_BYTES),
        "larger than",
    ),
}


def make_config(tmp_path: Path, lang: str, setup: Setup) -> Path:
    config = write(tmp_path / "config", {"agents/a/agent.yaml": "hooks: [g]\n"})
    (config / "scripts").mkdir()
    (config / "agents" / "a" / "hooks").mkdir()
    script = setup(config, lang)
    (config / "agents" / "a" / "hooks" / "g.yaml").write_text(hook_yaml(script))
    return config


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_script_file_is_a_config_error_at_the_script_key(
    tmp_path: Path, case: str, lang: str
) -> None:
    setup, expected = CASES[case]
    config = make_config(tmp_path, lang, setup)
    with pytest.raises(ConfigError) as info:
        Engine.load(config, db=":memory:", records=False)
    (problem,) = info.value.problems
    assert problem.path.endswith("g.yaml") and problem.line == 3 and problem.field == "script"
    assert expected in problem.message, problem.message
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_hookengine_check_prints_the_bad_script_file_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, lang: str
) -> None:
    setup, expected = CASES[case]
    config = make_config(tmp_path, lang, setup)
    code = hookengine.main(["check", str(config)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "g.yaml:3: script:" in err and expected in err, err
    assert "Traceback" not in out + err and SECRET not in out + err


@pytest.mark.parametrize("lang", LANGS)
def test_permission_denied_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lang: str
) -> None:
    config = make_config(tmp_path, lang, write_bytes(VALID[lang].encode()))
    target = config / "scripts" / f"guard.{lang}"
    target.chmod(0)
    real_open = os.open

    def denied(path: object, *args: object, **kw: object) -> int:
        # root reads mode-000 files anyway: deny as a non-root user would be denied
        if Path(str(path)) == target.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlfile.os, "open", denied)
    with pytest.raises(ConfigError) as info:
        Engine.load(config, db=":memory:", records=False)
    assert info.value.problems[0].line == 3 and "permission denied" in str(info.value)
    assert hookengine.main(["check", str(config)]) == 2
    assert "g.yaml:3: script:" in capsys.readouterr().err


@pytest.mark.parametrize("lang", LANGS)
def test_scripts_inside_the_config_folder_load_also_by_symlink_and_absolute_path(
    tmp_path: Path, lang: str
) -> None:
    config = make_config(tmp_path, lang, write_bytes(VALID[lang].encode()))
    scripts = config / "scripts"
    (scripts / f"alias.{lang}").symlink_to(f"guard.{lang}")
    hooks = config / "agents" / "a" / "hooks"
    (hooks / "h.yaml").write_text(hook_yaml(str(scripts / f"alias.{lang}")).replace("g\n", "h\n"))
    (config / "agents" / "a" / "agent.yaml").write_text("hooks: [g, h]\n")
    with Engine.load(config, db=":memory:", records=False) as engine:
        out = engine.agent("a").tool_call("shell", {"command": "ls"}, user_id="u1")
        assert not out.blocked
        assert [s.hook.name for s in engine.agent("a").pipeline.slots] == ["g", "h"]


# A file that names an on_<point> function is compiled: its syntax and name errors keep
# line and column but not the tokens they would quote.
GARBLED = {
    "py": [
        f"{SECRET}\ndef on_tool_call(event, host):\n    return None\n",
        f"def on_tool_call(event, host):\n    return '{SECRET}\n",
        f"on_tool_call {SECRET}\n",
    ],
    "js": [
        f"{SECRET};\nfunction on_tool_call(event, host) {{ return null; }}\n",
        f"function on_tool_call(event, host) {{ return 1 + ; }} '{SECRET}'\n",
        f"on_tool_call {SECRET}\n",
        f"function on_tool_call(e, h) {{}}\n@{SECRET}\n",
    ],
}


@pytest.mark.parametrize(
    ("lang", "source"), [(lang, s) for lang, sources in GARBLED.items() for s in sources]
)
def test_compile_errors_of_a_script_file_never_quote_its_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lang: str, source: str
) -> None:
    config = make_config(tmp_path, lang, write_bytes(source.encode()))
    with pytest.raises(ConfigError) as info:
        Engine.load(config, db=":memory:", records=False)
    (problem,) = info.value.problems
    assert problem.path.endswith(f"guard.{lang}") and problem.line is not None
    assert SECRET not in str(info.value)
    assert hookengine.main(["check", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"guard.{lang}:" in err and SECRET not in err and "Traceback" not in err


def test_the_error_of_an_author_keeps_its_position_and_kind() -> None:
    message = "ReferenceError: on_tool_cal is not defined"
    assert scriptfile.without_tokens(message) == "ReferenceError: … is not defined"
    assert scriptfile.without_tokens("syntax error: '(' was never closed") == (
        "syntax error: '(' was never closed"
    )
    assert scriptfile.without_tokens("SyntaxError: unexpected token: 'hunter2'") == (
        "SyntaxError: unexpected token: '…'"
    )
    assert scriptfile.without_tokens('NameError: name "pin_1234" is not defined') == (
        "NameError: name … is not defined"
    )
    own = "the script failed while loading: ValueError: 'boom'"
    assert scriptfile.without_tokens(own) == own


def test_the_read_cap_is_the_sandbox_source_limit() -> None:
    assert Limits().max_source_bytes == scriptfile.MAX_SCRIPT_BYTES


@pytest.mark.parametrize("lang", LANGS)
def test_hook_tool_keeps_a_lone_hooks_script_in_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lang: str
) -> None:
    (tmp_path / "lone").mkdir()
    (tmp_path / f"guard.{lang}").write_text(VALID[lang])
    (tmp_path / "lone" / f"inside.{lang}").write_text(VALID[lang])
    (tmp_path / "lone" / "out.yaml").write_text(hook_yaml(f"../guard.{lang}"))
    (tmp_path / "lone" / "in.yaml").write_text(hook_yaml(f"inside.{lang}"))
    assert hook_tool.main([str(tmp_path / "lone" / "out.yaml"), "tool", "shell", "{}"]) == 2
    assert "out.yaml:3: script:" in capsys.readouterr().err
    assert hook_tool.main([str(tmp_path / "lone" / "in.yaml"), "tool", "shell", "{}"]) == 0


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_special_file_is_refused_without_being_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str, kind: str
) -> None:
    """The stat comes first: a special file is never opened (opening some devices has effects)."""
    config = make_config(tmp_path, lang, fifo if kind == "fifo" else directory)
    opened: list[str] = []
    real_open = os.open

    def spy(path: object, *args: object, **kw: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlfile.os, "open", spy)
    with pytest.raises(ConfigError) as info:
        Engine.load(config, db=":memory:", records=False)
    assert "not a regular file" in str(info.value)
    assert not [path for path in opened if path.endswith(f"guard.{lang}")]
