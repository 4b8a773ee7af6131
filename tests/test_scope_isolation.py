"""One user's, session's or agent's data never reaches another's, on SQLite and PostgreSQL:
the FAQ cache does not share an answer to a message that told something about its user, a
records query by a bare id reads that id's records only, forgetting a user erases what every
hook kept for them, and an empty session id lists no other session's approvals; and what the
docs say is shared (memory across agents on one store, the process scope of anonymous
events) is pinned."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import EventError
from engine.runtime import Agent, Engine
from tests import backends

db_url = backends.db_url

Build = Callable[..., Engine]


@pytest.fixture
def build(tmp_path: Path, db_url: str) -> Iterator[Build]:
    """``build(agents)``: an engine over ``{agent: {hook: spec}}`` (each spec a mapping
    written as the hook's YAML), every store on this test's backend."""
    engines: list[Engine] = []

    def make(agents: dict[str, dict[str, dict[str, Any]]]) -> Engine:
        root = tmp_path / f"config{len(engines)}"
        root.mkdir()
        (root / "engine.yaml").write_text("process: proc\n", encoding="utf-8")
        for agent, hooks in agents.items():
            folder = root / "agents" / agent / "hooks"
            folder.mkdir(parents=True)
            names = ", ".join(hooks)
            (folder.parent / "agent.yaml").write_text(f"hooks: [{names}]\n", encoding="utf-8")
            for name, spec in hooks.items():
                text = json.dumps({"name": name, **spec})
                (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
        engine = Engine.load(root, db=db_url)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def turn(agent: Agent, question: str, answer: str, **scope: Any) -> str:
    """One whole turn; returns the answer the user got (the cache's when it answered)."""
    first = agent.before_user_message(question, **scope)
    said = first.answer if first.answer is not None else answer
    agent.after_turn(question, said, turn_id=first.turn_id, **scope)
    return said


STATUS = ("My name is Alex. What is my account status?", "Alex, your account is suspended.")


# -- the FAQ cache and messages that tell something about their user ---------------------------


def test_a_shared_faq_cache_does_not_learn_an_answer_to_a_message_about_its_user(
    build: Build,
) -> None:
    agent = build({"a": {"faq": {"kind": "faq_cache"}}}).agent("a")
    turn(agent, *STATUS, user_id="alex")
    out = agent.before_user_message("What is my account status?", user_id="bob")
    assert out.answer is None  # bob is not told alex's status
    done = agent.after_turn(*STATUS, user_id="alex")
    (line,) = [line for h in done.hooks for line in h.logs]
    assert line.startswith("not stored: the answer may use per-user context")
    assert "scope: user would keep it for this user" in line


def test_with_scope_user_an_answer_to_a_message_about_its_user_is_kept_for_that_user(
    build: Build,
) -> None:
    agent = build({"a": {"faq": {"kind": "faq_cache", "scope": "user"}}}).agent("a")
    turn(agent, *STATUS, user_id="alex")
    assert agent.before_user_message("What is my account status?", user_id="bob").answer is None
    mine = agent.before_user_message("What is my account status?", user_id="alex")
    assert mine.answer == STATUS[1]


def test_a_question_that_tells_nothing_about_its_user_is_still_shared(build: Build) -> None:
    agent = build({"a": {"faq": {"kind": "faq_cache"}}}).agent("a")
    asked = ("When does the Berlin store open?", "The Berlin store opens at nine.")
    turn(agent, *asked, user_id="alex")
    assert agent.before_user_message(asked[0], user_id="bob").answer == asked[1]


# -- records by a bare id ------------------------------------------------------------------------

COUNTER = {
    "kind": "script_hook",
    "language": "python",
    "source": "def on_tool_call(event, host):\n"
    "    n = (host.state.get('n') or 0) + 1\n"
    "    host.state.set('n', n)\n"
    "    return {'notice': str(n)}\n",
}


def test_records_of_a_bare_id_are_that_ids_only(build: Build) -> None:
    engine = build({"a": {"count": COUNTER}})
    agent = engine.agent("a")
    for user in ("alex", "bob:alex", "ALEX", "alfx", "alex "):
        agent.tool_call("t", {}, user_id=user)
    agent.tool_call("t", {}, session_id="alex")
    engine.flush()

    def keys(scope: str) -> list[str]:
        return sorted(r.scope_key for r in engine.records(scope=scope))

    assert keys("alex") == ["session:alex", "user:alex"]
    assert keys("ALEX") == ["user:ALEX"]
    assert keys("al_x") == []  # no wildcards: _ and % are characters of an id
    assert keys("%") == []
    assert keys("alex ") == ["user:alex "]
    assert keys("user:bob:alex") == ["user:bob:alex"]


# -- forgetting a user ---------------------------------------------------------------------------

KEEPER = {
    "kind": "script_hook",
    "language": "python",
    "source": "def on_after_turn(event, host):\n"
    "    host.state.set('last', event['question'])\n"
    "    return None\n\n"
    "def on_tool_call(event, host):\n"
    "    return {'notice': str(host.state.get('last'))}\n",
}


def test_forgetting_a_user_erases_their_script_state_and_their_own_faq_answers(
    build: Build,
) -> None:
    engine = build({"a": {"faq": {"kind": "faq_cache", "scope": "user"}, "keep": KEEPER}})
    agent = engine.agent("a")
    for user in ("alex", "bob"):
        turn(agent, *STATUS, user_id=user)
    shared = ("When does the Berlin store open?", "The Berlin store opens at nine.")
    turn(agent, *shared, user_id="alex")
    assert agent.tool_call("t", {}, user_id="alex").notices == [shared[0]]

    assert engine.store.memory_forget("user:alex") >= 2
    assert agent.tool_call("t", {}, user_id="alex").notices == ["None"]
    assert agent.before_user_message(STATUS[0], user_id="alex").answer is None
    # bob's state and his own answer, and the answer learned for everyone, stay
    assert agent.tool_call("t", {}, user_id="bob").notices == [STATUS[0]]
    assert agent.before_user_message(STATUS[0], user_id="bob").answer == STATUS[1]
    assert agent.before_user_message(shared[0], user_id="carol").answer == shared[1]
    # ...without naming who taught it
    import sqlalchemy as sa

    from engine.store.schema import faq_table

    with engine.store.engine.connect() as conn:
        keys = {row.scope_key for row in conn.execute(sa.select(faq_table.c.scope_key))}
    assert keys == {"user:bob", "forgotten"}


def test_forgetting_a_user_does_not_touch_an_id_that_ends_like_theirs(build: Build) -> None:
    engine = build({"a": {"faq": {"kind": "faq_cache", "scope": "user"}, "keep": KEEPER}})
    agent = engine.agent("a")
    other = "mallory@user:alex"  # an id holding the separator of the FAQ's per-user namespace
    turn(agent, *STATUS, user_id=other)
    engine.store.memory_forget("user:alex")
    assert agent.before_user_message(STATUS[0], user_id=other).answer == STATUS[1]
    assert agent.tool_call("t", {}, user_id=other).notices == [STATUS[0]]


def test_delete_over_http_reaches_a_faq_cache_kept_in_its_own_file(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from engine.http import create_app
    from tests.conftest import write

    root = write(
        tmp_path / "config",
        {
            "engine.yaml": "process: proc\nhttp: {token_env: TEST_SCOPE_ADMIN}\n",
            "agents/a/agent.yaml": "hooks: [faq]\n",
            "agents/a/hooks/faq.yaml": "kind: faq_cache\nname: faq\nscope: user\n"
            "db_path: data/faq.db\n",
        },
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TEST_SCOPE_ADMIN", "admin-token")
        engine = Engine.load(root)
        try:
            agent = engine.agent("a")
            turn(agent, *STATUS, user_id="alex")
            client = TestClient(create_app(engine))
            gone = client.delete(
                "/v1/memory/user:alex", headers={"Authorization": "Bearer admin-token"}
            )
            assert gone.status_code == 200 and gone.json()["deleted"] == 1
            assert agent.before_user_message(STATUS[0], user_id="alex").answer is None
        finally:
            engine.close()


# -- approvals of an empty session ---------------------------------------------------------------

ASK = {"kind": "approval", "tools": ["pay"], "message": "Pay {{input.amount}}?"}


@pytest.mark.parametrize("given", [{"session_id": ""}, {"user_id": ""}])
def test_an_empty_id_lists_no_other_sessions_approvals(build: Build, given: dict[str, str]) -> None:
    agent = build({"a": {"ask": ASK}}).agent("a")
    agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s-alex", user_id="alex")
    agent.tool_call("pay", {"amount": 7}, call_id="c2", session_id="s-bob", user_id="bob")
    assert [a.message for a in agent.approvals(session_id="s-bob")] == ["Pay 7?"]
    with pytest.raises(EventError) as refused:
        agent.approvals(**given)
    (name,) = given
    assert refused.value.errors == [{"loc": [name], "msg": "must be non-empty text"}]


def test_the_approvals_route_refuses_an_empty_session_id(build: Build) -> None:
    from fastapi.testclient import TestClient

    from engine.http import create_app

    engine = build({"a": {"ask": ASK}})
    agent = engine.agent("a")
    agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s-alex", user_id="alex")
    client = TestClient(create_app(engine, no_auth=True))
    for query in ("session_id=", "user_id="):
        response = client.get(f"/v1/approvals?agent=a&{query}")
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["loc"] == ["query", query.rstrip("=")]
    listed = client.get("/v1/approvals?agent=a&session_id=s-alex")
    assert [a["message"] for a in listed.json()] == ["Pay 5?"]


def test_forgetting_a_user_deletes_the_approvals_asked_in_their_sessions(build: Build) -> None:
    """An approval asked in a session is kept under the session (``session:<id>``), but the
    tool input it holds is the user's: forgetting the user deletes it too."""
    engine = build({"a": {"ask": ASK}})
    agent = engine.agent("a")
    agent.tool_call("pay", {"amount": 5}, call_id="c1", session_id="s-alex", user_id="alex")
    agent.tool_call("pay", {"amount": 6}, call_id="c2", user_id="alex")  # no session
    agent.tool_call("pay", {"amount": 7}, call_id="c3", session_id="s-bob", user_id="bob")
    agent.tool_call("pay", {"amount": 8}, call_id="c4", session_id="s-x", user_id="alexander")
    assert engine.store.memory_forget("user:alex") == 2
    assert agent.approvals(session_id="s-alex") == [] and agent.approvals(user_id="alex") == []
    assert [a.message for a in agent.approvals()] == ["Pay 7?", "Pay 8?"]


# -- documented sharing: what is one scope ----------------------------------------------------


def test_memory_is_the_users_across_agents_sharing_a_store_state_and_faq_are_per_agent(
    build: Build,
) -> None:
    """docs/hooks.md (memory, Scope): memory is kept per scope key, so two agents whose
    memory hooks share a store know the same user; script state and FAQ pairs are kept per
    agent and hook."""
    engine = build(
        {
            name: {"mem": {"kind": "memory"}, "faq": {"kind": "faq_cache"}, "keep": KEEPER}
            for name in ("shop", "hr")
        }
    )
    shop, hr = engine.agent("shop"), engine.agent("hr")
    turn(shop, "I live in Berlin, thanks", "Noted, Berlin it is, have a nice day!", user_id="u1")
    recalled = hr.before_user_message("Where do I live?", user_id="u1").messages
    assert "Berlin" in recalled[0]["content"]
    assert hr.before_user_message("Where do I live?", user_id="u2").messages == []
    assert hr.tool_call("t", {}, user_id="u1").notices == ["None"]  # shop's state is shop's
    asked = ("When does the Berlin store open?", "The Berlin store opens at nine.")
    turn(shop, *asked, user_id="u1")
    assert hr.before_user_message(asked[0], user_id="u2").answer is None


def test_events_without_user_or_session_share_the_process_scope(build: Build) -> None:
    """docs/points.md: a host that names neither the user nor the session puts every such
    event in one scope (here ``process:proc``): what one anonymous visitor told memory is
    recalled for the next."""
    engine = build({"a": {"mem": {"kind": "memory"}, "keep": KEEPER}})
    agent = engine.agent("a")
    turn(agent, "I live in Berlin, thanks", "Noted, Berlin it is, have a nice day!")
    assert "Berlin" in agent.before_user_message("Where do I live?").messages[0]["content"]
    assert agent.tool_call("t", {}).notices == ["I live in Berlin, thanks"]
    assert agent.before_user_message("Where do I live?", session_id="s2").messages == []
    assert engine.store.state_load("a:keep", "process:proc") != {}


# -- long ids ------------------------------------------------------------------------------------


def test_long_agent_hook_and_user_ids_keep_and_forget_their_data(build: Build) -> None:
    """The FAQ's per-user namespace (agent, hook and user id) and a script's state key (agent
    and hook) are longer than 200 characters here: PostgreSQL keeps them as SQLite does, and
    forgetting the user still finds them."""
    from engine.points import ID_CAP

    name, faq, keep = "a" * 150, "f" * 100, "k" * 100
    engine = build({name: {faq: {"kind": "faq_cache", "scope": "user"}, keep: KEEPER}})
    agent = engine.agent(name)
    user, other = "u" * ID_CAP, "u" * (ID_CAP - 1) + "v"
    for who in (user, other):
        turn(agent, *STATUS, user_id=who)
    assert agent.before_user_message(STATUS[0], user_id=user).answer == STATUS[1]
    assert agent.tool_call("t", {}, user_id=user).notices == [STATUS[0]]
    assert engine.store.memory_forget(f"user:{user}") >= 2
    assert agent.before_user_message(STATUS[0], user_id=user).answer is None
    assert agent.tool_call("t", {}, user_id=user).notices == ["None"]
    assert agent.before_user_message(STATUS[0], user_id=other).answer == STATUS[1]
    assert agent.tool_call("t", {}, user_id=other).notices == [STATUS[0]]
