"""``hook_tool ... --live``: the memory example of the issue, with the judge and the memorizer
answered by an OpenAI-compatible server on loopback (a scripted one), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import hook_tool
from tests.conftest import write
from tests.llm_server import ScriptedLLM


def test_live_memory_turn_then_recall(
    tmp_path: Path,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LIVE_TEST_KEY", "sk-live-test")
    root = write(
        tmp_path / "config",
        {
            "engine.yaml": f"provider:\n  kind: openai\n  base_url: {llm.url}\n"
            "  model: small-model\n  api_key_env: LIVE_TEST_KEY\n",
            "hooks/memory.yaml": "kind: memory\nname: user_memory\nmin_confidence: 0.5\n",
        },
    )
    hook, db = str(root / "hooks/memory.yaml"), str(tmp_path / "live.db")
    llm.reply(
        {
            "facts": [
                {
                    "text": "Пользователь живёт в Берлине",
                    "importance": 0.9,
                    "keywords": ["живу", "Берлин", "где"],
                }
            ],
            "changes": [],
            "summary": "Алекс из Берлина.",
        }
    )
    code = hook_tool.main(
        [
            hook,
            "turn",
            "Меня зовут Алекс, я живу в Берлине",
            "Приятно познакомиться",
            "--user",
            "u1",
            "--db",
            db,
            "--live",
        ]
    )
    assert code == 0
    capsys.readouterr()
    llm.answer = lambda request: {"matches": [{"id": n, "confidence": 0.95} for n in range(1, 20)]}
    code = hook_tool.main(
        [hook, "user", "Где я живу?", "--user", "u1", "--db", db, "--live", "--json"]
    )
    out = json.loads(capsys.readouterr().out)["outcome"]
    assert code == 0
    assert "Пользователь живёт в Берлине" in out["messages"][0]["content"]
    assert len(llm.requests) == 2  # one memorizer call, one judge call: both went live
    assert all(h["Authorization"] == "Bearer sk-live-test" for h in llm.headers)
    assert llm.requests[1]["model"] == "small-model"
    assert "Где я живу?" in json.dumps(llm.requests[1], ensure_ascii=False)
    run = out["hooks"][0]
    assert run["extras"], "the judge's request and answer are recorded for replay"
