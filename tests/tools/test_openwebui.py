"""Open WebUI toolkits load unchanged and run: valves, user valves, reserved arguments,
events, citations, and the load errors that name file and line."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

import pytest

from engine.tools.base import ToolLoadError
from tests.tools.context import FakeToolContext
from tests.tools.openwebui_support import load

RESULTS = [
    {"title": f"Result {n}", "url": f"http://example.test/{n}", "content": f"text {n}"}
    for n in range(1, 6)
]


class SearchHandler(BaseHTTPRequestHandler):
    """A SearXNG-style search endpoint: ``GET /search?q=...&format=json``."""

    queries: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        query = parse_qs(urlparse(self.path).query)
        if urlparse(self.path).path != "/search" or query.get("format") != ["json"]:
            self.send_error(404)
            return
        self.queries.append(query["q"][0])
        body = json.dumps({"query": query["q"][0], "results": RESULTS}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def search_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SearchHandler)
    SearchHandler.queries = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/search"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def problems(exc: pytest.ExceptionInfo[ToolLoadError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


# -- the web search toolkit, against a real server on loopback ---------------------------


def test_web_search_calls_the_valves_url_and_emits_status_events_in_order(
    tmp_path: Path, search_server: str
) -> None:
    tools = load(tmp_path, "web_search", valves={"search_url": search_server, "max_results": 2})
    ctx = FakeToolContext.recording(tmp_path / "artifacts")
    result = tools["search_web"].invoke({"query": "hook engines"}, ctx)
    assert SearchHandler.queries == ["hook engines"]
    assert result.content == "Result 1: http://example.test/1\nResult 2: http://example.test/2"
    assert not result.is_error
    kinds = [(e["type"], e["data"].get("description")) for e in result.events]
    assert kinds == [
        ("status", "Searching for hook engines"),
        ("citation", None),
        ("citation", None),
        ("status", "Found 2 results"),
    ]
    assert [e["data"]["done"] for e in result.events if e["type"] == "status"] == [False, True]
    assert result.events[1]["data"]["source"] == {"name": "Result 1", "url": RESULTS[0]["url"]}
    assert ctx.emitted == result.events


def test_web_search_is_awaited_on_the_callers_event_loop(
    tmp_path: Path, search_server: str
) -> None:
    tools = load(tmp_path, "web_search", valves={"search_url": search_server})
    result = asyncio.run(tools["search_web"].ainvoke({"query": "q"}, FakeToolContext(tmp_path)))
    assert result.content.count("\n") == 2  # max_results defaults to 3
    assert [e["type"] for e in result.events] == ["status"] + ["citation"] * 3 + ["status"]


def test_a_search_server_that_fails_makes_the_call_raise(
    tmp_path: Path, search_server: str
) -> None:
    tools = load(tmp_path, "web_search", valves={"search_url": search_server + "/missing"})
    with pytest.raises(Exception, match="404"):
        tools["search_web"].invoke({"query": "q"}, FakeToolContext(tmp_path))


def test_loading_restores_root_logging_after_the_file_calls_basic_config(
    tmp_path: Path,
) -> None:
    root = logging.getLogger()
    before = (root.level, list(root.handlers), list(root.filters))
    load(tmp_path, "web_search", valves={"search_url": "http://127.0.0.1:9/search"})
    assert (root.level, list(root.handlers), list(root.filters)) == before


# -- valves -----------------------------------------------------------------------------


def test_valves_are_set_from_the_yaml_even_when_init_does_not(tmp_path: Path) -> None:
    tools = load(tmp_path, "web_search", valves={"search_url": "http://x/s", "max_results": 7})
    valves = tools["search_web"].toolkit.instance.valves
    assert (valves.search_url, valves.max_results, valves.timeout_s) == ("http://x/s", 7, 5.0)


def test_valves_replace_the_ones_init_made(tmp_path: Path) -> None:
    tools = load(tmp_path, "string_reverse", valves={"api_key": "42"})
    ctx = FakeToolContext(tmp_path)
    assert tools["reverse_string"].invoke({"string": "abc"}, ctx).content == "cba"
    tools = load(tmp_path, "string_reverse")
    assert tools["reverse_string"].invoke({"string": "abc"}, ctx).content == "Wrong API key"


@pytest.mark.parametrize(
    ("valves", "expected"),
    [
        (
            {"search_url": "http://x", "max_results": "many"},
            "web_search.yaml:5: valves.max_results: must be a whole number, got text 'many' "
            "(write a whole number without quotes, e.g. 50)",
        ),
        (
            {"search_url": "http://x", "max_results": 11},
            "web_search.yaml:5: valves.max_results: must be <= 10, got 11 (use 10 or less)",
        ),
        (
            {"search_url": "http://x", "timeout_s": 0},
            "web_search.yaml:5: valves.timeout_s: must be > 0.0, got 0 (use a value above 0.0)",
        ),
        ({}, "web_search.yaml:3: valves.search_url: required field is missing (add it)"),
        (
            {"search_url": "http://x", "max_result": 2},
            "web_search.yaml:5: valves.max_result: unknown field 'max_result' "
            "(did you mean 'max_results'?)",
        ),
    ],
)
def test_bad_valves_are_load_errors_with_file_line_and_field(
    tmp_path: Path, valves: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "web_search", valves=valves)
    assert any(text.endswith(expected) for text in problems(exc)), problems(exc)


def test_a_missing_valve_names_the_field_itself(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "web_search", valves={"max_results": 2})
    assert exc.value.problems[0].field == "valves.search_url"
    assert exc.value.problems[0].message == "required field is missing"


def test_valves_for_a_toolkit_without_a_valves_class_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "nested_types", valves={"key": "x"})
    assert problems(exc)[0].endswith("nested_types.yaml:3: valves: the toolkit has no Valves class")


def test_bad_user_valves_are_load_errors_naming_the_user(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "user_valves_a", user_valves={"alice": {"token": ["x"]}})
    assert exc.value.problems[0].field == "user_valves.alice.token"
    assert exc.value.problems[0].line == 5
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "nested_types", user_valves={"alice": {}})
    assert "the toolkit has no UserValves class" in problems(exc)[0]


# -- user valves: per user and tool, a copy per call --------------------------------------


def test_user_valves_stay_with_their_user_and_toolkit_under_concurrency(tmp_path: Path) -> None:
    per_user = {"alice": {"token": "A"}, "bob": {"token": "B", "greeting": "hi"}}
    a = load(tmp_path / "a", "user_valves_a", user_valves=per_user)
    b = load(tmp_path / "b", "user_valves_b", user_valves={"alice": {"token": "A2"}})
    b["whoami_b"].toolkit.set_user_valves("bob", {"token": "B2"})
    pairs = ((a, "whoami_a"), (b, "whoami_b"))
    calls = [(tools, name, user) for tools, name in pairs for user in ("alice", "bob")] * 5

    async def run_all() -> list[str]:
        return [
            r.content
            for r in await asyncio.gather(
                *(
                    tools[name].ainvoke({"pause_ms": 15}, FakeToolContext(tmp_path, user_id=user))
                    for tools, name, user in calls
                )
            )
        ]

    expected = {
        ("whoami_a", "alice"): "a:alice:A:hello",
        ("whoami_a", "bob"): "a:bob:B:hi",
        ("whoami_b", "alice"): "b:alice:A2:hello",
        ("whoami_b", "bob"): "b:bob:B2:hello",
    }
    assert asyncio.run(run_all()) == [expected[(name, user)] for _, name, user in calls]
    # every call got its own copy: the tool's "tampered" write reached no one else
    assert a["whoami_a"].toolkit.user_values["alice"]["token"] == "A"


def test_user_valves_are_isolated_across_threads_too(tmp_path: Path) -> None:
    a = load(tmp_path / "a", "user_valves_a", user_valves={"alice": {"token": "A"}})
    b = load(tmp_path / "b", "user_valves_b", user_valves={"bob": {"token": "B"}})
    found: dict[tuple[str, str], set[str]] = {}
    lock = threading.Lock()

    def call(tools: dict[str, Any], name: str, user: str) -> None:
        for _ in range(20):
            text = tools[name].invoke({}, FakeToolContext(tmp_path, user_id=user)).content
            with lock:
                found.setdefault((name, user), set()).add(text)

    threads = [
        threading.Thread(target=call, args=(tools, name, user))
        for tools, name in ((a, "whoami_sync_a"), (b, "whoami_sync_b"))
        for user in ("alice", "bob")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == {
        ("whoami_sync_a", "alice"): {"a:alice:A"},
        ("whoami_sync_a", "bob"): {"a:bob:"},
        ("whoami_sync_b", "alice"): {"b:alice:"},
        ("whoami_sync_b", "bob"): {"b:bob:B"},
    }


def test_set_user_valves_validates_first(tmp_path: Path) -> None:
    toolkit = load(tmp_path, "user_valves_a")["whoami_a"].toolkit
    with pytest.raises(ValueError):
        toolkit.set_user_valves("alice", {"token": ["not", "text"]})
    assert "alice" not in toolkit.user_values
    with pytest.raises(ValueError, match="no UserValves"):
        load(tmp_path, "nested_types")["tag_sets"].toolkit.set_user_valves("alice", {})


# -- reserved arguments -------------------------------------------------------------------


def test_every_reserved_argument_is_bound_from_the_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.tools.openwebui"):
        tool = load(tmp_path, "reserved_all", id="inspector")["inspect_call"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "__request__ gets its default None" in warned
    assert "__oauth_token__ gets its default None" in warned
    asked: list[dict[str, Any]] = []

    def ask(event: dict[str, Any]) -> str:
        asked.append(event)
        return "yes"

    ctx = FakeToolContext.recording(
        tmp_path, session_id="chat-9", call_id="msg-3", user_id="alice", ask=ask
    )
    result = tool.invoke({"query": "q"}, ctx)
    data = result.data
    assert data["user"] == {"id": "alice", "name": "alice", "email": "", "role": "user"}
    assert data["metadata"]["chat_id"] == "chat-9" and data["metadata"]["message_id"] == "msg-3"
    assert data["metadata"]["tool_ids"] == ["inspector"]
    assert (data["id"], data["chat_id"], data["message_id"]) == ("inspector", "chat-9", "msg-3")
    assert (data["messages"], data["files"], data["model"]) == ([], [], {"id": "demo"})
    assert (data["request"], data["oauth_token"], data["answer"]) == (None, None, "yes")
    assert asked == [{"type": "input", "data": {"title": "ok?"}}]
    assert [e["data"]["description"] for e in result.events] == ["seen", "done"]
    assert json.loads(result.content) == data


def test_event_call_is_none_without_a_host_callback(tmp_path: Path) -> None:
    tool = load(tmp_path, "reserved_all")["inspect_call"]
    assert tool.invoke({"query": "q"}, FakeToolContext(tmp_path)).data["answer"] is None


def test_host_context_values_reach_user_messages_files_and_model(tmp_path: Path) -> None:
    tool = load(tmp_path, "reserved_all")["inspect_call"]
    ctx: Any = FakeToolContext(tmp_path)
    ctx.user = {"name": "Alice", "email": "a@example.test", "role": "admin"}
    ctx.messages = [{"role": "user", "content": "hi"}]
    ctx.files = [{"id": "f1"}]
    ctx.model = {"id": "gpt-x"}
    data = tool.invoke({"query": "q"}, ctx).data
    assert data["user"] == {"id": "u1", "name": "Alice", "email": "a@example.test", "role": "admin"}
    assert data["messages"] == ctx.messages and data["files"] == [{"id": "f1"}]
    assert data["model"] == {"id": "gpt-x"}


def test_a_reserved_argument_is_passed_only_when_declared(tmp_path: Path) -> None:
    tools = load(tmp_path, "reserved_all")
    assert tools["only_user"].invoke({}, FakeToolContext(tmp_path, user_id="bob")).content == "bob"
    # a model that sends a reserved name gets nothing through
    sent = {"string": "abc", "__user__": {"id": "root"}}
    assert (
        load(tmp_path, "string_reverse")["reverse_string"]
        .invoke(sent, FakeToolContext(tmp_path))
        .content
        == "Wrong API key"
    )


REQUEST_WITHOUT_DEFAULT = '''
class Tools:
    def fetch(self, url: str, __request__) -> str:
        """Fetch."""
        return url
'''

UNKNOWN_DUNDER = '''
class Tools:
    def fetch(self, url: str, __task__=None, __tools__: dict = {}) -> str:
        """Fetch."""
        return f"{url}{__task__}{__tools__}"
'''


def test_request_without_a_default_is_a_load_error_naming_the_method(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError) as exc:
        load(tmp_path, "fetcher", REQUEST_WITHOUT_DEFAULT)
    problem = exc.value.problems[0]
    assert (problem.line, problem.field) == (3, "fetch.__request__")
    assert "without a default" in problem.message and problem.hint == "declare __request__=None"


def test_unknown_reserved_arguments_keep_their_defaults(tmp_path: Path) -> None:
    tool = load(tmp_path, "fetcher", UNKNOWN_DUNDER)["fetch"]
    assert tool.invoke({"url": "u"}, FakeToolContext(tmp_path)).content == "uNone{}"
    assert list(tool.spec.input_schema["properties"]) == ["url"]


# -- running: sync in a thread, async awaited, results, citations ------------------------


THREADS = '''
import asyncio
import threading


class Tools:
    def sync_where(self) -> str:
        """Where a sync method runs."""
        return str(threading.get_ident())

    async def async_where(self) -> str:
        """Where an async method runs."""
        await asyncio.sleep(0)
        return str(threading.get_ident())

    def as_data(self, n: int) -> dict:
        """Data."""
        return {"n": n, "items": [1, 2]}

    def nothing(self) -> None:
        """Nothing."""
'''


def test_sync_methods_run_in_a_thread_and_async_ones_on_the_loop(tmp_path: Path) -> None:
    tools = load(tmp_path, "threads", THREADS)
    ctx = FakeToolContext(tmp_path)

    async def where() -> tuple[str, str, str, str]:
        here = str(threading.get_ident())
        sync = (await tools["sync_where"].ainvoke({}, ctx)).content
        awaited = (await tools["async_where"].ainvoke({}, ctx)).content
        # invoke (the call path's entry) from inside a running loop still completes
        return here, sync, awaited, tools["async_where"].invoke({}, ctx).content

    here, sync, awaited, nested = asyncio.run(where())
    assert sync != here and awaited == here and nested != here
    # from a thread without a loop, invoke runs an async method right there
    assert tools["async_where"].invoke({}, ctx).content == str(threading.get_ident())


def test_json_results_are_indented_json_and_kept_as_data(tmp_path: Path) -> None:
    tools = load(tmp_path, "threads", THREADS)
    result = tools["as_data"].invoke({"n": 2}, FakeToolContext(tmp_path))
    assert result.data == {"n": 2, "items": [1, 2]}
    assert result.content == json.dumps({"n": 2, "items": [1, 2]}, indent=2)
    assert tools["nothing"].invoke({}, FakeToolContext(tmp_path)).content == ""


def test_citation_on_adds_one_citation_event_per_result(tmp_path: Path) -> None:
    tool = load(tmp_path, "frontmatter_full")["calculate"]
    ctx = FakeToolContext.recording(tmp_path)
    result = tool.invoke({"equation": "6*7"}, ctx)
    assert result.content == "42"
    assert result.events == [
        {
            "type": "citation",
            "data": {
                "source": {"name": "TOOL:calculate"},
                "document": ["42"],
                "metadata": [{"source": "TOOL:calculate", "parameters": {"equation": "6*7"}}],
            },
        }
    ]
    assert ctx.emitted == result.events


def test_citation_off_adds_none(tmp_path: Path) -> None:
    tool = load(tmp_path, "async_methods")["slow_echo"]
    result = tool.invoke({"text": "hi", "delay_ms": 1}, FakeToolContext(tmp_path))
    assert [e["type"] for e in result.events] == ["status", "message", "status"]


def test_a_raising_method_raises_to_the_call_path(tmp_path: Path) -> None:
    source = "class Tools:\n    def boom(self) -> str:\n        raise KeyError('k')\n"
    with pytest.raises(KeyError):
        load(tmp_path, "boom", source)["boom"].invoke({}, FakeToolContext(tmp_path))


def test_a_non_dict_event_is_refused(tmp_path: Path) -> None:
    source = (
        "class Tools:\n    async def bad(self, __event_emitter__=None) -> str:\n"
        '        """Bad."""\n        await __event_emitter__("status")\n        return ""\n'
    )
    with pytest.raises(TypeError, match="__event_emitter__ takes a dict"):
        load(tmp_path, "bad", source)["bad"].invoke({}, FakeToolContext(tmp_path))


def test_the_tool_describes_itself_for_the_call_path(tmp_path: Path) -> None:
    tool = load(tmp_path, "string_reverse", timeout_ms=500, enabled=False)["reverse_string"]
    assert (tool.kind, tool.isolation, tool.timeout_ms, tool.enabled) == (
        "openwebui_tools",
        "thread",
        500,
        False,
    )
    assert tool.path == tmp_path / "tools" / "string_reverse.py"


def test_close_forgets_the_toolkits_module(tmp_path: Path) -> None:
    tool = load(tmp_path, "string_reverse")["reverse_string"]
    name = tool.toolkit.module.__name__
    assert name in sys.modules
    tool.close()
    assert name not in sys.modules


EXITS = """
import sys


class Tools:
    def quit_sync(self) -> str:
        sys.exit(2)

    async def quit_async(self) -> str:
        sys.exit("bye")
"""


def test_a_method_calling_exit_fails_the_call_and_not_the_host(tmp_path: Path) -> None:
    tools = load(tmp_path, "exits", EXITS)
    ctx = FakeToolContext(tmp_path)
    with pytest.raises(RuntimeError, match=r"the tool called exit\(2\)"):
        tools["quit_sync"].invoke({}, ctx)
    with pytest.raises(RuntimeError, match=r"the tool called exit\('bye'\)"):
        tools["quit_async"].invoke({}, ctx)
    with pytest.raises(RuntimeError, match=r"the tool called exit\(2\)"):
        asyncio.run(tools["quit_sync"].ainvoke({}, ctx))
