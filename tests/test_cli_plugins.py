"""pydantic's plugin lookup is skipped only when no package on the path declares a plugin."""

from __future__ import annotations

import importlib.machinery
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from engine.cli.plugins import LOADER, plugins_declared, skip_empty_plugin_lookup


def a_path(monkeypatch: pytest.MonkeyPatch, *entries: Path) -> None:
    """Look only at ``entries``, with the standard finder only."""
    monkeypatch.setattr(sys, "path", [str(e) for e in entries])
    monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder])


def a_package(where: Path, name: str, entry_points: str | None) -> None:
    info = where / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


def test_packages_without_a_pydantic_entry_point_declare_no_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_package(tmp_path, "tool", "[console_scripts]\ntool = tool:main\n")
    a_package(tmp_path, "bare", None)
    (tmp_path / "old.egg-info").write_text("Metadata-Version: 1.0\n")  # a PKG-INFO file
    a_path(monkeypatch, tmp_path, tmp_path / "missing")
    assert plugins_declared() is False


@pytest.mark.parametrize("header", ["[pydantic]", "  [ pydantic ]  "])
def test_a_declared_pydantic_plugin_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, header: str
) -> None:
    a_package(tmp_path / "a", "tool", "[console_scripts]\ntool = tool:main\n")
    a_package(tmp_path / "b", "Logfire", f"# plugins\n{header}\nlogfire = logfire:plugin\n")
    a_path(monkeypatch, tmp_path / "a", tmp_path / "b")
    assert plugins_declared() is True


def test_a_plugin_in_an_egg_folder_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "plug-1.0.egg" / "EGG-INFO"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text("[pydantic]\nplug = plug:plugin\n")
    a_path(monkeypatch, tmp_path / "plug-1.0.egg")
    assert plugins_declared() is True


def test_an_archive_on_the_path_leaves_the_answer_to_pydantic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "deps.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("plug-1.0.dist-info/entry_points.txt", "[pydantic]\nplug = plug:plugin\n")
    a_path(monkeypatch, archive)
    assert plugins_declared() is None


def test_another_finder_of_distributions_leaves_the_answer_to_pydantic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        def find_distributions(self, *_: Any) -> list[Any]:
            return []

    a_path(monkeypatch, tmp_path)
    monkeypatch.setattr(sys, "meta_path", [Finder(), importlib.machinery.PathFinder])
    assert plugins_declared() is None


def test_with_no_plugin_declared_pydantic_finds_none_without_looking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_path(monkeypatch, tmp_path)
    monkeypatch.delitem(sys.modules, LOADER, raising=False)
    assert skip_empty_plugin_lookup() is True
    from pydantic.plugin._loader import get_plugins

    assert list(get_plugins()) == []


def test_a_declared_plugin_leaves_pydantic_to_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_package(tmp_path, "plug", "[pydantic]\nplug = plug:plugin\n")
    a_path(monkeypatch, tmp_path)
    monkeypatch.delitem(sys.modules, LOADER, raising=False)
    assert skip_empty_plugin_lookup() is False
    assert LOADER not in sys.modules


def test_a_loader_already_imported_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pydantic.plugin._loader as real

    a_path(monkeypatch, tmp_path)
    assert skip_empty_plugin_lookup() is False
    assert sys.modules[LOADER] is real
