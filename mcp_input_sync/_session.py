"""The session: the client's requests and the reader of every inbound message.

It knows JSON-RPC, not eras: request ids, the call table, writing a request
and waiting for its outcome, abandoning it, the reader's decoding of every
inbound message (malformed lines, limits, the loss of the transport), and
the one mapping of transport and server errors to :class:`ClientError`
(:func:`remote_error`, :func:`transport_error`). What a server request or a
cancellation means is the business of a :class:`Receiver`, the era's engine,
which writes its answers to server requests through the port itself.
See docs/architecture.md#the-session.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping, Optional, Protocol, Union

from . import _clock, reflect
from ._calls import Call, CallTable, ProgressCallback
from ._port import Port
from ._protocol import jsonrpc
from ._protocol.advice import say
from ._protocol.deadlines import MAX_TOTAL, CallClock
from ._protocol.headers import HeaderArgs, routed_name
from ._protocol.jsonrpc import JsonDict, RequestId
from ._protocol.limits import LimitExceeded, json_size, may_be_too_deep, salvage, too_deep
from ._runtime.relay import Relay
from ._stats import Stats
from .errors import ClientError
from .transports.base import UNREACHABLE, Decoded, Outgoing, Oversized, ReadingHandOff, TransportAuthError, TransportClosed

from ._telemetry import LOADED

if TYPE_CHECKING:
    from ._telemetry import Tracing

log = logging.getLogger("mcp_input_sync")

#: Pages a list_* call follows before it gives up.
MAX_LIST_PAGES = 1000

#: The last lines of a stdio server's stderr an error quotes (the transport keeps a few more).
QUOTED_STDERR_LINES = 10

#: Notifications that are part of a request's own handshake, for nobody else.
_SILENT = frozenset({"notifications/subscriptions/acknowledged"})
#: The notification that gives a call up (``Outgoing.bounded``, as a request is).
_GIVE_UP = "notifications/cancelled"

class Stamp(Protocol):
    """``stamp(params) -> params``: what every request carries besides its params (the modern ``_meta``)."""

    @property
    def version(self) -> str:
        """The protocol version the stamp writes into ``_meta`` (the transport is told it with the message)."""

    def __call__(self, params: Optional[JsonDict]) -> Optional[JsonDict]: ...


class Stamped(Protocol):
    """Params stamped already (a 2026-07-28 round's retry, :class:`~mcp_input_sync._protocol.modern.RetryStamp`)."""

    @property
    def version(self) -> str:
        """The version its ``_meta`` carries."""

    @property
    def name(self) -> Optional[str]:
        """Its ``Mcp-Name``, found once per call."""


class Receiver(Protocol):
    """What the reader hands to the era's engine."""

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        """A server request (its id is not checked yet)."""

    def on_cancelled(self, request_id: Any) -> None:
        """``notifications/cancelled`` for ``request_id``."""

    def invalid(self, message: JsonDict) -> None:
        """A message that is neither a request, a notification nor a response."""

    def reject_unreadable(self, request_id: RequestId, code: int, message: str) -> None:
        """A request that could not be read, whose id could (-32700 or -32600)."""

    def answer_failed(self, request_id: RequestId) -> None:
        """Handling a request raised in the library: answer it -32603 if it is the era's to answer."""


def remote_error(error: Any, method: str) -> ClientError:
    """The one mapping of a JSON-RPC error object to ``ClientError("remote")``; the message is sanitised."""
    if type(error) is not dict:
        return ClientError("protocol", f"{method} answered with a malformed error", data=error)
    code = error.get("code")
    message = error.get("message")
    if not isinstance(message, str):
        message = "(no message)"
    return ClientError("remote", reflect.text(message, 4096), code=code if type(code) is int else None, data=error.get("data"))


def raise_hint(limit: str) -> str:
    """What an error over a size limit adds: the option that raises it (in the host's words, ``_protocol.advice``)."""
    return say("raise_limit", limit, limit=limit)


def transport_error(exc: BaseException, what: str, live: bool = True, words: str = "") -> ClientError:
    """The one mapping of a transport failure: ``auth`` for 401/403, ``transport`` while live, else ``closed``.

    A transport error that names a ``check`` (a refused redirect: ``"redirect"``) keeps it;
    ``words`` (:func:`last_words`) end the message of a ``transport`` error.
    """
    if isinstance(exc, TransportAuthError):
        return ClientError("auth", str(exc), data=exc.headers, check=exc.check)
    if isinstance(exc, LimitExceeded):
        return ClientError("protocol", f"{what}: {exc}{raise_hint(exc.limit)}", check="limit")
    if live:
        check = exc.check if isinstance(exc, TransportClosed) else None
        return ClientError("transport", (what if what == str(exc) else f"{what}: {exc}") + words, check=check)
    return ClientError("closed", "the client is closed")


def last_words(status: Optional[int], tail: str) -> str:
    """What an error adds about a server that ended: its exit status, then its last lines of stderr ("" for neither).

    ``"; the server exited with status 2; its stderr ended with:\n  fatal: ..."``:
    at most :data:`QUOTED_STDERR_LINES` lines, each indented by two spaces.
    """
    parts: list[str] = []
    if status is not None and status < 0:
        try:
            name = f" ({signal.Signals(-status).name})"
        except ValueError:
            name = ""
        parts.append(f"the server was killed by signal {-status}{name}")
    elif status is not None:
        parts.append(f"the server exited with status {status}")
    lines = tail.splitlines()[-QUOTED_STDERR_LINES:]
    if lines:
        parts.append("its stderr ended with:\n" + "\n".join("  " + line for line in lines))
    return "".join("; " + part for part in parts)


class _ReadingRounds:
    """:meth:`Session.reading_rounds` over a transport that hands its reading on: this thread's depth, kept
    in the session's ``readers``; the outermost exit gives the reading back."""

    __slots__ = ("_readers", "_hand_off", "_ident")

    def __init__(self, readers: dict[int, int], hand_off: ReadingHandOff) -> None:
        self._readers = readers
        self._hand_off = hand_off
        self._ident = 0

    def __enter__(self) -> None:
        self._ident = ident = threading.get_ident()
        readers = self._readers
        readers[ident] = readers.get(ident, 0) + 1

    def __exit__(self, *exc: object) -> None:
        readers, ident = self._readers, self._ident
        depth = readers[ident] - 1
        if depth:
            readers[ident] = depth
            return
        del readers[ident]
        self._hand_off.release_reading()  # the reading this thread may hold goes back to the reader thread


_NOTHING = contextlib.nullcontext()


class Session:
    """Requests in flight over one port, and the reader of everything the server sends."""

    def __init__(
        self,
        port: Port,
        *,
        stats: Stats,
        server_id: str,
        default_assigns: Mapping[str, Any],
        depth_limit: int,
        route: Callable[[str, Any], None],
        is_live: Callable[[], bool],
        on_broken: Callable[[], None],
        calls: Optional[CallTable] = None,
        drain: Optional[Callable[[float], object]] = None,
        receiver: Optional[Receiver] = None,
        on_unreachable: Optional[Callable[[], None]] = None,
    ) -> None:
        """``route`` takes each notification (the router's), ``drain`` waits until
        the notifications queued so far were delivered (the pump's), ``calls`` is
        the table of requests in flight (new when omitted), ``receiver`` hears
        server requests until :meth:`serve` names another; ``on_broken`` is told
        when the connection ended, ``on_unreachable`` when a request found no
        server to connect to (HTTP: the connection may be made again)."""
        self.port = port
        self.stats = stats
        self.server_id = server_id
        self._default_assigns = default_assigns
        self._depth_limit = depth_limit
        self._route = route
        self._is_live = is_live
        self._on_broken = on_broken
        self._on_unreachable = on_unreachable
        self._ids = itertools.count(1)
        #: Why the connection broke, once it did (later calls say it); None while it holds, or after close().
        self.ended_why: Optional[str] = None
        #: stdio: the reading handed to a caller reading its own rounds (None: not offered).
        self._hand_off = port.hand_off
        #: The threads inside :meth:`reading_rounds` (ident -> depth): each writes only its own key.
        self._readers: dict[int, int] = {}
        #: HTTP: each request tells the transport its deadline (Outgoing.deadline).
        self._deadlines = port.needs_deadlines
        #: The requests in flight.
        self.calls = CallTable() if calls is None else calls
        #: Who hears server requests and cancellations (:meth:`serve`).
        self.receiver = receiver
        self.relay: Optional[Relay] = None
        self._drain = drain
        #: The client's OpenTelemetry (the ``telemetry`` option; None: off), set by the assembly.
        self.tracing: Optional[Tracing] = None

    def serve(self, receiver: Receiver, relay: Optional[Relay] = None) -> None:
        """From now on ``receiver`` hears the server's requests and cancellations.

        The legacy engine hears them until the handshake decides; then the
        era's engine, named before anything more is sent. ``relay``: the
        receiver runs quick callbacks on the reader thread, so a callback
        that waits here for an answer hands the reading on first.
        """
        self.receiver = receiver
        self.relay = relay

    # ------------------------------------------------------------------ writing

    def send(self, message: JsonDict, info: Outgoing) -> None:
        """Encode and write one message, with what it is; a failure is a :class:`ClientError`."""
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            raise ClientError("protocol", f"message cannot be encoded as JSON: {exc}") from None
        try:
            self.port.send(data, info)
        except TransportClosed as exc:
            status, tail = self.port.last_words()  # read once: the message and the data agree
            error = transport_error(exc, str(exc), self._is_live(), last_words(status, tail))
            if error.kind == "closed":  # the reader saw the end first: say why it ended, not only that it did
                error = self.closed_error()
            if status is not None and error.kind == "transport":
                error.data = {"exit_status": status}
            raise error from exc

    def server_words(self) -> str:
        """stdio: what an error adds about the server: its exit status once it ended and its last
        lines of stderr (:func:`last_words`); "" for other transports or a silent server."""
        return last_words(*self.port.last_words())

    def notify(self, method: str, params: Optional[JsonDict] = None, step: Optional[str] = None) -> None:
        """Send a notification (``step``: the handshake step it is, ``Outgoing.step``)."""
        # the one that gives a call up is bounded: a server slow to take it must not hold who gave up
        self.send(jsonrpc.notification(method, params), Outgoing(method, bounded=method == _GIVE_UP, step=step))

    def notify_quietly(self, method: str, params: Optional[JsonDict] = None) -> None:
        """:meth:`notify`, logging a failure instead of raising it."""
        try:
            self.notify(method, params)
        except ClientError as exc:
            log.debug("mcp_input_sync: could not send %s: %s", method, exc)

    # ------------------------------------------------------------------ requests

    def start(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        done: Optional[threading.Event] = None,
        task_id: Optional[str] = None,
        stamp: Optional[Stamp] = None,
        stamped: Optional[Stamped] = None,
        header_args: HeaderArgs = (),
        waits: bool = False,
        bounded: bool = True,
        step: Optional[str] = None,
        idempotent: bool = False,
    ) -> Call:
        """Register and write one request (stamped); the caller waits for it with :meth:`result`.

        ``header_args`` are the ``x-mcp-header`` arguments of a 2026-07-28
        ``tools/call``; they go to the transport with the request
        (:class:`~mcp_input_sync.transports.base.Outgoing`), as do its method,
        id, the stamp's version and its ``Mcp-Name``. ``stamped``: ``params``
        carry their ``_meta`` already, at ``stamped.version``, and their
        ``Mcp-Name`` is ``stamped.name`` (a round's retry). A request sent
        inside :meth:`reading_rounds` may have its answer read by the thread
        that sent it (docs/threads-and-time.md#threads). ``waits``: the caller
        waits for the answer at once, with no cancel event, so a transport
        that wants deadlines gets this one's (``Outgoing.deadline``) and may
        post it on this thread (HTTP); a request nobody waits for, or one
        a cancel event may end, goes without. ``bounded`` False: the
        handshake's, which the sending thread posts itself, unbounded
        (``Outgoing.bounded``). ``step``: the handshake step it is
        (``Outgoing.step``: an ``initialize`` begins a session). ``idempotent``:
        a ``tools/call`` safe to send twice (``Outgoing.idempotent``).
        """
        request_id = next(self._ids)
        call = Call(request_id, method, is_call, self._default_assigns if assigns is None else assigns, clock, done)
        call.task_id = task_id
        readers = self._readers
        if readers:  # some thread runs a call's rounds over stdio: is it this one?
            ident = threading.get_ident()
            if ident in readers:
                call.waiter = ident
        version: Optional[str] = None
        if stamp is not None:
            params = stamp(params)  # modern: every request carries a fresh, complete _meta
            version = stamp.version
        elif stamped is not None:
            version = stamped.version
        if progress is not None or clock.resets:  # progress heard, or asked for to keep the call alive
            # a fresh token on every request, so late progress of an old one is dropped
            call.progress = progress
            call.progress_token = token = f"mis-{request_id}"
            params = jsonrpc.with_meta(params, {"progressToken": token})
        tracing = self.tracing
        if tracing is not None and (tracing.found or LOADED in sys.modules):  # telemetry: the request's span, in _meta
            call.traced, params = tracing.client(method, params, request_id)
        if not self.calls.add(call):
            error = self.not_sent_error(method)
            if call.traced is not None:
                call.traced.finish(error.kind)
            raise error
        deadline: Optional[float] = None
        if waits and self._deadlines:
            now = _clock.monotonic()
            # a call that progress keeps alive may run to its max_total_timeout: the transport must not cut it sooner
            deadline = now + (clock.total_left(now) if clock.resets else clock.remaining(now))
        name = routed_name(method, params) if stamped is None else stamped.name
        info = Outgoing(method, request_id, version, name, header_args, deadline, call.waiter != 0, bounded, step, idempotent)
        try:
            self.send(jsonrpc.request(request_id, method, params), info)
        except ClientError as exc:
            self.calls.forget(call, why=exc.kind)
            raise
        except KeyboardInterrupt:  # Ctrl-C while writing: the request may be out, so cancel it
            self.abandon(call, "interrupted")
            raise
        return call

    def result(self, call: Call, cancel: Optional[threading.Event] = None) -> JsonDict:
        """Block until the call's response, a failure or a deadline; return its result."""
        relay = self.relay
        if relay is not None:  # a callback on the reader, calling back: it must not wait for itself
            relay.yield_reader()
        try:
            if call.waiter and call.response is None and call.failure is None:  # a waiter is set only with a hand-off
                # offered the reading (offer_reading below): read the answer here, no wake
                hand_off = self._hand_off
                assert hand_off is not None
                hand_off.read_here(call.done.is_set, min(call.clock.remaining(_clock.monotonic()), _clock.MAX_WAIT), cancel)
            if cancel is None and call.response is None and call.failure is None:
                call.done.wait(min(call.clock.remaining(_clock.monotonic()), _clock.MAX_WAIT))
            if call.response is None and call.failure is None:
                self._wait(call, cancel)
        except KeyboardInterrupt:
            self.abandon(call, "interrupted")
            raise
        if call.failure is not None:
            raise call.failure
        response = call.response
        assert response is not None
        if call.traced is not None:
            tracing = self.tracing
            if tracing is not None:
                tracing.answered(call.traced)  # a round of input it asks for belongs to it
        if "error" in response:
            raise remote_error(response["error"], call.method)
        if call.progress is not None and self._drain is not None:
            # progress that arrived before the result is delivered before the call returns
            self._drain(1.0)
        result = response["result"]
        if type(result) is not dict:
            raise ClientError("protocol", f"{call.method} result is not an object", data=result)
        return result

    def request(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        idempotent: bool = False,
    ) -> JsonDict:
        """Send one request and block until its result, an error or a deadline."""
        call = self.start(method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress, waits=cancel is None, idempotent=idempotent)
        return self.result(call, cancel)

    def reading_rounds(self) -> ContextManager[None]:
        """The one call that drives the stdio reading seat: around a call's rounds on this thread.

        Inside it, each request this thread sends may have its answer read
        by this thread itself: the reader hands it the reading with the
        answer, and it reads the next answer without waking anyone
        (docs/threads-and-time.md#threads); leaving the outermost block
        gives the reading back. Over a transport that does not hand its
        reading on (HTTP), nothing happens. Blocks nest (a callback of a
        round calling its own client).
        """
        if self._hand_off is None:
            return _NOTHING
        return _ReadingRounds(self._readers, self._hand_off)

    def wait_any(self, done: threading.Event, seconds: float, calls: list[Call]) -> bool:
        """Wait (bounded, library clock) until one of ``calls`` sharing ``done`` has an outcome."""
        deadline = _clock.monotonic() + seconds
        while True:
            if any(c.response is not None or c.failure is not None for c in calls):
                return True
            left = deadline - _clock.monotonic()
            if left <= 0:
                return False
            done.wait(min(left, _clock.MAX_WAIT))  # set only after a response or failure is stored

    def _wait(self, call: Call, cancel: Optional[threading.Event]) -> None:
        """Wait for the response in capped real-time steps, re-reading the library clock."""
        done = call.done
        while call.response is None and call.failure is None:
            if cancel is not None and cancel.is_set():
                self.abandon(call, "cancelled by the caller")
                if call.response is None or call.failure is not None:
                    raise ClientError("cancelled", f"{call.method} was cancelled")
                return
            why, left = self.calls.deadline_state(call, _clock.monotonic())
            if why is not None:
                self.abandon(call, "timeout")
                if call.failure is None and call.response is not None:
                    return  # the answer won the race
                # the call's own timeout in the host's words (the command line's --timeout); max_total_timeout is Python's alone
                what = f"its max_total_timeout of {call.clock.max_total:g} s" if why == MAX_TOTAL else say("call_timeout", value=call.clock.timeout)
                raise ClientError("timeout", f"{call.method} exceeded {what}")
            step = min(left, _clock.MAX_WAIT)
            if cancel is not None:
                step = min(step, 0.05)
            if done.wait(step) and call.response is None and call.failure is None:
                done.clear()  # an event shared during the era probe: another request's outcome woke us

    def abandon(self, call: Call, reason: str) -> None:
        """The call ends without its result: forget it, tell the server, cancel its tied callbacks."""
        tied = self.calls.forget(call, abandoned=True, why="timeout" if reason == "timeout" else "cancelled")
        if tied is None:
            return
        for inbound in tied:
            inbound.token.cancel("call ended")
        if call.method == "initialize":  # initialize must not be cancelled
            return
        if self.port.cancel_request(call.id):
            return  # modern HTTP: closing the response stream is the cancellation
        self.notify_quietly("notifications/cancelled", {"requestId": call.id, "reason": reason})

    def fail_all(self, kind: str, why: Callable[[str], str], data: Any = None) -> list[Call]:
        """Refuse new requests and fail every one in flight with ``ClientError(kind, why(method), data=data)``; returns them."""
        calls = self.calls.close(kind)
        for call in calls:
            call.failure = ClientError(kind, why(call.method), data=data)
            call.done.set()
        return calls

    # ------------------------------------------------------------------ reading

    def on_line(self, line: bytes, stream: Any = None) -> None:
        """Reader thread: one inbound message (``stream``: HTTP, the request whose stream carried it).

        Nothing a server sends may end the reader: an unexpected failure is
        logged, and a request it concerned is answered -32603 where the era answers.
        """
        try:
            if type(line) is Oversized:
                why = f"a message of {line.size} bytes or more, over {say('limit_name', 'message_bytes', limit='message_bytes')}{raise_hint('message_bytes')}"
                self._malformed(line, why, "limit")
                return
            if type(line) is Decoded:  # the transport decoded it already
                message = line.message
            else:
                try:
                    message = jsonrpc.decode(line)
                except ValueError as exc:
                    self._malformed(line, f"a message that is not JSON ({exc})", "malformed")
                    return
            receiver = self.receiver
            assert receiver is not None
            if type(message) is not dict:
                self.stats.add("malformed")
                log.warning("mcp_input_sync: server %s sent a message that is not an object; ignored", self.server_id)
                return
            depth = self._depth_limit
            if may_be_too_deep(line, depth) and too_deep(message, depth):
                self._malformed(line, f"a message nested deeper than limits['json_depth']={depth}", "limit")
                return
            method = message.get("method")
            if method is not None:
                if type(method) is not str:
                    receiver.invalid(message)
                elif "id" in message:
                    receiver.on_request(message["id"], method, message.get("params"), stream)
                elif method == "notifications/cancelled":
                    params = message.get("params")
                    if type(params) is dict:
                        receiver.on_cancelled(params.get("requestId"))
                elif method not in _SILENT:
                    self._route(method, message.get("params"))
            elif "id" in message and ("result" in message or "error" in message):
                call = self.calls.pop(message["id"])
                if call is None:
                    log.debug("mcp_input_sync: late or unknown response %r dropped", message["id"])
                    return
                call.response = message
                if call.traced is not None:
                    call.traced.finish(None, message)
                if call.waiter:  # the caller will send again at once: it may read the next answer itself
                    hand_off = self._hand_off
                    assert hand_off is not None
                    hand_off.offer_reading(call.waiter)
                call.done.set()
            else:
                receiver.invalid(message)
        except Exception:
            log.exception("mcp_input_sync: a message from server %s could not be handled", self.server_id)
            self._answer_failed_line(line)

    def _malformed(self, line: Union[bytes, str], why: str, check: str) -> None:
        """A message that cannot be processed: log, count, and answer what can be answered.

        A request whose id can be read goes to the receiver (-32700 for bad
        JSON, -32600 over a limit); a response whose id names a call of ours
        fails that call. Logged at WARNING, but at INFO where that call's
        caller gets it as its error (one message per error).
        """
        self.stats.add("malformed")
        found = salvage(line)
        call = self.calls.pop(found.id) if found.found and not found.is_request else None
        log.log(logging.INFO if call is not None else logging.WARNING, "mcp_input_sync: server %s sent %s; ignored", self.server_id, why)
        if not found.found:
            return
        if found.is_request:
            receiver = self.receiver
            if receiver is not None:
                code = jsonrpc.PARSE_ERROR if check == "malformed" else jsonrpc.INVALID_REQUEST
                receiver.reject_unreadable(found.id, code, "parse error" if check == "malformed" else "request over the client's limits")
            return
        if call is not None:
            call.failure = ClientError("protocol", f"the response to {call.method} could not be read: {why}", check=check)
            if call.traced is not None:
                call.traced.finish("protocol")
            call.done.set()

    def _answer_failed_line(self, line: bytes) -> None:
        try:
            message = jsonrpc.decode(line)
        except ValueError:
            return
        if type(message) is not dict or "method" not in message:
            return
        request_id = message.get("id")
        receiver = self.receiver
        if receiver is not None and (type(request_id) is int or type(request_id) is str):
            receiver.answer_failed(request_id)

    def on_lost(self, request_id: Any, error: BaseException) -> None:
        """A transport says a request's response can no longer come (its stream broke, or broke a limit)."""
        call = self.calls.get(request_id)
        tied = self.calls.forget(call, why="transport") if call is not None else None
        if self._on_unreachable is not None and getattr(error, "check", None) == UNREACHABLE and self._is_live():
            self._on_unreachable()  # marks the connection for renewal; this call still fails below
            self._on_unreachable = None  # once per connection
        if isinstance(error, LimitExceeded):
            self.stats.add("malformed")  # at INFO where the call's caller gets it as its error
            log.log(logging.WARNING if tied is None else logging.INFO, "mcp_input_sync: server %s: %s", self.server_id, error)
        if call is None or tied is None:
            return
        for inbound in tied:  # the call ended without its result: so do its callbacks
            inbound.token.cancel("call ended")
        call.failure = transport_error(error, f"{call.method} failed")
        call.done.set()

    def on_retry(self, request_id: Any, reason: str, attempt: int) -> None:
        """A transport sends a request again (the ``retry`` option): an event of its span."""
        call = self.calls.get(request_id)
        if call is not None and call.traced is not None:
            call.traced.event("mcp_input_sync.retry", {"mcp_input_sync.retry.reason": reason, "mcp_input_sync.retry.attempt": attempt})

    def on_transport_closed(self, error: Optional[BaseException]) -> None:
        """Reader thread: the connection ended without close(): fail every call, then close the client."""
        if not self._is_live():
            return
        why = "the server closed the connection" if error is None else f"the connection broke: {error}"
        status, tail = self.port.last_words()
        self.ended_why = ended = why + last_words(status, tail)
        failed = self.fail_all("transport", lambda method: f"{method} failed: {ended}", None if status is None else {"exit_status": status})
        # a WARNING when no caller hears of it; the callers whose calls failed get it as their error
        log.log(logging.INFO if failed else logging.WARNING, "mcp_input_sync: %s (server %s)%s", why, self.server_id, last_words(status, ""))
        self._on_broken()

    def not_sent_error(self, method: str) -> ClientError:
        """Why a request could not be sent: ``transport`` when the connection broke (the client may connect
        again, and the server never saw it), else :meth:`closed_error`."""
        why = self.ended_why
        return self.closed_error() if why is None else ClientError("transport", f"{method} was not sent: {why}")

    def closed_error(self) -> ClientError:
        """``ClientError(kind="closed")``, saying why when the connection broke (not a close())."""
        why = self.ended_why
        return ClientError("closed", "the client is closed" if why is None else f"the client is closed: {why}")


def collect_pages(fetch: Callable[[str, Optional[JsonDict]], JsonDict], method: str, key: str, max_bytes: int) -> list[JsonDict]:
    """Every item of a paged list method, following ``nextCursor`` (bounded, no cursor twice).

    ``max_bytes`` is the ``listing_bytes`` limit: the items and cursors of
    all pages together, measured as compact JSON as each page arrives. Over it the
    listing fails with ``ClientError(check="limit")`` and the items read so
    far are dropped, so the client never holds more than the limit and one page.
    """
    items: list[JsonDict] = []
    cursor: Optional[str] = None
    seen: set[str] = set()
    size = 0
    for _ in range(MAX_LIST_PAGES):
        page = fetch(method, None if cursor is None else {"cursor": cursor})
        found = page.get(key)
        if type(found) is not list:
            raise ClientError("protocol", f"{method} result has no {key!r} list")
        cursor = page.get("nextCursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ClientError("protocol", f"{method} returned a bad or repeated nextCursor")
        size += json_size(found) + (0 if cursor is None else len(cursor))  # the cursors are kept too
        if size > max_bytes:
            raise ClientError("protocol", f"{method} sent more than limits['listing_bytes']={max_bytes} of {key}", check="limit")
        items.extend(found)
        if cursor is None:
            return items
        if cursor in seen:
            raise ClientError("protocol", f"{method} returned a bad or repeated nextCursor")
        seen.add(cursor)
    raise ClientError("protocol", f"{method} returned more than {MAX_LIST_PAGES} pages")
