"""The transport contract."""

from __future__ import annotations

from typing import Callable, Optional, Protocol

#: Called on a reader thread with one raw message (a line, no newline needed), and,
#: from transports that know it, the id of the request whose response stream carried it.
OnMessage = Callable[..., None]
#: Called once when the connection ends; the argument says why (None: clean EOF).
OnClose = Callable[[Optional[BaseException]], None]


class Oversized(bytes):
    """Handed to ``on_message`` instead of a message longer than the limit.

    It holds the message's first bytes (enough to find its id) and ``size``,
    how many bytes the message had at least; the rest was read and dropped.
    """

    size: int = 0


class TransportClosed(ConnectionError):
    """The transport cannot send: it is closed or broken."""


class Transport(Protocol):
    """What the client needs from a transport.

    ``start`` opens the connection and starts the threads that read it; each
    inbound message goes to ``on_message`` on one reader thread, in order;
    ``on_close`` runs once when the connection ends for any reason other than
    :meth:`close`. ``send`` is thread-safe and raises :class:`TransportClosed`
    when it cannot write. ``close`` ends the connection within ``timeout``
    real seconds and joins the transport's threads.

    Optional features (a transport offers any of them by having the name; the
    client reads them once, through ``mcp_input_sync._port.Port``, and nowhere
    else; see docs/architecture.md#the-port):

    - ``set_server_id(server_id)``: the client's ``server_id`` (stdio names
      the logger of the server's stderr after it);
    - ``set_limits(limits)``: the client's ``limits`` option;
    - ``on_lost``: an attribute the client sets to ``callback(request_id,
      error)``, called when a request's response can no longer come;
    - ``origin``: the server's ``scheme://host[:port]``, for URL checks and
      the per-origin era cache;
    - ``ties_by_stream``: True when a server request is tied to the call whose
      response stream carried it (HTTP);
    - ``slow_answers``: True when each answer costs a round trip (HTTP);
    - ``send_later(data) -> bool`` with ``flush()``: hold an answer back and
      write the held answers together (stdio); both or neither;
    - ``restart(timeout)``: start the server afresh (the era probe's one
      restart of an old stdio server);
    - ``set_protocol(era, version)``: the handshake's decision (HTTP headers);
    - ``cancel_request(request_id) -> bool``: cancel by closing the request's
      response stream (modern HTTP);
    - ``tool_headers``: a dict the client fills with each tool's
      ``x-mcp-header`` map (modern HTTP);
    - ``stderr_tail``: a read-only string, the server's last lines of
      stderr, cleaned and bounded in lines and characters (stdio), with
      ``exit_status``: the server's exit status once it ended, else None;
      the client quotes both when the server ends the connection.
    """

    #: The ``server_id`` used when the client's option leaves it unset.
    default_server_id: str

    def start(self, on_message: OnMessage, on_close: OnClose) -> None: ...

    def send(self, data: bytes) -> None: ...

    def close(self, timeout: float) -> None: ...
