"""Static checks of a hook's script: mistakes that pass compilation and fail every call.

Each check reads the script without running it (JavaScript with the tree-sitter parser the
sandbox already uses, Python with ``ast``) and reports a ``Finding`` with its line, column and
a "did you mean" where a close name exists:

- a JavaScript global that the sandbox does not define (``require``, ``process``, ``fetch``,
  ``setTimeout``...), read or written outside ``typeof``, and ``Math.random`` (it throws);
- an ``on_<name>`` function whose name is not a point (it would never be called);
- a field a point's event does not have, read from a handler's first parameter
  (``event.args`` at ``tool_call``, where the field is ``input``; in Python also
  ``event["args"]``, ``event.get("args")``, ``"args" in event``, and ``event.input``, which
  fails on a dict).

Every finding is an error: each names something that cannot work when the code runs. The
checks are conservative: a name declared anywhere in the script counts as declared, so a
finding is never about a name the script defines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.errors import did_you_mean
from engine.points import EVENTS, Point, suggest

JS_GLOBALS = frozenset(
    [
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "AsyncDisposableStack",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DOMException",
        "DataView",
        "Date",
        "DisposableStack",
        "Error",
        "EvalError",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        "InternalError",
        "Iterator",
        "JSON",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "String",
        "SuppressedError",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakSet",
        "atob",
        "btoa",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "undefined",
        "unescape",
    ]
)
"""The globals of a JavaScript script's context (tests/sandbox checks them against a real one),
plus ``arguments``, which every function has."""

_JS_HINTS = {
    "require": "scripts cannot load modules: what they may use is a global or on host",
    "module": "scripts cannot export: define on_<point> functions at the top level",
    "exports": "scripts cannot export: define on_<point> functions at the top level",
    "process": "there is no process object: read settings from host.config",
    "fetch": "scripts have no network access",
    "XMLHttpRequest": "scripts have no network access",
    "setTimeout": "scripts have no timers: a call runs to completion",
    "setInterval": "scripts have no timers: a call runs to completion",
    "setImmediate": "scripts have no timers: a call runs to completion",
    "clearTimeout": "scripts have no timers: a call runs to completion",
    "performance": "scripts have no clock: host.now() (or Date) gives the call's time",
    "crypto": "scripts have no randomness: decide from the event (e.g. event.call_id)",
    "window": "there is no window: the frozen globals are on globalThis",
    "global": "there is no global: the frozen globals are on globalThis",
    "self": "there is no self: the frozen globals are on globalThis",
    "eval": "code from strings is not allowed",
    "Buffer": "there is no Buffer: work on strings",
    "Intl": "there is no Intl: format numbers and dates yourself",
    "structuredClone": "copy plain data with JSON.parse(JSON.stringify(value))",
}
_REFUSED_MEMBERS = {
    ("Math", "random"): (
        "Math.random() throws in the sandbox: scripts must decide the same way on replay",
        "derive variation from the event (e.g. event.call_id) or keep a counter in host.state",
    ),
}
_OBJECT_METHODS = frozenset(
    [
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
    ]
)
_DICT_METHODS = frozenset(name for name in dir(dict) if not name.startswith("_"))
_BINDING_PARENTS = {
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "function",
    "generator_function",
    "class_declaration",
    "class",
    "variable_declarator",
}
_PATTERNS = {"object_pattern", "array_pattern", "formal_parameters", "rest_pattern"}


@dataclass(frozen=True)
class Finding:
    """One problem found in a script, at its own line and column (both 1-based)."""

    line: int
    column: int
    field: str
    """What the problem is about, in the author's terms (``console``, ``event.args``)."""
    message: str
    hint: str | None = None


def check_script(source: str, language: str) -> list[Finding]:
    """Every finding in ``source`` (``language``: python or javascript), in source order.

    A script that does not parse gives none: its syntax error is what compiling reports.
    """
    found = _check_python(source) if language == "python" else _check_js(source)
    return sorted(found, key=lambda f: (f.line, f.column))


def event_fields(point: Point) -> list[str]:
    """The fields of ``point``'s event, as a script sees them."""
    return list(EVENTS[point].model_fields)


def _point(name: str) -> Point | None:
    try:
        return Point(name[3:]) if name.startswith("on_") else None
    except ValueError:
        return None


def _unknown_handler(name: str, line: int, column: int) -> Finding:
    points = [f"on_{p.value}" for p in Point]
    close = suggest(name, points)
    hint = f"did you mean {close!r}?" if close else f"points: {', '.join(points)}"
    message = f"{name} is not a point, so it is never called"
    return Finding(line, column, name, message, hint)


def _unknown_field(param: str, name: str, point: Point, line: int, column: int) -> Finding:
    fields = event_fields(point)
    close = did_you_mean(name, fields)
    elsewhere = [p.value for p in Point if name in event_fields(p)]
    if close:
        hint = f"did you mean {param}.{close}?"
    elif elsewhere:
        hint = f"{name} is a field of {', '.join(elsewhere)}; {point.value} has {', '.join(fields)}"
    else:
        hint = f"its fields: {', '.join(fields)}"
    message = f"{point.value} events have no field {name!r}"
    return Finding(line, column, f"{param}.{name}", message, hint)


# -- JavaScript ----------------------------------------------------------------------------


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "surrogatepass"))


def _at(node: Any) -> tuple[int, int]:
    row, column = node.start_point
    return row + 1, column + 1


def _check_js(source: str) -> list[Finding]:
    from engine.sandbox.jsscope import parser

    root = parser().parse(source.encode("utf-8", "surrogatepass")).root_node
    if root.has_error:
        return []
    bindings = _js_bindings(root)
    declared = {_text(n) for n in bindings}
    found = list(_js_globals(root, {id(n) for n in bindings}, declared))
    found += _js_members(root)
    for node, name, param in _js_handlers(root):
        line, column = _at(node)
        point = _point(name)
        if point is None:
            found.append(_unknown_handler(name, line, column))
        elif param is not None:
            found += _js_fields(node, param, point)
    return found


def _walk(node: Any) -> Iterator[Any]:
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(reversed(n.children))


def _js_bindings(root: Any) -> list[Any]:
    """Every identifier node that declares a name, anywhere in the script."""
    out: list[Any] = []
    for node in _walk(root):
        if node.type in _BINDING_PARENTS:
            name = node.child_by_field_name("name")
            if name is not None:
                out += _pattern_names(name)
        if node.type == "formal_parameters":
            out += _pattern_names(node)
        elif node.type in ("arrow_function", "catch_clause"):
            out += _pattern_names(node.child_by_field_name("parameter"))
        elif node.type == "for_in_statement":  # for (const x of ...), for (k in ...)
            out += _pattern_names(node.child_by_field_name("left"))
    return out


def _pattern_names(node: Any) -> list[Any]:
    """The identifiers a binding pattern declares, in source order. A loop, not recursion:
    a pattern nested thousands deep must not end the check in a RecursionError."""
    out: list[Any] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if n is None:
            continue
        if n.type in ("identifier", "shorthand_property_identifier_pattern"):
            out.append(n)
        elif n.type in _PATTERNS:
            todo.extend(reversed(n.named_children))
        elif n.type == "pair_pattern":
            todo.append(n.child_by_field_name("value"))
        elif n.type in ("assignment_pattern", "object_assignment_pattern"):
            todo.append(n.child_by_field_name("left"))
    return out


def _js_globals(root: Any, binding_ids: set[int], declared: set[str]) -> Iterator[Finding]:
    known = JS_GLOBALS | declared | {"arguments"}
    for node in _walk(root):
        if node.type not in ("identifier", "shorthand_property_identifier"):
            continue
        name = _text(node)
        if name in known or id(node) in binding_ids or _under_typeof(node):
            continue
        line, column = _at(node)
        hint = _JS_HINTS.get(name)
        if hint is None:
            close = suggest(name, sorted(known))
            hint = f"did you mean {close!r}?" if close else None
        message = f"{name} is not defined in the sandbox (a ReferenceError when this runs)"
        yield Finding(line, column, name, message, hint)


def _under_typeof(node: Any) -> bool:
    parent = node.parent
    return (
        parent is not None
        and parent.type == "unary_expression"
        and _text(parent.child_by_field_name("operator")) == "typeof"
    )


def _js_members(root: Any) -> Iterator[Finding]:
    for node in _walk(root):
        if node.type != "member_expression":
            continue
        obj, prop = node.child_by_field_name("object"), node.child_by_field_name("property")
        if obj is None or prop is None:
            continue
        refused = _REFUSED_MEMBERS.get((_text(obj), _text(prop)))
        if refused is not None:
            line, column = _at(node)
            yield Finding(line, column, f"{_text(obj)}.{_text(prop)}", *refused)


def _js_handlers(root: Any) -> Iterator[tuple[Any, str, str | None]]:
    """Top-level ``on_*`` functions: (node, name, first parameter's name or None)."""
    for node in root.named_children:
        if node.type in ("function_declaration", "generator_function_declaration"):
            pairs = [(node, node.child_by_field_name("name"))]
        elif node.type == "lexical_declaration" or node.type == "variable_declaration":
            pairs = [
                (d.child_by_field_name("value"), d.child_by_field_name("name"))
                for d in node.named_children
                if d.type == "variable_declarator"
            ]
        else:
            continue
        for fn, name in pairs:
            if fn is None or name is None or not _text(name).startswith("on_"):
                continue
            yield fn, _text(name), _first_param(fn)


def _first_param(fn: Any) -> str | None:
    single = fn.child_by_field_name("parameter")
    if single is not None and single.type == "identifier":
        return _text(single)
    params = fn.child_by_field_name("parameters")
    first = params.named_children[0] if params is not None and params.named_children else None
    return _text(first) if first is not None and first.type == "identifier" else None


def _js_fields(fn: Any, param: str, point: Point) -> Iterator[Finding]:
    fields = set(event_fields(point)) | _OBJECT_METHODS
    for node in _walk(fn):
        if node.type == "member_expression":
            key = node.child_by_field_name("property")
            name = _text(key) if key is not None and key.type == "property_identifier" else None
        elif node.type == "subscript_expression":
            key = node.child_by_field_name("index")
            name = _js_string(key)
        else:
            continue
        obj = node.child_by_field_name("object")
        if name is None or obj is None or obj.type != "identifier" or _text(obj) != param:
            continue
        if name not in fields:
            yield _unknown_field(param, name, point, *_at(key))


def _js_string(node: Any) -> str | None:
    if node is None or node.type != "string":
        return None
    parts = [c for c in node.named_children if c.type == "string_fragment"]
    return _text(parts[0]) if len(parts) == 1 else ("" if not parts else None)


# -- Python --------------------------------------------------------------------------------


def _check_python(source: str) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[Finding] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not node.name.startswith("on_"):
            continue
        point = _point(node.name)
        if point is None:
            found.append(_unknown_handler(node.name, node.lineno, node.col_offset + 1))
        elif node.args.args:
            found += _py_fields(node, node.args.args[0].arg, point)
    return found


def _py_fields(fn: ast.AST, param: str, point: Point) -> Iterator[Finding]:
    fields = set(event_fields(point))
    for node in ast.walk(fn):
        name, at = _py_key(node, param)
        if name is None or at is None:
            continue
        line, column = at.lineno, at.col_offset + 1
        if isinstance(node, ast.Attribute):
            if name in _DICT_METHODS:
                continue
            if name in fields:
                yield Finding(
                    line,
                    column,
                    f"{param}.{name}",
                    f"the event is a dict: {param}.{name} raises AttributeError",
                    f"write {param}[{name!r}]",
                )
                continue
        if name not in fields:
            yield _unknown_field(param, name, point, line, column)


def _py_key(node: ast.AST, param: str) -> tuple[str | None, ast.expr | None]:
    """The field name ``node`` reads from the event parameter, and the node naming it."""

    def is_event(value: ast.AST) -> bool:
        return isinstance(value, ast.Name) and value.id == param

    if isinstance(node, ast.Subscript) and is_event(node.value):
        return _py_str(node.slice), node.slice
    if isinstance(node, ast.Attribute) and is_event(node.value):
        return node.attr, node
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and is_event(node.func.value)
        and node.args
    ):
        return _py_str(node.args[0]), node.args[0]
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and is_event(node.comparators[0])
    ):
        return _py_str(node.left), node.left
    return None, None


def _py_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


__all__ = ["JS_GLOBALS", "Finding", "check_script", "event_fields"]
