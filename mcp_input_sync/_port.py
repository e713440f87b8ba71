"""The port: the core's one view of a transport.

The transport contract (:mod:`mcp_input_sync.transports.base`) declares
every optional feature with a default, so nothing here probes a transport.
The port stays as the one adapter: the engines may not import a transport
module (docs/architecture.md#import-rules), so the port is the type they,
the session and the handshake take, and it says what they need in the
core's terms. An answer goes out described once (:meth:`Port.answer`);
the transport's capabilities (``holding``, ``relief``, ``hand_off``,
``restarter``) are read once, each an object or None; ``configure`` builds
the transport's ``Setup``. The contract's
:class:`TransportClosed` and ``SESSION_READY`` (``Outgoing.step``) are re-exported for the engines.
See docs/architecture.md#the-port.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, Optional

from .transports.base import (
    ANSWER, SESSION_READY, Holding, OnClose, OnLost, OnMessage, OnRetry, Outgoing, ReadingHandOff, Relief, Restarter, Retry, Setup, Track, Transport, TransportClosed,
)

__all__ = ["Port", "SESSION_READY", "TransportClosed"]


class Port:
    """A transport seen from the core: its declared facts read once, its methods in the core's terms."""

    __slots__ = (
        "transport",
        "send",
        "default_server_id",
        "origin",
        "ties_by_stream",
        "slow_answers",
        "mirrors_tool_headers",
        "needs_deadlines",
        "holding",
        "relief",
        "hand_off",
        "restarter",
    )

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        #: Write one encoded message with what it is (thread-safe; raises ``TransportClosed``).
        self.send: Callable[[bytes, Outgoing], None] = transport.send
        self.default_server_id = transport.default_server_id
        #: The server's ``scheme://host[:port]`` (HTTP), else None.
        self.origin: Optional[str] = transport.origin
        #: HTTP: a server request is tied to the call whose response stream carried it.
        self.ties_by_stream = transport.ties_by_stream
        #: HTTP: each answer costs a round trip, so many workers should write at once.
        self.slow_answers = transport.slow_answers
        #: HTTP: ``x-mcp-header`` arguments go as headers (``Outgoing.header_args``).
        self.mirrors_tool_headers = transport.mirrors_tool_headers
        #: HTTP: each request goes with its deadline (``Outgoing.deadline``).
        self.needs_deadlines = transport.needs_deadlines
        #: The transport's capabilities, each an object or None (transports/base.py), read once.
        #: stdio: answers held back and written together (``send_later``, ``flush``).
        self.holding: Optional[Holding] = transport.holding
        #: stdio: a new reader for one busy in a slow callback (``relieve``).
        self.relief: Optional[Relief] = transport.relief
        #: stdio: the reading handed to a caller reading its own rounds (``offer_reading``, ``read_here``, ``release_reading``).
        self.hand_off: Optional[ReadingHandOff] = transport.hand_off
        #: stdio: the server started afresh (``restart``).
        self.restarter: Optional[Restarter] = transport.restarter

    def configure(
        self, server_id: str, limits: Mapping[str, int], on_lost: OnLost, track: Optional[Track] = None, retry: Optional[Retry] = None,
        on_retry: Optional[OnRetry] = None,
    ) -> None:
        """Tell the transport the client's ``server_id``, its ``limits``, whom to tell of lost requests, its deadline sweep,
        its ``retry`` policy and whom to tell of each request sent again."""
        self.transport.configure(Setup(server_id, limits, on_lost, track, retry, on_retry))

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self.transport.start(on_message, on_close)

    def close(self, timeout: float) -> None:
        self.transport.close(timeout)

    def answer(self, data: bytes) -> None:
        """Write an answer to a server request (raises ``TransportClosed``)."""
        self.send(data, ANSWER)

    def set_protocol(self, era: str, version: str) -> None:
        """The handshake's decision, told once per decision before anything more is sent."""
        self.transport.set_protocol(era, version)

    def cancel_request(self, request_id: Any) -> bool:
        """The client gave the request up: the transport releases its response stream; True when that cancelled it (modern HTTP)."""
        return self.transport.cancel_request(request_id)

    def last_words(self) -> tuple[Optional[int], str]:
        """stdio: the server's exit status (None while it runs) and its last lines of stderr, cleaned.

        ``(None, "")`` for a transport without them.
        """
        return self.transport.last_words()

    def era_key(self) -> Optional[str]:
        """What an era learnt is remembered by, this process: the HTTP endpoint, or a stdio command line."""
        return self.transport.era_key
