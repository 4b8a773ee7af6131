"""``hookengine claude-code hook`` / ``install`` and the ``hookengine-hook`` forwarder."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from engine.cli.hookengine import main
from engine.cli.hookengine_hook import forward
from tests.conftest import REPO
from tests.integrations.test_claude_code import guard_project

RM = {
    "session_id": "s-cli",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf /"},
    "tool_use_id": "t1",
}
DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "deleting files is not allowed here",
    }
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guard_project(tmp_path_factory.mktemp("claude_cli"))


def run_hook(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: bytes,
    *args: str,
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(["claude-code", "hook", *args])
    return code, json.loads(capsys.readouterr().out)


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


# -- hook ---------------------------------------------------------------------------------------


def test_the_hook_command_prints_the_deny(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    db = str(tmp_path / "s.db")
    code, answer = run_hook(
        monkeypatch,
        capsys,
        json.dumps(RM).encode(),
        "--agent",
        "guard",
        "--config",
        str(config),
        "--db",
        db,
    )
    assert (code, answer) == (0, DENY)


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        (
            "claude",
            {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls --color=never"}},
        ),
        ("codex", "deny"),
    ],
)
def test_the_hook_command_answers_in_the_dialect_asked(
    config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    dialect: str,
    expected: Any,
) -> None:
    ls = json.dumps({**RM, "tool_input": {"command": "ls"}}).encode()
    args = ("--agent", "guard", "--config", str(config), "--db", str(tmp_path / "s.db"))
    code, answer = run_hook(monkeypatch, capsys, ls, *args, "--dialect", dialect)
    output = answer["hookSpecificOutput"]
    assert code == 0
    if dialect == "claude":
        assert output == expected
    else:  # Codex applies updatedInput only with "allow": refused instead
        assert (
            output["permissionDecision"] == "deny" and "Codex" in output["permissionDecisionReason"]
        )


def test_the_hook_command_keeps_the_last_prompt_for_a_later_stop(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Each hook is its own process: the prompt a Stop needs comes from the store."""
    args = ("--agent", "guard", "--config", str(config), "--db", str(tmp_path / "s.db"))
    prompt = {"session_id": "s-2", "hook_event_name": "UserPromptSubmit", "prompt": "hello?"}
    run_hook(monkeypatch, capsys, json.dumps(prompt).encode(), *args)
    stop = {"session_id": "s-2", "hook_event_name": "Stop", "last_assistant_message": "Hi."}
    assert run_hook(monkeypatch, capsys, json.dumps(stop).encode(), *args) == (0, {})
    from engine import Engine

    with Engine.load(config, db=str(tmp_path / "s.db"), records=False) as engine:
        [record] = engine.records(agent="guard", point="after_turn", scope="session:s-2")
    assert (record.event["question"], record.event["answer"]) == ("hello?", "Hi.")


def test_stdin_that_is_not_json_is_a_deny(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    code, answer = run_hook(
        monkeypatch, capsys, b"{not json", "--agent", "guard", "--config", str(config)
    )
    assert code == 0 and answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "not JSON" in answer["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("stdin", "why"),
    [
        (
            b'{"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", '
            b'"tool_input": {"command": "rm -rf /srv", "command": "ls"}}',
            "key 'command' appears twice in one object",
        ),
        (
            b'{"hook_event_name": "PreToolUse", "tool_input": '
            + b'{"a":' * 1000
            + b"1"
            + b"}" * 1000
            + b"}",
            "nested deeper than 64 levels",
        ),
    ],
)
def test_stdin_json_a_policy_must_not_take_is_a_deny_naming_why(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, stdin: bytes, why: str
) -> None:
    # last-wins would show the guard "ls" while Claude Code may run "rm -rf /srv"
    code, answer = run_hook(monkeypatch, capsys, stdin, "--agent", "guard", "--config", str(config))
    assert code == 0 and answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert why in answer["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_config_that_does_not_load_is_a_deny_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    missing = str(tmp_path / "nowhere")
    code, answer = run_hook(
        monkeypatch, capsys, json.dumps(RM).encode(), "--agent", "guard", "--config", missing
    )
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert code == 0 and "config folder not found" in reason and "ConfigError" in reason


def test_a_config_that_does_not_load_only_warns_at_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    stop = json.dumps({"hook_event_name": "Stop", "session_id": "s"}).encode()
    code, answer = run_hook(
        monkeypatch, capsys, stop, "--agent", "guard", "--config", str(tmp_path)
    )
    assert code == 0 and set(answer) == {"systemMessage"}


def test_an_unknown_agent_is_a_deny(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    code, answer = run_hook(
        monkeypatch,
        capsys,
        json.dumps(RM).encode(),
        "--agent",
        "ghost",
        "--config",
        str(config),
        "--db",
        str(tmp_path / "s.db"),
    )
    assert code == 0 and "ghost" in answer["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_wrong_command_line_exits_2(config: Path, capsys: Any) -> None:
    assert main(["claude-code", "hook", "--agent", "guard", "--timeout", "0"]) == 2
    assert "--timeout: must be > 0" in capsys.readouterr().err
    assert main(["claude-code", "hook"]) == 2  # --agent is required


def test_the_console_command_answers_and_a_timeout_is_a_deny(config: Path, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "engine.cli.hookengine",
        "claude-code",
        "hook",
        "--agent",
        "guard",
    ]
    command += ["--config", str(config), "--db", str(tmp_path / "s.db")]
    done = subprocess.run(
        command, input=json.dumps(RM), capture_output=True, text=True, env=env(), timeout=60
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, DENY)
    slow = subprocess.run(
        [*command, "--timeout", "0.001"],
        input=json.dumps(RM),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    answer = json.loads(slow.stdout)
    assert slow.returncode == 0
    assert (
        answer["hookSpecificOutput"]["permissionDecisionReason"]
        == "hookengine: no decision within 0.001 s"
    )


# -- install ------------------------------------------------------------------------------------

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


def install(settings: Path, *args: str) -> int:
    return main(["claude-code", "install", "--agent", "guard", "--settings", str(settings), *args])


def test_install_merges_the_five_hooks_and_keeps_the_users_own(
    config: Path, tmp_path: Path
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS))
    assert install(settings, "--config", str(config)) == 0
    data = json.loads(settings.read_text())
    assert data["permissions"] == USER_SETTINGS["permissions"]
    assert data["hooks"]["Notification"] == USER_SETTINGS["hooks"]["Notification"]
    assert set(data["hooks"]) == {
        "Notification",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    }
    user, ours = data["hooks"]["PreToolUse"]
    assert user == USER_SETTINGS["hooks"]["PreToolUse"][0] and ours["matcher"] == "*"
    [handler] = ours["hooks"]
    assert handler["type"] == "command" and handler["onFailure"] == "block"
    assert handler["timeout"] == 30
    words = shlex.split(handler["command"])
    assert Path(words[0]).is_absolute() and str(config.resolve()) in words
    assert "matcher" not in data["hooks"]["Stop"][0]


def test_install_twice_changes_nothing(config: Path, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    install(settings, "--config", str(config))
    first = settings.read_text()
    install(settings, "--config", str(config))
    assert settings.read_text() == first


def test_install_http_replaces_the_command_hooks(config: Path, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    install(settings, "--config", str(config))
    assert install(settings, "--http", "http://127.0.0.1:8765/") == 0
    hooks = json.loads(settings.read_text())["hooks"]
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"):
        [group] = hooks[event]
        assert group["hooks"] == [
            {
                "type": "http",
                "url": "http://127.0.0.1:8765/v1/claude-code/guard",
                "headers": {"Authorization": "Bearer $HOOKENGINE_TOKEN"},
                "allowedEnvVars": ["HOOKENGINE_TOKEN"],
                "timeout": 30,
                "onFailure": "block",
            }
        ]


def test_install_refuses_settings_it_cannot_read_and_leaves_them(
    tmp_path: Path, capsys: Any
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{broken")
    assert install(settings) == 2
    assert (
        settings.read_text() == "{broken" and "cannot read the settings" in capsys.readouterr().err
    )
    settings.write_text('{"hooks": []}')
    assert install(settings) == 2 and "hooks: must be an object" in capsys.readouterr().err
    assert install(tmp_path / "new.json", "--http", "ftp://x") == 2


def test_the_installed_command_runs_and_denies(config: Path, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    install(settings, "--config", str(config), "--db", str(tmp_path / "s.db"))
    command = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(RM),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, DENY)


# -- hookengine-hook ----------------------------------------------------------------------------


class Sidecar(BaseHTTPRequestHandler):
    """A stand-in for ``hookengine serve``'s /v1/claude-code route: answers what the test set."""

    status = 200
    body = b"{}"
    seen: ClassVar[list[tuple[str, str | None, bytes]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        Sidecar.seen.append((self.path, self.headers.get("Authorization"), self.rfile.read(length)))
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def sidecar(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sidecar)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    Sidecar.seen, Sidecar.status, Sidecar.body = [], 200, json.dumps(DENY).encode()
    url = f"http://127.0.0.1:{server.server_port}/v1/claude-code/guard"
    monkeypatch.setenv("HOOKENGINE_URL", url)
    monkeypatch.setenv("HOOKENGINE_TOKEN", "t0ken")
    yield url
    server.shutdown()
    server.server_close()


def test_the_forwarder_posts_the_event_with_the_token_and_prints_the_answer(sidecar: str) -> None:
    raw = json.dumps(RM).encode()
    assert forward(raw, RM) == DENY
    assert Sidecar.seen == [("/v1/claude-code/guard", "Bearer t0ken", raw)]


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            401,
            b'{"code": "unauthorized", "message": "token missing or wrong"}',
            "HTTP 401: token missing or wrong",
        ),
        (500, b"oops", "HTTP 500"),
        (200, b"[1]", "not an object"),
        (200, b"not json", "not JSON"),
    ],
)
def test_a_forwarder_that_gets_no_decision_denies_the_tool(
    sidecar: str, status: int, body: bytes, expected: str
) -> None:
    Sidecar.status, Sidecar.body = status, body
    answer = forward(json.dumps(RM).encode(), RM)
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny" and expected in reason
    assert "t0ken" not in json.dumps(answer)


def test_a_forwarder_with_the_sidecar_down_denies_and_only_warns_at_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOKENGINE_URL", "http://127.0.0.1:9/v1/claude-code/guard")
    answer = forward(json.dumps(RM).encode(), RM)
    assert "did not answer" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    stop = {"hook_event_name": "Stop"}
    assert set(forward(json.dumps(stop).encode(), stop)) == {"systemMessage"}
    monkeypatch.delenv("HOOKENGINE_URL")
    assert "HOOKENGINE_URL" in forward(b"{}", {})["hookSpecificOutput"]["permissionDecisionReason"]


FORBIDDEN = ("pydantic", "sqlalchemy", "engine.runtime", "engine.config", "engine.store", "yaml")


def test_the_forwarder_process_loads_no_engine_runtime(sidecar: str) -> None:
    """Run as its own process (as Claude Code runs it): answer, then list what it imported."""
    code = (
        "import sys, runpy\n"
        "try:\n"
        "    runpy.run_module('engine.cli.hookengine_hook', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"forbidden = {FORBIDDEN!r}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in forbidden or m in forbidden)\n"
        "print(repr(bad), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(RM),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert json.loads(done.stdout) == DENY
    assert done.stderr.strip().splitlines()[-1] == "[]"


# -- docs/claude-code.md ------------------------------------------------------------------------

DOC = REPO / "docs" / "claude-code.md"


def test_the_setup_example_in_the_docs_prints_what_the_docs_say(tmp_path: Path) -> None:
    text = DOC.read_text("utf-8")
    shell = next(b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S) if "mkdir" in b)
    shown = json.loads(re.findall(r"```json\n(.*?)```", text, flags=re.S)[0])
    hookengine = f"{shlex.quote(sys.executable)} -m engine.cli.hookengine "
    done = subprocess.run(
        ["bash", "-c", shell.replace("hookengine ", hookengine)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == shown


def test_the_docs_link_only_to_what_exists() -> None:
    for target, anchor in re.findall(r"\]\(([a-z_-]*\.md)?(?:#([^)]*))?\)", DOC.read_text()):
        path = DOC.parent / (target or DOC.name)
        assert path.is_file(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, anchor


class RawSidecar:
    """A loopback server that answers each connection with the given raw bytes."""

    def __init__(self, answer: bytes, *, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/claude-code/guard"

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.thread.join(5)
        self.sock.close()

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self.sock.accept()
            with conn:
                conn.recv(65536)
                time.sleep(self.delay)
                conn.sendall(self.answer)


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
    b'5\r\n{"sys\r\n12\r\ntemMessage": "hi"}\r\n0\r\n\r\n'
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (CHUNKED, {"systemMessage": "hi"}),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing", {}),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "not HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not valid HTTP"),
        (b"", "not HTTP"),
        # a connection closed early: the part that came is valid JSON, and {} would allow
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "ended before its Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{}", "ended inside a chunk"),
    ],
)
def test_the_forwarder_reads_http_answers_and_refuses_what_is_not(
    monkeypatch: pytest.MonkeyPatch, answer: bytes, expected: Any
) -> None:
    stop = {"hook_event_name": "Stop"}
    with RawSidecar(answer) as url:
        monkeypatch.setenv("HOOKENGINE_URL", url)
        got = forward(json.dumps(stop).encode(), stop)
    if isinstance(expected, dict):
        assert got == expected
    else:
        assert expected in got["systemMessage"]


def test_a_slow_sidecar_times_out_into_a_deny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKENGINE_TIMEOUT", "0.2")
    with RawSidecar(b"HTTP/1.1 200 OK\r\n\r\n{}", delay=0.5) as url:
        monkeypatch.setenv("HOOKENGINE_URL", url)
        answer = forward(json.dumps(RM).encode(), RM)
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "did not answer (timed out)" in reason


@pytest.mark.parametrize(
    ("url", "token", "expected"),
    [
        ("http://127.0.0.1:port/x", None, "not a valid URL"),
        ("ftp://127.0.0.1/x", None, "not set to an http(s) URL"),
        ("http:///x", None, "not a valid URL"),
        ("http://127.0.0.1:9/x", "a\r\nX-Evil: 1", "HOOKENGINE_TOKEN holds a line break"),
    ],
)
def test_a_bad_url_or_token_is_a_deny_naming_it(
    monkeypatch: pytest.MonkeyPatch, url: str, token: str | None, expected: str
) -> None:
    monkeypatch.setenv("HOOKENGINE_URL", url)
    if token:
        monkeypatch.setenv("HOOKENGINE_TOKEN", token)
    reason = forward(json.dumps(RM).encode(), RM)["hookSpecificOutput"]["permissionDecisionReason"]
    assert expected in reason and "X-Evil" not in reason
