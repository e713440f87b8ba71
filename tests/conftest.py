"""Shared fixtures: no library thread may outlive its test."""

from __future__ import annotations

import signal
import threading
from typing import Iterator

import pytest

from mcp_input_sync.testing import FakeServer

from .harness import Peer, recorded_server, schema_errors
from .tiny_http import TinyServer


def library_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-") and t.is_alive()]


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves a library thread running (bounded grace of 3 s)."""
    before = set(library_threads())
    yield
    pause = threading.Event()
    for _ in range(150):
        leaked = [t for t in library_threads() if t not in before]
        if not leaked:
            return
        pause.wait(0.02)
    pytest.fail(f"library threads left running: {[t.name for t in leaked]}")


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C reaches the test: a process started in the background by a shell ignores SIGINT, and then
    ``_thread.interrupt_main()`` does nothing; the test gets Python's own handler back while it runs."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C reaches the main thread only")
    before = signal.getsignal(signal.SIGINT)
    if before is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if before is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    """The public kit's legacy fake (waits bounded at 10 s); what the client sends must match the schema."""
    server = recorded_server(timeout=10.0)
    yield server
    server.close()
    assert schema_errors(server) == []


@pytest.fixture(params=["memory", "sdk"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    """The same test over the kit's in-memory fake and over stdio to the official SDK's server."""

    p = Peer(request.param)
    try:
        yield p
    finally:
        p.close()
    assert p.recorder.schema_errors == []


@pytest.fixture
def tiny() -> Iterator[list[TinyServer]]:
    """Scripted HTTP endpoints (tests/tiny_http.py) a test starts; each is closed after it."""
    servers: list[TinyServer] = []
    yield servers
    for server in servers:
        server.close()
