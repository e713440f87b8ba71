"""Tests watch a client from outside: no test reads or sets a private attribute of a client.

A test that reaches ``client._desk`` or ``client._pool`` pins how the client
is built, so rebuilding the core breaks tests that say nothing about
behaviour. Tests use the public API (``client.stats``, ``client.state``,
``client.protocol_version``, the transport they built themselves), what
the server received, or the threads a client runs, found by their documented
names (tests/wakes.py). The scan reads every ``tests/*.py`` with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Optional

import pytest

TESTS = Path(__file__).resolve().parent
CLIENT_MODULE = TESTS.parent / "mcp_input_sync" / "client.py"

#: Reaches still allowed, by (file, expression), each with its reason. An entry that no longer
#: matches anything fails the test too, so the list only shrinks.
ALLOWED: dict[tuple[str, str], str] = {
}


def client_attributes() -> set[str]:
    """The private data attributes a ``Client`` sets on itself (``self._x = ...`` in client.py's ``Client``)."""
    tree = ast.parse(CLIENT_MODULE.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Client":
            for inner in ast.walk(node):
                targets: list[ast.expr] = []
                if isinstance(inner, ast.Assign):
                    targets = list(inner.targets)
                elif isinstance(inner, ast.AnnAssign):
                    targets = [inner.target]
                for target in targets:
                    for t in ast.walk(target):
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            if is_private(t.attr):
                                found.add(t.attr)
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def names_a_client(node: ast.expr) -> bool:
    """True when ``node`` reads as a client: ``client``, ``first_client``, ``self.s.client``,
    ``fake.client(...)``, ``mis.Client(...)``, ``connect_stdio(...)``, ``connect_http(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
        if isinstance(node, ast.Attribute) and node.attr in ("open", "__enter__"):
            return names_a_client(node.value)
        callee = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        return "client" in callee.lower() or callee in ("connect_stdio", "connect_http")
    if isinstance(node, ast.Name):
        return "client" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "client" in node.attr.lower()
    return False


def reaches(source: str, attributes: set[str]) -> Iterator[tuple[int, str]]:
    """(line, expression) of every private attribute of a client that ``source`` reads, sets or names."""
    for node in ast.walk(ast.parse(source)):
        found: Optional[ast.expr] = None
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")  # a test class's own state
            if names_a_client(node.value) or (node.attr in attributes and not own):
                found = node
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and names_a_client(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
        ):
            found = node
        if found is not None:
            yield found.lineno, ast.unparse(found)


def every_reach() -> list[tuple[str, int, str]]:
    attributes = client_attributes()
    return [
        (path.name, line, expression)
        for path in sorted(TESTS.glob("*.py"))
        for line, expression in reaches(path.read_text(), attributes)
    ]


def test_the_client_has_private_attributes_to_guard() -> None:
    # the scan below is only as good as this list: it must see the client's parts
    assert {"_stats", "_session"} <= client_attributes()


@pytest.mark.parametrize(
    "source",
    [
        "client._desk",
        "client._pid = -1",
        "self.s.client._calls._by_id",
        "fake.client(handler).open()._pool",
        "mis.connect_stdio(cmd)._transport.process",
        "c._stats",  # any name, when the attribute is one the client sets on itself
        "getattr(client, '_legacy')",
        "setattr(first_client, '_opts', None)",
    ],
)
def test_the_scan_finds_a_reach(source: str) -> None:
    assert list(reaches(source, {"_stats"})), source


@pytest.mark.parametrize(
    "source",
    [
        "client.stats['served']",
        "client.__class__",
        "server._reply",  # a test's own server: not a client
        "pool._threads",  # a part built by the test itself, without a client
        "getattr(client, 'era')",
        "self._pump",  # a test class's own attribute, though the client has one of that name
    ],
)
def test_the_scan_leaves_the_rest(source: str) -> None:
    assert not list(reaches(source, {"_stats"})), source


def test_no_test_reaches_a_private_attribute_of_a_client() -> None:
    found = every_reach()
    unexpected = [f"{name}:{line}: {expression}" for name, line, expression in found if (name, expression) not in ALLOWED]
    assert not unexpected, "tests reach into a client; use its public API or watch it from outside:\n" + "\n".join(unexpected)
    stale = sorted(set(ALLOWED) - {(name, expression) for name, _, expression in found})
    assert not stale, f"allowed reaches that no test makes any more (remove them from ALLOWED): {stale}"
