"""A second copy of part of statemeta, loaded from memory, beside the one already imported.

A mutant of one module (statemeta.harness.mutants) must run as an implementation under check
while the reference it is compared with runs unmutated in the same process. So the mutated
module, and every statemeta module that imports it (directly or not) with their packages, are
loaded again under the name prefix ``SHADOW`` from their compiled trees: ``_statemeta_shadow.
statemeta.meta.core`` is the mutated core's copy of ``statemeta.meta.core``. Their imports of
one another are renamed into the prefix; their imports of anything else (errors, the spec
tables, unmutated codecs) stay the original modules, so the two copies share every class the
mutant cannot have changed. No file is written: a meta-path finder serves the copies' code.

``ImportGraph`` reads every module's imports once (with ``ast``; statemeta has no relative and
no function-level import, which tests/unit/test_architecture.py keeps true). ``Shadow`` is one
copy: ``load`` imports a copy of a module, ``close`` forgets every copy (sys.modules and the
finder).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType

import attrs

from statemeta.errors import MisuseError

__all__ = ["SHADOW", "ImportGraph", "Shadow"]

SHADOW = "_statemeta_shadow"
"""The prefix of every copy's module name."""
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@attrs.frozen
class _Module:
    name: str
    path: Path
    package: bool
    imports: frozenset[str]


class ImportGraph:
    """Every statemeta module, with the statemeta modules it imports."""

    def __init__(self) -> None:
        files = sorted(_PACKAGE_DIR.rglob("*.py"))
        names = {self._name(path): path for path in files}
        self.modules: dict[str, _Module] = {
            name: _Module(name, path, path.name == "__init__.py",
                          frozenset(_imports(ast.parse(path.read_text()), names)))
            for name, path in names.items()
        }

    @staticmethod
    def _name(path: Path) -> str:
        parts = path.relative_to(_PACKAGE_DIR.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def copied(self, mutated: str) -> frozenset[str]:
        """The modules a copy over a mutant of ``mutated`` holds: it, every module that imports
        it directly or not, and their packages."""
        if mutated not in self.modules:
            raise MisuseError(f"no statemeta module {mutated!r}")
        users: dict[str, set[str]] = {name: set() for name in self.modules}
        for module in self.modules.values():
            for imported in module.imports:
                users[imported].add(module.name)
        copied = {mutated}
        todo = [mutated]
        while todo:
            for user in users[todo.pop()]:
                if user not in copied:
                    copied.add(user)
                    todo.append(user)
        packages = {".".join(n.split(".")[:i]) for n in copied for i in range(1, n.count(".") + 1)}
        return frozenset(copied | packages)


def _imports(tree: ast.Module, names: dict[str, Path]) -> set[str]:
    """The statemeta modules a module's import statements name (a ``from P import n`` names P
    and, when it is a module, ``P.n``); each with its packages."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    expanded = {".".join(n.split(".")[:i]) for n in found for i in range(1, n.count(".") + 2)}
    return {n for n in expanded if n in names}


class _Renamer(ast.NodeTransformer):
    """Renames the imports of copied modules into the prefix."""

    def __init__(self, copied: frozenset[str], modules: frozenset[str]) -> None:
        self.copied = copied
        self.modules = modules

    def visit_ImportFrom(self, node: ast.ImportFrom) -> list[ast.ImportFrom]:
        """``from P import ...`` of a copied P from the copy, but a submodule of P that is not
        copied from the original (the copy of P has none)."""
        if node.module not in self.copied:
            return [node]
        original = [a for a in node.names
                    if f"{node.module}.{a.name}" in self.modules - self.copied]
        copied = [a for a in node.names if a not in original]
        nodes = [ast.ImportFrom(f"{SHADOW}.{node.module}", copied, 0)] if copied else []
        if original:
            nodes.append(ast.ImportFrom(node.module, original, 0))
        return [ast.copy_location(n, node) for n in nodes]

    def visit_Import(self, node: ast.Import) -> ast.Import:
        for alias in node.names:
            if alias.name in self.copied:
                if alias.asname is None:
                    raise MisuseError(f"import {alias.name} without 'as' cannot be copied")
                alias.name = f"{SHADOW}.{alias.name}"
        return node


class _Loader(importlib.abc.Loader):
    def __init__(self, code: CodeType | None) -> None:
        self.code = code

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        if self.code is not None:
            exec(self.code, module.__dict__)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, shadow: Shadow) -> None:
        self.shadow = shadow

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == SHADOW:
            return importlib.machinery.ModuleSpec(fullname, _Loader(None), is_package=True)
        original = fullname.removeprefix(SHADOW + ".")
        if original == fullname or original not in self.shadow.copied:
            return None
        module = self.shadow.graph.modules[original]
        spec = importlib.machinery.ModuleSpec(
            fullname, _Loader(self.shadow.code(original)), origin=str(module.path),
            is_package=module.package,
        )
        spec.has_location = True  # __file__ is the original's: data next to it is found
        return spec


class Shadow:
    """One copy: the modules ``graph.copied(mutated)``, ``mutated`` compiled from ``tree``.

    ``cache`` keeps the compiled code of unmutated modules between copies (keyed by module
    and copied set: the renaming depends on it)."""

    def __init__(
        self,
        graph: ImportGraph,
        mutated: str,
        tree: ast.Module,
        cache: dict[tuple[str, frozenset[str]], CodeType],
    ) -> None:
        self.graph = graph
        self.mutated = mutated
        self.copied = graph.copied(mutated)
        self._tree = tree
        self._cache = cache
        self._finder: _Finder | None = None
        self._modules = frozenset(graph.modules)

    def code(self, name: str) -> CodeType:
        """The compiled code of the copy of ``name`` (SyntaxError etc. propagate)."""
        path = self.graph.modules[name].path
        if name == self.mutated:
            tree = _Renamer(self.copied, self._modules).visit(self._tree)
            return compile(tree, str(path), "exec")
        key = (name, self.copied)
        if key not in self._cache:
            tree = _Renamer(self.copied, self._modules).visit(ast.parse(path.read_text()))
            self._cache[key] = compile(tree, str(path), "exec")
        return self._cache[key]

    def load(self, name: str) -> ModuleType:
        """The copy of ``name`` (the original module itself when it is not copied)."""
        if self._finder is None:
            self.close()  # another copy's leftovers
            self._finder = _Finder(self)
            sys.meta_path.insert(0, self._finder)
        if name not in self.copied:
            return importlib.import_module(name)
        return importlib.import_module(f"{SHADOW}.{name}")

    def close(self) -> None:
        """Forget every copy (the objects made from them live on while referenced)."""
        if self._finder is not None:
            sys.meta_path.remove(self._finder)
            self._finder = None
        for name in [n for n in sys.modules if n == SHADOW or n.startswith(SHADOW + ".")]:
            del sys.modules[name]

    def __enter__(self) -> Shadow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
