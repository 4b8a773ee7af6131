"""Which JavaScript scripts may run their top level once per context, and how (host side).

A script's top level normally runs again on every call (docs/scripting.md, "Fresh state on every
call"). For a script whose top level is only declarations (``const``, ``let`` and ``var``, one
plain name each) and function declarations,
the worker can instead run it once per prepared context and hand every call frozen plain copies
of the constants (prelude.js ``keep``), while the functions are still made anew each call. This
module decides, with a real parser, whether a script qualifies and writes the per-call body.

What calls share is then frozen plain data that the worker itself copied, whatever the top level
did; that is what keeps calls apart. The rules here keep the script's *meaning*: a call that
writes to a kept constant gets a TypeError where the fresh top level would have let it write,
and the worker then runs that call again with a fresh top level (and every later call). That
works only if the error reaches the worker, so a script that could swallow it (``try``,
``async``, promises) or look at frozenness (``Object.isFrozen``, ``Reflect``, ``Proxy``...) keeps
only primitive constants (strings, numbers...), which nothing can write to. Names count in code
and in strings (a string can become a computed key), not in comments.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TOP_LEVEL_KINDS = {"comment", "empty_statement", "function_declaration"}
_GENERATOR = "generator_function_declaration"
_SWALLOWS = {"try_statement", "await_expression", "async", "using_declaration", "import"}
"""Nodes that can catch an error before it leaves the call, defer it to a promise, or wrap it
in another (disposal)."""
_NAMED = {
    "identifier",
    "property_identifier",
    "shorthand_property_identifier",
    "shorthand_property_identifier_pattern",
    "string_fragment",
}
"""Nodes whose text is a name or may become one (a string used as a computed key)."""
_OBSERVES = re.compile(
    r"\b(?:Proxy|Reflect|globalThis|Promise|AsyncDisposableStack|DisposableStack|fromAsync"
    r"|isFrozen|isSealed|isExtensible|getOwnPropertyDescriptors?|dispose|asyncDispose)\b"
)
"""Names through which a call could catch an error, reach a promise, wrap an error in another
(disposal), or tell a frozen object from a fresh one."""
_PARAM = "__heKept"
_DECLARES = re.compile(r"\bconst\b|^(?:let|var)\b", re.MULTILINE)
"""A script the parser is worth importing for (a one-shot's start-up): one with a ``const``, or
a ``let``/``var`` at the start of a line (where top-level ones are written; one indented at top
level only leaves that top level running on every call)."""
_KEYWORDS = {"const", "let", "var"}


def context_capacity(scripts: int, *, cap: int) -> tuple[int, str | None]:
    """How many prepared contexts a worker should keep for ``scripts`` loaded JavaScript
    scripts, and a warning when ``cap`` (``scripts.max_contexts``) is below that.

    Args:
        scripts: distinct JavaScript script keys loaded (each hook of each agent has its own).
        cap: the operator's ``scripts.max_contexts``.

    Returns:
        The capacity to send to workers, and None or a message for the log.
    """
    if scripts <= cap:
        return max(scripts, 1), None
    return cap, (
        f"{scripts} JavaScript script hooks are loaded but scripts.max_contexts is {cap}: "
        f"with more than {cap} of them in rotation, calls will prepare their context on their "
        "own time (milliseconds each, and at tight timeouts spurious 'did not finish' "
        "failures); raise scripts.max_contexts (each context costs worker memory)"
    )


@lru_cache(maxsize=32)
def top_level_plan(source: str) -> dict[str, Any] | None:
    """The plan for running ``source``'s top level once per context, or None (every call).

    A ``let`` or ``var`` qualifies as a ``const`` does: the per-call body declares it again,
    bound to the kept copy of its value, so a call that assigns to it changes only its own
    binding (the body runs anew every call). Values are taken once the whole top level has
    run, and the body only binds names (it runs no code), so a name declared twice, or one a
    later initializer changed through a function, ends each call's top level where the fresh
    top level would have left it.

    Returns:
        ``{"names": [...], "param": str, "body": str, "objects": bool}``: the top-level
        declared names, in order (a ``var`` declared twice is listed twice); the name the
        per-call body gets their kept copies under; the source with each top-level declaration
        replaced by bindings to those copies, under its own keyword (lines kept, so error
        positions stay the same); and whether the copies may be objects
        (False for a script that could swallow or observe a write to a frozen object).
        Cached by source for the last 32 sources (a file under many owners is parsed once per
        load); do not mutate it.
    """
    if not _DECLARES.search(source):
        return None  # no constants to keep; and no parser to import (a one-shot's start-up)
    data = source.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data)
    root = tree.root_node
    if root.has_error:
        return None
    consts: list[tuple[int, int, str, list[str]]] = []
    for node in root.named_children:
        if node.type in ("lexical_declaration", "variable_declaration"):
            declared = _declared_names(node)
            if declared is None:
                return None
            consts.append((node.start_byte, node.end_byte, *declared))
        elif not _harmless_statement(node):
            return None
    if not consts:
        return None
    names_eval, observes = _scan(root)
    if names_eval:
        return None
    param = _PARAM
    while param in source:
        param += "_"
    names = [n for _, _, _, group in consts for n in group]
    return {
        "names": names,
        "param": param,
        "body": _body(data, consts, param),
        "objects": not observes,
    }


def _harmless_statement(node: Any) -> bool:
    """A top-level statement that creates nothing a call could share: a function declaration
    (made anew per call), a directive, a comment, an empty statement."""
    if node.type in _TOP_LEVEL_KINDS or node.type == _GENERATOR:
        return not any(c.type == "async" for c in node.children)
    if node.type == "expression_statement":
        inner = node.named_children
        return len(inner) == 1 and inner[0].type == "string"
    return False


def _declared_names(node: Any) -> tuple[str, list[str]] | None:
    """The keyword and the names a top-level ``const``/``let``/``var a = ..., b;`` declares;
    None for destructuring, or a ``const`` declarator without a value (not JavaScript)."""
    keyword = node.children[0].type
    if keyword not in _KEYWORDS:
        return None
    names = []
    for decl in node.named_children:
        if decl.type == "comment":
            continue
        name = decl.child_by_field_name("name")
        if decl.type != "variable_declarator" or name is None or name.type != "identifier":
            return None
        if keyword == "const" and decl.child_by_field_name("value") is None:
            return None
        names.append(name.text.decode("utf-8", "surrogatepass"))
    return (keyword, names) if names else None


def _scan(root: Any) -> tuple[bool, bool]:
    """Whether the script names ``eval`` (code, not comments), and whether anything in it can
    swallow an error or observe frozenness (``_SWALLOWS``, ``_OBSERVES``)."""
    names_eval = observes = False
    todo = [root]
    while todo:
        node = todo.pop()
        if node.type in _SWALLOWS:
            observes = True
        elif node.type in _NAMED:
            text = node.text.decode("utf-8", "surrogatepass")
            names_eval = names_eval or (node.type == "identifier" and text == "eval")
            observes = observes or bool(_OBSERVES.search(text))
        todo.extend(node.children)
    return names_eval, observes


def _body(data: bytes, consts: list[tuple[int, int, str, list[str]]], param: str) -> str:
    """The source with each declaration bound to the kept copies, newlines kept."""
    out, at, index = [], 0, 0
    for start, end, keyword, names in consts:
        binds = ", ".join(f"{n} = {param}[{index + i}]" for i, n in enumerate(names))
        index += len(names)
        out.append(data[at:start])
        out.append(_blank_over(f"{keyword} {binds};".encode(), data[start:end]))
        at = end
    out.append(data[at:])
    return b"".join(out).decode("utf-8", "surrogatepass")


def _blank_over(replacement: bytes, original: bytes) -> bytes:
    """``replacement`` padded to ``original``'s lines: same newlines, and the same columns on
    its last line when the replacement fits on the first."""
    blank = bytes(b if b in b"\r\n" else 0x20 for b in original)
    first = blank.find(b"\n")
    first = len(blank) if first < 0 else first
    if first >= len(replacement):
        return replacement + blank[len(replacement) :]
    return replacement + blank


@lru_cache(maxsize=1)
def _parser() -> Any:
    # Imported here: only loading a JavaScript script needs the parser (cold start).
    import tree_sitter
    import tree_sitter_javascript

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))


def parser() -> Any:
    """The tree-sitter JavaScript parser (made once); static checks read scripts with it."""
    return _parser()
