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


# ---------------------------------------------------------------------------- the layout of the whole package
# Each rule of docs/architecture.md#import-rules is one test below; type-only imports count.


def package_graph() -> dict[str, set[str]]:
    """Every module of the package (subpackages included), each with the package's modules it imports."""
    paths = {module_name(p, PACKAGE): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}
    return {name: imported_modules(path, PACKAGE) & set(paths) - {name} for name, path in paths.items()}


GRAPH = package_graph()
P = "mcp_input_sync."


def modules(*prefixes: str) -> list[str]:
    """The modules whose dotted names (less ``mcp_input_sync.``) start with one of ``prefixes``."""
    return sorted(m for m in GRAPH if any(m == P + p or m.startswith(P + p + ".") for p in prefixes))


def ours(name: str, *prefixes: str) -> set[str]:
    """The modules ``name`` imports that start with one of ``prefixes``."""
    return {m for m in GRAPH[name] if any(m == P + p or m.startswith(P + p + ".") for p in prefixes)}


def test_the_package_has_no_import_circle() -> None:
    assert len(GRAPH) > 40 and P + "_engines.legacy" in GRAPH
    assert find_cycle(GRAPH) == []


@pytest.mark.parametrize("name", modules("_protocol"))
def test_rule_1_the_protocol_core_imports_only_itself(name: str) -> None:
    assert GRAPH[name] - set(modules("_protocol")) == set()


@pytest.mark.parametrize("name", modules("_runtime"))
def test_rule_2_the_runtime_imports_only_itself_and_the_clock(name: str) -> None:
    assert GRAPH[name] - set(modules("_runtime")) - {P + "_clock"} == set()


GROUND = ("_clock", "_stats", "errors", "handler", "reflect", "options", "cache", "telemetry", "_calls", "_era", "_version")


@pytest.mark.parametrize("name", modules(*GROUND))
def test_rule_3_the_ground_floor_imports_nothing_above_it(name: str) -> None:
    assert GRAPH[name] - set(modules(*GROUND, "_protocol")) == set()


def test_rule_3_the_port_imports_only_the_transport_contract() -> None:
    assert GRAPH[P + "_port"] == {P + "transports.base"}


@pytest.mark.parametrize("name", modules("transports"))
def test_rule_4_transports_never_import_the_core(name: str) -> None:
    assert ours(name, "_session", "_engines", "_input", "_input_rounds", "_handshake", "client") == set()


@pytest.mark.parametrize("name", [P + "_input", P + "_input_rounds"])
def test_rule_5_the_input_desk_knows_no_session_engine_client_or_transport(name: str) -> None:
    assert ours(name, "_session", "_engines", "_handshake", "client", "transports", "_port") == set()
    assert P + "_input" not in GRAPH[P + "_input_rounds"]  # the desk builds its part for callers' threads, not the reverse


def test_rule_6_the_session_knows_no_engine_handshake_or_client() -> None:
    assert ours(P + "_session", "_engines", "_handshake", "client", "_input", "_input_rounds") == set()


@pytest.mark.parametrize("name", modules("_engines"))
def test_rule_7_engines_never_import_the_client_transports_or_each_other(name: str) -> None:
    assert ours(name, "client", "transports", "_handshake") == set()
    other = {P + "_engines.legacy": P + "_engines.modern", P + "_engines.modern": P + "_engines.legacy"}.get(name)
    assert other is None or other not in GRAPH[name]


def test_rule_7_the_era_router_is_given_both_engines_and_the_legacy_engine_knows_no_other_era() -> None:
    assert ours(P + "_engines.router", "_engines") == {P + "_engines.base"}  # it routes to engines it is handed
    assert ours(P + "_engines.legacy", "_era") == set()  # what is learnt per tool is the router's (issue 33, item 5)


def test_rule_8_the_handshake_knows_no_engine_or_client() -> None:
    assert ours(P + "_handshake", "_engines", "client") == set()


def test_rule_9_only_the_client_and_its_assembly_import_the_engines_and_the_handshake() -> None:
    importers = {name for name in GRAPH if ours(name, "_engines", "_handshake")} - set(modules("_engines"))
    assert importers == {P + "client", P + "_assembly"}


def test_rule_9_the_assembly_serves_the_client_alone_and_sees_transports_through_the_port() -> None:
    assert {name for name in GRAPH if P + "_assembly" in GRAPH[name]} == {P + "client"}
    assert ours(P + "_assembly", "client", "transports", *APPLICATIONS) == set()


APPLICATIONS = ("web", "terminal", "_terminal_parts", "testing", "conformance", "__main__", "_cli_config", "_cli_output", "_demo", "_demo_server")
#: What an application may import: the public modules and the pure core.
PUBLIC = ("client", "errors", "handler", "options", "reflect", "transports", "terminal", "web", "testing", "oauth", "config", "group", "pool", "skills", "llm", "_protocol", "_version")
#: ... and one another (the command line runs the demo, which runs the demo server).


@pytest.mark.parametrize("name", modules(*APPLICATIONS))
def test_rule_10_applications_import_public_modules_and_the_pure_core(name: str) -> None:
    private = {m for m in GRAPH[name] - set(modules(*PUBLIC, *APPLICATIONS)) if m != "mcp_input_sync"}
    assert private == set(), f"{name} imports {sorted(private)}"


@pytest.mark.parametrize("name", modules("oauth"))
def test_rule_11_oauth_leans_on_the_pure_core_the_runtime_errors_and_the_http_transport(name: str) -> None:
    allowed = set(modules("oauth", "_protocol", "_runtime", "errors")) | {P + "transports._abortable", P + "transports.http"}
    assert GRAPH[name] - allowed == set(), f"{name} imports {sorted(GRAPH[name] - allowed)}"


def test_rule_12_config_reads_files_with_the_stdlib_alone() -> None:
    # its JSONC reader, pure and stdlib-only, and its readers of an entry's values (maps, paths, cert, proxies), stdlib-only
    assert GRAPH[P + "config"] <= {P + "_protocol", P + "_protocol.jsonc", P + "_config_values"}
    assert GRAPH[P + "_protocol.jsonc"] == set()
    assert GRAPH[P + "_config_values"] == set()


def test_rule_12_the_group_opens_servers_through_the_public_client_only() -> None:
    assert GRAPH[P + "group"] == {P + "client", P + "config", P + "_config_oauth", P + "oauth", P + "errors"}
    assert GRAPH[P + "_config_oauth"] <= {P + "config", P + "oauth"}


def test_rule_12_skills_read_through_the_public_client_and_the_pure_core() -> None:
    assert GRAPH[P + "skills"] <= {P + "client", P + "errors", *modules("_protocol")}


def test_rule_12_the_llm_samplers_need_only_the_handler_and_the_errors() -> None:
    for name in modules("llm"):
        assert {m for m in GRAPH[name] if not m.startswith(P + "llm")} <= {P + "errors", P + "handler"}, name


def test_rule_12_the_pool_leases_public_clients_on_the_runtime_alone() -> None:
    assert GRAPH[P + "pool"] <= {P + "client", P + "errors", P + "_clock", *modules("_runtime")}


def test_rule_11_the_transports_never_import_oauth() -> None:
    assert {name for name in modules("transports") if ours(name, "oauth")} == set()


@pytest.mark.parametrize("path", sorted((PACKAGE / "_demo_server").glob("*.py")), ids=lambda p: p.name)
def test_the_demo_server_needs_nothing_outside_the_package_but_the_stdlib(path: Path) -> None:
    for name in imported_modules(path, PACKAGE):
        top = name.partition(".")[0]
        assert top in ("mcp_input_sync", "__future__") or top in sys.stdlib_module_names, f"{path.name} imports {name}"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_no_module_is_over_about_700_lines(name: str) -> None:
    path = PACKAGE.parent.joinpath(*name.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    assert len(path.read_text().splitlines()) <= 720, f"{name}: split it along its jobs (docs/architecture.md#layout)"
