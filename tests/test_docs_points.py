"""docs/points.md tells the truth: each point's signature, event fields and examples.

Every point's JavaScript and Python examples are loaded as script hooks of one agent per
language, and the page's host calls run against each, asserting what the page says.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.points import ACCEPTED, EVENTS, Point
from engine.runtime import Agent, Engine
from tests.conftest import REPO

PAGE = (REPO / "docs" / "points.md").read_text()
BASE_FIELDS = {"agent", "point", "scope", "time", "turn_id"}
LANGUAGES = {"javascript": "js", "python": "python"}


def section(point: Point) -> str:
    return PAGE.split(f"\n## {point.value}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def script_of(point: Point, language: str) -> str:
    found = [
        block
        for block in code_blocks(section(point), LANGUAGES[language])
        if f"on_{point.value}(" in block
    ]
    assert len(found) == 1, f"{point.value}: one {language} example, found {len(found)}"
    return found[0]


def host_call_of(point: Point) -> str:
    found = [b for b in code_blocks(section(point), "python") if "agent." in b]
    assert len(found) == 1, f"{point.value}: one host call example, found {len(found)}"
    return found[0]


def signature_text(point: Point) -> str:
    """The method's signature as the page writes it (annotations as in the source)."""
    parts, keyword_only = [], False
    for param in list(inspect.signature(getattr(Agent, point.value)).parameters.values())[1:]:
        if param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
            continue
        if param.kind is param.KEYWORD_ONLY and not keyword_only:
            parts.append("*")
            keyword_only = True
        text = f"{param.name}: {param.annotation}"
        if param.default is not param.empty:
            text += f" = {param.default!r}"
        parts.append(text)
    return f"agent.{point.value}({', '.join(parts)}) -> Outcome"


@pytest.mark.parametrize("point", list(Point))
def test_each_point_states_its_python_signature(point: Point) -> None:
    assert f"`{signature_text(point)}`" in section(point)


@pytest.mark.parametrize("point", list(Point))
def test_each_point_lists_exactly_its_event_fields(point: Point) -> None:
    listed = set(re.findall(r"^\| `(\w+)` \|", section(point), flags=re.M))
    fields = set(EVENTS[point].model_fields)
    assert fields - BASE_FIELDS <= listed, f"{point.value}: undocumented event fields"
    assert listed <= fields, f"{point.value}: documents fields the event does not have"


def write_agent(root: Path, language: str) -> Path:
    """A config folder whose agent `shop` has every point's example in `language`."""
    hooks = root / "config/agents/shop/hooks"
    hooks.mkdir(parents=True)
    (root / "config/engine.yaml").write_text(f"db_path: {root / 'records.db'}\n")
    names = []
    for point in Point:
        source = textwrap.indent(script_of(point, language), "  ")
        (hooks / f"{point.value}.yaml").write_text(
            f"kind: script_hook\nname: {point.value}\nlanguage: {language}\nsource: |\n{source}"
        )
        names.append(f"  - hooks/{point.value}.yaml\n")
    (root / "config/agents/shop/agent.yaml").write_text("hook_files:\n" + "".join(names))
    return root / "config"


@pytest.fixture(scope="module", params=list(LANGUAGES))
def shop(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Agent]:
    config = write_agent(tmp_path_factory.mktemp(request.param), request.param)
    with Engine.load(config) as engine:
        yield engine.agent("shop")


@pytest.mark.parametrize("point", list(Point))
def test_each_points_examples_run_and_decide_as_the_page_says(shop: Agent, point: Point) -> None:
    names: dict[str, Any] = {"agent": shop}
    exec(compile(host_call_of(point), f"points.md#{point.value}", "exec"), names)
    out = names.get("out") or names["d"]
    assert not out.failed, out.hooks
    assert any(run.name == point.value and run.status == "decided" for run in out.hooks)


def test_the_two_languages_decide_alike(tmp_path: Path) -> None:
    decisions = {}
    for language in LANGUAGES:
        with Engine.load(write_agent(tmp_path / language, language)) as engine:
            shop = engine.agent("shop")
            outcomes = [
                shop.tool_call("search", {"q": "x"}, user_id="u2"),
                shop.tool_call("delete_file", {}, user_id="u2"),
                shop.tool_result("t", {}, {"not": "text"}, user_id="u2"),
                shop.before_assistant_message("q", "help@example.com", user_id="u2"),
                shop.before_user_message("PASSWORD: x", user_id="u2"),
            ]
            decisions[language] = [out.decision() for out in outcomes]
    assert decisions["javascript"] == decisions["python"]
    assert decisions["python"][1]["blocked"] and decisions["python"][4]["blocked"]


SCRIPTING = (REPO / "docs" / "scripting.md").read_text()


def test_scripting_md_opens_with_the_authors_reference() -> None:
    headings = re.findall(r"^## (.+)$", SCRIPTING, flags=re.M)
    reference = ["Event fields per point", "Functions", "Host API, side by side"]
    assert headings[:3] == reference and "Limits and their defaults" in headings[:5]
    assert "Errors" in headings[:6]


def test_measurements_live_in_internals_md_not_in_the_reference() -> None:
    internals = (REPO / "docs" / "internals.md").read_text()
    assert "bench/" not in SCRIPTING and "µs" not in SCRIPTING
    for moved in ("## Performance", "## Isolation model", "## Fresh state on every call"):
        assert f"\n{moved}\n" in internals, moved


@pytest.mark.parametrize("point", list(Point))
def test_scripting_md_lists_each_points_event_fields_and_changes(point: Point) -> None:
    row = re.search(rf"^\| `{point.value}` \| (.*) \| (.*) \|$", SCRIPTING, flags=re.M)
    assert row, f"scripting.md has no row for {point.value}"
    fields = set(re.findall(r"`(\w+)`", row.group(1)))
    assert fields | {"turn_id"} == (set(EVENTS[point].model_fields) - BASE_FIELDS) | {"turn_id"}
    assert set(re.findall(r"`(\w+)`", row.group(2))) == ACCEPTED[point]
