"""The decision API on a real uvicorn server on loopback: native, batch and OPA-compatible
routes, tokens with scopes, every status code (200 blocks included, 401, 403, 404, 413,
422 with paths, 429, 503), hostile requests answered with the common error body and no 5xx,
and Schemathesis over the whole OpenAPI document."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from engine.http.app import create_app
from engine.runtime import Engine
from tests.conftest import write
from tests.http.test_http import run_server

DECIDE, ADMIN, BOTH = "decide-tok-1", "admin-tok-2", "both-tok-3"
TOKENS = {"T_DECIDE": DECIDE, "T_ADMIN": ADMIN, "T_BOTH": BOTH}
BEARER = {"Authorization": f"Bearer {DECIDE}"}
TOOL = "/v1/agents/a/points/tool_call"

GUARD = """
function on_tool_call(event, host) {
  var cmd = String(event.input.command || "");
  if (cmd.indexOf("rm ") === 0) { return { block: "deleting is not allowed: " + cmd }; }
  if (cmd.indexOf("sudo ") === 0) { return { input: { command: cmd.slice(5) } }; }
  return null;
}
function on_tool_result(event, host) {
  var text = String(event.result);
  if (text.indexOf("sk-") >= 0) { return { result: text.replace(/sk-[a-z0-9]+/g, "[KEY]") }; }
  return null;
}
"""

ENGINE_YAML = """
process: proc
http:
  max_body_bytes: 1024
  max_decision_body_bytes: 8192
  max_concurrency: 2
  tokens:
    - {name: sidecar, env: T_DECIDE, scopes: [decide]}
    - {name: ops, env: T_ADMIN, scopes: [admin]}
    - {name: both, env: T_BOTH, scopes: [decide, admin]}
"""


def make_engine(root: Path) -> Engine:
    write(
        root / "config",
        {
            "engine.yaml": ENGINE_YAML,
            "agents/a/agent.yaml": "hooks: [guard, ctx]\n",
            "agents/a/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.js\n",
            "agents/a/hooks/guard.js": GUARD,
            "agents/a/hooks/ctx.yaml": (
                "kind: inject\nname: ctx\nmessages:\n  - {role: system, content: be kind}\n"
            ),
        },
    )
    return Engine.load(root / "config", db=str(root / "engine.db"))


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        eng = make_engine(tmp_path_factory.mktemp("decisions"))
        try:
            yield eng
        finally:
            eng.close()


@pytest.fixture(scope="module")
def base(engine: Engine) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)  # read when the app is made
        yield from run_server(engine)


@pytest.fixture
def client(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=10, headers=BEARER) as c:
        yield c


def shell(command: str) -> dict[str, Any]:
    return {"event": {"name": "shell", "input": {"command": command}}}


def is_error(body: Any, code: str) -> bool:
    return set(body) == {"code", "message", "errors"} and body["code"] == code


# --- native decisions -------------------------------------------------------------------


def test_an_allowed_tool_call_is_200_with_no_changes(client: httpx.Client, engine: Engine) -> None:
    response = client.post(TOOL, json=shell("ls -la"))
    assert response.status_code == 200
    body = response.json()
    assert body["blocked"] is False and body["reason"] is None and body["changes"] == {}
    assert body["unsupported"] == [] and body["generation"] == 0
    assert isinstance(body["duration_us"], int) and body["duration_us"] >= 0
    assert "hooks" not in body
    assert body["decision_id"] in {r.id for r in engine.records(agent="a", limit=500)}


def test_a_block_is_200_with_the_reason(client: httpx.Client) -> None:
    response = client.post(TOOL, json=shell("rm -rf /srv"))
    assert response.status_code == 200
    assert response.json()["blocked"] is True
    assert response.json()["reason"] == "deleting is not allowed: rm -rf /srv"


def test_a_rewritten_input_is_in_changes(client: httpx.Client) -> None:
    body = client.post(TOOL, json=shell("sudo ls")).json()
    assert body["blocked"] is False and body["changes"] == {"input": {"command": "ls"}}


def test_tool_result_redaction_and_injected_messages_are_changes(client: httpx.Client) -> None:
    event = {"name": "read", "input": {}, "result": "key sk-abc123 here"}
    redacted = client.post("/v1/agents/a/points/tool_result", json={"event": event}).json()
    assert redacted["changes"] == {"result": "key [KEY] here"}
    asked = {"event": {"question": "hi"}, "scope": {"user_id": "u1", "session_id": "s1"}}
    injected = client.post("/v1/agents/a/points/before_user_message", json=asked).json()
    assert injected["changes"] == {"messages": [{"role": "system", "content": "be kind"}]}


def test_a_turn_id_is_answered_and_taken_back(client: httpx.Client, engine: Engine) -> None:
    asked = {"event": {"question": "hi"}, "scope": {"user_id": "u7"}}
    turn = client.post("/v1/agents/a/points/before_user_message", json=asked).json()["turn_id"]
    assert isinstance(turn, str) and turn
    rated = {"event": {"rating": "like"}, "turn_id": turn, "scope": {"user_id": "u7"}}
    liked = client.post("/v1/agents/a/points/feedback", json=rated)
    assert liked.status_code == 200 and liked.json()["turn_id"] == turn
    opa = {"input": {"name": "ls", "input": {}, "turn_id": turn, "time": "2026-01-02T03:04:05Z"}}
    assert (
        client.post("/v1/data/hookengine/a/tool_call", json=opa).json()["result"]["turn_id"] == turn
    )
    stored = engine.records(agent="a", limit=500)
    assert {r.point for r in stored if r.event.get("turn_id") == turn} >= {"feedback", "tool_call"}
    late = client.post("/v1/agents/a/points/feedback", json={**rated, "time": "yesterday"})
    assert late.status_code == 422 and late.json()["errors"][0]["loc"] == ["body", "time"]
    bad = client.post("/v1/data/hookengine/a/tool_call", json={"input": {"name": "ls", "time": 5}})
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["body", "input", "time"]


def test_explain_answers_each_hooks_run(client: httpx.Client) -> None:
    body = client.post(TOOL, json={**shell("rm x"), "explain": True}).json()
    runs = {run["name"]: run for run in body["hooks"]}
    assert runs["guard"]["status"] == "decided" and runs["guard"]["kind"] == "script_hook"
    assert runs["guard"]["change"] == {"block": "deleting is not allowed: rm x"}


def test_a_batch_answers_each_input_and_an_error_body_for_a_bad_one(
    client: httpx.Client,
) -> None:
    inputs = {"ok": shell("ls"), "no": shell("rm y"), "bad": {"event": {"name": 5}}}
    response = client.post("/v1/batch/agents/a/points/tool_call", json={"inputs": inputs})
    assert response.status_code == 200
    answers = response.json()["responses"]
    assert list(answers) == ["ok", "no", "bad"]
    assert answers["ok"]["blocked"] is False and answers["no"]["blocked"] is True
    assert is_error(answers["bad"], "invalid_input")
    assert answers["bad"]["errors"][0]["loc"][:4] == ["body", "inputs", "bad", "event"]
    assert answers["ok"]["decision_id"] != answers["no"]["decision_id"]


def test_a_batch_over_100_inputs_is_422(client: httpx.Client) -> None:
    inputs = {f"i{n}": {"event": {}} for n in range(101)}
    response = client.post("/v1/batch/agents/a/points/tool_call", json={"inputs": inputs})
    assert response.status_code == 422 and is_error(response.json(), "invalid_input")
    assert response.json()["errors"][0]["loc"] == ["body", "inputs"]


# --- OPA-compatible ---------------------------------------------------------------------


def test_opa_data_answers_decision_id_and_result(client: httpx.Client) -> None:
    data = {"input": {"name": "shell", "input": {"command": "rm z"}, "scope": {"user_id": "u"}}}
    body = client.post("/v1/data/hookengine/a/tool_call", json=data).json()
    assert set(body) == {"decision_id", "result"}
    assert body["result"]["allow"] is False and body["result"]["blocked"] is True
    allowed = client.post("/v1/data/hookengine/a/tool_call", json={"input": shell("ls")["event"]})
    assert allowed.json()["result"] == {
        "allow": True,
        "turn_id": None,
        "blocked": False,
        "reason": None,
        "changes": {},
        "unsupported": [],
    }


def test_opa_batch_is_200_when_all_decided_and_207_when_some_failed(
    client: httpx.Client,
) -> None:
    url = "/v1/batch/data/hookengine/a/tool_call"
    good = {"x": shell("ls")["event"], "y": shell("rm q")["event"]}
    all_ok = client.post(url, json={"inputs": good})
    assert all_ok.status_code == 200
    body = all_ok.json()
    assert body["batch_decision_id"] and set(body["responses"]) == {"x", "y"}
    assert body["responses"]["y"]["result"]["allow"] is False
    mixed = client.post(url, json={"inputs": {**good, "z": {"scope": 5}, "w": {"name": 1}}})
    assert mixed.status_code == 207
    answers = mixed.json()["responses"]
    assert list(answers) == ["x", "y", "z", "w"]
    assert answers["x"]["http_status_code"] == "200"
    for key in ("z", "w"):
        assert answers[key]["http_status_code"] == "500"
        assert answers[key]["code"] == "invalid_input"
        assert all(set(e) == {"code", "message"} for e in answers[key]["errors"])
    assert "body.inputs.z.scope" in answers["z"]["errors"][0]["message"]


# --- tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {DECIDE}"},
        {"Authorization": f"Bearer {DECIDE}x"},
        {"Authorization": f"Bearer {DECIDE[:-1]}"},
        {"x-api-key": "wrong"},
    ],
)
def test_a_missing_or_wrong_token_is_401(base: str, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=base, timeout=10) as c:
        for url in (TOOL, "/v1/data/hookengine/a/tool_call", "/v1/status"):
            response = c.post(url, json=shell("ls"), headers=headers)
            if url == "/v1/status":
                response = c.get(url, headers=headers)
            assert response.status_code == 401, url
            assert is_error(response.json(), "unauthorized")
            assert response.headers["www-authenticate"] == "Bearer"


def test_x_api_key_is_accepted_like_a_bearer_token(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as c:
        assert c.post(TOOL, json=shell("ls"), headers={"x-api-key": DECIDE}).status_code == 200
        assert c.get("/v1/status", headers={"x-api-key": ADMIN}).status_code == 200


def test_a_token_without_the_scope_is_403(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as c:
        refused = c.post(TOOL, json=shell("ls"), headers={"Authorization": f"Bearer {ADMIN}"})
        assert refused.status_code == 403 and is_error(refused.json(), "forbidden")
        assert "'ops'" in refused.json()["message"] and ADMIN not in refused.text
        status = c.get("/v1/status", headers=BEARER)
        assert status.status_code == 403 and is_error(status.json(), "forbidden")
        both = {"Authorization": f"Bearer {BOTH}"}
        assert c.post(TOOL, json=shell("ls"), headers=both).status_code == 200
        assert c.get("/v1/status", headers=both).status_code == 200


def test_tokens_never_reach_records(client: httpx.Client, engine: Engine) -> None:
    client.post(TOOL, json=shell("echo marker-for-records"))
    stored = json.dumps([r.model_dump() for r in engine.records(agent="a", limit=500)])
    assert "marker-for-records" in stored
    assert not any(token in stored for token in TOKENS.values())


def test_tokens_never_reach_the_logs(engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        with TestClient(create_app(engine)) as c:
            for token in (DECIDE, ADMIN, "a-wrong-token-7"):
                for headers in ({"Authorization": f"Bearer {token}"}, {"x-api-key": token}):
                    c.post(TOOL, json=shell("ls"), headers=headers)
                    c.get("/v1/status", headers=headers)
    assert caplog.records  # the app and the engine did log
    assert not any(t in caplog.text for t in (*TOKENS.values(), "a-wrong-token-7"))


def test_the_legacy_admin_token_is_admin_only_and_tokens_match_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.config.models import HttpSettings, TokenSpec
    from engine.http.auth import load_auth
    from engine.http.errors import ApiError

    monkeypatch.setenv("LEGACY_ADMIN", "legacy-secret")
    monkeypatch.setenv("T_DECIDE", DECIDE)
    monkeypatch.delenv("T_UNSET", raising=False)
    http = HttpSettings(
        token_env="LEGACY_ADMIN",
        tokens=[
            TokenSpec(name="sidecar", env="T_DECIDE", scopes=["decide"]),
            TokenSpec(name="gone", env="T_UNSET", scopes=["decide", "admin"]),
        ],
    )
    auth = load_auth(http)
    assert [t.name for t in auth.tokens] == ["admin", "sidecar"]  # an unset variable: no token
    assert auth.check("admin", "legacy-secret") is not None
    with pytest.raises(ApiError) as refused:
        auth.check("decide", "legacy-secret")
    assert refused.value.status == 403
    for near in ("", DECIDE[:-1], DECIDE + "x", DECIDE.upper(), f" {DECIDE}", f"{DECIDE}\x00"):
        assert auth.match(near) is None, near
    assert auth.match(DECIDE) is not None and auth.match(DECIDE).name == "sidecar"  # type: ignore[union-attr]
    assert load_auth(http, no_auth=True).check("decide", None) is None
    with pytest.raises(ApiError) as closed:
        load_auth(HttpSettings(token_env="NOPE_UNSET")).check("admin", "x")
    assert closed.value.status == 503 and closed.value.code == "auth_not_configured"


# --- 404, 413, 422, 429, 503 --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "loc"),
    [
        ("/v1/agents/nobody/points/tool_call", ["path", "agent"]),
        ("/v1/agents/a/points/no_such_point", ["path", "point"]),
        ("/v1/data/hookengine/nobody/tool_call", ["path", "agent"]),
        ("/v1/batch/data/hookengine/a/nope", ["path", "point"]),
    ],
)
def test_an_unknown_agent_or_point_is_404_naming_it(
    client: httpx.Client, url: str, loc: list[str]
) -> None:
    body = {"inputs": {}} if "/batch/" in url else {"input": {}} if "/data/" in url else {}
    response = client.post(url, json=body)
    assert response.status_code == 404 and is_error(response.json(), "not_found")
    assert response.json()["errors"][0]["loc"] == loc


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"event": {"name": 5, "input": {}}}, ["body", "event", "name"]),
        ({"event": {"name": "x", "input": {}, "extra": 1}}, ["body", "event", "extra"]),
        ({"event": {"input": {}}}, ["body", "event", "name"]),
        (
            {"event": {"name": "x", "input": {}}, "scope": {"user_id": 7}},
            ["body", "scope", "user_id"],
        ),
        ({"event": {"name": "x", "input": {}}, "explain": "yes"}, ["body", "explain"]),
        ({"event": [1, 2]}, ["body", "event"]),
        ({"evnt": {}}, ["body", "evnt"]),
    ],
)
def test_bad_input_is_422_naming_the_field(
    client: httpx.Client, body: dict[str, Any], loc: list[str]
) -> None:
    response = client.post(TOOL, json=body)
    assert response.status_code == 422 and is_error(response.json(), "invalid_input")
    assert loc in [e["loc"] for e in response.json()["errors"]], response.json()
    assert ".".join(loc) in response.json()["message"]


@pytest.mark.parametrize("kind", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_not_sent_as_json_is_415_saying_so(client: httpx.Client, kind: str | None) -> None:
    headers = {"Content-Type": kind} if kind else {}
    response = client.post(TOOL, content=json.dumps(shell("ls")).encode(), headers=headers)
    assert response.status_code == 415 and is_error(response.json(), "unsupported_media_type")
    assert response.json()["errors"][0]["loc"] == ["header", "content-type"]
    assert "Content-Type: application/json" in response.json()["message"]
    as_json = {"Content-Type": "application/vnd.hookengine+json; charset=utf-8"}
    assert client.post(TOOL, content=json.dumps(shell("ls")), headers=as_json).status_code == 200


def test_the_body_limit_is_per_route(client: httpx.Client) -> None:
    padded = shell("ls " + "x" * 4000)  # over max_body_bytes (1024), under the decision limit
    assert client.post(TOOL, json=padded).status_code == 200
    big = client.post(TOOL, json=shell("ls " + "x" * 9000))
    assert big.status_code == 413 and is_error(big.json(), "body_too_large")
    assert "8192" in big.json()["message"]
    admin = client.request("DELETE", "/v1/memory/user:u1", content=b"x" * 2000)
    assert admin.status_code == 413 and "1024" in admin.json()["message"]


def test_decisions_beyond_max_concurrency_are_429(base: str, client: httpx.Client) -> None:
    host, port = base.removeprefix("http://").split(":")
    head = (
        f"POST {TOOL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DECIDE}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    ).encode()
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(2)]
    try:
        for sock in held:  # each holds a place: its body has not all come
            sock.sendall(head)
        over = None
        for _ in range(50):  # until the server has read both heads
            over = client.post(TOOL, json=shell("ls"))
            if over.status_code == 429:
                break
        assert over is not None and over.status_code == 429
        assert is_error(over.json(), "too_many_requests") and over.headers["retry-after"]
        assert client.get("/v1/health").status_code == 200  # not a decision route
    finally:
        for sock in held:
            sock.close()
    for _ in range(50):
        if client.post(TOOL, json=shell("ls")).status_code == 200:
            break
    else:
        raise AssertionError("the places were not given back")


def test_a_caller_without_a_token_is_refused_before_its_body_is_read(
    base: str, client: httpx.Client
) -> None:
    host, port = base.removeprefix("http://").split(":")
    head = (
        f"POST {TOOL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
        "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"
    ).encode()
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
    try:
        for sock in held:  # more than max_concurrency (2), none sending its body
            sock.sendall(head)
            answer = sock.recv(65536)  # answered without the body: it never comes
            while not answer.endswith(b"}"):
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 401"), answer[:100]
            assert is_error(json.loads(answer.partition(b"\r\n\r\n")[2]), "unauthorized")
        assert client.post(TOOL, json=shell("ls")).status_code == 200  # no place was taken
    finally:
        for sock in held:
            sock.close()


def test_ready_is_200_with_generations_and_503_until_agents_are_loaded(
    client: httpx.Client, engine: Engine
) -> None:
    assert client.get("/v1/ready").json() == {"status": "ready", "agents": {"a": 0}}
    loading = SimpleNamespace(settings=engine.settings, agents=[])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("T_DECIDE", DECIDE)
        with TestClient(create_app(loading)) as c:
            ready = c.get("/v1/ready")
            assert ready.status_code == 503 and is_error(ready.json(), "not_ready")
            decide = c.post(TOOL, json=shell("ls"), headers=BEARER)
            assert decide.status_code == 503 and is_error(decide.json(), "not_ready")


def test_no_auth_opens_decisions_but_not_the_admin_routes(engine: Engine) -> None:
    with TestClient(create_app(engine, no_auth=True)) as c:
        assert c.post(TOOL, json=shell("ls")).status_code == 200
        assert c.get("/v1/status").status_code in (401, 503)


# --- hostile requests ---------------------------------------------------------------------

JSON = {"Content-Type": "application/json"}
HOSTILE: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("bad json", TOOL, b'{"event": ', JSON),
    ("not json at all", TOOL, b"\x00\x01\x02", JSON),
    ("invalid utf-8", TOOL, b'{"event": {"name": "\xff\xfe"}}', JSON),
    ("a list body", TOOL, b"[1, 2, 3]", JSON),
    ("a string body", TOOL, b'"event"', JSON),
    ("null body", TOOL, b"null", JSON),
    ("empty body", TOOL, b"", JSON),
    ("duplicated keys", TOOL, b'{"event": {"name": "a", "name": "b", "input": {}}}', JSON),
    ("NaN", TOOL, b'{"event": {"name": "a", "input": {"n": NaN}}}', JSON),
    ("Infinity", TOOL, b'{"event": {"name": "a", "input": {"n": -Infinity}}}', JSON),
    ("huge float", TOOL, b'{"event": {"name": "a", "input": {"n": 1e999}}}', JSON),
    ("huge int", TOOL, b'{"event": {"name": "a", "input": {"n": ' + b"9" * 5000 + b"}}}", JSON),
    (
        "deep nesting",
        TOOL,
        b'{"event": {"name": "a", "input": ' + b"[" * 3000 + b"]" * 3000 + b"}}",
        JSON,
    ),
    (
        "deep objects",
        TOOL,
        b'{"event": {"name": "a", "input": ' + b'{"a":' * 200 + b"1" + b"}" * 200 + b"}}",
        JSON,
    ),
    ("text/plain", TOOL, json.dumps(shell("ls")).encode(), {"Content-Type": "text/plain"}),
    ("form", TOOL, b"event=1", {"Content-Type": "application/x-www-form-urlencoded"}),
    ("traversal in agent", "/v1/agents/..%2F..%2Fetc/points/tool_call", b"{}", JSON),
    ("dot agent", "/v1/agents/../points/tool_call", b"{}", JSON),
    ("encoded NUL agent", "/v1/agents/a%00/points/tool_call", b"{}", JSON),
    ("long agent", "/v1/agents/" + "a" * 5000 + "/points/tool_call", b"{}", JSON),
    ("unicode point", "/v1/agents/a/points/t%C3%B6ol_call", b"{}", JSON),
    ("scope not an object", TOOL, b'{"event": {}, "scope": "user:u1"}', JSON),
    ("OPA input a list", "/v1/data/hookengine/a/tool_call", b'{"input": [1]}', JSON),
    ("OPA input missing", "/v1/data/hookengine/a/tool_call", b"{}", JSON),
    ("OPA inputs not an object", "/v1/batch/data/hookengine/a/tool_call", b'{"inputs": 3}', JSON),
    (
        "batch id with slash",
        "/v1/batch/agents/a/points/tool_call",
        b'{"inputs": {"a/b": {}}}',
        JSON,
    ),
    ("query smuggling", TOOL + "?host=opa%00&host=x", b"{}", JSON),
    ("unknown host", TOOL + "?host=mars", json.dumps(shell("ls")).encode(), JSON),
]


@pytest.mark.parametrize(("name", "url", "body", "headers"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_request_is_a_4xx_with_the_error_body(
    client: httpx.Client, name: str, url: str, body: bytes, headers: dict[str, str]
) -> None:
    response = client.post(url, content=body, headers=headers)
    assert 400 <= response.status_code < 500, (name, response.status_code, response.text)
    assert set(response.json()) == {"code", "message", "errors"}, response.text


@pytest.mark.parametrize(
    "event",
    [
        {"name": "a\u0000b", "input": {"c\u0000": "\u0000"}},
        {"name": "\ud800", "input": {"x": "\udfff"}},
        {"name": "\u202e\ufeff", "input": {"": ""}},
    ],
    ids=["NUL in strings and keys", "lone surrogates", "bidi and BOM, empty key"],
)
def test_odd_but_valid_json_text_is_decided_or_refused_never_a_5xx(
    client: httpx.Client, event: dict[str, Any]
) -> None:
    escaped = json.dumps({"event": event}).encode()  # ASCII: \\u escapes on the wire
    response = client.post(TOOL, content=escaped, headers=JSON)
    assert response.status_code in (200, 422), response.text
    assert response.status_code == 422 or response.json()["blocked"] is False


def test_header_tricks_are_refused_without_a_5xx(base: str) -> None:
    host, port = base.removeprefix("http://").split(":")
    tricks = [
        f"Authorization: Bearer {DECIDE}\r\nAuthorization: Bearer wrong\r\n",
        "Authorization: Bearer\r\n",
        "Authorization: bearer  \r\n",
        f"Authorization: Bearer {DECIDE}\x00\r\n",
        "x-api-key: \r\n",
        f"Content-Length: abc\r\nAuthorization: Bearer {DECIDE}\r\n",
        f"Content-Length: -1\r\nAuthorization: Bearer {DECIDE}\r\n",
        f"Content-Length: 2\r\nContent-Length: 3\r\nAuthorization: Bearer {DECIDE}\r\n",
        f"Transfer-Encoding: chunked\r\nContent-Length: 2\r\nAuthorization: Bearer {DECIDE}\r\n",
    ]
    for extra in tricks:
        # a whole body in either framing, so that no trick waits out the read deadline
        body = b"2\r\n{}\r\n0\r\n\r\n" if "chunked" in extra else b"{}"
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            request = f"POST {TOOL} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n"
            sock.sendall(request.encode() + b"\r\n" + body)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        if not answer:
            continue  # the server's parser refused the request and closed the connection
        status = int(answer.split(b" ", 2)[1])
        assert 400 <= status < 500 or status == 200, (extra, answer[:200])
        assert status != 200 or b'"decision_id"' in answer


# --- Schemathesis -----------------------------------------------------------------------


def test_schemathesis_finds_no_server_error_on_any_route(base: str) -> None:
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    seen: list[int] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def probe(case) -> None:  # type: ignore[no-untyped-def]
            if case.path_parameters and "agent" in case.path_parameters:
                case.path_parameters["agent"] = "a"  # reach the engine, not only the 404
            response = case.call(headers={"Authorization": f"Bearer {BOTH}"})
            seen.append(response.status_code)
            assert response.status_code < 500, (case.path, response.text)
            if response.status_code >= 400:
                assert set(response.json()) == {"code", "message", "errors"}

        probe()
    assert seen and 200 in seen and all(code < 500 for code in seen)


# --- where single decisions run -------------------------------------------------------------


@pytest.mark.postgres
def test_single_decisions_run_on_the_loop_with_sqlite_and_in_threads_with_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways answer alike: a block, a rewrite, a 422 with the request's paths."""
    from engine.http.decisions import on_loop
    from tests.backends import pg_schema

    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    sqlite = make_engine(tmp_path / "sqlite")
    try:
        assert on_loop(sqlite)
        answers = {"sqlite": _three_answers(sqlite)}
    finally:
        sqlite.close()
    with pg_schema() as url:
        pg = Engine.load(tmp_path / "sqlite" / "config", db=url)
        try:
            assert not on_loop(pg)
            answers["postgres"] = _three_answers(pg)
        finally:
            pg.close()
    assert answers["sqlite"] == answers["postgres"]
    blocked, rewritten, bad = answers["sqlite"]
    assert blocked == (200, True, "deleting is not allowed: rm -rf /")
    assert rewritten == (200, False, None)
    assert bad[0] == 422 and ["body", "event", "name"] in bad[1]


def _three_answers(engine: Engine) -> list[Any]:
    with TestClient(create_app(engine), headers=BEARER) as c:
        out: list[Any] = []
        for body in (shell("rm -rf /"), shell("sudo ls")):
            r = c.post(TOOL, json=body)
            out.append((r.status_code, r.json()["blocked"], r.json()["reason"]))
        r = c.post(TOOL, json={"event": {"name": 5, "input": {}}})
        out.append((r.status_code, [e["loc"] for e in r.json()["errors"]]))
    return out
