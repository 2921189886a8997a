"""The layers of docs/architecture.md hold: no import cycle among statemeta's modules, every
import points down (or within a layer), the sans-IO core imports no store backend and nothing
of its edge, and no module reads a private attribute of another module's object."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "statemeta"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES: dict[str, ast.Module] = {m: ast.parse(p.read_text()) for m, p in MODULES.items()}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of nodes under ``if TYPE_CHECKING:`` (not imported at run time)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    return skipped


def imports_of(module: str) -> set[str]:
    """The statemeta modules ``module`` imports at run time (anywhere in it); ``from package
    import name`` counts as importing the submodule when ``name`` is one."""
    tree = TREES[module]
    skipped = _type_checking_only(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "statemeta")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "statemeta":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    found.discard(module)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v] & MODULES.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_statemeta_modules() -> None:
    assert _cycles() == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    GRAPH["statemeta.errors"].add("statemeta.tables")  # tables imports errors
    try:
        assert _cycles() == [["statemeta.errors", "statemeta.tables"]]
    finally:
        GRAPH["statemeta.errors"].discard("statemeta.tables")


# -- the layers of docs/architecture.md ----------------------------------------------------


def _table_rows(heading: str) -> Iterator[list[str]]:
    """The body rows of the first table after ``heading`` in docs/architecture.md."""
    text = ARCHITECTURE.read_text()
    section = text[text.index(heading) :]
    lines = iter(section.splitlines()[1:])
    for line in lines:
        if line.startswith("|"):
            break
    next(lines)  # the |---| row
    for line in lines:
        if not line.startswith("|"):
            return
        yield [cell.strip() for cell in line.strip("|").split("|")]


def _patterns(cell: str) -> list[str]:
    return re.findall(r"`([a-z_.*]+)`", cell)


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        package = pattern[:-2]
        return module == package or module.startswith(package + ".")
    return module == pattern


LAYERS: list[tuple[int, str, list[str]]] = [
    (int(rank), name, _patterns(modules))
    for rank, name, modules, *_rest in _table_rows("## Layers")
]


def layer_of(module: str) -> tuple[int, str]:
    found = [(rank, name) for rank, name, pats in LAYERS if any(_matches(module, p) for p in pats)]
    assert len(found) == 1, f"{module} is in {len(found)} layers of docs/architecture.md"
    return found[0]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_points_down_or_within_its_layer(module: str) -> None:
    rank, name = layer_of(module)
    upward = sorted(
        f"{target} ({layer_of(target)[1]})"
        for target in GRAPH[module]
        if target in MODULES and layer_of(target)[0] > rank
    )
    assert upward == [], f"{module} ({name}) imports from a layer above it"


def _is_command_module(module: str) -> bool:
    """A module of the command line: ``statemeta.cli``, or one named ``cli_*`` (but
    ``cli_args``, the rules every command-line value follows, which the pytest plugin and the
    command mains of serve, decode and the defects page parse with too)."""
    last = module.rsplit(".", 1)[-1]
    return module == "statemeta.cli" or (last.startswith("cli_") and last != "cli_args")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_command_module(m)))
def test_the_library_imports_no_command_module(module: str) -> None:
    """run_check, its settings and progress live in the harness (harness/check.py); the
    commands parse their arguments and print (docs/architecture.md)."""
    commands = sorted(t for t in GRAPH[module] if t in MODULES and _is_command_module(t))
    allowed = {"statemeta.__main__": ["statemeta.cli"]}.get(module, [])
    assert commands == allowed, f"{module} imports the command modules {commands}"


CORE = [p for row in _table_rows("## The meta: core and edge") if row[0] == "core"
        for p in _patterns(row[1])]
EDGE = [p for row in _table_rows("## The meta: core and edge") if row[0] == "edge"
        for p in _patterns(row[1])]
BACKENDS = ("statemeta.store", "statemeta.store.lmdb_store", "statemeta.store.memory_store",
            "statemeta.store.faults", "statemeta.store.overlay")


def test_the_meta_is_split_into_core_and_edge() -> None:
    meta = [m for m in MODULES if _matches(m, "statemeta.meta.*")]
    for module in meta:
        kinds = [any(_matches(module, p) for p in pats) for pats in (CORE, EDGE)]
        assert kinds.count(True) == 1, f"{module}: core or edge in docs/architecture.md"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if any(_matches(m, p) for p in CORE)))
def test_the_core_imports_no_store_backend_and_nothing_of_its_edge(module: str) -> None:
    for target in GRAPH[module]:
        assert target not in BACKENDS, f"{module} imports the store backend {target}"
        assert not any(_matches(target, p) for p in EDGE), f"{module} imports the edge {target}"


def test_no_meta_module_is_over_600_lines() -> None:
    long = {m: len(MODULES[m].read_text().splitlines()) for m in MODULES
            if _matches(m, "statemeta.meta.*")}
    assert {m: n for m, n in long.items() if n >= 600} == {}


# -- private attributes --------------------------------------------------------------------

PRIVATE_ALLOWED: dict[str, set[str]] = {
    # construct's subclassing protocol: a Construct subclass implements and calls _parse,
    # _build, _sizeof, ... on its subcons (construct has no public name for them)
    "statemeta.codec.primitives": {
        "_parse", "_build", "_sizeof", "_parsereport", "_compilebuild", "_decode", "_encode",
        "_root",
    },
    # py-lmdb exports its database handle type only as lmdb._Database (for annotations)
    "statemeta.store.lmdb_store": {"_Database"},
    # the keeper's forked child and its own exit must leave at once, without the parent's
    # atexit handlers and buffers: os._exit is the standard library's one way to do it
    "statemeta.harness.keeper": {"_exit"},
}
"""Private names of other libraries a module must use; none of statemeta's own."""


def _defined_private(tree: ast.Module) -> set[str]:
    """The private names a module defines: functions, classes, attributes set on self or cls,
    names assigned (class level, module level, locals), ``__slots__`` entries."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            names.update(
                c.value for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return {n for n in names if n.startswith("_")}


def private_reads(module: str) -> list[str]:
    """``obj._name`` in ``module`` where obj is not self, cls or super() and ``_name`` is not
    defined in ``module``: a private attribute of another module's object."""
    tree = TREES[module]
    own = _defined_private(tree) | PRIVATE_ALLOWED.get(module, set())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in own:
            continue
        target = node.value
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            continue
        if isinstance(target, ast.Call) and ast.unparse(target.func) == "super":
            continue
        found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_reads_a_private_attribute_of_another_modules_object(module: str) -> None:
    assert private_reads(module) == []


def test_the_private_read_finder_finds_one() -> None:
    TREES["__probe__"] = ast.parse("def f(meta):\n    return meta._map\n")
    try:
        assert private_reads("__probe__") == ["__probe__:2: meta._map"]
    finally:
        del TREES["__probe__"]
