"""Transports: blocking I/O only, no protocol decisions.

A transport moves encoded JSON-RPC lines between the client and one server.
See :class:`~mcp_input_sync.transports.base.Transport` for the contract.
"""

from __future__ import annotations

from .base import HttpStatusError, Outgoing, Setup, Transport, TransportAuthError, TransportClosed
from .memory import MemoryPeer, MemoryTransport, memory_pair
from .stdio import StdioTransport

__all__ = [
    "HttpStatusError",
    "MemoryPeer",
    "MemoryTransport",
    "Outgoing",
    "Setup",
    "StdioTransport",
    "Transport",
    "TransportAuthError",
    "TransportClosed",
    "memory_pair",
]
