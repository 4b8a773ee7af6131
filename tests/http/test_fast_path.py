"""The decision routes' fast path (engine/http/fast.py) answers exactly what the FastAPI routes
answer: the same requests, valid and malformed, sent to the app with and without it give the
same status, headers that matter and body (ids and timings aside); and a common decision is
answered without FastAPI's dependency solving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engine.http import app as app_module
from engine.http.app import ROUTERS, create_app
from engine.http.fast import read_query, sent_as_json
from engine.runtime import Engine
from tests.http.test_decisions import BEARER, TOKENS, make_engine

JSON = {"Content-Type": "application/json"}
VOLATILE = ("decision_id", "duration_us", "duration_ms", "batch_decision_id")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        eng = make_engine(tmp_path_factory.mktemp("fast"))
        try:
            yield eng
        finally:
            eng.close()


def client_of(engine: Engine, *, fast: bool) -> TestClient:
    # A router factory that is not ROUTERS' own has no fast path (app.FAST_ROUTES).
    routers = ROUTERS if fast else [lambda e, a, make=make: make(e, a) for make in ROUTERS]
    with pytest.MonkeyPatch.context() as mp:
        for name, value in TOKENS.items():
            mp.setenv(name, value)
        return TestClient(create_app(engine, routers=routers), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def fast(engine: Engine) -> TestClient:
    return client_of(engine, fast=True)


@pytest.fixture(scope="module")
def slow(engine: Engine) -> TestClient:
    return client_of(engine, fast=False)


def without_volatile(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_volatile(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [without_volatile(v) for v in data]
    return data


def shell(command: str, **extra: Any) -> bytes:
    return json.dumps({"event": {"name": "shell", "input": {"command": command}}, **extra}).encode()


def hook(command: str) -> bytes:
    payload = {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "tool_name": "shell",
        "tool_input": {"command": command},
        "tool_use_id": "t1",
    }
    return json.dumps(payload).encode()


TOOL = "/v1/agents/a/points/tool_call"
BATCH = "/v1/batch/agents/a/points/tool_call"
OPA = "/v1/data/hookengine/a/tool_call"
OPA_BATCH = "/v1/batch/data/hookengine/a/tool_call"
CLAUDE = "/v1/claude-code/a"

CASES: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("allowed", TOOL, shell("ls"), JSON),
    ("blocked", TOOL, shell("rm -rf /"), JSON),
    ("rewritten, explained", TOOL, shell("sudo ls", explain=True), JSON),
    ("scope and turn", TOOL, shell("ls", scope={"user_id": "u"}, turn_id="t"), JSON),
    ("charset", TOOL, shell("ls"), {"Content-Type": "application/json; charset=utf-8"}),
    ("host query", TOOL + "?host=opa", shell("sudo ls"), JSON),
    ("unknown host", TOOL + "?host=mars", shell("ls"), JSON),
    ("host twice", TOOL + "?host=opa&host=claude-code", shell("ls"), JSON),
    ("other query", TOOL + "?x=1", shell("ls"), JSON),
    ("no content type", TOOL, shell("ls"), {}),
    ("text/plain", TOOL, shell("ls"), {"Content-Type": "text/plain"}),
    ("vendor json", TOOL, shell("ls"), {"Content-Type": "application/vnd.x+json"}),
    ("not JSON", TOOL, b"{", JSON),
    ("empty body", TOOL, b"", JSON),
    ("duplicate key", TOOL, b'{"event": {}, "event": {}}', JSON),
    ("NaN", TOOL, b'{"event": {"name": "a", "input": {"x": NaN}}}', JSON),
    ("extra field", TOOL, b'{"event": {}, "nope": 1}', JSON),
    ("explain not a bool", TOOL, b'{"event": {}, "explain": "yes"}', JSON),
    ("event refused by the engine", TOOL, b'{"event": {"name": 42}}', JSON),
    ("unknown agent", "/v1/agents/zz/points/tool_call", shell("ls"), JSON),
    ("unknown point", "/v1/agents/a/points/nope", shell("ls"), JSON),
    ("agent off pattern", "/v1/agents/a%20b/points/tool_call", shell("ls"), JSON),
    ("trailing slash", TOOL + "/", shell("ls"), JSON),
    ("batch", BATCH, json.dumps({"inputs": {"x": {"event": {"name": "a"}}}}).encode(), JSON),
    ("batch, one bad", BATCH, b'{"inputs": {"x": {"event": {"name": 1}}, "y": {}}}', JSON),
    ("batch id off pattern", BATCH, b'{"inputs": {"a/b": {}}}', JSON),
    ("OPA", OPA, b'{"input": {"name": "shell", "input": {"command": "rm x"}}}', JSON),
    ("OPA scope", OPA, b'{"input": {"name": "a", "input": {}, "scope": {"user_id": 3}}}', JSON),
    ("OPA input missing", OPA, b"{}", JSON),
    ("OPA batch", OPA_BATCH, b'{"inputs": {"x": {"name": "a", "input": {}}, "y": {}}}', JSON),
    ("Claude Code", CLAUDE, hook("rm -rf /"), JSON),
    ("Claude Code, codex", CLAUDE + "?dialect=codex", hook("rm -rf /"), JSON),
    ("Claude Code, bad dialect", CLAUDE + "?dialect=x", hook("ls"), JSON),
    ("Claude Code, text/plain", CLAUDE, hook("ls"), {"Content-Type": "text/plain"}),
    ("Claude Code, not JSON", CLAUDE, b"{", JSON),
    ("Claude Code, unknown agent", "/v1/claude-code/zz", hook("ls"), JSON),
]


@pytest.mark.parametrize(("name", "url", "body", "headers"), CASES, ids=[c[0] for c in CASES])
def test_the_fast_path_answers_what_the_route_answers(
    fast: TestClient, slow: TestClient, name: str, url: str, body: bytes, headers: dict[str, str]
) -> None:
    answers = [c.post(url, content=body, headers={**BEARER, **headers}) for c in (fast, slow)]
    got, expected = answers
    assert got.status_code == expected.status_code, (name, got.text, expected.text)
    assert got.headers["content-type"] == expected.headers["content-type"]
    assert got.headers.get("www-authenticate") == expected.headers.get("www-authenticate")
    assert without_volatile(got.json()) == without_volatile(expected.json()), name


def test_a_common_decision_is_answered_without_fastapi_dependencies(
    fast: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the FastAPI route ran")

    monkeypatch.setattr("fastapi.routing.solve_dependencies", refuse)
    for url, body in ((TOOL, shell("rm -rf /")), (OPA, b'{"input": {"name": "a"}}')):
        response = fast.post(url, content=body, headers={**BEARER, **JSON})
        assert response.status_code == 200, response.text
    assert fast.post(CLAUDE, content=hook("rm x"), headers=BEARER).status_code == 200
    # anything it does not take goes on to the route, which now fails
    assert fast.post(TOOL, content=b'{"nope": 1}', headers={**BEARER, **JSON}).status_code == 500


def test_every_router_with_a_fast_path_is_mounted_by_default() -> None:
    assert set(app_module.FAST_ROUTES) <= set(ROUTERS)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", {}),
        (b"host=opa", {"host": "opa"}),
        (b"host=opa&host=opa", None),
        (b"host=OPA", None),
        (b"other=1", None),
        (b"host=op%61", {"host": "opa"}),
    ],
)
def test_a_query_is_taken_only_when_each_parameter_is_known_once_and_valid(
    raw: bytes, expected: dict[str, str] | None
) -> None:
    import re

    assert read_query(raw, {"host": re.compile("[a-z-]{1,40}")}) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([(b"content-type", b"application/json")], True),
        ([(b"content-type", b"Application/JSON ; charset=utf-8")], True),
        ([(b"content-type", b"application/vnd.x+json")], False),
        ([], False),
        ([(b"content-type", b"application/json")] * 2, False),
    ],
)
def test_only_a_body_sent_as_application_json_is_read_as_json(
    headers: list[tuple[bytes, bytes]], expected: bool
) -> None:
    assert sent_as_json(headers) is expected


def test_a_path_for_the_fast_path_keeps_the_routes_own_patterns(tmp_path: Path) -> None:
    from engine.http.decisions import fast_path

    pattern = fast_path("/v1/agents/{agent}/points/{point}")
    assert pattern.fullmatch("/v1/agents/a.b-c_1/points/tool_call")
    for path in ("/v1/agents/a b/points/x", "/v1/agents/a/points/X", "/v1/agents//points/x"):
        assert not pattern.fullmatch(path)
    assert not pattern.fullmatch("/v1/agents/" + "a" * 101 + "/points/x")


@pytest.mark.parametrize("url", [TOOL, CLAUDE, OPA_BATCH])
def test_a_body_over_the_limit_with_no_length_declared_is_413_on_the_fast_path(
    fast: TestClient, url: str
) -> None:
    big = shell("ls " + "x" * 9000)  # over the decision limit (8192)
    response = fast.post(url, content=iter([big[:4000], big[4000:]]), headers={**BEARER, **JSON})
    assert "content-length" not in response.request.headers
    assert response.status_code == 413, response.text
    assert response.json()["code"] == "body_too_large" and "8192" in response.json()["message"]


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [65, 500, 999, 1300])  # the body limit here is 8 KB
@pytest.mark.parametrize(
    ("url", "template"),
    [
        (TOOL, '{"event": {"name": "x", "input": %s}}'),
        (OPA, '{"input": {"name": "x", "input": %s}}'),
        (OPA_BATCH, '{"inputs": {"x": {"name": "x", "input": %s}}}'),
        (BATCH, '{"inputs": {"x": {"event": {"name": "x", "input": %s}}}}'),
    ],
)
def test_a_body_nested_too_deep_is_the_same_422_at_any_depth(
    fast: TestClient, slow: TestClient, url: str, template: str, depth: int
) -> None:
    # past Python's own recursion limit FastAPI answered a bare 400 with no errors
    body = (template % nested(depth)).encode()
    for client in (fast, slow):
        got = client.post(url, content=body, headers={**BEARER, **JSON})
        assert got.status_code == 422, got.text
        assert got.json()["errors"] == [{"loc": ["body"], "msg": "nested deeper than 64 levels"}]


def test_an_integer_too_long_to_convert_is_a_422(fast: TestClient, slow: TestClient) -> None:
    body = b'{"event": {"name": "x", "input": {"n": ' + b"9" * 5000 + b"}}}"
    for client in (fast, slow):
        got = client.post(TOOL, content=body, headers={**BEARER, **JSON})
        assert got.status_code == 422 and "4300 digits" in got.json()["message"], got.text
