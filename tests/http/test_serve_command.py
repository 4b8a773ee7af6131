"""``hookengine serve --watch`` as users run it: the real console script on loopback, the
status endpoint showing a reload's generation and a bad edit's file and line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.conftest import console, write

TOKEN = "serve-test-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_serve_watch_reports_reloads_and_errors(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [ctx]\n",
            "agents/a/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
        },
    )
    port = free_port()
    exe = console("hookengine")
    env = {**os.environ, "HOOKENGINE_ADMIN_TOKEN": TOKEN}
    server = subprocess.Popen(
        [
            str(exe),
            "serve",
            "--config",
            str(root),
            "--port",
            str(port),
            "--watch",
            "--db",
            str(tmp_path / "s.db"),
            "--no-auth",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            timeout=5,
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as client:
            wait_for(lambda: client.get("/v1/health").status_code == 200)
            assert client.get("/v1/status").json()["agents"]["a"]["generation"] == 0
            (root / "agents/a/hooks/ctx.yaml").write_text(
                "kind: inject\nname: ctx\nnotice: hi\nmessages: []\n"
            )
            wait_for(lambda: client.get("/v1/status").json()["agents"]["a"]["generation"] >= 1)
            (root / "agents/a/hooks/ctx.yaml").write_text("kind: inject\nname: ctx\nfirst_n: x\n")
            wait_for(lambda: client.get("/v1/status").json()["agents"]["a"]["error"] is not None)
            error = client.get("/v1/status").json()["agents"]["a"]["error"]
            assert "ctx.yaml" in str(error) and "first_n" in str(error)
            assert (
                client.get("/v1/status", headers={"Authorization": "Bearer no"}).status_code == 401
            )
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stderr:
            server.stderr.close()
    assert server.returncode is not None


def run_status(*args: str, token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(console("hookengine")), "status", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOOKENGINE_ADMIN_TOKEN": token},
    )


def test_status_url_shows_a_running_watchers_health_and_a_fifo_fault(tmp_path: Path) -> None:
    root = write(
        tmp_path / "config",
        {
            "agents/a/agent.yaml": "hooks: [ctx]\n",
            "agents/a/hooks/ctx.yaml": "kind: inject\nname: ctx\nmessages: []\n",
        },
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            str(console("hookengine")),
            "serve",
            "--config",
            str(root),
            "--port",
            str(port),
            "--watch",
            "--db",
            str(tmp_path / "s.db"),
            "--no-auth",
        ],
        env={**os.environ, "HOOKENGINE_ADMIN_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(base_url=url, timeout=5) as client:
            wait_for(lambda: client.get("/v1/health").status_code == 200)
        done = run_status("--url", url)
        assert done.returncode == 0, done.stderr
        assert "watching: yes" in done.stdout and "watcher: alive, 0 restarts" in done.stdout
        os.mkfifo(root / "agents/a/hooks/extra.yaml")  # a FIFO where a listed hook should be
        (root / "agents/a/agent.yaml").write_text("hooks: [ctx, extra]\n")
        wait_for(lambda: run_status("--url", url).returncode == 1)
        done = run_status("--url", url, "--json")
        data = json.loads(done.stdout)
        assert data["watcher"]["alive"] and "FIFO" in str(data["agents"]["a"]["error"])
        assert "extra.yaml" in run_status("--url", url).stdout
        (root / "agents/a/hooks/extra.yaml").unlink()
        (root / "agents/a/hooks/extra.yaml").write_text("kind: inject\nname: extra\nmessages: []\n")
        wait_for(lambda: run_status("--url", url).returncode == 0)
        assert "last error: " in run_status("--url", url).stdout  # kept after the repair
        refused = run_status("--url", url, "--token", "wrong")
        assert refused.returncode == 2 and "401" in refused.stderr
    finally:
        server.terminate()
        server.wait(timeout=20)
    unreachable = run_status("--url", url)
    assert unreachable.returncode == 2 and "cannot read the status" in unreachable.stderr
