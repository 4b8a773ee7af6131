"""End to end with the real Claude Code CLI: ``claude -p`` against a loopback fake model, the
engine answering its hooks as a command (``hookengine claude-code hook``) and over HTTP.

Each test scripts the model (turn 1 asks for a tool, turn 2 answers text), then asserts on
what the model was sent (the ``tool_result`` block, or no request at all) and on the file
system (did the tool run). In CI a missing CLI fails these tests; elsewhere they skip loudly.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli.hookengine import main as hookengine
from engine.runtime import Engine
from tests.conftest import write
from tests.integrations.anthropic_fake import (
    FakeAnthropic,
    FakeAnthropicServer,
    Text,
    ToolUse,
    tool_result_text,
    tool_then_text,
)
from tests.integrations.claude_cli import (
    REPO,
    Run,
    command_hook,
    hooks_settings,
    http_hook,
    require_claude,
    run_claude,
)
from tests.integrations.sidecar import TOKEN, TOKEN_ENV, Sidecar

pytestmark = pytest.mark.slow

AGENT = "e2e"
BROKEN = "broken"
"""An agent whose only hook, a redactor at tool_result, always fails."""
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
DENIAL = "the command deletes data and is not allowed here"
PROMPT_REFUSAL = "please do not share passwords"

REWRITE_HOOK = """
kind: script_hook
name: rewrite_touch
language: python
points: [tool_call]
source: |
  def on_tool_call(event, host):
      if event["name"] == "Bash" and event["input"].get("command") == "touch original.txt":
          changed = dict(event["input"])
          changed["command"] = "touch rewritten.txt"
          return {"input": changed}
      return None
"""

PROMPT_HOOK = f"""
kind: script_hook
name: no_passwords
language: javascript
points: [before_user_message]
source: |
  function on_before_user_message(event, host) {{
    if (host.match("(?i)\\\\bpassword\\\\b", event.question)) {{
      return {{ block: "{PROMPT_REFUSAL}" }};
    }}
    return null;
  }}
"""


@pytest.fixture(scope="module")
def config_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent with the example guards: no deletes, a rewrite, redaction, a prompt guard."""
    root = tmp_path_factory.mktemp("claude-e2e") / "config"
    for script in ("no_deletes.js", "redact_secrets.py"):
        (root / "scripts").mkdir(parents=True, exist_ok=True)
        (root / "scripts" / script).write_text(
            (REPO / "config" / "scripts" / script).read_text(encoding="utf-8"), encoding="utf-8"
        )
    return write(
        root,
        {
            "engine.yaml": "process: claude-e2e\ndb_path: data/hookengine.db\n"
            "records: {enabled: true}\nscripts: {workers: 1}\n"
            f"http: {{tokens: [{{name: claude, env: {TOKEN_ENV}, scopes: [decide]}}]}}\n",
            f"agents/{AGENT}/agent.yaml": "hook_files: [hooks/no_deletes.yaml, "
            "hooks/rewrite.yaml, hooks/redact.yaml, hooks/prompt.yaml]\n",
            f"agents/{AGENT}/hooks/no_deletes.yaml": """
                kind: script_hook
                name: no_deletes
                script: ../../../scripts/no_deletes.js
                points: [tool_call]
                config: {shell_tools: [Bash]}
            """,
            f"agents/{AGENT}/hooks/rewrite.yaml": REWRITE_HOOK,
            f"agents/{AGENT}/hooks/redact.yaml": """
                kind: script_hook
                name: redact_secrets
                script: ../../../scripts/redact_secrets.py
                points: [tool_result]
                config: {replacement: "[REDACTED]"}
            """,
            f"agents/{AGENT}/hooks/prompt.yaml": PROMPT_HOOK,
            f"agents/{BROKEN}/agent.yaml": "hook_files: [hooks/redact.yaml]\n",
            f"agents/{BROKEN}/hooks/redact.yaml": """
                kind: script_hook
                name: broken_redactor
                language: python
                points: [tool_result]
                source: |
                  def on_tool_result(event, host):
                      raise ValueError("the redactor is broken")
            """,
        },
    )


@pytest.fixture(scope="module")
def model() -> Iterator[FakeAnthropic]:
    """One fake Anthropic API for the whole module; each test resets its script."""
    require_claude()
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def engine(config_root: Path) -> Iterator[Engine]:
    """The engine behind the sidecar; it also reads the records the hook commands wrote."""
    with pytest.MonkeyPatch.context() as env, Engine.load(config_root) as loaded:
        env.setenv(TOKEN_ENV, TOKEN)
        yield loaded


@pytest.fixture(scope="module")
def sidecar(engine: Engine) -> Iterator[str]:
    """The engine serving ``POST /v1/claude-code/{agent}`` on loopback; yields its base URL."""
    with Sidecar(engine) as url:
        yield url


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The folder claude runs in, holding a file to delete and a file with a secret."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "victim.txt").write_text("precious\n", encoding="utf-8")
    (folder / "secrets.env").write_text(f"API_KEY={SECRET}\n", encoding="utf-8")
    return folder


def hookengine_command(config_root: Path, agent: str = AGENT) -> str:
    """The hook command line: this checkout's ``hookengine claude-code hook``."""
    argv = [sys.executable, "-m", "engine.cli.hookengine", "claude-code", "hook"]
    argv += ["--config", str(config_root), "--agent", agent]
    return shlex.join(argv)


HOOK_ENV = {"PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", TOKEN_ENV: TOKEN}


def claude(
    model: FakeAnthropic,
    project: Path,
    settings: dict | None,
    prompt: str = "go",
    *,
    allowed_tools: tuple[str, ...] = ("Bash", "Write"),
) -> Run:
    return run_claude(
        prompt,
        base_url=model.url,
        project=project,
        home=project.parent / "home",
        settings=settings,
        env=HOOK_ENV,
        allowed_tools=allowed_tools,
    )


def only_tool_result(model: FakeAnthropic, run: Run) -> dict:
    results = model.tool_results()
    assert len(results) == 1, f"expected one tool result, got {results}\n{run.describe()}"
    return results[0]


def bash(command: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "run it"})


def test_a_delete_is_denied_the_file_stays_and_the_model_gets_the_reason(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    settings = hooks_settings(command_hook(hookengine_command(config_root)), ["PreToolUse"])
    run = claude(model, project, settings)
    block = only_tool_result(model, run)
    assert (project / "victim.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert DENIAL in tool_result_text(block)
    assert "rm -rf victim.txt" in tool_result_text(block)


def test_a_rewritten_tool_input_is_what_runs(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("touch original.txt")))
    settings = hooks_settings(command_hook(hookengine_command(config_root)), ["PreToolUse"])
    run = claude(model, project, settings)
    block = only_tool_result(model, run)
    assert (project / "rewritten.txt").exists(), run.describe()
    assert not (project / "original.txt").exists()
    assert block.get("is_error") is not True


def test_a_rewritten_tool_input_still_meets_the_users_permission_rules(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    """The hook never answers "allow": the user's rules are checked on the rewritten input."""
    model.reset(tool_then_text(bash("touch original.txt")))
    settings = hooks_settings(command_hook(hookengine_command(config_root)), ["PreToolUse"])
    run = claude(model, project, settings, allowed_tools=("Bash(touch original.txt)",))
    block = only_tool_result(model, run)
    assert not (project / "rewritten.txt").exists(), run.describe()
    assert not (project / "original.txt").exists()
    assert block["is_error"] is True
    assert "rewritten.txt" in tool_result_text(block)


def test_a_secret_in_tool_output_never_reaches_the_model(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("cat secrets.env")))
    settings = hooks_settings(command_hook(hookengine_command(config_root)), ["PostToolUse"])
    run = claude(model, project, settings)
    block = only_tool_result(model, run)
    assert "API_KEY=[REDACTED]" in tool_result_text(block), run.describe()
    assert all(SECRET not in json.dumps(body) for body in model.messages)
    assert len(model.messages) == 2


def test_a_failing_redaction_withholds_the_output_from_the_model(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("cat secrets.env")))
    hook = command_hook(hookengine_command(config_root, agent=BROKEN))
    run = claude(model, project, hooks_settings(hook, ["PostToolUse"]))
    block = only_tool_result(model, run)
    assert "[result withheld:" in tool_result_text(block), run.describe()
    assert "broken_redactor" in tool_result_text(block)
    assert all(SECRET not in json.dumps(body) for body in model.messages)


def test_the_hook_command_failing_at_post_tool_use_keeps_the_output_from_the_model(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("cat secrets.env")))
    hook = command_hook(hookengine_command(config_root, agent="no_such_agent"))
    run = claude(model, project, hooks_settings(hook, ["PostToolUse"]))
    # the failure answer replaces the output (updatedToolOutput in tool_response's shape):
    # a decision: block alone would still hand the unchecked output to the model
    assert "no_such_agent" in json.dumps(model.messages), run.describe()
    assert all(SECRET not in json.dumps(body) for body in model.messages)


def test_on_failure_block_at_post_tool_use_does_not_withhold_the_output(
    model: FakeAnthropic, project: Path
) -> None:
    """What the host cannot do: a PostToolUse hook that crashes cannot stop the output."""
    model.reset(tool_then_text(bash("cat secrets.env")))
    hook = command_hook("echo crashed >&2; exit 1")
    run = claude(model, project, hooks_settings(hook, ["PostToolUse"]))
    block = only_tool_result(model, run)
    assert SECRET in tool_result_text(block), run.describe()
    assert 'onFailure is \\"block\\"' in json.dumps(model.messages[-1]["messages"][-1])


def test_a_blocked_prompt_makes_no_model_request(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(lambda _request: Text("should never be asked"))
    hook = command_hook(hookengine_command(config_root))
    settings = hooks_settings(hook, ["UserPromptSubmit", "PreToolUse"])
    run = claude(model, project, settings, prompt="my password is hunter2, remember it")
    assert model.messages == [], run.describe()
    assert PROMPT_REFUSAL in run.result["result"]


def test_a_harmless_turn_passes_every_hook_and_each_event_is_recorded(
    model: FakeAnthropic, project: Path, config_root: Path, engine: Engine
) -> None:
    model.reset(tool_then_text(bash("touch created.txt"), text="all set"))
    hook = command_hook(hookengine_command(config_root))
    events = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]
    run = claude(model, project, hooks_settings(hook, events), prompt="make a file")
    block = only_tool_result(model, run)
    assert (project / "created.txt").exists(), run.describe()
    assert block.get("is_error") is not True
    assert run.result["result"] == "all set"
    records = engine.records(scope=run.result["session_id"], oldest_first=True)
    points = [r.point for r in records]
    assert points == [
        "before_user_message",
        "tool_call",
        "tool_result",
        "after_turn",
        "after_loop",
    ], run.describe()
    assert {r.host for r in records} == {"claude-code"}
    after_turn = records[3].event
    assert (after_turn["question"], after_turn["answer"]) == ("make a file", "all set")


@pytest.mark.parametrize(
    ("command", "runs"), [("rm -rf victim.txt", False), ("touch created.txt", True)]
)
def test_the_http_hook_decides_through_the_sidecar(
    model: FakeAnthropic, project: Path, sidecar: str, command: str, runs: bool
) -> None:
    model.reset(tool_then_text(bash(command)))
    hook = http_hook(f"{sidecar}/v1/claude-code/{AGENT}")
    hook["headers"] = {"Authorization": f"Bearer ${TOKEN_ENV}"}
    hook["allowedEnvVars"] = [TOKEN_ENV]
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    if runs:
        assert (project / "created.txt").exists(), run.describe()
        assert block.get("is_error") is not True
    else:
        assert (project / "victim.txt").exists(), run.describe()
        assert block["is_error"] is True
        assert DENIAL in tool_result_text(block)


@pytest.mark.parametrize(
    "command",
    ["echo 'not json {'; exit 1", "echo crashed >&2; kill -9 $$", "/nonexistent/hookengine"],
)
def test_a_crashed_hook_command_with_on_failure_block_stops_the_tool(
    model: FakeAnthropic, project: Path, command: str
) -> None:
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    run = claude(model, project, hooks_settings(command_hook(command), ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert (project / "victim.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert 'onFailure is "block"' in tool_result_text(block)


def test_the_hook_command_failing_inside_denies_the_tool(
    model: FakeAnthropic, project: Path, config_root: Path
) -> None:
    model.reset(tool_then_text(bash("touch created.txt")))
    command = hookengine_command(config_root, agent="no_such_agent")
    hook = command_hook(command, on_failure=None)
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert not (project / "created.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert "no_such_agent" in tool_result_text(block)


@pytest.mark.parametrize("mode", ["command", "http"])
def test_the_settings_hookengine_installs_deny_a_delete(
    model: FakeAnthropic, project: Path, config_root: Path, sidecar: str, mode: str
) -> None:
    argv = ["claude-code", "install", "--agent", AGENT, "--config", str(config_root)]
    argv += ["--settings", str(project / ".claude" / "settings.json")]
    if mode == "http":
        argv += ["--http", sidecar]
    assert hookengine(argv) == 0
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    run = claude(model, project, None)
    block = only_tool_result(model, run)
    assert (project / "victim.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert DENIAL in tool_result_text(block)
    assert run.result["result"] == "done"


@pytest.mark.parametrize(("up", "says"), [(True, DENIAL), (False, "did not answer")])
def test_the_forwarder_command_denies_through_the_sidecar_and_when_it_is_down(
    model: FakeAnthropic, project: Path, sidecar: str, unused_port: int, up: bool, says: str
) -> None:
    """``hookengine-hook`` (stdlib only) posts the event to ``$HOOKENGINE_URL``."""
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    base = sidecar if up else f"http://127.0.0.1:{unused_port}"
    forwarder = shlex.join([sys.executable, "-m", "engine.cli.hookengine_hook"])
    hook = command_hook(f"HOOKENGINE_URL={base}/v1/claude-code/{AGENT} {forwarder}")
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert (project / "victim.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert says in tool_result_text(block)


def test_a_wrong_token_at_the_sidecar_stops_the_tool(
    model: FakeAnthropic, project: Path, sidecar: str
) -> None:
    model.reset(tool_then_text(bash("touch created.txt")))
    hook = http_hook(f"{sidecar}/v1/claude-code/{AGENT}")
    hook["headers"] = {"Authorization": "Bearer not-the-token"}
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert not (project / "created.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert "401" in tool_result_text(block)


def test_the_sidecar_down_with_on_failure_block_stops_the_tool(
    model: FakeAnthropic, project: Path, unused_port: int
) -> None:
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    hook = http_hook(f"http://127.0.0.1:{unused_port}/v1/claude-code/{AGENT}")
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert (project / "victim.txt").exists(), run.describe()
    assert block["is_error"] is True
    assert "ECONNREFUSED" in tool_result_text(block)


@pytest.mark.parametrize("kind", ["command", "http"])
def test_without_on_failure_a_failed_hook_lets_the_delete_run(
    model: FakeAnthropic, project: Path, unused_port: int, kind: str
) -> None:
    """The CLI fails open by default: why the settings the engine writes say "block"."""
    model.reset(tool_then_text(bash("rm -rf victim.txt")))
    if kind == "command":
        hook = command_hook("echo 'not json {'; exit 1", on_failure=None)
    else:
        hook = http_hook(f"http://127.0.0.1:{unused_port}/", on_failure=None)
    run = claude(model, project, hooks_settings(hook, ["PreToolUse"]))
    block = only_tool_result(model, run)
    assert not (project / "victim.txt").exists(), run.describe()
    assert block.get("is_error") is not True
