"""docs/tools.md tells the truth: every script_tool field is documented, and its example tool
(YAML, Python and JavaScript) runs as the page says."""

from __future__ import annotations

import re
from pathlib import Path

from engine import Engine
from engine.tools.script import ScriptToolConfig
from tests.conftest import REPO, write

TEXT = (REPO / "docs" / "tools.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, flags=re.S)


def test_every_script_tool_field_is_documented() -> None:
    section = TEXT.split("\n## script_tool\n", 1)[1].split("\n## ", 1)[0]
    for field in ScriptToolConfig.model_fields:
        assert f"| `{field}` |" in section, field


def test_every_kind_has_its_section() -> None:
    from engine.tools.kinds import LOADERS

    for kind in LOADERS:
        heading = "## TaskWeaver plugins" if kind is None else f"## {kind}"
        assert f"\n{heading}\n" in TEXT, kind


def test_the_example_tool_runs_in_both_languages(tmp_path: Path) -> None:
    (yaml_text,) = [b for b in blocks("yaml") if "word_count" in b]
    (python,) = [b for b in blocks("python") if b.startswith("# config/")]
    (javascript,) = blocks("javascript")
    for language, script, suffix in (("py", python, ".py"), ("js", javascript, ".js")):
        root = tmp_path / language / "config"
        write(
            root,
            {
                "agents/demo/agent.yaml": "tools: [word_count]\n",
                "agents/demo/tools/word_count.yaml": yaml_text.replace(".py", suffix),
                f"agents/demo/tools/word_count{suffix}": script,
            },
        )
        with Engine.load(root, db=str(tmp_path / f"{language}.db"), records=False) as engine:
            agent = engine.agent("demo")
            result = agent.call_tool("word_count", {"text": "one two three"}, session_id="s1")
            assert (result.content, result.data) == ("3 words", {"words": 3})
            (artifact,) = result.artifacts
            assert artifact["name"] == "text.txt" and artifact["type"] == "txt"
            assert agent.tool_specs("openai-chat")[0]["function"]["strict"] is True
