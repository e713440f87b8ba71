"""The Client: a blocking MCP client that answers a server's requests for input.

Thread and lifecycle contract:

- Nothing starts at import or in ``__init__``. ``open()`` (or ``with``, or
  the first call) starts the transport, the notification thread, the
  watchdog and, lazily, the handler workers; all are named daemon threads
  ``mcp-input-sync-<role>-<n>``.
- The reader answers ``ping`` itself, refuses what the checks refuse at
  once, and runs each accepted server request's callback within
  ``max_server_requests`` slots: on a worker, or (stdio, when no other
  callback runs) on the reader itself, which hands its reading to a new
  thread if the callback turns out slow (docs/threads-and-time.md#threads).
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
  ``ClientError(kind="transport")``; then, with the ``reconnect`` option
  (on over HTTP, off over stdio by default), the next call connects again
  (a new transport, runtime and handshake; the notification thread, the
  subscribers and the stats go on), and without it the client closes itself
  (docs/index.md#a-server-restart-survived).

The client is a facade (docs/architecture.md#the-client): it holds the
port, the session, the input desk and the era's engine, which ``_assembly``
builds in dependency order, and hands each public call to the engine.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from functools import partial
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from . import _assembly, _clock
from ._api import _UNSET, CallsAPI, Seconds
from ._cache import ResponseCache
from ._telemetry import tracing_for
from ._calls import CallSpec, ProgressCallback
from ._engines.base import EraEngine
from ._engines.legacy import LegacyEngine
from ._era import PROCESS_ERA_CACHE, EraCache
from ._handshake import declared_capabilities
from ._input import InputDesk
from ._notifications import Subscriber, Subscription
from ._port import Port
from ._protocol import jsonrpc
from ._protocol.deadlines import CallClock
from ._protocol.checks import Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._protocol.modern import PendingCall
from ._runtime import RealBudget
from ._runtime.watchdog import Watchdog
from ._runtime.workers import HandlerPool
from ._session import transport_error
from ._surface import SurfaceAPI
from .errors import ClientError
from .handler import InputHandler
from ._protocol import eras
from .options import Options, Reconnect, reconnect_policy, seconds
from .transports.base import Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

__all__ = ["Client", "ClientState", "Subscription", "connect_http", "connect_stdio"]


class ClientState(enum.Enum):
    """Where a client is in its life."""

    UNOPENED = "unopened"  #: built; nothing started yet
    CONNECTING = "connecting"  #: open() or a reconnect is probing the era and shaking hands; calls wait
    OPEN = "open"  #: connected; calls allowed
    BROKEN = "broken"  #: the connection broke; the next call connects again (the ``reconnect`` option)
    CLOSED = "closed"  #: closed by close() or by a broken connection; calls raise "closed"


class Client(CallsAPI, SurfaceAPI):
    """A synchronous MCP client.

    Args:
        transport: the connection to one server (see :mod:`mcp_input_sync.transports`);
            it is started by :meth:`open`.
        era_cache: where the era of each endpoint, and of each tool beside a
            handshake session, is remembered (docs/reference.md#era-detection);
            by default one cache shared by the whole process. Tests pass their own.
        **options: the options of docs/reference.md#options (``handler``, ``name``,
            ``server_id``, ``assigns``, ``protocol``, ``timeout``, ...).

    Raises:
        TypeError: an unknown option or option key, or a value of the wrong type.
        ValueError: an option value out of range.

    Example::

        with mis.connect_stdio(["python", "server.py"], handler=MyHandler()) as client:
            result = client.call_tool("deploy", {"env": "staging"})
    """

    def __init__(self, transport: Transport, *, era_cache: Optional[EraCache] = None, **options: Any) -> None:
        self._opts = opts = Options.parse(options)
        self._transport = transport
        self._port = port = Port(transport)
        self._handler: Optional[InputHandler] = opts.handler
        self._era_cache = PROCESS_ERA_CACHE if era_cache is None else era_cache
        #: The ``name`` option: ``clientInfo.name`` and ``ctx.client``.
        self.name = opts.name
        #: The ``server_id`` option: ``ctx.server_id`` and the server's logger name.
        self.server_id: str = opts.server_id or port.default_server_id
        self._state = ClientState.UNOPENED
        self._state_lock = threading.RLock()
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._pid = os.getpid()
        #: How a broken connection is made again (None: it is not; the client closes).
        self._reconnect: Optional[Reconnect] = reconnect_policy(opts.reconnect, transport.reconnects_by_default)
        #: Set when close() begins: a reconnect waiting out its back-off stops at once.
        self._closing = threading.Event()
        #: The resources subscribed to, subscribed again on a new connection.
        self._resources: dict[str, None] = {}
        #: Why the last reconnect failed (the callers who waited for it raise it too).
        self._reconnect_failure: Optional[ClientError] = None
        #: Counts connections: the callbacks of a replaced one are ignored.
        self._generation = 0
        #: The connection whose parts were stopped last (0: none).
        self._stopped = 0
        #: OpenTelemetry (the ``telemetry`` option; None: off), carried over reconnects.
        self._tracing = tracing_for(opts.telemetry, self._trace_attributes)
        self._core = core = self._new_core(None)
        self._stats, self._router, self._pump = core.stats, core.router, core.pump
        #: The kept listings and reads (the ``cache`` option; None: off), carried over reconnects.
        self._cache = None if opts.cache is None else ResponseCache(
            opts.cache, self._cache_identity, lambda: self.protocol_version, lambda: self.era == "modern", core.stats
        )
        self._router.stale = None if self._cache is None else self._cache.stale
        self._pool: Optional[HandlerPool] = None
        self._watchdog: Optional[Watchdog] = None
        self._desk: Optional[InputDesk] = None
        #: The legacy engine: built when the client opens, it hears the server until the era is decided.
        self._legacy: Optional[LegacyEngine] = None
        #: The engine of the era the handshake chose (None before).
        self._engine: Optional[EraEngine] = None
        #: The server's ``serverInfo`` from the handshake (None before).
        self.server_info: Optional[JsonDict] = None
        #: The server's capabilities from the handshake (None before).
        self.server_capabilities: Optional[JsonDict] = None
        #: The server's ``instructions`` from the handshake, if any.
        self.instructions: Optional[str] = None

    def _new_core(self, carried: Optional[_assembly.Core]) -> _assembly.Core:
        """The session of connection number ``_generation + 1`` (a reconnect carries the rest over)."""
        self._generation = generation = self._generation + 1
        core = _assembly.build_core(
            self._port, self._opts, self.name, self.server_id, partial(self._is_live, generation),
            partial(self._broken, generation), partial(self._broken, generation) if self._reconnect is not None else None, carried,
            self._tracing,
        )
        self._session = core.session
        #: The requests in flight (the session's call table).
        self._calls = core.session.calls
        return core

    def _cache_identity(self) -> tuple[str, str]:
        return self._transport.cache_identity()  # the transport of the connection now (a reconnect makes a new one)

    def _trace_attributes(self) -> dict[str, Any]:
        found, version = self._transport.trace_attributes(), self.protocol_version
        return found if version is None else {**found, "mcp.protocol.version": version}

    @property
    def server_extensions(self) -> dict[str, JsonDict]:
        """The extensions the server declared (SEP-2133), identifier -> settings; empty before it opened or without any."""
        extensions = (self.server_capabilities or {}).get("extensions")
        if not isinstance(extensions, dict):
            return {}
        return {name: dict(settings) for name, settings in extensions.items() if isinstance(name, str) and isinstance(settings, dict)}

    @property
    def era(self) -> Optional[str]:
        """``"legacy"`` or ``"modern"`` once open, else None."""
        return self._core.era.name

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
            self._connect()
        except BaseException:
            self.close(1.0)  # a server that failed the handshake gets a short grace, so timeout= bounds the attempt
            raise
        finally:
            self._ready.set()
        self._opened()
        return self

    def _connect(self) -> None:
        """Start the runtime and the transport, then shake hands: open(), and each attempt of a reconnect."""
        with self._state_lock:
            if self._state is not ClientState.CONNECTING:  # closed meanwhile: nothing more is started
                raise ClientError("closed", "the client was closed while it connected")
            self._pid = os.getpid()
            runtime = _assembly.start_runtime(self._core, self._port, self._opts, self.name, self.server_id)
            self._watchdog, self._pool, self._desk, self._legacy = runtime.watchdog, runtime.pool, runtime.desk, runtime.legacy
        try:
            self._port.start(self._session.on_line, self._session.on_transport_closed)
        except TransportClosed as exc:
            raise transport_error(exc, str(exc)) from exc
        engine, facts = _assembly.connect(self._core, runtime, self._port, self._opts, self.name, self.server_id, self._era_cache)
        self._engine = engine
        self.server_capabilities, self.server_info, self.instructions = facts.server_capabilities, facts.server_info, facts.instructions

    def _opened(self) -> None:
        with self._state_lock:
            if self._state is not ClientState.CONNECTING:
                raise ClientError("closed", "the client was closed while it connected")
            self._state = ClientState.OPEN

    def _wait_ready(self) -> None:
        """Block until another thread's open() or reconnect finished (bounded by the handshake's own bounds)."""
        policy = self._reconnect
        bound = self._opts.discover_timeout + 2 * self._opts.timeout + 10.0
        if policy is not None:  # every attempt, and the back-off between them
            bound = bound * policy.attempts + policy.max_delay * policy.attempts
        if not RealBudget(bound).wait_until(self._ready.is_set, bound, step=0.05):
            raise ClientError("timeout", "the client did not finish connecting")
        state, failure = self._state, self._reconnect_failure
        if state is ClientState.BROKEN and failure is not None:  # the reconnect this thread waited for failed
            raise ClientError(failure.kind, str(failure), data=failure.data, check=failure.check)
        if state is not ClientState.OPEN:
            raise self._session.closed_error()

    def _is_live(self, generation: int) -> bool:
        return self._generation == generation and self._state in (ClientState.OPEN, ClientState.CONNECTING)

    # ------------------------------------------------------------------ reconnect

    def _broken(self, generation: int) -> None:
        """Connection ``generation`` ended (stdio: the server exited), or found no server (HTTP).

        Every call in flight on it has failed with ``transport`` (stdio) or
        fails when the next call connects again. Without ``reconnect`` an
        ended connection closes the client.
        """
        if self._reconnect is None:
            self.close()
            return
        with self._state_lock:
            if self._generation != generation or self._state is not ClientState.OPEN:
                return
            self._state = ClientState.BROKEN
            desk, engines = self._desk, {id(e): e for e in (self._legacy, self._engine) if e is not None}
        log.info("mcp_input_sync: the connection to server %s broke; the next call connects again", self.server_id)
        if desk is not None:  # the callbacks still running learn it now, not at the next call
            desk.close()
        for engine in engines.values():
            engine.close(answer=False)

    def _connect_again(self) -> None:
        """Connect again after the connection broke (the next call's thread; others wait for it)."""
        with self._state_lock:
            if self._state is ClientState.CONNECTING:
                waiting = True
            elif self._state is not ClientState.BROKEN:
                return  # connected again by another thread, or closed: the caller looks at the state again
            else:
                waiting = False
                self._state = ClientState.CONNECTING
                self._ready.clear()
                self._reconnect_failure = None
        if waiting:
            self._wait_ready()
            return
        try:
            self._attempts()
        except ClientError as exc:
            with self._state_lock:
                if self._state is ClientState.CONNECTING:
                    self._state = ClientState.BROKEN  # the next call tries again
                    self._reconnect_failure = exc
            if self._state is ClientState.CLOSED:
                raise self._session.closed_error() from exc
            raise
        except BaseException:
            self.close(1.0)
            raise
        finally:
            self._ready.set()
        self._opened()

    def _attempts(self) -> None:
        """Tear the broken connection down, then try ``attempts`` new ones with back-off; restore subscriptions."""
        policy = self._reconnect
        assert policy is not None
        ended = self._session.ended_why or "the server could not be reached"
        self._stop_connection(RealBudget(5.0), ended)
        prefers, key = eras.PREFERENCES.get(self._opts.protocol), self._port.era_key()
        if prefers is not None and key is not None:
            self._era_cache.forget(prefers, key)  # the server may have changed its era: probe afresh
        last: Optional[ClientError] = None
        for attempt in range(1, policy.attempts + 1):
            if self._closing.wait(policy.delay(attempt)) or self._state is not ClientState.CONNECTING:
                raise self._session.closed_error()
            transport = self._transport.fresh()
            if transport is None:
                raise ClientError("closed", f"the client is closed: {ended}; its transport cannot connect again")
            with self._state_lock:
                if self._state is not ClientState.CONNECTING:
                    raise self._session.closed_error()
                self._transport, self._port = transport, Port(transport)
                self._core = self._new_core(self._core)
            try:
                self._connect()
                break
            except ClientError as exc:
                if exc.kind not in ("transport", "timeout") or self._state is not ClientState.CONNECTING:
                    self._stop_connection(RealBudget(2.0), str(exc))
                    raise
                last = exc
                log.info("mcp_input_sync: connecting again to server %s, attempt %d of %d failed: %s", self.server_id, attempt, policy.attempts, exc)
                self._stop_connection(RealBudget(2.0), str(exc))
        else:
            assert last is not None
            raise ClientError(
                "transport", f"could not connect to server {self.server_id} again in {policy.attempts} attempts; the last: {last}",
                data=last.data, check=last.check,
            )
        if self._cache is not None:
            self._cache.forget_listings()  # a restarted server may offer other tools: list afresh
        if self._tracing is not None:  # an event of the request that follows on this thread
            self._tracing.note("mcp_input_sync.reconnect", {"mcp_input_sync.reconnect.attempts": attempt})
        engine = self._engine
        assert engine is not None
        for uri in list(self._resources):
            try:
                engine.subscribe_resource(uri, True)
            except ClientError as exc:
                log.warning("mcp_input_sync: the subscription to %s was not restored on server %s: %s", uri, self.server_id, exc)
        log.info("mcp_input_sync: connected to server %s again (%s)", self.server_id, self.era)

    def _check_pid(self) -> None:
        if os.getpid() != self._pid:
            raise ClientError("closed", "this client belongs to the parent process (used after fork)")

    def _ensure_open(self) -> EraEngine:
        state = self._state
        if state is ClientState.OPEN and self._reconnect is not None and self._session.ended_why is not None:
            with self._state_lock:  # the stdio server ended; the reader failed the calls but has not marked it broken yet
                ended = self._generation if self._session.ended_why is not None else 0
            self._broken(ended)  # so this call does, and connects again, as it would a moment later
            state = self._state
        if state is ClientState.OPEN:
            if os.getpid() != self._pid:
                self._check_pid()
        elif state is ClientState.UNOPENED:
            self.open()
        elif state is ClientState.CONNECTING:  # the handshake is under way on another thread
            self._wait_ready()
        elif state is ClientState.BROKEN:
            self._connect_again()
            if self._state is not ClientState.OPEN:  # closed meanwhile
                raise self._session.closed_error()
        else:
            raise self._session.closed_error()
        engine = self._engine
        if engine is None:
            raise self._session.closed_error()
        return engine

    @property
    def state(self) -> ClientState:
        """The client's :class:`ClientState`."""
        return self._state

    def capabilities(self, version: str) -> JsonDict:
        """The ``ClientCapabilities`` this client declares at ``version``."""
        return declared_capabilities(self._handler, self._opts, version)

    def cancel_task(self, task_id: str, *, timeout: Seconds = _UNSET) -> JsonDict:
        """Ask the server to cancel a task (cooperative: it may still end otherwise)."""
        return self._request("tasks/cancel", {"taskId": task_id}, timeout)

    def ping(self, *, timeout: Seconds = _UNSET) -> None:
        """Send ``ping`` and wait for the answer."""
        self._request("ping", None, timeout)

    def notify_roots_changed(self) -> None:
        """Tell a legacy server the roots changed (no-op unless the handler declares roots: ``list_roots`` and ``offers_roots()``)."""
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
        reset_timeout_on_progress: Optional[bool] = None,
        idempotent: bool = False,
        keep: Optional[Callable[[Any, bool], None]] = None,
    ) -> Union[JsonDict, PendingCall]:
        engine = self._ensure_open()
        spec = CallSpec(self._clock_for(timeout, max_total_timeout, reset_timeout_on_progress), assigns, progress, cancel, defer_input, wait, idempotent)
        result = engine.call(method, params, spec)
        if keep is not None:
            keep(result, spec.direct)
        return result

    def _clock_for(self, timeout: Seconds, max_total_timeout: Seconds, reset_timeout_on_progress: Optional[bool] = None) -> CallClock:
        wait_s = self._opts.timeout if timeout is _UNSET else seconds("timeout", timeout)
        total_s = self._opts.max_total_timeout if max_total_timeout is _UNSET else seconds("max_total_timeout", max_total_timeout)
        resets = self._opts.reset_timeout_on_progress if reset_timeout_on_progress is None else reset_timeout_on_progress
        if not isinstance(resets, bool):
            raise TypeError("reset_timeout_on_progress must be a bool or None")
        return CallClock(_clock.monotonic(), wait_s, total_s, resets)

    def check_input(self, method: str, params: Any) -> Union[Prepared, Refusal]:
        """Run one input request of a pending round through this client's checks (steps 1 to 3 and 5; no budget is taken).

        For hosts that answer a :class:`PendingCall` later, such as the web
        bridge, which parks each request for a person: it returns the checked
        request (its compiled form, URL and kind), or the :class:`Refusal` that
        says why the client will not ask the user. Before :meth:`open` every
        request is refused (check ``capability``).
        """
        desk = self._desk
        if desk is None:
            return Refusal("capability", jsonrpc.METHOD_NOT_FOUND, "the client is not open")
        refusal = desk.checks.before(method, params)
        return refusal if refusal is not None else desk.checks.prepare(method, params, in_flight=True)

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
        ``subscriptions/listen`` filter (the listen is reopened with it). A
        reconnect subscribes again.
        """
        self._ensure_open().subscribe_resource(uri, True)
        self._resources[uri] = None

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop hearing updates for ``uri`` (``resources/unsubscribe``, or a narrower listen)."""
        self._ensure_open().subscribe_resource(uri, False)
        self._resources.pop(uri, None)

    # ------------------------------------------------------------------ stats and close

    @property
    def stats(self) -> Mapping[str, Any]:
        """Counters: ``served``, ``refused`` (kind -> check -> count), ``timed_out``,
        ``notifications_dropped``, ``logs_dropped``, ``logs_delivered``, ``stuck_callbacks``, ``cache_hits`` (docs/caching.md)."""
        return self._stats.snapshot()

    @property
    def abandoned_calls(self) -> int:
        """Calls that ended without their result (timeout, ``cancel``, Ctrl-C) whose late answer has not arrived.

        The server may still be at work on them and ask for input on their
        behalf. Over stdio, where a server request names no call, while this
        is not 0 a server request is tied to no call (its callbacks see the
        client's ``assigns``); :class:`ClientPool` retires such a client.
        Always 0 over HTTP, where each request names its call by the stream
        that carries it, and in the 2026-07-28 era, which has no server
        requests; -1 once more than 256 were abandoned (it stays so).
        """
        return self._calls.abandoned()

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
                started = was_open or self._state is ClientState.BROKEN
                self._state = ClientState.CLOSED
                self._closing.set()
        if closing_elsewhere:
            self._closed.wait(timeout)  # another thread is closing: wait for it, bounded
            return
        try:
            budget = RealBudget(timeout)
            self._shut_down(budget, answer=was_open, started=started)
            self._pump.stop(budget)
        finally:
            self._closed.set()

    def _stop_connection(self, budget: RealBudget, why: str) -> None:
        """A reconnect: the broken connection's calls fail with ``transport``, its parts stop (the pump goes on)."""
        self._session.fail_all("transport", lambda method: f"{method} failed: {why}")
        self._shut_down(budget, answer=False, started=True)

    def _shut_down(self, budget: RealBudget, answer: bool, started: bool) -> None:
        """Stop this connection's parts, once: ``answer`` the server's open requests, close the transport if ``started``."""
        # 1. Own calls fail first, so a response racing the shutdown is not returned.
        calls = self._session.fail_all("closed", lambda method: f"{method} was cancelled: the client closed")
        if self._stopped == self._generation:  # a reconnect stopped them already (its attempts all failed)
            return
        self._stopped = self._generation
        desk = self._desk
        engines = {id(e): e for e in (self._legacy, self._engine) if e is not None}
        if desk is not None:
            desk.close()
        # 2. Server requests still open get -32603, then their tokens are set.
        for engine in engines.values():
            engine.close(answer=answer)
        # 3. The server is told the calls are cancelled.
        for call in calls:
            if answer and call.method != "initialize":
                self._session.notify_quietly("notifications/cancelled", {"requestId": call.id, "reason": "client closed"})
        if started:
            try:
                self._port.close(budget.take(budget.left * 0.7))
            except Exception:  # noqa: BLE001 - a transport's failure must not leave the library's threads running
                log.exception("mcp_input_sync: the transport of server %s failed to close", self.server_id)
        if desk is not None:
            for thread in desk.worker_threads():
                budget.join(thread, share=0.3)
        if self._watchdog is not None:
            self._watchdog.stop(budget)
        pool = self._pool
        if pool is not None:
            stuck = pool.shutdown(budget)
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
    cert: Union[None, str, "os.PathLike[str]", tuple[str, str]] = None,
    proxies: Optional[Mapping[str, Optional[str]]] = None,
    pool_size: int = 64,
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
        cert: a client certificate for a server that asks for one (mutual TLS), as
            ``requests`` takes it: the path of a PEM file with the certificate and
            its unencrypted key, or a ``(certificate, key)`` pair of paths.
        proxies: the proxies requests go through, as ``requests`` takes them, e.g.
            ``{"https": "http://proxy.example.com:3128"}`` (keys ``http``, ``https``,
            ``all``, each may add ``://host``). They win over ``HTTP(S)_PROXY``;
            ``NO_PROXY`` does not apply to them. ``OAuth(proxies=...)`` carries the
            authorization exchanges (docs/http.md#client-certificates-and-proxies).
        pool_size: the connections to the server kept open for reuse, an int
            from 1 to 1024. Each call holds one while it runs (a legacy client
            also one for its GET stream), so one for each thread that calls at
            once. A thread never waits for one: past ``pool_size`` a call opens
            one more, closed afterwards rather than kept (no warning logged).
        **options: the client options.

    Raises:
        ClientError: ``transport`` when the server cannot be reached, ``auth``
            for 401 or 403, ``protocol`` when no version can be agreed.
        TypeError, ValueError: ``pool_size`` is not an int, or out of range; ``cert``
            or ``proxies`` is not of those forms, or a file ``cert`` names does not exist.
    """
    from .transports._send import route_settings
    from .transports.http import HttpTransport

    route_settings(cert, proxies, files=True)  # a missing certificate file is said before anything is sent
    client = Client(HttpTransport(url, headers=headers, auth=auth, verify=verify, pool_size=pool_size, cert=cert, proxies=proxies), **options)
    client.open()
    return client
