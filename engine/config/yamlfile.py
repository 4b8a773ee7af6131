"""Read one YAML file into data plus the line of every key, so errors can name lines.

Every config file is read the same bounded way, so no input crashes, hangs or balloons the
loader: the path must name a regular file (stat before open, so a FIFO or a device is never
opened; the opened file is checked again) of at most MAX_CONFIG_BYTES of UTF-8 text. The YAML is
composed from libyaml's events by our own loop, which refuses nesting past MAX_DEPTH (an alias
counted as the levels it stands for, so a chain of aliases cannot nest deeper either), an alias
inside its own anchor (a recursive alias), and more than MAX_VALUES values, each alias counted
as the values it stands for (so a "billion laughs" stops at its first alias past the budget).
Anything wrong is a Problem naming the file and, where one exists, the line.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

from engine.errors import Problem

Loc = tuple[str | int, ...]

MAX_CONFIG_BYTES = 256_000
"""The largest YAML config file read (engine.yaml, agent.yaml, hook and test files)."""
MAX_DEPTH = 64
"""The deepest nesting of lists and mappings a config file may have."""
MAX_VALUES = 10_000
"""The most values (scalars, lists, mappings) one file may hold, each alias counted as the
values it stands for; a config file holds tens to hundreds, and reading stays well under a
second at the limit."""
MAX_INT_DIGITS = 1_000
"""The longest integer read; Python refuses past 4,300 digits, config needs far fewer."""

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_INT_TAG = "tag:yaml.org,2002:int"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when built with it


class ConfigReadError(Exception):
    """One reason a config file cannot be used; ``line`` where the YAML names one."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


@dataclass
class YamlDoc:
    """A YAML file's data and where each key and list item starts."""

    path: Path
    data: Any
    text: str
    lines: dict[Loc, int] = field(default_factory=dict)
    scalars: dict[Loc, tuple[int, int, str | None]] = field(default_factory=dict)
    """Each text value's line (1-based), column (0-based) and style (``|``, ``>``, a quote or
    None for plain): where an inline script's text starts in the file."""

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc`` or of its nearest enclosing key."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


# -- reading a file ----------------------------------------------------------------------


def os_reason(exc: OSError) -> str:
    """An OSError in words a config author acts on (never a traceback)."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return "file not found"
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
    return f"cannot read file ({reason})"


def path_problem(path: Path) -> str | None:
    """Why ``path`` is not a file to read, in the words ``read_bytes`` uses (``file not
    found``, ``is a directory, not a regular file``); None when it is a regular file."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        return os_reason(exc) if isinstance(exc, OSError) else "file not found"
    if stat.S_ISREG(mode):
        return None
    return f"is {_KINDS.get(stat.S_IFMT(mode), 'a special file')}, not a regular file"


def _regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "a special file")
        raise ConfigReadError(f"is {kind}, not a regular file")


def _too_large(size: int, limit: int) -> ConfigReadError:
    return ConfigReadError(f"the file is larger than {limit} bytes ({size} bytes)")


def read_bytes(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``.

    Stat first (a FIFO, a device or a folder is never opened), open without blocking, check
    the opened file again (no swap in between) and read at most ``limit + 1`` bytes.

    Raises:
        ConfigReadError: not a regular file, larger than ``limit``, or unreadable.
    """
    try:
        if "\0" in str(path):
            raise ConfigReadError("the path contains a NUL character")
        _regular(os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigReadError(os_reason(exc)) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        _regular(info.st_mode)
        if info.st_size > limit:
            raise _too_large(info.st_size, limit)
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise ConfigReadError(os_reason(exc)) from None
    if len(data) > limit:
        raise _too_large(len(data), limit)
    return data


def read_text(path: Path, limit: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of a config file, read as ``read_bytes`` does.

    Raises:
        ConfigReadError: as ``read_bytes``, or the file is not UTF-8.
    """
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigReadError(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


# -- composing and constructing ----------------------------------------------------------


class _Composer:
    """Nodes from libyaml's event stream, with bounded depth and alias expansion.

    PyYAML's own composer recurses per level and lets an alias name the node still being
    built, so it cannot bound either; this loop keeps an explicit stack instead.
    """

    def __init__(self) -> None:
        self.anchors: dict[str, yaml.Node] = {}
        self.sizes: dict[int, int] = {}
        self.heights: dict[int, int] = {}
        """The levels of lists and mappings each collection holds, itself included."""
        self.values = 0
        self.open_anchors: set[str] = set()
        self.resolver = Resolver()

    def compose(self, text: str) -> yaml.Node | None:
        stack: list[tuple[yaml.Node, str | None]] = []
        root: yaml.Node | None = None
        documents = 0
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ConfigReadError(
                        "the file holds more than one YAML document (remove the '---')",
                        _line(event),
                    )
            node = self._node(event, stack)
            if node is None:
                continue
            if isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise ConfigReadError(f"nested more than {MAX_DEPTH} levels deep", _line(event))
                stack.append((node, event.anchor))
                if event.anchor:
                    self.open_anchors.add(event.anchor)
                continue
            root = self._attach(node, stack) or root
        return root

    def _node(self, event: yaml.Event, stack: list[tuple[yaml.Node, str | None]]) -> Any:
        if isinstance(event, yaml.AliasEvent):
            return self._alias(event, len(stack))
        if isinstance(event, yaml.ScalarEvent):
            return self._count(event, self._scalar(event))
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            return self._count(event, self._collection(event))
        if isinstance(event, yaml.CollectionEndEvent):
            node, anchor = stack.pop()
            node.end_mark = event.end_mark
            self.sizes[id(node)] = 1 + sum(self._size(n) for n in _children(node))
            self.heights[id(node)] = 1 + max(map(self._height, _children(node)), default=0)
            if anchor:
                self.open_anchors.discard(anchor)
                self.anchors[anchor] = node
            return node
        return None

    def _alias(self, event: yaml.AliasEvent, depth: int) -> yaml.Node:
        line = _line(event)
        name = event.anchor or ""
        if name in self.open_anchors:
            raise ConfigReadError(f"recursive alias *{name}: it refers to a node holding it", line)
        if name not in self.anchors:
            raise ConfigReadError(f"alias *{name} names no anchor defined before it", line)
        node = self.anchors[name]
        if depth + self._height(node) > MAX_DEPTH:
            raise ConfigReadError(
                f"nested more than {MAX_DEPTH} levels deep (at *{name}, counting the levels "
                "it stands for)",
                line,
            )
        self.values += self._size(node)
        if self.values > MAX_VALUES:
            raise ConfigReadError(
                f"aliases expand the file past {MAX_VALUES} values (at *{name}); "
                "write the values out or use fewer aliases",
                line,
            )
        return node

    def _scalar(self, event: yaml.ScalarEvent) -> yaml.ScalarNode:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _INT_TAG and len(event.value) > MAX_INT_DIGITS:
            raise ConfigReadError(f"an integer of more than {MAX_INT_DIGITS} digits", _line(event))
        start: Any = event.start_mark
        end: Any = event.end_mark
        node = yaml.ScalarNode(tag, event.value, start, end, event.style)
        self._anchor(event.anchor, node)
        return node

    def _collection(self, event: Any) -> yaml.Node:
        is_seq = isinstance(event, yaml.SequenceStartEvent)
        kind = yaml.SequenceNode if is_seq else yaml.MappingNode
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(kind, None, event.implicit)
        return kind(tag, [], event.start_mark, None, flow_style=event.flow_style)

    def _count(self, event: yaml.Event, node: yaml.Node) -> yaml.Node:
        self.values += 1
        if self.values > MAX_VALUES:
            raise ConfigReadError(
                f"the file holds more than {MAX_VALUES} values; a config file holds far fewer",
                _line(event),
            )
        return node

    def _anchor(self, anchor: str | None, node: yaml.Node) -> None:
        if anchor:
            self.sizes[id(node)] = 1
            self.anchors[anchor] = node

    def _size(self, node: yaml.Node) -> int:
        return self.sizes.get(id(node), 1)

    def _height(self, node: yaml.Node) -> int:
        return self.heights.get(id(node), 0)

    def _attach(self, node: yaml.Node, stack: list[tuple[yaml.Node, str | None]]) -> Any:
        if not stack:
            return node
        parent = stack[-1][0]
        if isinstance(parent, yaml.SequenceNode):
            parent.value.append(node)
        elif parent.value and parent.value[-1][1] is None:
            parent.value[-1] = (parent.value[-1][0], node)
        else:
            parent.value.append((node, None))
        return None


def _line(event: yaml.Event) -> int | None:
    return None if event.start_mark is None else event.start_mark.line + 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _Constructor(SafeConstructor):
    """SafeConstructor whose every error names the node's line (a bad date, a bad key)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except yaml.MarkedYAMLError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            line = node.start_mark.line + 1
            raise ConfigReadError(f"cannot read the value: {exc}", line) from None


def _construct(node: yaml.Node) -> Any:
    return _Constructor().construct_document(node)


def _marked(exc: yaml.MarkedYAMLError, text: str) -> ConfigReadError:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else None
    col = mark.column + 1 if mark else None
    reason = exc.problem or exc.context or "invalid YAML"
    if "nesting depth" in reason:  # libyaml's own limit (1000), met while it scans ahead
        return ConfigReadError(f"nested more than {MAX_DEPTH} levels deep", line, col)
    if isinstance(exc, ConstructorError):
        return ConfigReadError(f"YAML value not allowed: {reason}", line, col)
    said = _explained(exc, text)
    if said is not None:
        message, at = said
        return ConfigReadError(f"YAML syntax error: {message}", at.line + 1, at.column + 1)
    return ConfigReadError(f"YAML syntax error: {reason}", line, col)


def _explained(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, Any] | None:
    """The common YAML mistakes in words that say what to change, with the mark to show.

    libyaml names what its scanner met (``mapping values are not allowed in this context``);
    the author needs what they wrote wrong and how to write it.
    """
    mark, context = exc.problem_mark, exc.context_mark
    if mark is None:
        return None
    problem, lines = exc.problem or "", text.splitlines()
    row = lines[mark.line] if mark.line < len(lines) else ""
    char = row[mark.column] if mark.column < len(row) else ""
    if "tab" in problem or char == "\t" or "\t" in row[: len(row) - len(row.lstrip())]:
        return "a tab in the indentation: YAML indents with spaces only (replace it)", mark
    if "cannot start any token" in problem and char:
        return (
            f'a plain value cannot start with {char!r} (put the value in quotes: "{char}...")',
            mark,
        )
    if "mapping values are not allowed" in problem:
        if ": " in row[: mark.column]:
            return (
                "a second ': ' on one line: a value that holds ': ' must be quoted "
                '(key: "text: more")',
                mark,
            )
        return (
            "this line is indented under a key that already has a value (align it with the "
            "keys above, or end the key above with ':' and put its value on the lines below)",
            mark,
        )
    if "could not find expected ':'" in problem and context is not None:
        return (
            "a line that is not 'key: value' (add ': ' after the key, or indent the line as "
            "part of the value above)",
            context,
        )
    if "end of stream" in problem and "quoted" in (exc.context or "") and context is not None:
        return (
            "a quote opened here is never closed (close it on the same line, or write a long "
            "text as a block: 'key: |' with the text indented below)",
            context,
        )
    if "did not find expected key" in problem or "expected '-' indicator" in problem:
        return (
            "the indentation does not match the lines above: keys of one mapping start in "
            "the same column, and so do the '- ' of one list (indent with spaces, 2 per level)",
            mark,
        )
    if "expected ',' or '}'" in problem or "expected ',' or ']'" in problem:
        closing = "}" if "}" in problem else "]"
        opening = "{" if closing == "}" else "["
        message = (
            f"a '{closing}' is missing: the '{opening}' opened here is never closed (close it "
            f"after the last item, or write the items one per line below the key)"
        )
        return message, context or mark
    return None


def parse(text: str) -> tuple[yaml.Node | None, Any]:
    """The root node and data of a YAML text, bounded as the module says.

    Raises:
        ConfigReadError: the YAML is invalid, too deep, or its aliases expand too far.
    """
    try:
        node = _Composer().compose(text)
        return node, (None if node is None else _construct(node))
    except yaml.MarkedYAMLError as exc:
        raise _marked(exc, text) from None
    except yaml.reader.ReaderError as exc:  # a control character: the reader has no mark
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"YAML error: control character U+{char:04X} is not allowed"
        raise ConfigReadError(message, line) from None
    except yaml.YAMLError as exc:
        raise ConfigReadError(f"YAML error: {exc}") from None
    except RecursionError:
        raise ConfigReadError(f"nested more than {MAX_DEPTH} levels deep") from None


def load_loose(path: Path) -> Any:
    """The data of a YAML file read as ``read_yaml`` does, or None if it cannot be used."""
    try:
        return parse(read_text(path))[1]
    except ConfigReadError:
        return None


def read_yaml(path: Path, shown: str) -> tuple[YamlDoc | None, list[Problem]]:
    """Parse ``path``; return the document, or None and the problems (``shown`` names it)."""
    try:
        text = read_text(path)
    except ConfigReadError as exc:
        return None, [Problem(shown, exc.line, None, exc.message, column=exc.column)]
    try:
        node, data = parse(text)
    except ConfigReadError as exc:
        key = _key_on(text, exc.line) if exc.message.startswith("YAML syntax error") else None
        return None, [Problem(shown, exc.line, key, exc.message, column=exc.column)]
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
    doc = YamlDoc(path, data, text)
    problems: list[Problem] = []
    _walk(node, (), doc.lines, problems, shown)
    doc.scalars = _scalars(node)
    return doc, problems


_KEY = re.compile(r"^[\s-]*([A-Za-z_][\w-]*)\s*:")


def _key_on(text: str, line: int | None) -> str | None:
    """The key a YAML syntax error at ``line`` (1-based) is about, in the author's words: the
    key written on that line, else the key of the nearest less indented line above it."""
    lines = text.splitlines()
    if line is None or not 0 < line <= len(lines):
        return None
    indent = _indent(lines[line - 1])
    for row in reversed(lines[:line]):
        found = _KEY.match(row)
        if found and (row is lines[line - 1] or _indent(row) < indent):
            return found.group(1)
    return None


def _indent(row: str) -> int:
    return len(row) - len(row.lstrip())


def _node_kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "list"
    return "scalar value"


def _walk(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], shown: str
) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, str] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            read = _read_key(key_node)
            if read in seen:
                same = "" if seen[read] == key else f": {key!r} is {seen[read]!r} to YAML"
                problems.append(
                    Problem(
                        shown,
                        key_node.start_mark.line + 1,
                        _dotted((*loc, key)),
                        f"duplicate key{same} (YAML keeps only the last one)",
                    )
                )
            seen.setdefault(read, key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), lines, problems, shown)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*loc, i)] = item.start_mark.line + 1
            _walk(item, (*loc, i), lines, problems, shown)


_SCALARS = yaml.constructor.SafeConstructor()
_TEXT_TAG = "tag:yaml.org,2002:str"


def _read_key(node: yaml.Node) -> Any:
    """A mapping key as YAML reads it, so that keys it reads alike are caught as duplicates
    (``yes``, ``on`` and ``true`` are one key, and to Python ``1`` too; ``1`` and ``0x1`` are
    one); any other key by its text."""
    make = _SCALARS.yaml_constructors.get(node.tag)
    if isinstance(node, yaml.ScalarNode) and make is not None and node.tag != _TEXT_TAG:
        try:
            return make(_SCALARS, node)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            pass
    return node.value


def _scalars(root: yaml.Node) -> dict[Loc, tuple[int, int, str | None]]:
    """Where each top-level text value starts (an inline ``source:`` is one)."""
    found: dict[Loc, tuple[int, int, str | None]] = {}
    if isinstance(root, yaml.MappingNode):
        for key_node, value_node in root.value:
            if isinstance(value_node, yaml.ScalarNode) and isinstance(key_node.value, str):
                mark = value_node.start_mark
                found[(key_node.value,)] = (mark.line + 1, mark.column, value_node.style)
    return found


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


dotted = _dotted
