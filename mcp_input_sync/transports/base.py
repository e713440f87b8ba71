"""The transport contract: everything a transport needs to know, in one file.

A transport moves encoded JSON-RPC messages between the client and one
server, and decides nothing about the protocol. To write one (a WebSocket,
an in-process bridge), subclass :class:`Transport` and implement three
methods:

- ``start(on_message, on_close)``: open the connection and start the
  threads that read it. Hand each message read to ``on_message(data)``
  (bytes, one message, a trailing newline allowed). ``on_close(error)``
  runs at most once, when the connection ends for any reason other than
  ``close`` (``None``: a clean end of stream); a transport with no
  connection to lose (HTTP: each request stands alone) never calls it and
  reports a request that failed through ``on_lost``.
- ``send(data, info)``: write one encoded message (``data`` already ends
  with a newline). It is called from any thread, at the same time, so it
  must be thread-safe. ``info`` is an
  :class:`Outgoing`: what the message is, told by the code that built it
  (method, request id, protocol version, the ``Mcp-Name`` value, the
  ``x-mcp-header`` arguments, the deadline, whether it is bounded). Never
  decode ``data`` nor test the method to find these out. A
  transport that needs none of it ignores ``info``. Raise
  :class:`TransportClosed` when the message cannot be written.
- ``close(timeout)``: end the connection within ``timeout`` real seconds
  and join the transport's threads; ``on_close`` is not called. It may be
  called on the transport's own reader thread (from inside ``on_close``,
  when the client shuts down because the connection ended): never join
  the current thread.

Threads. Messages read from one stream (a pipe, one response body, one
event stream) go to ``on_message`` in the order read, on one thread. A
transport with one stream (stdio, memory) therefore delivers everything in
order, one thread at a time (stdio's reader, a new reader that relieved it,
or a caller it handed the reading to). A transport with several streams may deliver
from several threads at once, in no order between streams: HTTP does, from
the thread of every POST with a JSON answer, every SSE stream and the GET
stream. The client is safe under both: its reader takes any message on any
thread. ``on_lost`` (below) may run on any thread.

Re-entrance. ``on_message`` may call ``send`` on the same thread (a
``ping`` answered at once, a refusal), so never hold a lock ``send`` takes
while calling ``on_message``; and ``send`` may call ``on_message`` before
it returns (HTTP hands a JSON answer on from the sending thread).

The client calls, in this order: ``configure`` once, ``start`` once, then
``send`` and the optional methods from any thread (``set_protocol`` again
when the handshake decides anew), and ``close`` at most once, only after
``start``.
Everything else is optional: a declared attribute or a method whose default
here does the right thing for a transport without the feature. Override
what the transport does differently:

- attributes: ``default_server_id``, ``origin``, ``era_key``,
  ``ties_by_stream``, ``slow_answers``, ``mirrors_tool_headers``,
  ``needs_deadlines``;
- methods: ``configure``, ``set_protocol``, ``cancel_request``,
  ``last_words``, ``cache_identity`` (who a shared response cache files
  results under), ``trace_attributes`` (a request span's attributes), ``fresh`` (a new transport to the same server, for the
  ``reconnect`` option; ``reconnects_by_default`` says whether the option
  is on when left unset);
- capabilities, each a property that is None here and, where the
  transport has the capability, an object offering it (often the
  transport itself): ``holding`` (:class:`Holding`: ``send_later`` and
  ``flush``), ``relief`` (:class:`Relief`: ``relieve``), ``hand_off``
  (:class:`ReadingHandOff`: ``offer_reading``, ``read_here``,
  ``release_reading``) and ``restarter`` (:class:`Restarter`:
  ``restart``). The client asks only a transport that offers one.

Errors the client recognises, all raised from here: :class:`TransportClosed`
(``check`` may name the rule that refused the message, e.g. ``"redirect"``),
:class:`TransportAuthError` (401 or 403: ``ClientError(kind="auth")``),
:class:`HttpStatusError` (a status without a JSON-RPC answer), and
``mcp_input_sync._protocol.limits.LimitExceeded`` for a message over the
client's ``limits``, passed to ``on_lost``. A message over
``limits["message_bytes"]`` that was read and dropped is handed on as an
:class:`Oversized` (its first bytes), so the client can answer it.

``mcp_input_sync.transports.memory`` is the smallest complete example.
"""

# No ``from __future__ import annotations`` in this module: with it, each NamedTuple
# below would compile its string annotations at import, some 200 KB for every client.
import abc
import os
import threading
from typing import Any, Callable, Mapping, NamedTuple, Optional, Protocol

from .._protocol.jsonrpc import RequestId
from .._protocol.retry import Retry as Retry  # re-exported: the port names it

#: ``on_message(data)``, or ``on_message(data, stream)`` from a transport that
#: ties by stream: ``stream`` is the id of the request whose response stream
#: carried the message (None for a stream of no request). A transport that had
#: to decode a message itself (HTTP does, to tell a response from the rest)
#: hands it on as a :class:`Decoded`, so the client does not decode it again.
OnMessage = Callable[..., None]
#: Called once when the connection ends; the argument says why (None: clean end of stream).
OnClose = Callable[[Optional[BaseException]], None]
#: ``on_lost(request_id, error)``: the response to that request can no longer come
#: (its stream broke, or broke a limit); from any thread.
OnLost = Callable[[Any, BaseException], None]
#: ``Setup.track``: (deadline, expire, subject) -> a handle with ``cancel()``.
Track = Callable[[float, Callable[[Any], object], Any], Any]
#: ``on_retry(request_id, reason, attempt)``: a request is sent again (the ``retry`` option).
OnRetry = Callable[[Any, str, int], None]


class Oversized(bytes):
    """Handed to ``on_message`` instead of a message longer than the limit.

    It holds the message's first bytes (enough to find its id) and ``size``,
    how many bytes the message had at least; the rest was read and dropped.
    """

    size: int = 0


class Decoded(bytes):
    """A message the transport decoded already: ``message`` is what ``jsonrpc.decode`` gave for these bytes."""

    message: Any = None

    @classmethod
    def of(cls, data: bytes, message: Any) -> "Decoded":
        """``data`` with what decoding it gave: the client's reader takes it as it is."""
        out = cls(data)
        out.message = message
        return out


#: ``TransportClosed.check`` when no connection to the server could be made: the message never left.
UNREACHABLE = "unreachable"


class TransportClosed(ConnectionError):
    """The transport cannot send: it is closed or broken.

    ``check`` names the rule that refused the message, when one did (the
    client's ``ClientError`` keeps it), or :data:`UNREACHABLE` when no
    connection could be made; None otherwise.
    """

    check: Optional[str] = None


class TransportAuthError(TransportClosed):
    """The server answered 401 or 403; ``status`` and ``headers`` say more, ``check`` names the step that failed."""

    def __init__(self, status: int, headers: Mapping[str, str], message: Optional[str] = None, check: Optional[str] = None) -> None:
        super().__init__(message or f"HTTP {status}: not authorised")
        self.status = status
        self.headers = dict(headers)
        self.check = check


class HttpStatusError(TransportClosed):
    """The server answered a request with an HTTP status and no JSON-RPC answer; ``status`` says which,
    ``retry_after`` the seconds its ``Retry-After`` asked for (None: none)."""

    def __init__(self, status: int, url: str, why: str = "without a JSON-RPC answer", retry_after: Optional[float] = None) -> None:
        super().__init__(f"{url} answered HTTP {status} {why}")
        self.status = status
        self.retry_after = retry_after


class Outgoing(NamedTuple):
    """What one outgoing message is, told by the code that built it (immutable).

    Attributes:
        method: the method of a request or notification; None for an answer
            to a server request.
        request_id: the id of a request, whose response the client awaits;
            None for a notification or an answer.
        version: the protocol version the message's ``_meta`` names (a
            2026-07-28 request), else None. HTTP sends it as
            ``MCP-Protocol-Version``, with ``Mcp-Method`` and the two below.
        name: what ``Mcp-Name`` carries: the tool or prompt name, the
            resource URI or the task id; None for other methods.
        header_args: ``(header name, value)`` of each tool argument the
            tool's ``x-mcp-header`` annotations mirror (``Mcp-Param-<name>``),
            values as text, not yet encoded for a header.
        deadline: a request's deadline on the library clock
            (``mcp_input_sync._clock.monotonic``): past it, the caller stops
            waiting for the answer. Set only for a transport whose
            ``needs_deadlines`` is True, and only for a request whose caller
            waits for its answer at once with no cancel event; else None.
        reads_answer: the sending thread will read this request's answer
            itself if the transport offered it the reading (a 2026-07-28
            round's retry over stdio); any other request a reading thread
            sends gives the reading back first, so its answer is read.
        bounded: a slow server must not hold the sender: a request but the
            handshake's, and the ``notifications/cancelled`` of a call given
            up. HTTP posts it on the caller's thread aborted at ``deadline``
            (when set), else on a thread of its own, a failure told to
            ``on_lost``. False (the handshake's requests, other notifications,
            answers): the sending thread posts it, a failure raised from ``send``.
        step: the handshake step the message is: :data:`NEW_SESSION` (an
            ``initialize``: a session begins; HTTP forgets the old session
            id, takes the one the answer names and keeps the request to
            begin again after a 404) or :data:`SESSION_READY` (the
            ``notifications/initialized``: HTTP opens its GET stream); None
            for every other message.
        idempotent: a ``tools/call`` that may run twice (the tool's
            annotations say ``readOnlyHint`` or ``idempotentHint``, or its
            caller said ``idempotent=True``): HTTP may send it again after a
            failure that may have reached the server. Every other method
            may be sent again anyway; a ``tools/call`` without it never is,
            unless no connection was made or the server answered 429 or 503.
    """

    method: Optional[str] = None
    request_id: Optional[RequestId] = None
    version: Optional[str] = None
    name: Optional[str] = None
    header_args: tuple[tuple[str, str], ...] = ()
    deadline: Optional[float] = None
    reads_answer: bool = False
    bounded: bool = False
    step: Optional[str] = None
    idempotent: bool = False

    @property
    def expects_answer(self) -> bool:
        """True for a request: a response will come (or ``on_lost``)."""
        return self.request_id is not None


#: What the client tells of an answer to a server request (and of a message sent without ``info``).
ANSWER = Outgoing()
#: ``Outgoing.step`` of a request that begins a session (``initialize``).
NEW_SESSION = "new-session"
#: ``Outgoing.step`` of the notification that says the session is ready (``notifications/initialized``).
SESSION_READY = "session-ready"


class Setup(NamedTuple):
    """What the client tells a transport once, before ``start`` (immutable).

    Attributes:
        server_id: the client's ``server_id`` (stdio names the logger of the
            server's stderr after it).
        limits: the client's ``limits`` option (``message_bytes``,
            ``sse_line_bytes``, ...).
        on_lost: called with a request id whose response can no longer come.
            Where the response is read on the thread that sent the request,
            a failure is raised from ``send`` instead; ``on_lost`` is for
            what goes wrong later, on another thread (HTTP: a request posted
            on a thread of its own, a stream that broke, a body over the
            limit).
        track: ``track(at, expire, subject)`` calls ``expire(subject)`` on
            the client's watchdog thread once the library clock passes
            ``at``, unless the returned handle's ``cancel()`` came first (the
            client's deadline sweep, which looks at least every 0.1 s). HTTP
            uses it to abort a request it posts on the caller's thread at the
            request's ``Outgoing.deadline``. None: no sweep is offered.
        retry: the client's ``retry`` option (a ``Retry``: HTTP sends again
            what the server did not act on, docs/http.md#reconnect-and-retry);
            None: nothing is sent twice.
        on_retry: told of each request sent again, with the reason and the
            attempt's number (2 for the first retry): the request's span
            gets an event (docs/telemetry.md). None: nobody listens.
    """

    server_id: str
    limits: Mapping[str, int]
    on_lost: OnLost
    track: Optional[Track] = None
    retry: Optional[Retry] = None
    on_retry: Optional[OnRetry] = None


class Holding(Protocol):
    """A transport's capability to hold answers back and write them together (stdio)."""

    def send_later(self, data: bytes) -> bool:
        """Hold an answer back, to write it with the next write or :meth:`flush`; True when it is the
        first one held (the caller then sees that a flush follows soon)."""

    def flush(self) -> None:
        """Write the answers held back, if any."""


class Relief(Protocol):
    """A transport's capability to hand its reading to a new thread while the reader is busy (stdio).

    Offered only where one thread calls ``on_message`` (never ``send``): the
    client then runs quick callbacks on the reader itself.
    """

    def relieve(self) -> None:
        """Start a new thread that reads on from where the reader is.

        Called from any thread while the reader is inside ``on_message`` (a
        callback there turned out slow). From then on the new thread reads
        and calls ``on_message``; the old one reads nothing more once its
        ``on_message`` returns, and ends. ``close`` joins the newest reader.
        """


class ReadingHandOff(Protocol):
    """A transport's capability to let a caller read for a while (stdio: a 2026-07-28 call reads its rounds)."""

    def offer_reading(self, ident: int) -> None:
        """Reader thread, inside ``on_message``: let the thread ``ident`` read for a while."""

    def read_here(self, done: Callable[[], bool], seconds: float, cancel: Optional[threading.Event] = None) -> bool:
        """Caller thread: read and call ``on_message`` here until ``done()`` (True), or give up (False);
        only the thread the reading was offered to reads."""

    def release_reading(self) -> None:
        """Caller thread: give the reading back, if this thread holds it."""


class Restarter(Protocol):
    """A transport's capability to start its server afresh (stdio)."""

    def restart(self, timeout: float) -> None:
        """Stop the server and start a fresh one, with the callbacks of ``start``."""


class Transport(abc.ABC):
    """The base of every transport; see this module's docstring for the whole contract."""

    #: The ``server_id`` used when the client's option leaves it unset.
    default_server_id: str = "server"
    #: The server's ``scheme://host[:port]`` (HTTP), for URL checks; None when it has none.
    origin: Optional[str] = None
    #: What the client remembers the endpoint's era by, this process (an HTTP URL, a hash
    #: of a stdio command line); None: nothing is remembered.
    era_key: Optional[str] = None
    #: True when a server request is tied to the call whose response stream carried it
    #: (``on_message``'s ``stream``); False: to the only call in flight.
    ties_by_stream: bool = False
    #: True when each answer costs a round trip (HTTP), so the client writes answers from many workers at once.
    slow_answers: bool = False
    #: True when the transport sends ``Outgoing.header_args`` as headers (HTTP): the client
    #: then drops tools with invalid ``x-mcp-header`` annotations and resends a call refused -32020.
    mirrors_tool_headers: bool = False
    #: True when the transport wants each request's deadline (``Outgoing.deadline``):
    #: HTTP posts a request on the caller's thread and aborts it there.
    needs_deadlines: bool = False

    @abc.abstractmethod
    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Open the connection and start reading it."""

    @abc.abstractmethod
    def send(self, data: bytes, info: Outgoing) -> None:
        """Write one encoded message (thread-safe); raise :class:`TransportClosed` when it cannot."""

    @abc.abstractmethod
    def close(self, timeout: float) -> None:
        """End the connection within ``timeout`` real seconds and join the transport's threads."""

    def configure(self, setup: Setup) -> None:
        """Take what the client tells once, before :meth:`start`; by default nothing is kept."""

    def set_protocol(self, era: str, version: str) -> None:
        """The handshake's decision (``era`` is ``"legacy"`` or ``"modern"``), told once per decision,
        before anything more is sent; HTTP sends the version as a header. By default ignored."""

    def cancel_request(self, request_id: RequestId) -> bool:
        """The client gave the request up: release what carries its response (HTTP closes its stream).

        True when that cancelled the request itself (2026-07-28 HTTP). False
        (the default) otherwise: the client then sends ``notifications/cancelled``.
        """
        return False

    # ------------------------------------------------------------------ capabilities: offered or not

    @property
    def holding(self) -> Optional[Holding]:
        """Answers held back and written together (:class:`Holding`; stdio), or None: each answer is written at once."""
        return None

    @property
    def relief(self) -> Optional[Relief]:
        """A new reader for a busy one (:class:`Relief`; stdio), or None: the client runs no callback on a reader."""
        return None

    @property
    def hand_off(self) -> Optional[ReadingHandOff]:
        """The reading handed to a caller for a while (:class:`ReadingHandOff`; stdio), or None."""
        return None

    @property
    def restarter(self) -> Optional[Restarter]:
        """The server started afresh (:class:`Restarter`; stdio), or None."""
        return None

    #: The ``reconnect`` option left unset turns reconnecting on (HTTP) or off (stdio, the default here).
    reconnects_by_default: bool = False

    def fresh(self) -> Optional["Transport"]:
        """A new, unstarted transport to the same server with the same settings (a stdio server is
        started again with the same command, environment and folder), for a client reconnecting
        after its connection broke; None (the default): this transport cannot be made again."""
        return None

    def cache_identity(self) -> tuple[str, str]:
        """The server and the authorization context, as a shared response cache keys them (the ``cache`` option).

        Two transports that return the same pair may share ``"private"``
        results, so the second part must differ for every user. The default
        is a name no other transport has: nothing is shared.
        """
        found: Optional[tuple[str, str]] = self.__dict__.get("_cache_identity")
        if found is None:
            found = self.__dict__.setdefault("_cache_identity", (f"{type(self).__name__}:{os.urandom(16).hex()}", ""))
        return found

    def trace_attributes(self) -> dict[str, Any]:
        """OpenTelemetry attributes of the connection for each request's span (``network.transport``,
        ``server.address``, ``mcp.session.id``, ...; docs/telemetry.md), a new dict each time. The default: none."""
        return {}

    def last_words(self) -> tuple[Optional[int], str]:
        """The server's exit status once it ended (else None) and its last lines of stderr, cleaned
        and bounded ("" when none): the client quotes both when the server ends the connection.
        The default knows neither."""
        return None, ""
