"""The port: the one place that asks a transport what it can do.

A transport must offer ``start``, ``send``, ``close`` and ``default_server_id``
(:class:`~mcp_input_sync.transports.base.Transport`). Everything else is an
optional feature, listed in that module's docstring; the port reads each
once, when it is built, and offers it as a typed method or attribute with a
no-op default, so no other module probes a transport with ``getattr``.
See docs/architecture.md#the-port.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping, Optional

from .transports.base import OnClose, OnMessage, Transport, TransportClosed

#: ``on_lost(request_id, error)``: a request's response can no longer come.
__all__ = ["OnLost", "Port", "TransportClosed"]

OnLost = Callable[[Any, BaseException], None]


class Port:
    """A transport with its optional features read once."""

    __slots__ = (
        "transport",
        "send",
        "default_server_id",
        "origin",
        "ties_by_stream",
        "slow_answers",
        "send_later",
        "flush",
        "_restart",
        "_set_protocol",
        "_cancel_request",
        "_tool_headers",
        "_takes_on_lost",
        "_says_last_words",
    )

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        #: Write one encoded message (thread-safe; raises ``TransportClosed``).
        self.send: Callable[[bytes], None] = transport.send
        self.default_server_id = str(getattr(transport, "default_server_id", "server"))
        origin = getattr(transport, "origin", None)
        #: The server's ``scheme://host[:port]`` (HTTP), else None.
        self.origin: Optional[str] = origin if isinstance(origin, str) else None
        #: HTTP: a server request is tied to the call whose response stream carried it.
        self.ties_by_stream = bool(getattr(transport, "ties_by_stream", False))
        #: HTTP: each answer costs a round trip, so many workers should write at once.
        self.slow_answers = bool(getattr(transport, "slow_answers", False))
        send_later = getattr(transport, "send_later", None)
        flush = getattr(transport, "flush", None)
        both = send_later is not None and flush is not None
        #: stdio: hold an answer back to write it with the next one (None: not offered).
        self.send_later: Optional[Callable[[bytes], bool]] = send_later if both else None
        #: stdio: write the answers held back (None: not offered).
        self.flush: Optional[Callable[[], None]] = flush if both else None
        self._restart: Optional[Callable[[float], None]] = getattr(transport, "restart", None)
        self._set_protocol: Optional[Callable[[str, str], None]] = getattr(transport, "set_protocol", None)
        self._cancel_request: Optional[Callable[[Any], bool]] = getattr(transport, "cancel_request", None)
        table = getattr(transport, "tool_headers", None)
        self._tool_headers: Optional[dict[str, Any]] = table if isinstance(table, dict) else None
        self._takes_on_lost = hasattr(transport, "on_lost")
        self._says_last_words = hasattr(transport, "stderr_tail")

    # ------------------------------------------------------------------ the contract

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self.transport.start(on_message, on_close)

    def close(self, timeout: float) -> None:
        self.transport.close(timeout)

    # ------------------------------------------------------------------ optional features

    def configure(self, server_id: str, limits: Mapping[str, int], on_lost: OnLost) -> None:
        """Tell the transport the client's ``server_id``, its ``limits`` and whom to tell of lost requests."""
        set_server_id = getattr(self.transport, "set_server_id", None)
        if set_server_id is not None:
            set_server_id(server_id)
        set_limits = getattr(self.transport, "set_limits", None)
        if set_limits is not None:
            set_limits(limits)
        if self._takes_on_lost:
            setattr(self.transport, "on_lost", on_lost)

    @property
    def can_restart(self) -> bool:
        """True when the transport can start its server afresh (stdio)."""
        return self._restart is not None

    def restart(self, timeout: float) -> None:
        """Stop the server and start a fresh one (only when :attr:`can_restart`)."""
        assert self._restart is not None
        self._restart(timeout)

    def set_protocol(self, era: str, version: str) -> None:
        """The handshake's decision, for transports that send the version in headers (HTTP)."""
        if self._set_protocol is not None:
            self._set_protocol(era, version)

    def cancel_request(self, request_id: Any) -> bool:
        """Cancel a request by closing its response stream (modern HTTP); False when not applicable."""
        return self._cancel_request is not None and bool(self._cancel_request(request_id))

    @property
    def mirrors_tool_headers(self) -> bool:
        """True when the transport sends ``x-mcp-header`` arguments as headers (HTTP)."""
        return self._tool_headers is not None

    def set_tool_headers(self, tool: str, headers: Mapping[Any, str]) -> None:
        """Remember one tool's argument path -> header name map (no-op without the feature)."""
        if self._tool_headers is not None:
            self._tool_headers[tool] = dict(headers)

    def last_words(self) -> tuple[Optional[int], str]:
        """stdio: the server's exit status (None while it runs) and its last lines of stderr, cleaned.

        ``(None, "")`` for a transport without the feature.
        """
        if not self._says_last_words:
            return None, ""
        status = getattr(self.transport, "exit_status", None)
        tail = getattr(self.transport, "stderr_tail", "")
        return (status if type(status) is int else None), (tail if isinstance(tail, str) else "")

    def era_key(self) -> Optional[str]:
        """What an era learnt is remembered by, this process: the HTTP endpoint, or a stdio command line."""
        key = getattr(self.transport, "era_key", None)
        command = getattr(self.transport, "command", None)
        if key is None and isinstance(command, list) and self.can_restart:  # stdio: argv, cwd and env, hashed
            blob = repr((command, getattr(self.transport, "cwd", None), sorted((getattr(self.transport, "env", None) or {}).items())))
            key = "stdio:" + hashlib.sha256(blob.encode("utf-8", "replace")).hexdigest()
        return key if isinstance(key, str) else None
