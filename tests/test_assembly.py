"""The assembly without a client: each step builds from the one before, and the engine only once the era is known.

Against the testing kit's in-memory ``FakeServer``, in both eras: what
``build_core``, ``start_runtime`` and ``connect`` hand each other, that the
era lives in one place, and that every thread they start stops.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest

from mcp_input_sync import _assembly
from mcp_input_sync._era import EraCache
from mcp_input_sync._port import Port
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync.options import Options
from mcp_input_sync.testing import FakeServer


class Parts:
    """One client's parts over a FakeServer, built step by step, stopped by :meth:`stop`."""

    def __init__(self, server: FakeServer, **options: Any) -> None:
        self.opts = Options.parse({"timeout": 5.0, **options})
        self.port = Port(server.transport)
        self.core = _assembly.build_core(self.port, self.opts, "unit", "fake", lambda: True, lambda: None)
        self.runtime: Any = None
        self.engine: Any = None

    def open(self, cache: EraCache) -> Any:
        self.runtime = _assembly.start_runtime(self.core, self.port, self.opts, "unit", "fake")
        self.port.start(self.core.session.on_line, self.core.session.on_transport_closed)
        self.engine, facts = _assembly.connect(self.core, self.runtime, self.port, self.opts, "unit", "fake", cache)
        return facts

    def stop(self) -> None:
        budget = RealBudget(5.0)
        if self.runtime is not None:
            for engine in {id(e): e for e in (self.runtime.legacy, self.engine) if e is not None}.values():
                engine.close(answer=True)
            self.port.close(1.0)
            self.runtime.desk.close()
            self.runtime.watchdog.stop(budget)
            self.runtime.pool.shutdown(budget)
        self.core.pump.stop(budget)


@pytest.fixture
def no_leaks() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    budget = RealBudget(5.0)
    assert budget.wait_until(lambda: not (set(threading.enumerate()) - before), 5.0, step=0.01), set(threading.enumerate()) - before


def test_the_core_starts_nothing_and_the_router_exists_before_the_session(no_leaks: None) -> None:
    server = FakeServer()
    before = set(threading.enumerate())
    parts = Parts(server)
    core = parts.core
    assert set(threading.enumerate()) == before
    assert core.session.calls is core.router.calls  # one table, built before both
    assert core.era.name is None and core.session.receiver is None
    assert server.received == []
    parts.stop()
    server.close()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_connect_builds_the_engine_of_the_negotiated_era_and_the_era_lives_in_one_place(era: str, no_leaks: None) -> None:
    server = FakeServer(era, instructions="hello")
    parts = Parts(server)
    try:
        facts = parts.open(EraCache())
        engine: Any = parts.engine
        core = parts.core
        assert facts.era == engine.era == core.era.name == era
        assert core.session.receiver is parts.engine  # the era's engine hears the server
        assert (engine is parts.runtime.legacy) is (era == "legacy")
        assert facts.instructions == "hello" and facts.server_capabilities is not None
        def methods() -> list[Any]:
            return [m.get("method") for m in server.received if "method" in m]

        if era == "legacy":  # sent by the engine once started, after the handshake returned
            assert RealBudget(5.0).wait_until(lambda: "notifications/initialized" in methods(), 5.0, step=0.01)
            assert methods()[:2] == ["initialize", "notifications/initialized"]
            assert engine.version == facts.version
        else:
            assert "notifications/initialized" not in methods()
            assert engine.version == facts.version == engine.stamp.version
    finally:
        parts.stop()
        server.close()


def test_the_cache_passed_in_is_the_one_remembered_in(no_leaks: None) -> None:
    server = FakeServer()
    server.transport.era_key = "memory:unit"  # what an HTTP URL or a stdio command line gives
    cache = EraCache()
    parts = Parts(server)
    try:
        parts.open(cache)
        assert cache.endpoints() == {("legacy", "memory:unit"): ("legacy", parts.engine.version)}
    finally:
        parts.stop()
        server.close()
