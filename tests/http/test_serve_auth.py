"""``hookengine serve`` refuses to start when decisions would need no token: no decide token
configured (or its variable unset) exits 2 with what to set; ``--no-auth`` is allowed only
when binding a loopback address."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.cli.cmd_serve import start_refusal
from engine.config.models import TokenSpec
from tests.conftest import console, write
from tests.http.test_serve_command import free_port


def settings(*tokens: TokenSpec) -> SimpleNamespace:
    return SimpleNamespace(tokens=list(tokens))


DECIDE = TokenSpec(name="sidecar", env="SERVE_TEST_DECIDE", scopes=["decide"])
ADMIN = TokenSpec(name="ops", env="SERVE_TEST_ADMIN", scopes=["admin"])


def test_without_a_decide_token_the_service_does_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SERVE_TEST_ADMIN", "x")
    monkeypatch.delenv("SERVE_TEST_DECIDE", raising=False)
    assert "no decide token configured" in str(
        start_refusal(settings(), "127.0.0.1", no_auth=False)
    )
    assert "add http.tokens" in str(start_refusal(settings(ADMIN), "127.0.0.1", no_auth=False))
    unset = start_refusal(settings(DECIDE, ADMIN), "127.0.0.1", no_auth=False)
    assert unset is not None and "$SERVE_TEST_DECIDE unset or empty" in unset
    monkeypatch.setenv("SERVE_TEST_DECIDE", "")
    assert start_refusal(settings(DECIDE), "127.0.0.1", no_auth=False) is not None
    monkeypatch.setenv("SERVE_TEST_DECIDE", "tok")
    assert start_refusal(settings(DECIDE), "0.0.0.0", no_auth=False) is None


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_no_auth_is_allowed_on_loopback(host: str) -> None:
    assert start_refusal(settings(), host, no_auth=True) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "example.com", ""])
def test_no_auth_is_refused_off_loopback(host: str) -> None:
    refusal = start_refusal(settings(), host, no_auth=True)
    assert refusal is not None and "loopback" in refusal and repr(host) in refusal


def run_serve(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [str(console("hookengine")), "serve", "--config", str(root)]
    return subprocess.run(
        [*command, "--port", str(free_port()), "--db", str(root.parent / "s.db"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_the_console_script_exits_2_with_the_reason(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "engine.yaml": (
                "http:\n  tokens:\n    - {name: s, env: SERVE_TEST_DECIDE, scopes: [decide]}\n"
            ),
            "agents/a/agent.yaml": "hooks: [ctx]\n",
            "agents/a/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
        },
    )
    env = {k: v for k, v in os.environ.items() if k != "SERVE_TEST_DECIDE"}
    unset = run_serve(root, env=env)
    assert unset.returncode == 2
    assert "hookengine serve: no decide token: $SERVE_TEST_DECIDE unset" in unset.stderr
    exposed = run_serve(root, "--no-auth", "--host", "0.0.0.0", env=env)
    assert exposed.returncode == 2 and "--no-auth is allowed only on a loopback" in exposed.stderr
