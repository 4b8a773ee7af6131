"""Isolation as a host meets it (Engine.load + agent calls): no canary crosses users, agents or
hooks through any carry channel, and a time limit the script swallowed still fails the call."""

# ruff: noqa: E501 - tables of scripts read best one per line

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.errors import ConfigError, ScriptCompileError, ScriptLimitError
from engine.kinds.script_hook import ScriptHook
from engine.runtime import Engine
from engine.sandbox import Language, Limits, WorkerPool
from tests.conftest import write

CARRIER_JS = r"""
// Tries every carry channel: plants this call's canary in each, then reports any other canary.
var me = null, self = this;
try { me = arguments.callee; } catch (e) {}
var sym = Symbol.for('he-carry');
var gen = (function* () { var kept = null; while (true) { var v = yield kept; if (v !== undefined) { kept = v; } } })();
gen.next();
var places = [
  [function () { return me.stash; }, function (v) { me.stash = v; }],
  [function () { return me.prototype.stash; }, function (v) { me.prototype.stash = v; }],
  [function () { return self.stash; }, function (v) { self.stash = v; }],
  [function () { return globalThis.stash; }, function (v) { globalThis.stash = v; }],
  [function () { return ({}).stash; }, function (v) { Object.prototype.stash = v; }],
  [function () { return ({})[sym]; }, function (v) { Object.prototype[sym] = v; }],
  [function () { return Symbol.for('he-carry').stash; }, function (v) { Object.defineProperty(Symbol.prototype, 'stash', {value: v}); }],
  [function () { return (function () {}).stash; }, function (v) { Function.prototype.stash = v; }],
  [function () { return [].values().stash; }, function (v) { Iterator.prototype.stash = v; }],
  [function () { return Math.stash; }, function (v) { Math.stash = v; }],
  [function () { return JSON.stash; }, function (v) { JSON.stash = v; }],
  [function () { return new DisposableStack().stash; }, function (v) { DisposableStack.prototype.stash = v; }],
  [function () { return ({}).stack; }, function (v) { var o = {stack: v}; Error.captureStackTrace(Object.prototype); Object.prototype.stack = o.stack; }],
  [function () { return RegExp.$1 || RegExp.lastMatch; }, function (v) { new RegExp('(' + v + ')').exec(v); }],
  [function () { return gen.next().value; }, function (v) { gen.next(v); }],
  [function () { return pending.stash; }, function (v) { pending.stash = v; }],
  [function () { return on_tool_call.stash; }, function (v) { on_tool_call.stash = v; }],
  [function () { return on_tool_call.caller.stash; }, function (v) { on_tool_call.caller.stash = v; }]
];
var pending = (async function () {})();
var hostPlaces = [
  [function (h) { return h.stash; }, function (h, v) { h.stash = v; }],
  [function (h) { return h.log.stash; }, function (h, v) { h.log.stash = v; }],
  [function (h) { return h.state.stash; }, function (h, v) { h.state.stash = v; }],
  [function (h) { return h.config.stash; }, function (h, v) { h.config.stash = v; }]
];
function secretsIn(v, own) {
  var found = [], text = typeof v === 'string' ? v : '';
  var m = text.match(/(canary|key)-[A-Za-z0-9-]+/g) || [];
  for (var i = 0; i < m.length; i++) { if (m[i] !== own) { found.push(m[i]); } }
  return found;
}
function on_tool_call(event, host) {
  var own = event.input.canary, seen = [], i;
  for (i = 0; i < places.length; i++) { try { seen = seen.concat(secretsIn(places[i][0](), own)); } catch (e) {} }
  for (i = 0; i < hostPlaces.length; i++) { try { seen = seen.concat(secretsIn(hostPlaces[i][0](host), own)); } catch (e) {} }
  try { seen = seen.concat(secretsIn(JSON.stringify(host.config), own).filter(function (s) { return s !== host.config.api_key; })); } catch (e) {}
  for (i = 0; i < places.length; i++) { try { places[i][1](own); } catch (e) {} }
  for (i = 0; i < hostPlaces.length; i++) { try { hostPlaces[i][1](host, own); } catch (e) {} }
  if (typeof host.config.api_key === 'string') {
    for (i = 0; i < places.length; i++) { try { places[i][1](host.config.api_key); } catch (e) {} }
  }
  if (event.input.job) { Promise.resolve().then(function () { places[0][1](own); }); }
  host.match('(' + own + ')+', own);
  return {notice: JSON.stringify({own: own, seen: seen})};
}
"""


def hook_yaml(name: str, config: dict[str, str]) -> str:
    return f"kind: script_hook\nname: {name}\nscript: ../../../scripts/carrier.js\nconfig: {json.dumps(config)}\n"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("isolation") / "config"
    write(
        root,
        {
            "engine.yaml": "process: test\nscripts: {timeout_ms: 200, workers: 1}\n",
            "scripts/carrier.js": CARRIER_JS,
            "agents/users/agent.yaml": "hooks: [carrier]\n",
            "agents/users/hooks/carrier.yaml": hook_yaml("carrier", {}),
            "agents/alpha/agent.yaml": "hooks: [carrier]\n",
            "agents/alpha/hooks/carrier.yaml": hook_yaml("carrier", {"api_key": "key-alpha-7f3a"}),
            "agents/beta/agent.yaml": "hooks: [carrier]\n",
            "agents/beta/hooks/carrier.yaml": hook_yaml("carrier", {"api_key": "key-beta-91c2"}),
            "agents/pair/agent.yaml": "hooks: [first, second]\n",
            "agents/pair/hooks/first.yaml": hook_yaml("first", {"api_key": "key-first-0d1e"}),
            "agents/pair/hooks/second.yaml": hook_yaml("second", {"api_key": "key-second-5b6c"}),
        },
    )
    # One worker: every call of every agent and hook lands in the same process.
    with Engine.load(root, db=str(root.parent / "store.db")) as eng:
        yield eng


def reports(notices: list[str]) -> list[dict[str, object]]:
    return [json.loads(n) for n in notices]


def test_two_users_alternating_1000_calls_never_see_each_others_canary(engine: Engine) -> None:
    agent = engine.agent("users")
    for i in range(1000):
        user = f"u{i % 2}"
        canary = f"canary-{user}-{i}"
        # every 50th call also leaves a promise job behind (its context is then replaced)
        out = agent.tool_call("lookup", {"canary": canary, "job": i % 50 == 0}, user_id=user)
        assert not out.blocked, out.reason
        (report,) = reports(out.notices)
        assert report == {"own": canary, "seen": []}, f"call {i}"


def test_two_agents_with_the_same_script_never_read_each_others_config(engine: Engine) -> None:
    for i in range(100):
        for name in ("alpha", "beta"):
            out = engine.agent(name).tool_call("lookup", {"canary": f"canary-{name}-{i}"})
            (report,) = reports(out.notices)
            assert report == {"own": f"canary-{name}-{i}", "seen": []}, (name, i)


def test_two_hooks_of_one_agent_with_the_same_script_never_read_each_others_config(
    engine: Engine,
) -> None:
    for i in range(100):
        out = engine.agent("pair").tool_call("lookup", {"canary": f"canary-pair-{i}"})
        assert reports(out.notices) == [{"own": f"canary-pair-{i}", "seen": []}] * 2


def script_hook(engine: Engine, agent: str, name: str) -> ScriptHook:
    (hook,) = [s.hook for s in engine.agent(agent).pipeline.slots if s.hook.name == name]
    assert isinstance(hook, ScriptHook)
    return hook


def test_prepared_contexts_are_keyed_per_agent_and_hook(engine: Engine) -> None:
    hooks = [
        script_hook(engine, "alpha", "carrier"),
        script_hook(engine, "beta", "carrier"),
        script_hook(engine, "pair", "first"),
        script_hook(engine, "pair", "second"),
    ]
    assert len({h.script.source for h in hooks}) == 1
    keys = {
        h._script_of(agent).key
        for h, agent in zip(hooks, ["alpha", "beta", "pair", "pair"], strict=True)
    }
    assert len(keys) == 4
    # a host-layer hook serves every agent: still one key per agent
    assert hooks[0]._script_of("alpha").key != hooks[0]._script_of("beta").key
    assert hooks[0]._script_of("alpha") is hooks[0]._script_of("alpha")
    # an agent's own hook loads straight into that agent's key (its load context is used)
    assert hooks[0].script is hooks[0]._script_of("alpha")
    # owned_by keys from the content, whatever key the script had
    content = hooks[0].script.owned_by("x")
    assert content.owned_by("y").key == hooks[1].script.owned_by("y").key
    assert content.key != hooks[0].script.key


# -- class 8: an interrupt is final ---------------------------------------------------------

SWALLOWERS: dict[str, dict[str, str]] = {
    "try_catch_around_a_loop": {
        "js": "try { while (true) {} } catch (e) {} return {swallowed: true};",
        "py": "try:\n        while True:\n            pass\n    except Exception:\n        pass\n    return {'swallowed': True}",
    },
    "finally_returns": {
        "js": "try { while (true) {} } finally { return {swallowed: true}; }",
        "py": "try:\n        while True:\n            pass\n    finally:\n        return {'swallowed': True}",
    },
    "generator_return_runs_finally": {
        "js": "function* g() { try { yield 1; } finally { while (true) {} } } var it = g(); it.next(); try { it.return(); } catch (e) {} return {swallowed: true};",
        "py": "def g():\n        try:\n            yield 1\n        finally:\n            while True:\n                pass\n    it = g()\n    next(it)\n    try:\n        it.close()\n    except Exception:\n        pass\n    return {'swallowed': True}",
    },
    "async_disposable_stack_dispose_async": {
        "js": "var s = new AsyncDisposableStack(); s.defer(function () { while (true) {} }); s.disposeAsync(); return {swallowed: true};",
    },
    "disposable_stack_dispose": {
        "js": "var s = new DisposableStack(); s.defer(function () { while (true) {} }); try { s.dispose(); } catch (e) {} return {swallowed: true};",
    },
    "promise_executor": {
        "js": "new Promise(function () { while (true) {} }); return {swallowed: true};",
    },
    "async_function_body": {
        "js": "(async function () { while (true) {} })().catch(function () {}); return {swallowed: true};",
    },
    "promise_then_chain": {
        "js": "Promise.resolve().then(function () { while (true) {} }).catch(function () {}); return {swallowed: true};",
    },
    "async_generator_next": {
        "js": "async function* g() { while (true) {} } g().next(); return {swallowed: true};",
    },
    "iterator_helper_catch": {
        "js": "try { Iterator.from({next: function () { while (true) {} }}).toArray(); } catch (e) {} return {swallowed: true};",
    },
    "promise_all_of_thenables": {
        "js": "Promise.all([{then: function () { while (true) {} }}]); return {swallowed: true};",
    },
}


def handler(lang: str, code: str) -> str:
    if lang == "py":
        return f"def on_tool_call(event, host):\n    {code}\n"
    return f"function on_tool_call(event, host) {{\n  {code}\n}}\n"


CASES = [(name, lang) for name, by_lang in SWALLOWERS.items() for lang in sorted(by_lang)]


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(size=1, limits=Limits(timeout_ms=60, compile_timeout_ms=300)) as p:
        yield p


@pytest.mark.parametrize(("name", "lang"), CASES)
def test_a_swallowed_interrupt_still_fails_the_call_as_a_timeout(
    pool: WorkerPool, name: str, lang: str
) -> None:
    language = Language.PYTHON if lang == "py" else Language.JAVASCRIPT
    source = handler(lang, SWALLOWERS[name][lang])
    script = pool.compile(source, filename=f"{name}.{lang}", language=language)
    with pytest.raises(ScriptLimitError) as caught:
        pool.call(script, "on_tool_call", {}, config={}, state={})
    assert caught.value.cause == "timeout"


@pytest.mark.parametrize("lang", ["js", "py"])
def test_a_swallowed_interrupt_at_load_is_a_load_error(pool: WorkerPool, lang: str) -> None:
    top = {
        "js": "new Promise(function () { while (true) {} });\n",
        "py": "try:\n    while True:\n        pass\nexcept Exception:\n    pass\n",
    }[lang]
    language = Language.PYTHON if lang == "py" else Language.JAVASCRIPT
    source = top + handler(lang, "return None" if lang == "py" else "return null;")
    with pytest.raises(ScriptCompileError, match=r"time limit|did not finish"):
        pool.compile(source, filename=f"load.{lang}", language=language)


def test_a_swallowed_interrupt_blocks_the_tool_through_the_engine(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    code = SWALLOWERS["async_disposable_stack_dispose_async"]["js"].replace(
        "{swallowed: true}", "null"
    )
    root = project(
        {
            "engine.yaml": "process: test\nscripts: {timeout_ms: 60, workers: 1}\n",
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": "kind: script_hook\nname: guard\nlanguage: javascript\nsource: |\n"
            + textwrap.indent(handler("js", code), "  "),
        }
    )
    out = load(root).agent("a").tool_call("delete_file", {"path": "x"}, user_id="u1")
    assert out.blocked
    (run,) = out.hooks
    assert run.status == "failed" and run.cause == "timeout"


def test_a_sloppy_mode_script_fails_to_load_naming_its_line(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine]
) -> None:
    root = project(
        {
            "agents/a/agent.yaml": "hooks: [guard]\n",
            "agents/a/hooks/guard.yaml": "kind: script_hook\nname: guard\nscript: guard.js\n",
            "agents/a/hooks/guard.js": "var o = {x: 1};\nfunction on_tool_call(event, host) {\n  with (o) { return null; }\n}\n",
        }
    )
    with pytest.raises(ConfigError) as caught:
        load(root)
    text = str(caught.value)
    assert "guard.js:3" in text and "strict mode" in text, text


# -- class 2 (pattern cache): what one agent's calls compiled never reaches another's ------------

FILLER = {
    "py": "def on_tool_call(event, host):\n    ps = ['[a-z]{1,900}' + str(i) + '[0-9]{1,900}' for i in range(event['input']['from'], event['input']['from'] + 32)]\n    host.redact('x', ps)\n    return None\n",
    "js": "function on_tool_call(event, host) {\n  var ps = [];\n  for (var i = event.input.from; i < event.input.from + 32; i++) { ps.push('[a-z]{1,900}' + i + '[0-9]{1,900}'); }\n  host.redact('x', ps);\n  return null;\n}\n",
}
GUARD = {
    "py": "def on_tool_call(event, host):\n    if host.match('(?i)rm\\\\s+-rf', event['input']['cmd']):\n        return {'block': 'no rm -rf'}\n    return None\n",
    "js": "function on_tool_call(event, host) {\n  if (host.match('(?i)rm\\\\s+-rf', event.input.cmd)) { return {block: 'no rm -rf'}; }\n  return null;\n}\n",
}


@pytest.mark.parametrize("lang", ["py", "js"])
def test_one_agent_filling_the_pattern_cache_does_not_fail_another_agents_guard(
    project: Callable[[dict[str, str]], Path], load: Callable[..., Engine], lang: str
) -> None:
    language = "python" if lang == "py" else "javascript"

    def hook(name: str, source: str, memory_mb: int) -> str:
        return (
            f"kind: script_hook\nname: {name}\nlanguage: {language}\nmemory_mb: {memory_mb}\ntimeout_ms: 1000\nsource: |\n"
            + textwrap.indent(source, "  ")
        )

    root = project(
        {
            "engine.yaml": "process: test\nscripts: {workers: 1}\n",
            "agents/filler/agent.yaml": "hooks: [filler]\n",
            "agents/filler/hooks/filler.yaml": hook("filler", FILLER[lang], 128),
            "agents/guarded/agent.yaml": "hooks: [guard]\n",
            "agents/guarded/hooks/guard.yaml": hook("guard", GUARD[lang], 8),
        }
    )
    engine = load(root)
    for start in range(0, 256, 32):
        out = engine.agent("filler").tool_call("noop", {"from": start}, user_id="attacker")
        assert not out.blocked, out.reason
        blocked = engine.agent("guarded").tool_call("shell", {"cmd": "RM  -rf /"}, user_id="victim")
        assert blocked.blocked and blocked.reason == "no rm -rf", blocked.reason
        allowed = engine.agent("guarded").tool_call("shell", {"cmd": "ls"}, user_id="victim")
        assert not allowed.blocked, allowed.reason
