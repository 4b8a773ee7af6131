"""The Python script policy: RestrictedPython's transformer plus the engine's own rules."""

from __future__ import annotations

import ast
from typing import Any, TypeVar

from RestrictedPython.transformer import RestrictingNodeTransformer

FORBIDDEN_NAMES = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "type",
        "vars",
        "dir",
        "globals",
        "locals",
        "id",
        "hash",
        "printed",
        "breakpoint",
        "help",
        "memoryview",
        "object",
        "super",
        "classmethod",
        "staticmethod",
        "property",
        "iter",
        "exit",
        "quit",
        "license",
        "credits",
        "copyright",
        "callable",
        "issubclass",
        "repr",
        "ascii",
        "format",
        "bytearray",
        "bytes",
        "aiter",
        "anext",
    }
)
"""Built-ins a script may not even name: they reach interpreter internals, files or output."""

GUARDED_BINOPS: dict[type[ast.operator], str] = {
    ast.Mult: "*",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.Mod: "%",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.Sub: "-",
}
"""Operators that go through ``_binop_``: the first four can build huge values in one C call
(``%`` also prints reprs, which lose their addresses); the others build a set from a dict view,
whose elements are checked like any set's."""
SET_BINOPS = (ast.BitOr, ast.BitXor, ast.BitAnd, ast.Sub)
_ARITHMETIC = (ast.Add, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)

Problem = tuple[int | None, int | None, str]
KEY_TABLE = "_key_table_"
"""The global a folded dict table calls: its keys (a frozenset constant) to a read-only dict
with the same keys, one per worker (``guards.KeyTables``)."""


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


def copy_locations(new: Any, old: ast.AST) -> Any:
    """Give a node the engine made the position of the user's node it stands for."""
    ast.copy_location(new, old)
    ast.fix_missing_locations(new)
    return new


def _tick() -> ast.Expr:
    return ast.Expr(_call("_tick_"))


def _handler() -> ast.Expr:
    return ast.Expr(_call("_handler_"))


class ScriptPolicy(RestrictingNodeTransformer):
    """RestrictedPython's rules, every problem kept with its line and column, plus ours.

    Ours: no imports or classes at all (rejected here, not at call time); a ``_tick_()`` at
    the top of every loop body and function, and a ``_handler_()`` (a tick that also makes a
    real MemoryError final) at the top of every except handler and finally block, so neither a
    deadline nor running out of memory can be caught and ignored; size guards around ``*``
    ``**`` ``<<`` ``%`` and f-string padding; set displays and comprehensions built by
    ``_set_``, which refuses elements hashed by identity; starred unpacking marked so the
    unpack guard knows how much it may take.
    """

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[Problem] = []

    def error(self, node: ast.AST, info: str) -> None:
        super().error(node, info)
        col = getattr(node, "col_offset", None)
        self.problems.append(
            (getattr(node, "lineno", None), None if col is None else col + 1, info)
        )

    def visit_Import(self, node: ast.Import) -> Any:
        self.error(node, "imports are not allowed: scripts get everything through host")
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        self.error(node, "imports are not allowed: scripts get everything through host")
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        self.error(node, "class definitions are not allowed: use dicts and functions")
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        self.error(node, "async functions are not allowed")
        return node

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in FORBIDDEN_NAMES:
            self.error(node, f"{node.id!r} is not allowed in scripts")
            return node
        return super().visit_Name(node)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        # ``n - 1`` or ``(a + b) & c`` cannot involve a dict view: no guard call on such hot paths.
        numeric = isinstance(node.op, SET_BINOPS) and (
            _never_a_view(node.left) or _never_a_view(node.right)
        )
        node = self.node_contents_visit(node)
        symbol = GUARDED_BINOPS.get(type(node.op))
        if symbol is None or numeric:
            return node
        return copy_locations(_call("_binop_", ast.Constant(symbol), node.left, node.right), node)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.ctx, ast.Load):
            # The engine's ``_getitem_`` is ``operator.getitem``: Python's own subscript does the
            # same, without a call. Writes still go through ``_write_``.
            return self.node_contents_visit(node)
        return super().visit_Subscript(node)

    def visit_Set(self, node: ast.Set) -> Any:
        node = self.node_contents_visit(node)
        if all(_value_hashed_constant(elt) for elt in node.elts):
            # Nothing to check: Python builds it from a frozenset constant, at C speed (a deny
            # list of thousands of names in the top level costs microseconds per call).
            return node
        return copy_locations(_call("_set_", ast.List(elts=node.elts, ctx=ast.Load())), node)

    def visit_SetComp(self, node: ast.SetComp) -> Any:
        node = _same(node, super().visit_SetComp(node))
        items = ast.GeneratorExp(elt=node.elt, generators=node.generators)
        return copy_locations(_call("_set_", items), node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> Any:
        node = self.node_contents_visit(node)
        spec = node.format_spec if node.format_spec is not None else ast.Constant("")
        value = _call("_format_", node.value, spec, ast.Constant(node.conversion))
        return copy_locations(
            ast.FormattedValue(value=value, conversion=-1, format_spec=None), node
        )

    def visit_For(self, node: ast.For) -> Any:
        node = _same(node, super().visit_For(node))
        node.body.insert(0, copy_locations(_tick(), node))
        if _plain_iteration(node):
            # The tick at the top of the body bounds the loop, and Python's own unpacking reads
            # at most one item more than the target takes: the iteration guard adds nothing.
            node.iter = node.iter.args[0]  # type: ignore[attr-defined]
        return node

    def visit_comprehension(self, node: ast.comprehension) -> Any:
        node = _same(node, super().visit_comprehension(node))
        if _plain_iteration(node):
            # A tick as the first condition instead of a ticking iterator: the same bound, one
            # call per item instead of a generator step and a call.
            node.iter = node.iter.args[0]  # type: ignore[attr-defined]
            tick = copy_locations(ast.UnaryOp(ast.Not(), _call("_tick_")), node.iter)
            node.ifs.insert(0, tick)
        return node

    def visit_While(self, node: ast.While) -> Any:
        node = _same(node, super().visit_While(node))
        node.body.insert(0, copy_locations(_tick(), node))
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node = _same(node, super().visit_FunctionDef(node))
        node.body.insert(0, copy_locations(_tick(), node))
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        node = _same(node, super().visit_Lambda(node))
        node.body = copy_locations(ast.BoolOp(ast.Or(), [_call("_tick_"), node.body]), node.body)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        node = _same(node, super().visit_ExceptHandler(node))
        node.body.insert(0, copy_locations(_handler(), node))
        if node.type is not None:
            # The clause's expression runs while the exception is in flight, before the body:
            # one that raises (``except MemoryError``, a name scripts lack) would replace the
            # exception unseen. ``_handler_() or E`` sees it first (the handler returns None).
            node.type = copy_locations(
                ast.BoolOp(ast.Or(), [_call("_handler_"), node.type]), node.type
            )
        return node

    def visit_Try(self, node: ast.Try) -> Any:
        node = _same(node, super().visit_Try(node))
        if node.finalbody:
            node.finalbody.insert(0, copy_locations(_handler(), node))
        return node

    def gen_unpack_spec(self, tpl: ast.Tuple) -> ast.Dict:
        spec = super().gen_unpack_spec(tpl)
        starred = any(isinstance(elt, ast.Starred) for elt in tpl.elts)
        spec.keys.append(ast.Constant("star"))
        spec.values.append(ast.Constant(starred))
        return spec


def _value_hashed_constant(node: ast.expr) -> bool:
    """A literal whose hash comes from its value (``check_set`` would let it in)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
    return isinstance(node, ast.Constant) and type(node.value) in (str, int, float, bool, bytes)


def _plain_iteration(node: ast.For | ast.comprehension) -> bool:
    """The loop's iterable went into RestrictedPython's iteration guard, and the target has no
    starred name (which takes every item, so it keeps the guard's bounded unpacking)."""
    guard = node.iter
    return (
        isinstance(guard, ast.Call)
        and isinstance(guard.func, ast.Name)
        and guard.func.id in ("_getiter_", "_iter_unpack_sequence_")
        and not any(isinstance(n, ast.Starred) for n in ast.walk(node.target))
    )


def _never_a_view(node: ast.expr) -> bool:
    """A number literal, a sign, or an arithmetic result: never a dict view or a set."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, complex, bool)
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, ast.Not)
    return isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC)


_N = TypeVar("_N", bound=ast.AST)


def _same(node: _N, visited: object) -> _N:
    """The node RestrictedPython's visitor returned, which is ``node`` itself, transformed in place.

    Anything else would mean the visitor replaced or removed the node, and the tick this policy
    adds would go missing: refuse to compile rather than run an unguarded script.
    """
    if not isinstance(visited, type(node)):
        raise TypeError(
            f"the restricting transformer returned {type(visited).__name__} for a "
            f"{type(node).__name__} node"
        )
    return visited


def fold_constant_tables(tree: ast.Module) -> None:
    """Make module-level lookup tables compile-time constants, where no script can tell.

    A name bound once, at module level, to a list, set or dict display of literals, and otherwise
    only read as the right side of ``in``/``not in`` (a list: also as what a ``for`` loop or a
    comprehension iterates), is bound to a tuple or frozenset constant instead (a dict: the
    read-only dict of its keys, all that ``in`` reads of it, made once per worker from a
    frozenset constant, see ``KEY_TABLE``): the code object
    holds it, so a call does not build it again (a deny list of thousands of names cost tens of
    microseconds per call). Membership and iteration give the same answers for both types, the
    value never reaches script code any other way, and it is immutable, so calls still share
    nothing they could change. Any other use of the name (a write, ``global``, a parameter of
    that name, passing it on, a method call) leaves the display as it is.
    """
    tables = _table_candidates(tree)
    if not tables:
        return
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        for name in _bound_names(node):
            tables.pop(name, None)
        if isinstance(node, ast.Name) and node.id in tables:
            stmt, value = tables[node.id]
            if node is not stmt.targets[0] and not _reads_as_table(node, parents, value):
                del tables[node.id]
    for stmt, value in tables.values():
        table: ast.expr = ast.Constant(value)
        if isinstance(stmt.value, ast.Dict):
            # ``{'rm'} in table`` must raise for a set key as a dict does (a frozenset would
            # answer False): the keys come back as a read-only dict, made once per worker.
            table = _call(KEY_TABLE, table)
        stmt.value = copy_locations(table, stmt.value)


def _table_candidates(tree: ast.Module) -> dict[str, tuple[ast.Assign, Any]]:
    """Module-level ``NAME = [literals]`` / ``NAME = {literals}`` / ``NAME = {literal: literal}``,
    each name assigned once."""
    found: dict[str, tuple[ast.Assign, Any]] = {}
    twice: set[str] = set()
    shadowed = {
        name
        for node in ast.walk(tree)
        for name in (
            [node.id] if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) else []
        )
        + _bound_names(node)
    }
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if not isinstance(target, ast.Name):
            continue
        if target.id in found:
            twice.add(target.id)
        if isinstance(value, ast.List) and all(_literal(e) for e in value.elts):
            found[target.id] = (stmt, tuple(ast.literal_eval(e) for e in value.elts))
        elif isinstance(value, ast.Set) and all(_value_hashed_constant(e) for e in value.elts):
            found[target.id] = (stmt, frozenset(ast.literal_eval(e) for e in value.elts))
        elif (
            isinstance(value, ast.Dict)
            and all(k is not None and _value_hashed_constant(k) for k in value.keys)
            and all(_literal(v) for v in value.values)
        ):  # only ``in`` can read it (see _reads_as_table): its keys are all that shows
            found[target.id] = (stmt, frozenset(ast.literal_eval(k) for k in value.keys))  # type: ignore[arg-type]
        elif _set_of_literals(value, shadowed):
            items = value.args[0].elts  # type: ignore[attr-defined]
            found[target.id] = (stmt, frozenset(ast.literal_eval(e) for e in items))
    return {name: entry for name, entry in found.items() if name not in twice}


def _set_of_literals(value: ast.expr, shadowed: set[str]) -> bool:
    """``set([...])`` or ``frozenset({...})`` of literals, the built-in not rebound anywhere."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("set", "frozenset")
        and value.func.id not in shadowed
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], (ast.List, ast.Set, ast.Tuple))
        and all(_value_hashed_constant(e) for e in value.args[0].elts)
    )


def _literal(node: ast.expr) -> bool:
    return _value_hashed_constant(node) or (isinstance(node, ast.Constant) and node.value is None)


def _bound_names(node: ast.AST) -> list[str]:
    """Names a node binds other than by assigning to an ``ast.Name``."""
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name] if node.name else []
    if isinstance(node, ast.alias):
        return [node.asname or node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


def _reads_as_table(node: ast.Name, parents: dict[int, ast.AST], value: Any) -> bool:
    """``x in NAME``, ``x not in NAME``; for a tuple also ``for x in NAME`` (loop or
    comprehension, whose iteration guard the policy has already taken off)."""
    if not isinstance(node.ctx, ast.Load):
        return False
    parent = parents.get(id(node))
    if isinstance(parent, ast.Compare):
        return any(
            c is node and isinstance(op, (ast.In, ast.NotIn))
            for op, c in zip(parent.ops, parent.comparators, strict=True)
        )
    iterated = isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node
    return iterated and type(value) is tuple
