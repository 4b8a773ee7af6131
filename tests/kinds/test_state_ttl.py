"""host.state TTL through Engine.load and the point methods, in both languages: expiry follows
the event's time, expired keys free their place under max_state_keys, the record prune job
prunes state; and the rate_limit example survives a user's 65th session."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine import Engine
from engine.store.schema import state_table
from tests.conftest import REPO
from tests.kinds.test_script_hook import agent_files, inline_hook

LANGS = ("py", "js")
COUNTER = {
    "py": "def on_tool_call(event, host):\n    n = host.state.get('n') or 0\n"
    "    host.state.set('n', n + 1, ttl_s=60)\n    return {'notice': 'n=' + str(n)}\n",
    "js": "function on_tool_call(event, host) {\n  var n = host.state.get('n') || 0;\n"
    "  host.state.set('n', n + 1, {ttl_s: 60});\n  return {notice: 'n=' + n};\n}\n",
}
FILLER = {  # 'fill' sets 64 keys with a 10 s TTL; any other tool sets one more key, for good
    "py": "def on_tool_call(event, host):\n    if event['name'] == 'fill':\n"
    "        for i in range(64):\n            host.state.set('k' + str(i), i, ttl_s=10)\n"
    "    else:\n        host.state.set('extra', 1)\n    return None\n",
    "js": "function on_tool_call(event, host) {\n  if (event.name === 'fill') {\n"
    "    for (var i = 0; i < 64; i++) { host.state.set('k' + i, i, {ttl_s: 10}); }\n"
    "  } else { host.state.set('extra', 1); }\n  return null;\n}\n",
}
T0 = "2026-05-01T10:00:00+00:00"


def at(seconds: int) -> str:
    return f"2026-05-01T10:{seconds // 60:02d}:{seconds % 60:02d}+00:00"


@pytest.fixture
def engine(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], tmp_path: Path
) -> Engine:
    files: dict[str, str] = {"engine.yaml": "process: test\nretention: 1000\n"}
    for lang in LANGS:
        files |= agent_files(
            f"ttl_{lang}", {"counter": inline_hook("counter", lang, COUNTER[lang])}
        )
        files |= agent_files(f"fill_{lang}", {"filler": inline_hook("filler", lang, FILLER[lang])})
        script = f"../../../scripts/rate_limit.{lang}"
        files[f"agents/rl_{lang}/agent.yaml"] = "hooks: [rate_limit]\n"
        files[f"agents/rl_{lang}/hooks/rate_limit.yaml"] = (
            f"kind: script_hook\nname: rate_limit\nscript: {script}\n"
            "config: {tools: [shell], max_calls: 2, keep_sessions: 8, forget_after_s: 3600}\n"
        )
    root = project(files)
    shutil.copytree(REPO / "config" / "scripts", root / "scripts")
    return load(root)


@pytest.mark.parametrize("lang", LANGS)
def test_a_key_set_with_a_ttl_reads_as_null_once_the_event_time_passes_it(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"ttl_{lang}")

    def notice(time: str) -> str:
        return agent.tool_call("t", {}, user_id="u", time=time).notices[0]

    assert [notice(T0), notice(at(30)), notice(at(89))] == ["n=0", "n=1", "n=2"]
    assert notice(at(149)) == "n=0"  # 60 s after the last write: expired from that instant
    assert notice(at(208)) == "n=1"


@pytest.mark.parametrize("lang", LANGS)
def test_expired_keys_do_not_count_against_max_state_keys(engine: Engine, lang: str) -> None:
    agent = engine.agent(f"fill_{lang}")
    assert not agent.tool_call("fill", {}, user_id="u", time=T0).blocked
    full = agent.tool_call("more", {}, user_id="u", time=at(5))
    assert full.blocked and full.hooks[0].cause == "error"
    assert "more than 64 keys" in (full.hooks[0].error or "")
    assert not agent.tool_call("more", {}, user_id="u", time=at(11)).blocked


@pytest.mark.parametrize("lang", LANGS)
def test_the_rate_limit_example_still_works_in_a_users_65th_session(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"rl_{lang}")
    for n in range(1, 66):
        out = agent.tool_call("shell", {"command": "ls"}, user_id="many", session_id=f"s{n}")
        assert not out.blocked, (n, out.reason)
    again = [
        agent.tool_call("shell", {}, user_id="many", session_id="s65").blocked for _ in range(2)
    ]
    assert again == [False, True]  # the limit (2) still holds in the session
    assert not agent.tool_call("read", {}, user_id="many", session_id="s65").blocked
    with engine.store.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(
            sa.select(state_table.c.key, state_table.c.expires_at).where(
                state_table.c.scope == "user:many"
            )
        ).all()
    assert [row.key for row in rows] == ["sessions"] and rows[0].expires_at is not None


@pytest.mark.parametrize("lang", LANGS)
def test_the_rate_limit_example_forgets_an_idle_user_after_forget_after_s(
    engine: Engine, lang: str
) -> None:
    agent = engine.agent(f"rl_{lang}")
    calls = [
        agent.tool_call("shell", {}, user_id="idle", session_id="s", time=t).blocked
        for t in (T0, T0, at(60), "2026-05-01T10:59:59+00:00", "2026-05-01T11:00:00+00:00")
    ]
    assert calls == [False, False, True, True, False]


def test_the_record_prune_job_prunes_expired_and_out_of_window_state(engine: Engine) -> None:
    agent = engine.agent("ttl_py")
    # the keys live 60 s (event time); the prune job measures expiry by the wall clock
    agent.tool_call("t", {}, user_id="old", time="2099-01-01T00:00:00+00:00")
    agent.tool_call("t", {}, user_id="short", time="2020-01-01T00:00:00+00:00")  # long expired
    for n in range(5):
        agent.tool_call("t", {}, user_id="new", time=f"2099-06-01T00:00:0{n}+00:00")
    engine.flush()
    store = engine.store
    assert store.prune_records(3) == 4  # the job RecordWriter runs with engine.yaml retention
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        left = conn.execute(sa.select(state_table.c.scope)).scalars().all()
    assert left == ["user:new"]
