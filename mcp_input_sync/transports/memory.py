"""An in-process transport pair, for tests and for servers embedded in the host.

``memory_pair()`` returns the client's :class:`MemoryTransport` and the
server's :class:`MemoryPeer`. The peer is a plain blocking endpoint: a fake
server reads with :meth:`MemoryPeer.recv` (bounded waits) and writes with
:meth:`MemoryPeer.send`.
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any, Optional, Union

from .._protocol import jsonrpc
from .._runtime import RealBudget, start_thread
from .base import ANSWER, OnClose, OnMessage, Outgoing, Transport, TransportClosed

_EOF = None


class MemoryTransport(Transport):
    """The client's side of an in-memory pair.

    It keeps every default of the contract but its ``default_server_id``:
    one reader thread delivers in order, ``info`` is not needed.
    """

    default_server_id = "memory"

    def __init__(self) -> None:
        self._inbox: "queue.SimpleQueue[Optional[bytes]]" = queue.SimpleQueue()
        self.peer: Optional[MemoryPeer] = None
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        def read() -> None:
            while True:
                data = self._inbox.get()
                if data is _EOF:
                    break
                on_message(data)
            if not self._closed:
                on_close(None)

        self._thread = start_thread("reader", read)

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        peer = self.peer
        if self._closed or peer is None or peer.closed:
            raise TransportClosed("memory transport is closed")
        peer._inbox.put(data)

    def close(self, timeout: float) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put(_EOF)
        peer = self.peer
        if peer is not None:
            peer._inbox.put(_EOF)
        if self._thread is not None:
            RealBudget(timeout).join(self._thread)

    def _deliver(self, data: bytes) -> None:
        self._inbox.put(data)


class MemoryPeer:
    """The server's side of an in-memory pair."""

    def __init__(self, transport: MemoryTransport) -> None:
        self._transport = transport
        self._inbox: "queue.SimpleQueue[Optional[bytes]]" = queue.SimpleQueue()
        self.closed = False

    def send(self, message: Union[dict[str, Any], bytes, str]) -> None:
        """Send one message (a dict, or raw bytes/str sent as they are) to the client."""
        if isinstance(message, dict):
            data = jsonrpc.encode(message)
        elif isinstance(message, str):
            data = message.encode("utf-8")
        else:
            data = message
        if not self.closed:
            self._transport._deliver(data)

    def recv(self, timeout: float = 5.0) -> Optional[dict[str, Any]]:
        """The next message from the client, or None at EOF.

        Raises:
            TimeoutError: nothing arrived within ``timeout`` real seconds.
        """
        try:
            # a timeout of 0 asks without waiting: get_nowait never blocks, where get(timeout=0)
            # was seen to block for good on CPython 3.10 (the fuzz tests hung in CI)
            data = self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            raise TimeoutError(f"no message from the client within {timeout} s") from None
        if data is _EOF:
            self.closed = True
            return None
        message: dict[str, Any] = json.loads(data)
        return message

    def close(self) -> None:
        """End the connection from the server's side (the client sees EOF)."""
        if not self.closed:
            self.closed = True
            self._transport._deliver(_EOF)  # type: ignore[arg-type]


def memory_pair() -> tuple[MemoryTransport, MemoryPeer]:
    """A connected (client transport, server peer) pair."""
    transport = MemoryTransport()
    peer = MemoryPeer(transport)
    transport.peer = peer
    return transport, peer
