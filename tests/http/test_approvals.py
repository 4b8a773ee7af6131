"""Approvals over HTTP on a real server on loopback: a decision that asks carries
``approval``; ``POST /v1/approvals/{id}`` approves or denies it once (approve or admin token,
never the host's decide token);
unknown 404, expired 410, resolved twice 409; ``GET /v1/approvals`` lists one session's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.runtime import Engine
from tests.conftest import write
from tests.http.test_http import run_server

DECIDE, ADMIN, READER = "decide-tok", "admin-tok", "other-tok"
APPROVE = "approve-tok"
TOKENS = {"A_DECIDE": DECIDE, "A_ADMIN": ADMIN, "A_APPROVE": APPROVE}
TOOL = "/v1/agents/a/points/tool_call"
ENGINE_YAML = """
http:
  tokens:
    - {name: sidecar, env: A_DECIDE, scopes: [decide]}
    - {name: ops, env: A_ADMIN, scopes: [admin]}
    - {name: approver, env: A_APPROVE, scopes: [approve]}
"""
ASK = """kind: approval
name: ask
tools: [pay]
message: "Pay {{input.amount}}?"
timeout_s: 60
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("approvals")
    write(
        root / "config",
        {
            "engine.yaml": ENGINE_YAML,
            "agents/a/agent.yaml": "hooks: [ask]\n",
            "agents/a/hooks/ask.yaml": ASK,
            "agents/r/agent.yaml": "hooks: [ask]\n",
            "agents/r/hooks/ask.yaml": ASK + "remember: user\n",
        },
    )
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        engine = Engine.load(root / "config", db=str(root / "engine.db"))
        try:
            yield from run_server(engine)
        finally:
            engine.close()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def pay(base: str, call_id: str, session: str = "s1", **extra: Any) -> dict[str, Any]:
    body = {
        "event": {"name": "pay", "input": {"amount": 5}, "call_id": call_id},
        "scope": {"session_id": session},
        **extra,
    }
    response = httpx.post(base + TOOL, json=body, headers=auth(DECIDE), timeout=10)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def resolve(base: str, approval_id: str, token: str, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/approvals/{approval_id}", json=body, headers=auth(token), timeout=10
    )


def test_a_decision_that_asks_carries_the_approval(base: str) -> None:
    data = pay(base, "h1")
    assert data["blocked"] and data["reason"] == "approval required: Pay 5?"
    assert data["approval"]["message"] == "Pay 5?" and data["approval"]["tool"] == "pay"
    assert data["approval"]["input"] == {"amount": 5}


def test_an_approve_token_approves_and_the_call_then_runs(base: str) -> None:
    asked = pay(base, "h2")["approval"]
    response = resolve(base, asked["id"], APPROVE, approve=True, note="ok")
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["status"] == "approved" and done["resolved_by"] == "approver"
    assert done["resolved_at"] and done["note"] == "ok"
    after = pay(base, "h2")
    assert not after["blocked"] and "approval" not in after


def test_an_admin_token_denies_naming_who(base: str) -> None:
    asked = pay(base, "h3")["approval"]
    response = resolve(base, asked["id"], ADMIN, approve=False, by="carol", note="no")
    assert response.status_code == 200 and response.json()["resolved_by"] == "carol"
    after = pay(base, "h3")
    assert after["blocked"] and after["reason"] == "denied by carol: no"


def test_a_second_resolution_is_409_and_the_first_stands(base: str) -> None:
    asked = pay(base, "h4")["approval"]
    assert resolve(base, asked["id"], APPROVE, approve=True).status_code == 200
    again = resolve(base, asked["id"], ADMIN, approve=False)
    assert again.status_code == 409 and again.json()["code"] == "approval_resolved"
    assert not pay(base, "h4")["blocked"]


def test_an_unknown_id_is_404(base: str) -> None:
    response = resolve(base, "0123abcd", APPROVE, approve=True)
    assert response.status_code == 404 and response.json()["code"] == "approval_not_found"


def test_an_expired_id_is_410(base: str) -> None:
    asked = pay(base, "h5")["approval"]
    past = (datetime.now(UTC) + timedelta(seconds=61)).isoformat()
    late = pay(base, "h5", time=past)
    assert late["blocked"] and "none came in time" in late["reason"]
    response = resolve(base, asked["id"], APPROVE, approve=True)
    assert response.status_code == 410 and response.json()["code"] == "approval_expired"


def test_no_token_is_401_and_a_body_without_approve_is_422(base: str) -> None:
    asked = pay(base, "h6")["approval"]
    bare = httpx.post(f"{base}/v1/approvals/{asked['id']}", json={"approve": True}, timeout=10)
    assert bare.status_code == 401
    wrong = resolve(base, asked["id"], READER, approve=True)
    assert wrong.status_code == 401
    missing = resolve(base, asked["id"], APPROVE, by="x")
    assert missing.status_code == 422 and missing.json()["errors"][0]["loc"] == ["body", "approve"]
    text = resolve(base, asked["id"], APPROVE, approve="yes")
    assert text.status_code == 422


def test_the_waiting_list_shows_one_sessions_approvals_only(base: str) -> None:
    mine = pay(base, "h7", session="alpha")["approval"]
    theirs = pay(base, "h7", session="beta")["approval"]
    assert mine["id"] != theirs["id"]
    listed = httpx.get(
        f"{base}/v1/approvals",
        params={"agent": "a", "session_id": "alpha"},
        headers=auth(APPROVE),
        timeout=10,
    )
    assert listed.status_code == 200
    assert [a["id"] for a in listed.json()] == [mine["id"]]


def test_a_denied_path_id_is_422_not_a_lookup(base: str) -> None:
    response = resolve(base, "..%2F..%2Fetc", APPROVE, approve=True)
    assert response.status_code in (404, 422)
    assert response.json()["code"] in ("invalid_input", "not_found")


def test_the_approval_route_is_in_the_openapi_document(base: str, tmp_path: Path) -> None:
    doc = httpx.get(f"{base}/openapi.json", timeout=10).json()
    post = doc["paths"]["/v1/approvals/{approval_id}"]["post"]
    assert {"200", "404", "409", "410"} <= set(post["responses"])


def test_the_opa_route_carries_the_approval_and_denies_meanwhile(base: str) -> None:
    body = {"input": {"name": "pay", "input": {"amount": 5}, "call_id": "o1", "scope": {}}}
    response = httpx.post(
        f"{base}/v1/data/hookengine/a/tool_call", json=body, headers=auth(DECIDE), timeout=10
    )
    assert response.status_code == 200, response.text
    found = response.json()["result"]
    assert found["allow"] is False and found["approval"]["message"] == "Pay 5?"


def test_the_hosts_decide_token_can_neither_approve_nor_list_approvals(base: str) -> None:
    # the host asking for decisions (and the agent that can read its token) must not answer
    # its own question: approving takes an approve (or admin) token, a person's
    asked = pay(base, "h9", session="gamma")["approval"]
    own = resolve(base, asked["id"], DECIDE, approve=True, by="alice")
    assert own.status_code == 403 and own.json()["code"] == "forbidden"
    listed = httpx.get(
        f"{base}/v1/approvals", params={"agent": "a"}, headers=auth(DECIDE), timeout=10
    )
    assert listed.status_code == 403
    assert pay(base, "h9", session="gamma")["approval"]["id"] == asked["id"]  # still waiting
    assert resolve(base, asked["id"], APPROVE, approve=True).json()["resolved_by"] == "approver"
    assert not pay(base, "h9", session="gamma")["blocked"]


def test_the_person_sees_whether_approving_is_remembered(base: str) -> None:
    body = {
        "event": {"name": "pay", "input": {"amount": 7}, "call_id": "r1"},
        "scope": {"session_id": "s1", "user_id": "u1"},
    }
    asked = httpx.post(
        base + "/v1/agents/r/points/tool_call", json=body, headers=auth(DECIDE), timeout=10
    ).json()["approval"]
    listed = httpx.get(
        f"{base}/v1/approvals", params={"agent": "r"}, headers=auth(APPROVE), timeout=10
    ).json()
    assert [(a["id"], a["remember_scope"]) for a in listed] == [(asked["id"], "user:u1")]
    once = pay(base, "r2", session="delta")["approval"]
    listed = httpx.get(
        f"{base}/v1/approvals",
        params={"agent": "a", "session_id": "delta"},
        headers=auth(APPROVE),
        timeout=10,
    ).json()
    assert [(a["id"], a["remember_scope"]) for a in listed] == [(once["id"], None)]
    done = resolve(base, asked["id"], APPROVE, approve=True).json()
    assert done["remember_scope"] == "user:u1"
