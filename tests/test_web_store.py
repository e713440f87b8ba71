"""The web bridge's store interface: both brokers implement it, the driver needs nothing else, the modules stay layered."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync.web as web
import mcp_input_sync.web.broker as broker_module
from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.web import PendingInputBroker, WebHandler
from mcp_input_sync.web.deferred import DeferredCalls, Store
from mcp_input_sync.web.redis_broker import RedisBroker

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "mcp_input_sync" / "web"

#: The members of the protocol, read from its class body.
STORE_METHODS = sorted(name for name, value in vars(Store).items() if callable(value) and not name.startswith("_"))


def test_the_protocol_lists_the_storage_operations() -> None:
    assert STORE_METHODS == [
        "answer",
        "answer_of",
        "check",
        "claim_round",
        "get",
        "get_call",
        "park",
        "pending",
        "put_call",
        "result",
        "wait",
        "withdraw",
    ]


def test_both_brokers_are_stores_at_run_time() -> None:
    assert isinstance(PendingInputBroker(), Store)
    assert isinstance(RedisBroker(object()), Store)  # the Redis client is only used when a method runs
    assert not isinstance(object(), Store)


def test_both_brokers_are_stores_for_mypy(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    sample = tmp_path / "stores.py"
    sample.write_text(
        textwrap.dedent(
            """
            from typing import Any

            from mcp_input_sync.web import PendingInputBroker
            from mcp_input_sync.web.deferred import Store
            from mcp_input_sync.web.redis_broker import RedisBroker


            class Incomplete:
                def park(self, pending: Any, *, model: str = "human") -> None: ...


            def stores(redis_client: Any) -> list[Store]:
                memory: Store = PendingInputBroker()
                shared: Store = RedisBroker(redis_client)
                wrong: Store = Incomplete()  # type: ignore[assignment]
                return [memory, shared, wrong]
            """
        )
    )
    # --strict warns of an unused ignore: the last assignment must be refused for the run to pass
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.10", str(sample)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


# ---------------------------------------------------------------------------- the driver uses the protocol only


class OnlyTheProtocol:
    """Forwards the members of :class:`Store` to a store, and nothing else."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.used: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name not in STORE_METHODS:
            raise AttributeError(f"the driver used {name!r}, which Store does not declare")
        self.used.add(name)
        return getattr(self._store, name)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer(era="modern")

    @server.tool
    def greet(call: ToolCall) -> str:
        answer = call.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
        return f"Hello {answer['content']['name']}"

    yield server
    server.close()


def test_the_driver_needs_nothing_but_the_protocol(fake: FakeServer) -> None:
    broker = PendingInputBroker()
    narrow = OnlyTheProtocol(broker)
    broker.deferred = DeferredCalls(narrow)
    with fake.client(handler=WebHandler(broker)) as client:
        state = broker.start_call(client, "greet", {}, "alice")
        assert broker.answer(state.inputs[0].id, "alice", {"action": "accept", "content": {"name": "Ada"}}) == {}
        done = broker.result(state.id, "alice")
    assert done.status == "complete" and done.result is not None
    assert done.result["content"][0]["text"] == "Hello Ada"
    assert narrow.used == {"answer_of", "claim_round", "get", "get_call", "park", "put_call", "withdraw"}


# ---------------------------------------------------------------------------- modules


def test_the_public_names_are_the_packages_and_the_broker_module_holds_only_the_store() -> None:
    assert broker_module.__all__ == ["PendingInputBroker"]
    assert web.PendingInputBroker is broker_module.PendingInputBroker
    # no copies of the other modules' names: import them from mcp_input_sync.web or their own module
    for name in ("CallState", "WebHandler", "WebElicitationHandler", "field_errors", "POLL", "SAMPLING_REJECTED", "NON_FIELD"):
        assert not hasattr(broker_module, name), name


def _web_imports(path: Path) -> set[str]:
    """The web modules ``path`` imports, type-only imports included (relative imports only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is not None:
                names.add(node.module.split(".")[0])
            else:
                names.update(alias.name for alias in node.names)
    return names


def test_the_web_modules_import_no_circle() -> None:
    graph = {path.stem: _web_imports(path) & {p.stem for p in WEB.glob("*.py")} for path in WEB.glob("*.py")}
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join(trail + (name,))
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, trail + (name,))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
    assert graph["pending"] == set() and graph["deferred"] == {"pending"}


APPLICATIONS = sorted(WEB.glob("*.py")) + sorted((WEB / "django").glob("*.py")) + [ROOT / "mcp_input_sync" / "terminal.py"]


@pytest.mark.parametrize("path", APPLICATIONS, ids=lambda p: str(p.relative_to(ROOT / "mcp_input_sync")))
def test_applications_use_public_modules_the_pure_core_and_a_clients_public_names_only(path: Path) -> None:
    private = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            parts = node.module.split(".")
            if node.level == 0:
                if parts[0] != "mcp_input_sync":
                    continue
                parts = parts[1:]
            if parts and parts[0].startswith("_") and parts[0] != "_protocol" and not (path.name == "terminal.py" and parts[0] == "_terminal_parts"):
                private.add(node.module)  # (the terminal's own stateless parts are an application module too)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "client" and node.attr.startswith("_"):
            private.add(f"client.{node.attr}")
    assert private == set()
