"""The port alone: the core's one view of a transport (docs/architecture.md#the-port).

What it promises:

* the declared attributes of the contract (``transports/base.py``) are read
  once, when the port is built, and never again: a transport's later change
  does not reach the core halfway through a session; ``era_key`` is read
  when the handshake asks for it (stdio hashes its command line only then);
* ``answer(data)`` writes ``data`` described as ``ANSWER``;
* ``send_later`` and ``flush`` are None unless the transport holds answers
  back, and then are the transport's own;
* ``configure`` hands the transport one ``Setup`` with what it was given;
* everything else (``start``, ``close``, ``set_protocol``,
  ``cancel_request``, ``restart``, ``last_words``) reaches the transport as
  it is, and what the transport raises reaches the caller;
* the library's transports are seen as they declare themselves;
* ``TransportClosed`` is the contract's own, re-exported for the engines.

A transport keeping every default is tests/test_transport_contract.py's.
"""

from __future__ import annotations

import collections
from typing import Any, Optional

import pytest

from mcp_input_sync import _port
from mcp_input_sync._port import Port
from mcp_input_sync.transports import base
from mcp_input_sync.transports.base import ANSWER, OnClose, OnMessage, Outgoing, Setup, Transport, TransportClosed
from mcp_input_sync.transports.http import HttpTransport
from mcp_input_sync.transports.memory import MemoryTransport
from mcp_input_sync.transports.stdio import StdioTransport

#: The attributes the contract declares, each read once by the port.
DECLARED = ("default_server_id", "origin", "ties_by_stream", "slow_answers", "mirrors_tool_headers", "holding", "restarter")


class Counted(Transport):
    """A transport declaring every feature (``holding`` and ``restarter``: itself), counting each read of a declared
    attribute or capability and each call."""

    def __init__(self, holds: bool = True) -> None:
        self.reads: collections.Counter[str] = collections.Counter()
        self.values: dict[str, Any] = {
            "default_server_id": "counted",
            "origin": "https://counted.example",
            "era_key": "counted:1",
            "ties_by_stream": True,
            "slow_answers": True,
            "holding": self if holds else None,
            "mirrors_tool_headers": True,
            "restarter": self,
        }
        self.calls: list[tuple[str, Any]] = []
        self.refuse: Optional[BaseException] = None

    # the declared attributes, each read counted
    def _read(self, name: str) -> Any:
        self.reads[name] += 1
        return self.values[name]

    default_server_id = property(lambda self: self._read("default_server_id"))
    origin = property(lambda self: self._read("origin"))
    era_key = property(lambda self: self._read("era_key"))
    ties_by_stream = property(lambda self: self._read("ties_by_stream"))
    slow_answers = property(lambda self: self._read("slow_answers"))
    mirrors_tool_headers = property(lambda self: self._read("mirrors_tool_headers"))
    holding = property(lambda self: self._read("holding"))  # type: ignore[assignment]
    restarter = property(lambda self: self._read("restarter"))  # type: ignore[assignment]

    # the methods, each call recorded
    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self.calls.append(("start", (on_message, on_close)))

    def send(self, data: bytes, info: Outgoing) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.calls.append(("send", (data, info)))

    def close(self, timeout: float) -> None:
        self.calls.append(("close", timeout))

    def configure(self, setup: Setup) -> None:
        self.calls.append(("configure", setup))

    def set_protocol(self, era: str, version: str) -> None:
        self.calls.append(("set_protocol", (era, version)))

    def cancel_request(self, request_id: Any) -> bool:
        self.calls.append(("cancel_request", request_id))
        return True

    def send_later(self, data: bytes) -> bool:
        self.calls.append(("send_later", data))
        return True

    def flush(self) -> None:
        self.calls.append(("flush", None))

    def restart(self, timeout: float) -> None:
        self.calls.append(("restart", timeout))

    def last_words(self) -> tuple[Optional[int], str]:
        self.calls.append(("last_words", None))
        return 2, "fatal: no key"


def test_each_declared_attribute_is_read_once_when_the_port_is_built() -> None:
    transport = Counted()
    port = Port(transport)
    assert {name: transport.reads[name] for name in DECLARED} == dict.fromkeys(DECLARED, 1)
    for _ in range(3):  # what the core reads many times, it reads from the port
        assert (port.default_server_id, port.origin) == ("counted", "https://counted.example")
        assert (port.ties_by_stream, port.slow_answers, port.mirrors_tool_headers) == (True, True, True)
        assert port.holding is transport and port.restarter is transport
    assert {name: transport.reads[name] for name in DECLARED} == dict.fromkeys(DECLARED, 1)
    assert transport.reads["era_key"] == 0  # not read until asked


def test_a_later_change_of_the_transport_does_not_reach_the_port() -> None:
    transport = Counted()
    port = Port(transport)
    transport.values.update(ties_by_stream=False, slow_answers=False, restarter=None, origin=None, holding=None)
    assert (port.ties_by_stream, port.slow_answers, port.origin) == (True, True, "https://counted.example")
    assert port.holding is transport and port.restarter is transport  # decided once


def test_the_era_key_is_read_when_asked() -> None:
    transport = Counted()
    port = Port(transport)
    assert port.era_key() == "counted:1" and transport.reads["era_key"] == 1
    transport.values["era_key"] = "counted:2"  # a transport may compute it late (stdio hashes its command line)
    assert port.era_key() == "counted:2"


def test_an_answer_is_written_described_as_an_answer() -> None:
    transport = Counted()
    port = Port(transport)
    port.answer(b'{"jsonrpc":"2.0","id":"s1","result":{}}\n')
    assert transport.calls == [("send", (b'{"jsonrpc":"2.0","id":"s1","result":{}}\n', ANSWER))]
    assert ANSWER == Outgoing() and not ANSWER.expects_answer


def test_send_writes_a_message_with_what_it_is() -> None:
    transport = Counted()
    port = Port(transport)
    info = Outgoing("tools/call", 4, None, "sql")
    port.send(b"{}", info)
    assert transport.calls == [("send", (b"{}", info))]


def test_what_the_transport_raises_reaches_the_caller() -> None:
    transport = Counted()
    port = Port(transport)
    transport.refuse = TransportClosed("gone")
    with pytest.raises(TransportClosed):
        port.answer(b"{}")
    with pytest.raises(TransportClosed):
        port.send(b"{}", Outgoing("ping", 1))


def test_held_answers_are_offered_only_by_a_transport_that_holds_them() -> None:
    holding = Counted(holds=True)
    port = Port(holding)
    assert port.holding is not None
    assert port.holding.send_later(b"a") is True
    port.holding.flush()
    assert holding.calls == [("send_later", b"a"), ("flush", None)]
    at_once = Counted(holds=False)
    port = Port(at_once)
    assert port.holding is None  # the engine writes each answer at once
    assert at_once.calls == []


def test_configure_hands_the_transport_one_setup() -> None:
    transport = Counted()
    port = Port(transport)
    lost: list[tuple[Any, BaseException]] = []

    def on_lost(request_id: Any, error: BaseException) -> None:
        lost.append((request_id, error))

    limits = {"message_bytes": 1 << 20, "sse_line_bytes": 1 << 16}
    port.configure("weather", limits, on_lost)
    [(name, setup)] = transport.calls
    assert name == "configure" and isinstance(setup, Setup)
    assert (setup.server_id, setup.limits, setup.on_lost) == ("weather", limits, on_lost)


def test_the_other_methods_reach_the_transport_as_they_are() -> None:
    transport = Counted()
    port = Port(transport)

    def on_message(*message: Any) -> None:
        pass

    def on_close(error: Optional[BaseException]) -> None:
        pass

    port.start(on_message, on_close)
    port.set_protocol("modern", "2026-07-28")
    assert port.cancel_request(7) is True
    assert port.restarter is not None
    port.restarter.restart(2.5)
    assert port.last_words() == (2, "fatal: no key")
    port.close(1.5)
    assert transport.calls == [
        ("start", (on_message, on_close)),
        ("set_protocol", ("modern", "2026-07-28")),
        ("cancel_request", 7),
        ("restart", 2.5),
        ("last_words", None),
        ("close", 1.5),
    ]


def test_the_library_transports_are_seen_as_they_declare_themselves() -> None:
    stdio = Port(StdioTransport(["python", "weather_server.py"]))  # nothing starts until start()
    assert (stdio.ties_by_stream, stdio.slow_answers, stdio.mirrors_tool_headers) == (False, False, False)
    assert stdio.transport is stdio.holding is stdio.relief is stdio.hand_off is stdio.restarter  # every capability: stdio itself
    assert stdio.default_server_id == "weather_server" and stdio.origin is None
    key = stdio.era_key()
    assert key is not None and key.startswith("stdio:") and stdio.era_key() == key

    http = Port(HttpTransport("https://mcp.example.com/mcp"))
    assert (http.ties_by_stream, http.slow_answers, http.mirrors_tool_headers) == (True, True, True)
    assert (http.holding, http.relief, http.hand_off, http.restarter) == (None, None, None, None)
    assert http.origin == "https://mcp.example.com" and http.era_key() == "https://mcp.example.com/mcp"

    memory = Port(MemoryTransport())
    assert (memory.default_server_id, memory.holding, memory.restarter, memory.era_key()) == ("memory", None, None, None)


def test_transport_closed_is_the_contracts_own() -> None:
    assert _port.TransportClosed is base.TransportClosed
    assert "TransportClosed" in _port.__all__
