"""The Client: a blocking MCP client that answers a server's requests for input.

Thread and lifecycle contract:

- Nothing starts at import or in ``__init__``. ``open()`` (or ``with``, or
  the first call) starts the transport, the notification thread, the
  watchdog and, lazily, the handler workers; all are named daemon threads
  ``mcp-input-sync-<role>-<n>``.
- The reader thread never runs user code. It answers ``ping`` itself,
  refuses what the checks refuse at once, and hands accepted server requests
  to a worker behind a bounded semaphore (``max_server_requests``).
- Every call blocks only its calling thread. No lock is held while a
  callback runs, so a callback may call the same client.
- Each server request id gets exactly one answer, except one the server
  cancelled (none). Late callback results after a timeout are dropped.
- ``close(timeout)`` is idempotent: it answers unanswered server requests
  with -32603 and sets every callback's token, cancels the client's own
  calls (which raise ``ClientError(kind="closed")``), closes the transport
  and joins the library's threads within ``timeout`` real seconds. A
  callback that ignores its token is abandoned (its daemon thread never
  blocks interpreter exit), logged and counted in ``stats["stuck_callbacks"]``.
- When the connection breaks, every call in flight raises
  ``ClientError(kind="transport")`` and the client closes itself.

The client is a facade (docs/architecture.md#the-client): it joins the
port, the session, the input desk, the handshake and the era's engine, and
is the only module that builds them.
"""

from __future__ import annotations

import enum
from functools import partial
import logging
import os
import threading
from typing import Any, Mapping, Optional, Sequence, Union

from . import _clock
from ._api import _UNSET, CallsAPI, Seconds
from ._calls import CallSpec, ProgressCallback
from ._engines.base import EraEngine
from ._engines.legacy import LegacyEngine
from ._engines.modern import ModernEngine
from ._handshake import Handshake, Negotiated, declared_capabilities
from ._input import InputDesk
from ._notifications import NotificationRouter, Subscriber, Subscription
from ._port import Port
from ._protocol import jsonrpc, modern
from ._protocol import eras as v
from ._protocol.budget import TokenBucket
from ._protocol.deadlines import CallClock
from ._protocol.checks import Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import MetaStamp, PendingCall
from ._runtime import RealBudget
from ._runtime.notify import NotificationPump
from ._runtime.watchdog import Watchdog
from ._runtime.workers import HandlerPool
from ._session import Session, transport_error
from ._stats import Stats
from ._surface import SurfaceAPI
from ._version import __version__
from .errors import ClientError
from .handler import InputHandler
from .options import Options, seconds
from .transports.base import Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

__all__ = ["Client", "ClientState", "Subscription", "connect_http", "connect_stdio"]


class ClientState(enum.Enum):
    """Where a client is in its life."""

    UNOPENED = "unopened"  #: built; nothing started yet
    CONNECTING = "connecting"  #: open() is probing the era and shaking hands; calls wait
    OPEN = "open"  #: connected; calls allowed
    CLOSED = "closed"  #: closed by close() or by a broken connection; calls raise "closed"


class Client(CallsAPI, SurfaceAPI):
    """A synchronous MCP client.

    Args:
        transport: the connection to one server (see :mod:`mcp_input_sync.transports`);
            it is started by :meth:`open`.
        **options: the options of docs/reference.md#options (``handler``, ``name``,
            ``server_id``, ``assigns``, ``protocol``, ``timeout``, ...).

    Raises:
        TypeError: an unknown option or option key, or a value of the wrong type.
        ValueError: an option value out of range.

    Example::

        with mis.connect_stdio(["python", "server.py"], handler=MyHandler()) as client:
            result = client.call_tool("deploy", {"env": "staging"})
    """

    def __init__(self, transport: Transport, **options: Any) -> None:
        self._opts = opts = Options.parse(options)
        self._transport = transport
        self._port = port = Port(transport)
        self._handler: Optional[InputHandler] = opts.handler
        #: The ``name`` option: ``clientInfo.name`` and ``ctx.client``.
        self.name = opts.name
        #: The ``server_id`` option: ``ctx.server_id`` and the server's logger name.
        self.server_id: str = opts.server_id or port.default_server_id
        self._state = ClientState.UNOPENED
        self._state_lock = threading.RLock()
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._stats = Stats()
        self._pid = os.getpid()
        self._session = Session(
            port,
            stats=self._stats,
            server_id=self.server_id,
            default_assigns=opts.assigns,
            depth_limit=opts.limits["json_depth"],
            route=self._route,
            is_live=self._is_live,
            on_broken=self.close,
        )
        #: The requests in flight (the session's call table).
        self._calls = self._session.calls
        port.configure(self.server_id, opts.limits, self._session.on_lost)
        self._router = NotificationRouter(
            handler=opts.handler, calls=self._calls, stats=self._stats, client_name=self.name, server_id=self.server_id
        )
        self._pool: Optional[HandlerPool] = None
        self._pump: Optional[NotificationPump] = None
        self._watchdog: Optional[Watchdog] = None
        self._desk: Optional[InputDesk] = None
        #: The legacy engine: built when the client opens, it hears the server until the era is decided.
        self._legacy: Optional[LegacyEngine] = None
        #: The engine of the era the handshake chose (None before).
        self._engine: Optional[EraEngine] = None
        self._stamp: Optional[MetaStamp] = None
        #: ``"legacy"`` or ``"modern"`` once open, else None.
        self.era: Optional[str] = None
        #: The server's ``serverInfo`` from the handshake (None before).
        self.server_info: Optional[JsonDict] = None
        #: The server's capabilities from the handshake (None before).
        self.server_capabilities: Optional[JsonDict] = None
        #: The server's ``instructions`` from the handshake, if any.
        self.instructions: Optional[str] = None

    @property
    def protocol_version(self) -> Optional[str]:
        """The negotiated protocol version once open, else None."""
        engine = self._engine
        return engine.version if engine is not None else None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Client":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> "Client":
        """Start the transport and the library's threads, then do the handshake.

        Idempotent while open. Returns the client.

        Raises:
            ClientError: ``transport`` when the server cannot be reached,
                ``protocol`` when no version can be agreed, ``timeout`` when the
                handshake is not answered, ``closed`` after close().
        """
        with self._state_lock:
            if self._state is ClientState.OPEN:
                self._check_pid()
                return self
            if self._state is ClientState.CONNECTING:
                waiting = True
            elif self._state is not ClientState.UNOPENED:
                raise ClientError("closed", "the client is closed")
            else:
                waiting = False
                self._state = ClientState.CONNECTING
        if waiting:  # another thread is opening: wait for it (bounded)
            self._wait_ready()
            return self
        try:
            desk = self._start_runtime()
            try:
                self._port.start(self._session.on_line, self._session.on_transport_closed)
            except TransportClosed as exc:
                raise transport_error(exc, str(exc)) from exc
            self._connect(desk)
        except BaseException:
            self.close(1.0)  # a server that failed the handshake gets a short grace, so timeout= bounds the attempt
            raise
        finally:
            self._ready.set()
        with self._state_lock:
            if self._state is not ClientState.CONNECTING:
                raise ClientError("closed", "the client was closed while it connected")
            self._state = ClientState.OPEN
        return self

    def _wait_ready(self) -> None:
        """Block until another thread's open() finished (bounded by the handshake's own bounds)."""
        bound = self._opts.discover_timeout + 2 * self._opts.timeout + 10.0
        if not RealBudget(bound).wait_until(self._ready.is_set, bound, step=0.05):
            raise ClientError("timeout", "the client did not finish connecting")
        if self._state is not ClientState.OPEN:
            raise ClientError("closed", "the client is closed")

    def _start_runtime(self) -> InputDesk:
        """The threads and parts of an opening client (never in the constructor)."""
        with self._state_lock:
            opts = self._opts
            self._pid = os.getpid()
            self._watchdog = watchdog = Watchdog()
            watchdog.start()
            # answers that cost a round trip each (HTTP POSTs) are better written by many workers at once;
            # otherwise every queued job is an open request, so the deadline sweep wakes the watchdog
            # within 0.1 s to look at the nudge: no wake-up per burst (each would be a thread switch)
            nudge = None if self._port.slow_answers else partial(watchdog.watch_fast, wake=False)
            self._pool = HandlerPool(opts.max_server_requests, nudge=nudge)
            self._pump = NotificationPump()
            self._pump.start()
            self._router.pump = self._pump
            self._session.drain = self._pump.drain
            self._desk = desk = InputDesk(
                handler=self._handler,
                options=opts,
                stats=self._stats,
                client_name=self.name,
                server_id=self.server_id,
                watchdog=watchdog,
            )
            self._legacy = LegacyEngine(
                session=self._session,
                desk=desk,
                port=self._port,
                options=opts,
                router=self._router,
                pool=self._pool,
                watchdog=watchdog,
            )
            self._session.receiver = self._legacy
            self._router.log_budget = TokenBucket(*opts.log_rate_limit, _clock.monotonic())
            return desk

    def _connect(self, desk: InputDesk) -> None:
        """Negotiate the era (docs/reference.md#era-detection), then start its engine."""
        version = modern.MODERN_VERSION
        info: JsonDict = {"name": self.name, "version": __version__}
        self._stamp = MetaStamp(version, self.capabilities(version), info, self._log_level)
        handshake = Handshake(
            self._session, self._port, desk, self._opts, self._handler, self.name, self.server_id, self._stamp, self._on_era
        )
        negotiated = handshake.negotiate()
        try:
            self._start_engine(negotiated)
        except ClientError as exc:
            if not handshake.from_cache or exc.kind in ("transport", "auth", "closed"):
                raise
            negotiated = handshake.reprobe()  # the cached era did not hold: probe afresh
            self._start_engine(negotiated)
        engine = self._engine
        assert engine is not None
        handshake.remember(negotiated.era, engine.version or negotiated.version)
        legacy = self._legacy
        if legacy is not None and engine is legacy and handshake.mixes_eras:  # HTTP: 2026-07-28 calls beside the session
            legacy.endpoint = self._port.era_key() or ""
            legacy.beside = ModernEngine(
                session=self._session, desk=desk, port=self._port, options=self._opts, router=self._router, stamp=self._stamp, beside=True
            )

    def _start_engine(self, negotiated: Negotiated) -> None:
        """The server's facts, then the engine's start (logs, or the modern listen and a late discover)."""
        engine = self._engine
        assert engine is not None
        discover = negotiated.discover
        if negotiated.era == v.MODERN and discover is not None:
            negotiated = negotiated.with_discover(discover)
        self._take_facts(negotiated)
        asked = engine.started(negotiated.server_capabilities if negotiated.era != v.MODERN or discover is not None else None)
        if asked is not None:
            self._take_facts(negotiated.with_discover(asked))

    def _take_facts(self, negotiated: Negotiated) -> None:
        self.server_capabilities = negotiated.server_capabilities
        self.server_info = negotiated.server_info
        self.instructions = negotiated.instructions

    def _on_era(self, era: str, version: str) -> None:
        """The handshake decided: every part learns the era before anything more is sent."""
        desk, legacy, stamp = self._desk, self._legacy, self._stamp
        assert desk is not None and legacy is not None and stamp is not None
        if era == v.MODERN:
            engine: EraEngine = ModernEngine(
                session=self._session, desk=desk, port=self._port, options=self._opts, router=self._router, stamp=stamp
            )
            self._session.receiver = engine  # first: from here on no server request is answered
        self.era = desk.era = self._router.era = era
        if era != v.MODERN:
            legacy.negotiated = version
            engine = legacy
            self._session.receiver = legacy  # as before the decision (a re-probe may follow a modern guess)
            self._session.stamp = None
        self._engine = engine

    def _is_live(self) -> bool:
        return self._state in (ClientState.OPEN, ClientState.CONNECTING)

    def _route(self, method: str, params: Any) -> None:
        self._router.route(method, params)

    def _check_pid(self) -> None:
        if os.getpid() != self._pid:
            raise ClientError("closed", "this client belongs to the parent process (used after fork)")

    def _ensure_open(self) -> EraEngine:
        state = self._state
        if state is ClientState.OPEN:
            if os.getpid() != self._pid:
                self._check_pid()
        elif state is ClientState.UNOPENED:
            self.open()
        elif state is ClientState.CONNECTING:  # the handshake is under way on another thread
            self._wait_ready()
        else:
            raise ClientError("closed", "the client is closed")
        engine = self._engine
        if engine is None:
            raise ClientError("closed", "the client is closed")
        return engine

    @property
    def state(self) -> ClientState:
        """The client's :class:`ClientState`."""
        return self._state

    def capabilities(self, version: str) -> JsonDict:
        """The ``ClientCapabilities`` this client declares at ``version``."""
        return declared_capabilities(self._handler, self._opts, version)

    def resume(
        self,
        pending: PendingCall,
        responses: Mapping[str, Any],
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        defer_input: bool = True,
        wait: bool = True,
    ) -> Union[JsonDict, PendingCall]:
        """Continue a call that returned a :class:`PendingCall`, with the user's answers.

        ``responses`` maps every key of ``pending.input_requests`` to its answer
        (an ``ElicitResult``, ``CreateMessageResult`` or ``ListRootsResult``);
        each is validated as a handler's answer would be. Any thread, or any
        process with a client for the same server, may resume. By default a
        further round of input is deferred again.

        Raises:
            ClientError: as :meth:`call_tool`; ``input_handler`` (check
                ``answer``) for a missing or invalid answer.
        """
        engine = self._ensure_open()
        spec = CallSpec(self._clock_for(timeout, max_total_timeout), assigns, progress, cancel, defer_input, wait)
        result = engine.resume(pending, responses, spec)
        if isinstance(result, dict) and pending.method == "tools/call":
            return self._check_output(str(pending.params.get("name")), result, timeout)
        return result

    def await_task(
        self,
        task_id: str,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Follow a server task to its result (``tasks=True``).

        Polls ``tasks/get`` as the task's ``pollIntervalMs`` asks, answers each
        of its input requests once (through the checks and the handler) with
        ``tasks/update``, and returns the task's result.

        Raises:
            ClientError: ``remote`` for a failed task, ``cancelled`` for a
                cancelled one, ``timeout`` past ``max_total_timeout``, and the
                kinds of :meth:`call_tool` for a failing callback (the task is
                left running).
        """
        engine = self._ensure_open()
        return engine.await_task(task_id, CallSpec(self._clock_for(timeout, max_total_timeout), assigns, cancel=cancel))

    def cancel_task(self, task_id: str, *, timeout: Seconds = _UNSET) -> JsonDict:
        """Ask the server to cancel a task (cooperative: it may still end otherwise)."""
        return self._request("tasks/cancel", {"taskId": task_id}, timeout)

    def ping(self, *, timeout: Seconds = _UNSET) -> None:
        """Send ``ping`` and wait for the answer."""
        self._request("ping", None, timeout)

    def notify_roots_changed(self) -> None:
        """Tell a legacy server the roots changed (no-op without ``list_roots``)."""
        self._ensure_open().roots_changed()

    def _request(self, method: str, params: Optional[JsonDict], timeout: Seconds) -> JsonDict:
        engine = self._ensure_open()
        return engine.request(method, params, is_call=False, clock=self._clock_for(timeout, _UNSET))

    def _call(
        self,
        method: str,
        params: JsonDict,
        timeout: Seconds,
        max_total_timeout: Seconds,
        assigns: Optional[Mapping[str, Any]],
        progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event],
        defer_input: bool,
        wait: bool,
    ) -> Union[JsonDict, PendingCall]:
        engine = self._ensure_open()
        spec = CallSpec(self._clock_for(timeout, max_total_timeout), assigns, progress, cancel, defer_input, wait)
        return engine.call(method, params, spec)

    def _clock_for(self, timeout: Seconds, max_total_timeout: Seconds) -> CallClock:
        wait_s = self._opts.timeout if timeout is _UNSET else seconds("timeout", timeout)
        total_s = self._opts.max_total_timeout if max_total_timeout is _UNSET else seconds("max_total_timeout", max_total_timeout)
        return CallClock(_clock.monotonic(), wait_s, total_s)

    def handle_url_elicitations(self, error: ClientError) -> list[JsonDict]:
        """Answer the URL elicitations of a -32042 error through the checks and the handler.

        Each entry of ``error.data["elicitations"]`` (URL mode, with an
        ``elicitationId``) passes the capability and URL checks first, all of
        them before any callback; then ``handle_elicitation`` runs for each, in
        order, on the calling thread, with the client's ``assigns``; each
        answer is validated. The library never opens a URL: the handler asks
        the user. Retry the original call once the user is done.

        Returns:
            The ``ElicitResult`` of each entry, in order.

        Raises:
            ClientError: ``protocol`` (check ``malformed``) when ``error`` is not
                a -32042 error with URL elicitations; ``protocol`` (check
                ``capability``) when the handler does not serve URL elicitation;
                ``refused`` (check ``url``) for a URL the checks refuse;
                ``input_handler`` when the handler raises or answers badly.
        """
        self._ensure_open()
        desk = self._desk
        assert desk is not None
        # the callbacks run as a modern round's do: on this thread, under their deadlines
        return desk.answer_url_elicitations(error, self._clock_for(_UNSET, _UNSET))

    def check_input(self, method: str, params: Any) -> Union[Prepared, Refusal]:
        """Run one input request of a pending round through this client's checks (steps 4 and 5).

        For hosts that answer a :class:`PendingCall` later, such as the web
        bridge, which parks each request for a person: it returns the checked
        request (its compiled form, URL and kind), or the :class:`Refusal` that
        says why the client will not ask the user. Before :meth:`open` every
        request is refused (check ``capability``).
        """
        desk = self._desk
        if desk is None:
            return Refusal("capability", jsonrpc.METHOD_NOT_FOUND, "the client is not open")
        return desk.checks.prepare(method, params, in_flight=True)

    # ------------------------------------------------------------------ notifications

    def subscribe(self, callback: Subscriber) -> Subscription:
        """Call ``callback(method, params)`` for every notification and log entry.

        It runs on the notification thread after the handler's hook; log
        entries arrive sanitised with method ``"notifications/message"``. A
        raising subscriber is logged and skipped. Registering one on an open
        legacy client asks the server for logs (``logging/setLevel``) once.

        Returns:
            A :class:`Subscription`: call it, use it as a context manager or
            call ``unsubscribe()`` to stop.
        """
        sub = self._router.add(callback)
        engine = self._engine
        if self._state is ClientState.OPEN and engine is not None:
            engine.hear()
        return sub

    def subscribe_resource(self, uri: str) -> None:
        """Hear ``notifications/resources/updated`` for ``uri`` (``handle_notification``, subscribers).

        Legacy: ``resources/subscribe``. Modern: the URI joins the client's
        ``subscriptions/listen`` filter (the listen is reopened with it).
        """
        self._ensure_open().subscribe_resource(uri, True)

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop hearing updates for ``uri`` (``resources/unsubscribe``, or a narrower listen)."""
        self._ensure_open().subscribe_resource(uri, False)

    # ------------------------------------------------------------------ stats and close

    @property
    def stats(self) -> Mapping[str, Any]:
        """Counters: ``served``, ``refused`` (kind -> check -> count), ``timed_out``,
        ``notifications_dropped``, ``logs_dropped``, ``logs_delivered``, ``stuck_callbacks``."""
        return self._stats.snapshot()

    def close(self, timeout: float = 5.0) -> None:
        """Shut the client down within ``timeout`` real seconds (idempotent).

        Answers unanswered server requests with -32603 and sets every
        callback's token, cancels the client's own calls (they raise
        ``ClientError(kind="closed")``), closes the transport and joins the
        library's threads. Callbacks that ignore their token are abandoned,
        logged and counted in ``stats["stuck_callbacks"]``.
        """
        with self._state_lock:
            if self._state is ClientState.CLOSED:
                closing_elsewhere = True
            else:
                closing_elsewhere = False
                was_open = self._state in (ClientState.OPEN, ClientState.CONNECTING)
                self._state = ClientState.CLOSED
        if closing_elsewhere:
            self._closed.wait(timeout)  # another thread is closing: wait for it, bounded
            return
        try:
            self._shut_down(timeout, was_open)
        finally:
            self._closed.set()

    def _shut_down(self, timeout: float, was_open: bool) -> None:
        budget = RealBudget(timeout)
        # 1. Own calls fail first, so a response racing the shutdown is not returned.
        calls = self._session.fail_all("closed", lambda method: f"{method} was cancelled: the client closed")
        if self._desk is not None:
            self._desk.close()
        # 2. Server requests still open get -32603, then their tokens are set.
        for engine in {id(e): e for e in (self._legacy, self._engine) if e is not None}.values():
            engine.close(answer=was_open)
        # 3. The server is told the calls are cancelled.
        for call in calls:
            if was_open and call.method != "initialize":
                try:
                    self._port.send(
                        jsonrpc.encode(jsonrpc.notification("notifications/cancelled", {"requestId": call.id, "reason": "client closed"}))
                    )
                except TransportClosed:
                    pass
        if was_open:
            self._port.close(budget.take(budget.left * 0.7))
        if self._desk is not None:
            for thread in list(self._desk.input_threads):
                budget.join(thread, share=0.3)
        if self._watchdog is not None:
            self._watchdog.stop(budget)
        if self._pump is not None:
            self._pump.stop(budget)
        if self._pool is not None:
            stuck = self._pool.shutdown(budget)
            if stuck:
                self._stats.add("stuck_callbacks", len(stuck))
                for label in stuck:
                    log.warning(
                        "mcp_input_sync: callback %s for server %s ignored cancellation; abandoned "
                        "(its daemon thread will not block exit)",
                        label,
                        self.server_id,
                    )

    def __repr__(self) -> str:
        return f"<Client {self.name!r} server_id={self.server_id!r} state={self._state.value} era={self.era}>"


def connect_stdio(
    command: Sequence[str],
    *,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    inherit_env: bool = False,
    **options: Any,
) -> Client:
    """Start ``command`` (an argv list) as an MCP server over stdio and connect to it.

    The server gets ``env`` on top of a few of this process's variables
    (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``; their
    Windows equivalents there), or on top of all of them with
    ``inherit_env=True``. Its stderr is logged (docs/reference.md#the-stderr-of-a-stdio-server).
    The handshake runs before this returns. Use the result as a context
    manager, or call ``close()``.

    Raises:
        ClientError: the server cannot be started or no version can be agreed;
            when the server ends the connection, the message names its exit
            status and ends with its last lines of stderr.
        TypeError, ValueError: bad options.
    """
    from .transports.stdio import StdioTransport

    client = Client(StdioTransport(command, env=env, cwd=cwd, inherit_env=inherit_env), **options)
    client.open()
    return client


def connect_http(
    url: str,
    *,
    headers: Optional[Mapping[str, str]] = None,
    auth: Optional[Any] = None,
    verify: Union[bool, str] = True,
    **options: Any,
) -> Client:
    """Connect to an MCP server's Streamable HTTP endpoint; the era is detected before this returns.

    Args:
        url: the MCP endpoint, e.g. ``"https://example.com/mcp"``.
        headers: extra headers for every request.
        auth: a :class:`mcp_input_sync.oauth.OAuth` for a server protected by
            OAuth (docs/oauth.md), or a ``requests`` auth object or callable
            (a bearer-token hook, say).
        verify: how the server's TLS certificate is checked, as ``requests``
            takes it: True (the CA bundle ``requests`` uses), or the path of a
            PEM file of the certificate authorities to trust (a company's, or
            a test one). False turns the check off: never against a real server.
        **options: the client options.

    Raises:
        ClientError: ``transport`` when the server cannot be reached, ``auth``
            for 401 or 403, ``protocol`` when no version can be agreed.
    """
    from .transports.http import HttpTransport

    client = Client(HttpTransport(url, headers=headers, auth=auth, verify=verify), **options)
    client.open()
    return client
