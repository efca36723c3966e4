#!/usr/bin/env python3
"""The module-level import graph of a package, its cycles, and its imports inside functions.

The layer order itself is checked by import-linter (pyproject.toml, tests/test_layers.py); this
script shows the graph. Usage: ``scripts/import_graph.py [PACKAGE_DIR ...]`` (default: ``core/src/offload`` and every
``backends/*/src/*`` package). For each package it prints every module's imports of the same
package (module level; ``if TYPE_CHECKING:`` blocks are left out: they never run), the strongly
connected components of that graph of more than one module (its cycles), and every import
statement inside a function or method (line numbers, with the module it names), so a deferred
import can be checked for the comment that says why it is deferred. Exit status 1 when a cycle
or an upward import exists, else 0. Reads source with ``ast`` only: nothing is imported.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(package_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module a ``from ... import`` names (``level`` dots relative to ``current``)."""
    if level == 0:
        return target or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class Imports(ast.NodeVisitor):
    """Collects (line, imported module, inside a function) for every import that can run."""

    def __init__(self, current: str, is_package: bool, known: set[str]) -> None:
        self.current, self.is_package, self.known = current, is_package, known
        self.depth = 0
        self.found: list[tuple[int, str, bool]] = []

    def _add(self, line: int, name: str) -> None:
        self.found.append((line, name, self.depth > 0))

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node.lineno, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = resolve(self.current, self.is_package, node.level, node.module)
        for alias in node.names:
            sub = f"{base}.{alias.name}" if base else alias.name
            # ``from . import x`` names the submodule x where one exists, else the package itself
            self._add(node.lineno, sub if sub in self.known else base)


def analyse(package_dir: Path) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """(module -> same-package modules it imports at module level, [(module, line, target) inside functions])."""
    files = sorted(p for p in package_dir.rglob("*.py") if "templates" not in p.relative_to(package_dir).parts)
    names = {module_name(package_dir, p): p for p in files}
    top = package_dir.name
    graph: dict[str, set[str]] = {name: set() for name in names}
    # compiled extension modules (known by their stubs): ``from . import _native`` imports the
    # extension, not the package's __init__; they import nothing of the package themselves
    extensions = {module_name(package_dir, p.with_suffix(".py")) for p in package_dir.rglob("*.pyi")} - set(names)
    deferred: list[tuple[str, int, str]] = []
    for name, path in names.items():
        visitor = Imports(name, path.name == "__init__.py", set(names) | extensions)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for line, target, inside in sorted(set(visitor.found)):
            if inside:
                deferred.append((name, line, target))
                continue
            if target in extensions:
                continue
            if (target == top or target.startswith(top + ".")) and target != name:
                # a module imported from a package runs the package's __init__ first
                while target not in names and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in names and target != name:
                    graph[name].add(target)
    return graph, deferred


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), plus self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        v = todo.pop()
        for w in graph.get(v, ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of an enclosing package's ``__init__`` by a module that ``__init__`` itself loads
    (``from .. import x`` inside the package: the ``__init__``'s line order becomes load-bearing).
    Modules the ``__init__`` never loads (a CLI, a test kit) may import the public package."""
    found = []
    for importer, targets in graph.items():
        for target in targets:
            if importer.startswith(target + ".") and importer in reachable(graph, target):
                found.append((importer, target))
    return sorted(found)


def report(package_dir: Path) -> bool:
    graph, deferred = analyse(package_dir)
    print(f"== {package_dir.relative_to(ROOT) if package_dir.is_relative_to(ROOT) else package_dir}")
    for name in sorted(graph):
        print(f"  {name} -> {', '.join(sorted(graph[name])) or '(nothing of the package)'}")
    found = cycles(graph)
    upward = upward_imports(graph)
    print(f"  cycles: {len(found)}")
    for component in found:
        print(f"    {' <-> '.join(component)}")
    print(f"  imports of an enclosing package's __init__ (upward): {len(upward)}")
    for a, b in upward:
        print(f"    {a} -> {b}")
    # the same graph with the imports inside functions added: a circle that a deferred import only hides
    top = package_dir.name
    full = {name: set(targets) for name, targets in graph.items()}
    for name, _line, target in deferred:
        while target not in full and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in full and target != name and (target == top or target.startswith(top + ".")):
            full[name].add(target)
    hidden = cycles(full)
    print(f"  cycles once the imports inside functions are counted: {len(hidden)}")
    for component in hidden:
        print(f"    {' <-> '.join(component)}")
    print(f"  imports inside functions: {len(deferred)}")
    for name, line, target in deferred:
        print(f"    {name}:{line} {target}")
    return bool(found or upward)


def main(argv: list[str]) -> int:
    if argv:
        packages = [Path(a).resolve() for a in argv]
    else:
        packages = [ROOT / "core/src/offload", *sorted(p for p in (ROOT / "backends").glob("*/src/*") if (p / "__init__.py").exists())]
    failed = False
    for package in packages:
        failed |= report(package)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
