"""The mutants of a module of the reference: one small syntactic change each, made on its AST.

Why a mutator of our own (docs/mutation.md): mutmut and cosmic-ray rewrite files on disk and
run a test suite per mutant, with the mutated module in place of the original. Here a mutant
is an implementation under check: it must run beside the *unmutated* reference in one process
(statemeta.harness.shadow loads it), so a mutant is a tree, never a file.

Theory of operation: ``sites`` walks a module's tree once, in a fixed order, and yields every
place one of the OPERATORS applies (the path of fields and indexes from the root to the node,
the operator, and the replacement node). A ``Mutant`` is that place by name (module, line,
column, operator), with the path to find it again in a fresh parse; ``mutated_tree`` applies
it; ``diff`` shows the changed line(s) as a unified diff. Nothing in a docstring, an
annotation, an ``assert`` (the reference's own checks), an f-string or a ``__all__`` is
mutated; statements are deleted only inside function bodies (at module level a deletion
mostly breaks the import, which says nothing about the harness).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from statemeta.errors import MisuseError

__all__ = ["OPERATORS", "Mutant", "module_path", "mutants_of", "mutated_tree"]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

_Path = tuple[tuple[str, int], ...]
"""From the module's root to a node: each step a field name and an index (-1: not a list)."""

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}
"""Comparison flips: each operator to its negation."""
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
}
"""Boundary shifts: a strict comparison made loose and the other way round."""
_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne",
    ast.Is: "is", ast.IsNot: "isnot", ast.In: "in", ast.NotIn: "notin",
}

_Node = ast.expr | ast.stmt
"""What a mutant changes: an expression or a statement (they have a place in the source)."""
_Replacement = tuple[str, ast.AST]
"""An operator's name (as in a mutant's id) and the node that replaces the site's."""


def _compare(node: ast.AST) -> list[_Replacement]:
    if not isinstance(node, ast.Compare):
        return []
    out: list[_Replacement] = []
    for i, op in enumerate(node.ops):
        suffix = "" if i == 0 else f"#{i}"
        for table, kind in ((_FLIP, "flip"), (_BOUNDARY, "boundary")):
            new_op = table.get(type(op))
            if new_op is None:
                continue
            new = copy.deepcopy(node)
            new.ops[i] = new_op()
            name = f"{kind}-{_SYMBOL[type(op)]}-{_SYMBOL[new_op]}{suffix}"
            out.append((name, new))
    return out


def _boolop(node: ast.AST) -> list[_Replacement]:
    if not isinstance(node, ast.BoolOp):
        return []
    new = copy.deepcopy(node)
    new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return [("and-or" if isinstance(node.op, ast.And) else "or-and", new)]


def _not(node: ast.AST) -> list[_Replacement]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("not-drop", copy.deepcopy(node.operand))]
    return []


def _constant(node: ast.AST) -> list[_Replacement]:
    if not isinstance(node, ast.Constant):
        return []
    value = node.value
    if isinstance(value, bool):
        return [(f"{str(value).lower()}-{str(not value).lower()}", ast.Constant(not value))]
    if isinstance(value, int):
        return [("const+1", ast.Constant(value + 1)), ("const-1", ast.Constant(value - 1))]
    return []


def _statement(node: ast.AST) -> list[_Replacement]:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return [("del-call", ast.Pass())]
    if isinstance(node, ast.Assign | ast.AugAssign) or (
        isinstance(node, ast.AnnAssign) and node.value is not None
    ):
        return [("del-assign", ast.Pass())]
    if isinstance(node, ast.Return) and node.value is not None and not (
        isinstance(node.value, ast.Constant) and node.value.value is None
    ):
        return [("return-none", ast.Return(ast.Constant(None)))]
    return []


OPERATORS: dict[str, Callable[[ast.AST], list[_Replacement]]] = {
    "compare": _compare,
    "boolop": _boolop,
    "not": _not,
    "constant": _constant,
    "statement": _statement,
}
"""Each operator family: the replacements it makes of one node (none: it does not apply).
``statement`` applies inside function bodies only."""

_SKIPPED_FIELDS = frozenset({"annotation", "returns", "decorator_list", "type_comment"})
"""Fields whose subtrees are never mutated: types, and decorators (attrs' options)."""


@attrs.frozen
class Mutant:
    """One mutant of ``module``: the node at ``path`` (line ``line``, column ``col``, both
    1-based) changed by ``operator``."""

    module: str
    line: int
    col: int
    operator: str
    path: _Path = attrs.field(eq=False, repr=False)

    @property
    def id(self) -> str:
        """``module:line:col:operator``: what reports and spec/equivalent-mutants.toml name."""
        return f"{self.module}:{self.line}:{self.col}:{self.operator}"

    def diff(self, source: str) -> str:
        """The change as a unified diff of the line(s) it touches."""
        node, replacement = _locate(ast.parse(source), self)
        lines = source.splitlines()
        first, last = node.lineno, node.end_lineno or node.lineno
        old = lines[first - 1 : last]
        head = old[0].encode()[: node.col_offset].decode()
        tail = old[-1].encode()[node.end_col_offset or 0 :].decode()
        new = [head + ast.unparse(replacement) + tail]
        where = module_path(self.module).relative_to(_PACKAGE_DIR.parent)
        return "\n".join(
            [f"--- a/{where}", f"+++ b/{where}", f"@@ -{first},{len(old)} +{first},1 @@"]
            + [f"-{line}" for line in old]
            + [f"+{line}" for line in new]
        )


def module_path(module: str) -> Path:
    """The source file of a statemeta module (MisuseError for any other name)."""
    parts = module.split(".")
    if parts[0] != "statemeta":
        raise MisuseError(f"{module!r} is not a statemeta module")
    base = _PACKAGE_DIR.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise MisuseError(f"no module {module!r} in {_PACKAGE_DIR}")


def mutants_of(module: str) -> list[Mutant]:
    """Every mutant of ``module``, in the order of its tree."""
    tree = ast.parse(module_path(module).read_text())
    return [
        Mutant(module, node.lineno, node.col_offset + 1, name, path)
        for path, node, name, _ in _sites(tree)
    ]


def mutated_tree(source: str, mutant: Mutant) -> ast.Module:
    """The module's tree with ``mutant`` applied (a fresh parse of ``source``)."""
    tree = ast.parse(source)
    node, replacement = _locate(tree, mutant)
    parent: ast.AST = tree
    for field, index in mutant.path[:-1]:
        parent = _child(parent, field, index)
    field, index = mutant.path[-1]
    if index < 0:
        setattr(parent, field, replacement)
    else:
        getattr(parent, field)[index] = replacement
    ast.copy_location(replacement, node)
    return ast.fix_missing_locations(tree)


def _child(node: ast.AST, field: str, index: int) -> ast.AST:
    value = getattr(node, field)
    child: ast.AST = value if index < 0 else value[index]
    return child


def _locate(tree: ast.Module, mutant: Mutant) -> tuple[_Node, ast.AST]:
    """The node ``mutant`` changes and its replacement (MisuseError if the source moved)."""
    node: ast.AST = tree
    for field, index in mutant.path:
        node = _child(node, field, index)
    if isinstance(node, _Node):
        for name, replacement in _replacements(node, in_function=True):
            if name == mutant.operator and node.lineno == mutant.line:
                return node, replacement
    raise MisuseError(f"mutant {mutant.id} is not in the module's source any more")


def _replacements(node: ast.AST, *, in_function: bool) -> Iterator[_Replacement]:
    for family, operator in OPERATORS.items():
        if family == "statement" and not in_function:
            continue
        yield from operator(node)


def _sites(
    node: ast.AST, path: _Path = (), in_function: bool = False
) -> Iterator[tuple[_Path, _Node, str, ast.AST]]:
    """Every (path, node, operator, replacement) under ``node``, parents before children."""
    if isinstance(node, _Node):
        for name, replacement in _replacements(node, in_function=in_function):
            yield path, node, name, replacement
    if _skipped(node):
        return
    inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
    for field, value in ast.iter_fields(node):
        if field in _SKIPPED_FIELDS:
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST) and not _docstring(node, field, index):
                    yield from _sites(item, (*path, (field, index)), inner)
        elif isinstance(value, ast.AST):
            yield from _sites(value, (*path, (field, -1)), inner)


def _skipped(node: ast.AST) -> bool:
    """A subtree nothing in is mutated: checks, messages, the export list."""
    if isinstance(node, ast.Assert | ast.JoinedStr | ast.Raise):
        return True
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def _docstring(parent: ast.AST, field: str, index: int) -> bool:
    """A statement that is only a string (a docstring, or an attribute's)."""
    if field != "body":
        return False
    item = getattr(parent, field)[index]
    return (
        isinstance(item, ast.Expr)
        and isinstance(item.value, ast.Constant)
        and isinstance(item.value.value, str)
    )
