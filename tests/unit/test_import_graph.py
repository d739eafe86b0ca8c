"""The import graph of pyhudi: no cycles, and pyspark only inside the Spark engine.

Every module under pyhudi/ is parsed with `ast` (nothing is imported, so this runs without Spark in a
fraction of a second). Imports at module level and inside functions both count: a lazy import that
closes a circle is still a circle (it only moves the failure from import time to call time), and so is
a module `__getattr__` that re-exports from a module importing it. Imports under `if TYPE_CHECKING:`
never run and are left out.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pyhudi"
SPARK_ALLOWED = ("pyhudi.engine.spark",)  # the Spark engine: pyhudi/engine/spark*.py (or a spark* package)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except the bodies of `if TYPE_CHECKING:` blocks (their `else` runs, so it is kept)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


@functools.cache
def imported_names(name: str, path: Path) -> frozenset[str]:
    """Absolute dotted names this module imports at run time (`from a import b` gives `a` and `a.b`;
    the caller keeps whichever is a module)."""
    tree = parse(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return frozenset(out)


def _from_imports_only_submodules(path: Path, name: str, base: str, modules: dict[str, Path]) -> bool:
    """True when every `from base import ...` in the module names submodules (so `base` itself, a package
    __init__, is not really what it uses)."""
    tree = parse(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                mod = ".".join(anchor + ([mod] if mod else []))
            if mod == base and any(f"{base}.{a.name}" not in modules for a in node.names):
                return False
        elif isinstance(node, ast.Import) and any(a.name == base for a in node.names):
            return False
    return True


@functools.cache
def _graph() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((k, frozenset(v)) for k, v in _build_graph().items())


def precise_graph() -> dict[str, set[str]]:
    return {k: set(v) for k, v in _graph()}


def _build_graph() -> dict[str, set[str]]:
    """Edges as Python executes them: `from pkg import sub` runs pkg/__init__ and sub; an edge to pkg is
    kept only when something other than a submodule is taken from it (or pkg is imported itself)."""
    modules = all_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for imported in imported_names(name, path):
            if not imported.startswith("pyhudi") or imported not in modules or imported == name:
                continue
            if path_is_package(modules[imported]) and _from_imports_only_submodules(path, name, imported, modules):
                continue
            targets.add(imported)
        graph[name] = targets
    return graph


def path_is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: (-len(c), c))


def example_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle inside a component (breadth-first from its first module back to itself)."""
    members, start = set(component), component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    return component


def describe_cycles(graph: dict[str, set[str]]) -> list[str]:
    return [" -> ".join(example_cycle(graph, c)) + (f"  (component of {len(c)})" if len(c) > 2 else "")
            for c in cycles(graph)]


def pyspark_importers() -> list[str]:
    """Modules outside the Spark engine that import pyspark at run time (top level or in a function)."""
    out = []
    for name, path in all_modules().items():
        if name.startswith(SPARK_ALLOWED):
            continue
        if any(n == "pyspark" or n.startswith("pyspark.") for n in imported_names(name, path)):
            out.append(name)
    return sorted(out)


# --------------------------------------------------------------------------- the checker checks itself
def test_cycle_finder_finds_circles_and_ignores_chains() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": {"e"}, "f": set()}
    assert cycles(g) == [["a", "b", "c"], ["e", "e2"]]
    assert example_cycle(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_are_resolved_as_python_runs_them(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nimport pyspark.sql\nif TYPE_CHECKING:\n"
                   "    from pyhudi.api import write\nelse:\n    from pyhudi import errors\n"
                   "def f():\n    from . import sibling\n    from ..other import thing\n")
    names = imported_names("pyhudi.pkg.m", src)
    assert "pyspark.sql" in names and "pyhudi.errors" in names  # function level and the else branch count
    assert "pyhudi.pkg.sibling" in names and "pyhudi.other.thing" in names  # relative imports resolved
    assert "pyhudi.api" not in names  # TYPE_CHECKING only


def test_every_module_parses() -> None:
    modules = all_modules()
    assert "pyhudi.api" in modules and "pyhudi.cli.main" in modules and len(modules) > 100
    assert all(isinstance(precise_graph()[m], set) for m in modules)


# --------------------------------------------------------------------------- the rules
def test_known_cycles_are_gone() -> None:
    """The two circles issue 17 names in this area (CLI files/plot, log framing/codecs) stay broken."""
    graph = precise_graph()
    for a, b in (("pyhudi.cli.files_cmd", "pyhudi.cli.files_plot"),
                 ("pyhudi.cli.files_plot", "pyhudi.cli.plot_png"),
                 ("pyhudi.cli.files_plot", "pyhudi.cli.plot_html"),
                 ("pyhudi.io.log_blocks", "pyhudi.io.log_format")):
        assert not (b in graph[a] and a in graph[b]), f"{a} and {b} import each other"
        assert not any(a in c and b in c for c in cycles(graph)), f"{a} and {b} are on one import circle"


def test_no_import_cycles() -> None:
    found = describe_cycles(precise_graph())
    assert not found, "import cycles among pyhudi modules:\n" + "\n".join(found)


def test_pyspark_only_in_the_spark_engine() -> None:
    offenders = pyspark_importers()
    assert not offenders, ("modules outside pyhudi/engine/spark* import pyspark (move the Spark code into "
                           "the Spark engine):\n" + "\n".join(offenders))
