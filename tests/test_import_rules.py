"""Import rules read from the source with ast: the testing kit's parts form no circle, and the kit
leans only on the library's public modules, the pure protocol core and the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_input_sync"
KIT = PACKAGE / "testing"


def module_name(path: Path, root: Path) -> str:
    """The dotted name of ``path``, a module of the package at ``root`` (``__init__.py`` names the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, type-only ones (``TYPE_CHECKING``) included.

    ``from X import name`` counts as importing ``X.name`` when that is a
    module of the package (a file or a folder beside the others), else as
    importing ``X``.
    """
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = root.parent.joinpath(*f"{module}.{alias.name}".split("."))
                if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
                    found.add(f"{module}.{alias.name}")
                else:
                    found.add(module)
    return found


def import_graph(folder: Path, root: Path) -> dict[str, set[str]]:
    """The modules of ``folder`` (one package), each with the modules of that package it imports."""
    names = {module_name(p, root): p for p in sorted(folder.glob("*.py"))}
    return {name: imported_modules(path, root) & set(names) - {name} for name, path in names.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of imports in ``graph`` (its modules in order, the first repeated last), or []."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str]:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return []
        path.append(node)
        for child in sorted(graph[node]):
            cycle = visit(child)
            if cycle:
                return cycle
        path.pop()
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return []


def test_testing_package_has_no_cycles() -> None:
    graph = import_graph(KIT, PACKAGE)
    assert len(graph) > 1 and "mcp_input_sync.testing" in graph
    assert graph["mcp_input_sync.testing"], "the package re-exports its parts"
    assert find_cycle(graph) == []


def test_the_cycle_check_sees_a_circle_even_a_type_only_one(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "kit").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "kit" / "__init__.py").write_text("from .a import A\n")
    (root / "kit" / "a.py").write_text("from .b import B\nclass A: ...\n")
    (root / "kit" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\nclass B: ...\n"
    )
    (root / "kit" / "c.py").write_text("from .a import A\n")
    graph = import_graph(root / "kit", root)
    assert graph["pkg.kit"] == {"pkg.kit.a"}
    assert find_cycle(graph) == ["pkg.kit.a", "pkg.kit.b", "pkg.kit.c", "pkg.kit.a"]
    (root / "kit" / "c.py").write_text("from .. import kit\n")  # back to the package itself
    assert find_cycle(import_graph(root / "kit", root)) == ["pkg.kit", "pkg.kit.a", "pkg.kit.b", "pkg.kit.c", "pkg.kit"]
    (root / "kit" / "c.py").write_text("import json\n")
    assert find_cycle(import_graph(root / "kit", root)) == []


@pytest.mark.parametrize("path", sorted(KIT.glob("*.py")), ids=lambda p: p.name)
def test_the_testing_kit_leans_on_public_modules_the_protocol_core_and_the_stdlib(path: Path) -> None:
    for name in imported_modules(path, PACKAGE):
        top, _, rest = name.partition(".")
        if top != "mcp_input_sync":
            assert top in sys.stdlib_module_names or top == "__future__", name
        elif not name.startswith(("mcp_input_sync.testing", "mcp_input_sync._protocol")):
            assert not any(part.startswith("_") for part in rest.split(".")), f"{path.name} imports private {name}"
