"""Read one YAML file into data plus the line of every key, so errors can name lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.errors import Problem

Loc = tuple[str | int, ...]


@dataclass
class YamlDoc:
    """A YAML file's data and where each key and list item starts."""

    path: Path
    data: Any
    text: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc`` or of its nearest enclosing key."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


def read_yaml(path: Path, shown: str) -> tuple[YamlDoc | None, list[Problem]]:
    """Parse ``path``; return the document, or None and the problems (``shown`` names it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(shown, None, None, "file not found")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(shown, None, None, f"cannot read file: {exc}")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        reason = exc.problem or exc.context or "invalid YAML"
        return None, [Problem(shown, line, None, f"YAML syntax error: {reason}", column=col)]
    except yaml.YAMLError as exc:
        return None, [Problem(shown, None, None, f"YAML error: {exc}")]
    if node is None:
        return None, [Problem(shown, 1, None, "the file is empty (expected a mapping of fields)")]
    if not isinstance(node, yaml.MappingNode):
        return None, [
            Problem(
                shown,
                node.start_mark.line + 1,
                None,
                f"expected a mapping of fields, got a {_node_kind(node)}",
            )
        ]
    doc = YamlDoc(path, yaml.safe_load(text), text)
    problems: list[Problem] = []
    _walk(node, (), doc.lines, problems, shown)
    return doc, problems


def _node_kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "list"
    return "scalar value"


def _walk(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], shown: str
) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                problems.append(
                    Problem(
                        shown,
                        key_node.start_mark.line + 1,
                        _dotted((*loc, key)),
                        "duplicate key (YAML keeps only the last one)",
                    )
                )
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), lines, problems, shown)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*loc, i)] = item.start_mark.line + 1
            _walk(item, (*loc, i), lines, problems, shown)


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


dotted = _dotted
