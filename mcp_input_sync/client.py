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
"""

from __future__ import annotations

import enum
from functools import partial
import itertools
import logging
import os
import threading
from typing import Any, Literal, Mapping, Optional, Sequence, Union, overload

from . import _clock, reflect
from ._calls import Call, CallTable, ProgressCallback
from ._legacy import LegacyResponder
from ._modern import ModernCalls
from ._notifications import NotificationRouter, Subscriber, Subscription
from ._protocol import jsonrpc, modern
from ._protocol import versions as v
from ._protocol.budget import TokenBucket
from ._protocol.calls import MAX_TOTAL, CallClock
from ._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from ._protocol.headers import tool_header_map
from ._protocol.jsonrpc import JsonDict
from ._protocol.limits import LimitExceeded, may_be_too_deep, salvage, too_deep
from ._protocol.modern import PendingCall
from ._runtime import RealBudget
from ._runtime.notify import NotificationPump
from ._runtime.watchdog import Watchdog
from ._runtime.workers import HandlerPool
from ._stats import Stats
from ._version import __version__
from .errors import ClientError
from .handler import CancelToken, InputHandler, overrides
from .options import Options, seconds
from .transports.base import Oversized, Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

__all__ = ["Client", "ClientState", "Subscription", "connect_http", "connect_stdio"]

#: How a server request in the 2026-07-28 era is counted and logged (it is never answered).
MODERN_REQUEST = Refusal("era", 0, "a server request in the 2026-07-28 era was ignored")

#: The era each HTTP origin spoke (behaviour.md section 4: cached per origin), this process.
_ERA_CACHE: dict[str, tuple[str, str]] = {}

#: Pages a list_* call follows before it gives up.
MAX_LIST_PAGES = 1000


class _Unset(enum.Enum):
    UNSET = "UNSET"


_UNSET = _Unset.UNSET
Seconds = Union[float, _Unset]


class ClientState(enum.Enum):
    """Where a client is in its life."""

    UNOPENED = "unopened"  #: built; nothing started yet
    CONNECTING = "connecting"  #: open() is probing the era and shaking hands; calls wait
    OPEN = "open"  #: connected; calls allowed
    CLOSED = "closed"  #: closed by close() or by a broken connection; calls raise "closed"


class Client:
    """A synchronous MCP client.

    Args:
        transport: the connection to one server (see :mod:`mcp_input_sync.transports`);
            it is started by :meth:`open`.
        **options: the options of behaviour.md section 2 (``handler``, ``name``,
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
        self._handler: Optional[InputHandler] = opts.handler
        #: The ``name`` option: ``clientInfo.name`` and ``ctx.client``.
        self.name = opts.name
        #: The ``server_id`` option: ``ctx.server_id`` and the server's logger name.
        self.server_id: str = opts.server_id or str(getattr(transport, "default_server_id", "server"))
        set_server_id = getattr(transport, "set_server_id", None)
        if set_server_id is not None:
            set_server_id(self.server_id)
        set_limits = getattr(transport, "set_limits", None)
        if set_limits is not None:
            set_limits(opts.limits)
        self._depth_limit = opts.limits["json_depth"]
        self._state = ClientState.UNOPENED
        self._state_lock = threading.RLock()
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._ids = itertools.count(1)
        self._calls = CallTable()
        self._stats = Stats()
        self._pid = os.getpid()
        self._pool: Optional[HandlerPool] = None
        self._pump: Optional[NotificationPump] = None
        self._watchdog: Optional[Watchdog] = None
        self._responder: Optional[LegacyResponder] = None
        self._router = NotificationRouter(
            handler=opts.handler, calls=self._calls, stats=self._stats, client_name=self.name, server_id=self.server_id
        )
        self._logs_requested = False
        self._logs_lock = threading.Lock()
        #: The modern protocol version put in every request's _meta (None: legacy, or not open).
        self._meta_version: Optional[str] = None
        self._meta_cache: Optional[tuple[str, JsonDict, JsonDict]] = None
        self._modern = ModernCalls(self)
        #: Tokens of modern callbacks running on callers' threads (close() sets them).
        self._live_tokens: set[CancelToken] = set()
        #: Worker threads of parallel modern rounds (close() joins them).
        self._input_threads: set[threading.Thread] = set()
        #: The open subscriptions/listen request (modern), if any.
        self._listen: Optional[Call] = None
        self._resource_subscriptions: list[str] = []
        #: Each tool's ``execution.taskSupport`` as last listed (2025-11-25 tasks).
        self._task_supports: dict[str, str] = {}
        #: ``"legacy"`` or ``"modern"`` once open, else None.
        self.era: Optional[str] = None
        #: The negotiated protocol version once open, else None.
        self.protocol_version: Optional[str] = None
        #: The server's ``serverInfo`` from the handshake (None before).
        self.server_info: Optional[JsonDict] = None
        #: The server's capabilities from the handshake (None before).
        self.server_capabilities: Optional[JsonDict] = None
        #: The server's ``instructions`` from the handshake, if any.
        self.instructions: Optional[str] = None

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
            self._start_runtime()
            try:
                self._transport.start(self._on_line, self._on_transport_closed)
            except TransportClosed as exc:
                raise ClientError("transport", str(exc)) from exc
            self._connect()
        except BaseException:
            self.close()
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

    def _start_runtime(self) -> None:
        """The threads and engines of an opening client (never in the constructor)."""
        with self._state_lock:
            self._pid = os.getpid()
            self._watchdog = Watchdog()
            self._watchdog.start()
            # answers that cost a round trip each (HTTP POSTs) are better written by many workers at once
            slow_answers = bool(getattr(self._transport, "slow_answers", False))
            # every queued job is an open request, so the deadline sweep wakes the watchdog within
            # 0.1 s to look at the nudge: no wake-up per burst (each would be a thread switch)
            nudge = None if slow_answers else partial(self._watchdog.watch_fast, wake=False)
            self._pool = HandlerPool(self._opts.max_server_requests, nudge=nudge)
            self._pump = NotificationPump()
            self._pump.start()
            self._router.pump = self._pump
            self._responder = LegacyResponder(
                handler=self._handler,
                options=self._opts,
                calls=self._calls,
                stats=self._stats,
                send=self._transport.send,
                pool=self._pool,
                watchdog=self._watchdog,
                client_name=self.name,
                server_id=self.server_id,
                checks=InputChecks(CheckConfig(), *self._opts.input_rate_limit, _clock.monotonic()),
            )
            self._responder.ties_by_stream = bool(getattr(self._transport, "ties_by_stream", False))
            send_later = getattr(self._transport, "send_later", None)
            flush = getattr(self._transport, "flush", None)
            if send_later is not None and flush is not None:
                self._responder.send_later, self._responder.flush = send_later, flush
            if hasattr(self._transport, "on_lost"):
                self._transport.on_lost = self._on_lost
            self._router.log_budget = TokenBucket(*self._opts.log_rate_limit, _clock.monotonic())

    def _check_pid(self) -> None:
        if os.getpid() != self._pid:
            raise ClientError("closed", "this client belongs to the parent process (used after fork)")

    def _ensure_open(self) -> None:
        state = self._state
        if state is ClientState.OPEN:
            if os.getpid() != self._pid:
                self._check_pid()
            return
        if state is ClientState.UNOPENED:
            self.open()
            return
        if state is ClientState.CONNECTING:  # the handshake is under way on another thread
            self._wait_ready()
            return
        raise ClientError("closed", "the client is closed")

    @property
    def state(self) -> ClientState:
        """The client's :class:`ClientState`."""
        return self._state

    # ------------------------------------------------------------------ handshake

    def capabilities(self, version: str) -> JsonDict:
        """The ``ClientCapabilities`` this client declares at ``version``."""
        handler = self._handler
        modes: Optional[tuple[str, ...]] = None
        if handler is not None and overrides(handler, "handle_elicitation"):
            modes = tuple(m for m in handler.elicitation_modes() if m in ("form", "url"))
        sampling = overrides(handler, "handle_sampling")
        roots = overrides(handler, "list_roots")
        sampling_tools = bool(handler is not None and type(handler).sampling_tools)
        sampling_context = bool(self._opts.sampling["context"])
        if version in modern.MODERN_VERSIONS:
            return modern.capabilities(
                sampling=sampling,
                elicitation_modes=modes,
                roots=roots,
                sampling_tools=sampling_tools,
                sampling_context=sampling_context,
                tasks=self._opts.tasks,
            )
        return v.client_capabilities(
            version=version,
            sampling=sampling,
            elicitation_modes=modes,
            roots=roots,
            sampling_tools=sampling_tools,
            sampling_context=sampling_context,
        )

    # ------------------------------------------------------------------ era detection

    def _connect(self) -> None:
        """Pick the era (behaviour.md section 4) and finish the handshake, if any."""
        protocol = self._opts.protocol
        if protocol == "legacy":
            self._handshake(v.LATEST_LEGACY_VERSION, forced=None)
        elif protocol in v.FORCEABLE_LEGACY_VERSIONS:
            self._handshake(protocol, forced=protocol)
        elif protocol in ("modern",) + modern.MODERN_VERSIONS:
            self._probe(forced=True)
        elif protocol == "auto":
            origin = self._http_origin()
            cached = _ERA_CACHE.get(origin) if origin is not None else None
            if cached is not None:
                try:
                    if cached[0] == v.MODERN:
                        self._go_modern(cached[1], None)
                    else:
                        self._handshake(cached[1], forced=None, switch=True)
                    return
                except ClientError as exc:
                    if exc.kind in ("transport", "auth", "closed"):
                        raise
                    if origin is not None:
                        _ERA_CACHE.pop(origin, None)  # the cached guess failed: probe again
            self._probe(forced=False)
            if origin is not None and self.era is not None and self.protocol_version is not None:
                _ERA_CACHE[origin] = (self.era, self.protocol_version)
        else:
            raise ClientError("protocol", f"protocol {protocol!r} is not a version this client speaks")

    def _http_origin(self) -> Optional[str]:
        """The origin whose era is cached (HTTP only: a stdio server is probed per process)."""
        if not getattr(self._transport, "ties_by_stream", False):
            return None
        origin = getattr(self._transport, "origin", None)
        return origin if isinstance(origin, str) else None

    def _probe(self, forced: bool) -> None:
        """Send ``server/discover`` and decide the era from its answer (or its silence)."""
        version = modern.MODERN_VERSION
        self._meta_version = version
        responder = self._responder
        assert responder is not None
        responder.checks.config = self._check_config(version, self.capabilities(version))
        done = threading.Event()
        probe = self._start("server/discover", None, is_call=False, clock=self._clock_for(self._opts.discover_timeout, _UNSET), done=done)
        self._meta_version = None
        answered = self._wait_any(done, self._opts.discover_timeout, [probe])
        if answered:
            self._decide(probe, forced)
            return
        if forced:
            self._calls.forget(probe)
            raise ClientError("timeout", f"server/discover was not answered within {self._opts.discover_timeout:g} s")
        # Silence: try initialize on the same process; a late DiscoverResult still wins.
        offered = v.LATEST_LEGACY_VERSION
        caps = self.capabilities(offered)
        responder.checks.config = self._check_config(offered, caps)
        init = self._start(
            "initialize",
            v.initialize_params(offered, caps, {"name": self.name, "version": __version__}),
            is_call=False,
            clock=self._clock_for(_UNSET, _UNSET),
            done=done,
        )
        if self._wait_any(done, self._opts.timeout, [probe, init]):
            if probe.response is not None and "result" in probe.response:
                self._calls.forget(init)
                self._decide(probe, forced)
                return
            self._calls.forget(probe)
            if init.failure is not None:
                raise init.failure
            self._finish_handshake(init, offered, None, caps, switch=True)
            return
        # Still silent: an old server whose reader died on the probe. Restart it once, no probe.
        self._calls.forget(probe)
        self._calls.forget(init)
        restart = getattr(self._transport, "restart", None)
        if restart is None:
            raise ClientError("timeout", "the server answered neither server/discover nor initialize")
        log.warning("mcp_input_sync: server %s answered neither server/discover nor initialize; restarting it once", self.server_id)
        try:
            restart(self._opts.timeout)
        except TransportClosed as exc:
            raise ClientError("transport", str(exc)) from exc
        self._handshake(offered, forced=None, switch=True)

    def _wait_any(self, done: threading.Event, seconds_: float, calls: list[Call]) -> bool:
        """Wait (bounded, library clock) until one of ``calls`` sharing ``done`` has an outcome."""
        deadline = _clock.monotonic() + seconds_
        while True:
            if any(c.response is not None or c.failure is not None for c in calls):
                return True
            left = deadline - _clock.monotonic()
            if left <= 0:
                return False
            done.wait(min(left, _clock.MAX_WAIT))  # set only after a response or failure is stored

    def _decide(self, probe: Call, forced: bool) -> None:
        """Act on the probe's answer."""
        if probe.failure is not None:
            raise probe.failure
        response = probe.response
        assert response is not None
        try:
            decision = modern.decide_from_discover(response)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        if decision.era == v.MODERN:
            self._go_modern(decision.version, decision.discover)
        elif forced:
            raise ClientError("protocol", "the server does not speak the 2026-07-28 era", data=response.get("error"))
        else:
            self._handshake(decision.version, forced=None, switch=True)

    def _go_modern(self, version: str, discover: Optional[JsonDict]) -> None:
        responder = self._responder
        assert responder is not None
        self._meta_version = version
        self.era = responder.era = self._router.era = v.MODERN
        self.protocol_version = version
        self._tell_transport()
        responder.checks.config = self._check_config(version, self.capabilities(version))
        if discover is None:
            try:
                discover = self._request("server/discover", None, is_call=False, timeout=self._opts.discover_timeout)
            except ClientError as exc:
                if exc.kind not in ("remote", "timeout"):
                    raise
                discover = {}
        caps = discover.get("capabilities")
        self.server_capabilities = caps if type(caps) is dict else {}
        info = (discover.get("_meta") or {}).get(modern.META_SERVER_INFO) if type(discover.get("_meta")) is dict else None
        self.server_info = info if type(info) is dict else None
        instructions = discover.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._listen_if_wanted()

    def _handshake(self, offered: str, forced: Optional[str], switch: bool = False) -> None:
        """The legacy lifecycle: initialize, then notifications/initialized.

        With ``switch`` (era detection), an initialize error that lists a
        modern version switches to the modern era instead of failing.
        """
        responder = self._responder
        assert responder is not None
        caps = self.capabilities(offered)
        responder.checks.config = self._check_config(offered, caps)
        params = v.initialize_params(offered, caps, {"name": self.name, "version": __version__})
        call = self._start("initialize", params, is_call=False, clock=self._clock_for(_UNSET, _UNSET))
        self._finish_handshake(call, offered, forced, caps, switch)

    def _finish_handshake(self, call: Call, offered: str, forced: Optional[str], caps: JsonDict, switch: bool = False) -> None:
        responder = self._responder
        assert responder is not None
        try:
            result = self._await(call)
        except ClientError as exc:
            if switch and exc.kind == "remote" and modern.modern_in_initialize_error({"data": exc.data}):
                self._go_modern(modern.MODERN_VERSION, None)  # a modern-only server listed its versions
                return
            raise
        try:
            version, server_caps = v.accept_initialize_result(result, forced)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        responder.checks.config = self._check_config(version, caps)
        self.era = responder.era = self._router.era = v.LEGACY
        self.protocol_version = version
        self._tell_transport()
        self.server_capabilities = server_caps
        info = result.get("serverInfo")
        self.server_info = info if type(info) is dict else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._send(jsonrpc.notification("notifications/initialized"))
        if self._router.wants_logs:
            self._request_logs()
        self._listen_if_wanted()

    def _tell_transport(self) -> None:
        """Transports that send the version in headers (HTTP) learn the decision."""
        set_protocol = getattr(self._transport, "set_protocol", None)
        if set_protocol is not None and self.era is not None and self.protocol_version is not None:
            set_protocol(self.era, self.protocol_version)

    def _modern_meta(self) -> JsonDict:
        """The ``_meta`` of a modern request (clientCapabilities derived from the handler)."""
        version = self._meta_version
        assert version is not None
        cached = self._meta_cache
        if cached is None or cached[0] != version:
            caps = self.capabilities(version)
            cached = self._meta_cache = (version, caps, {"name": self.name, "version": __version__})
        level = self._opts.log_level if self._router.wants_logs else None
        return modern.meta(version, cached[1], cached[2], level)

    def _check_config(self, version: str, caps: JsonDict) -> CheckConfig:
        """What the check pipeline needs: the session's version and what this client declared."""
        sampling_caps = caps.get("sampling", {})
        elicitation_caps = caps.get("elicitation", {})
        opts = self._opts
        origin = getattr(self._transport, "origin", None) or opts.elicitation["origin"]
        return CheckConfig(
            version="2025-06-18" if version == "2025-03-26" else version,  # 2025-03-26 is read as 2025-06-18
            kinds=v.declared_kinds(caps, version),
            modes=frozenset(elicitation_caps) or frozenset({"form"}),
            sampling_tools="tools" in sampling_caps,
            sampling_context="context" in sampling_caps,
            max_tokens=opts.sampling["max_tokens"],
            allow_idle=opts.sampling["allow_idle"],
            max_tool_iterations=opts.sampling["max_tool_iterations"],
            rejection_code=opts.sampling["rejection_code"],
            origin=origin,
        )

    def _request_logs(self) -> None:
        """Ask the server for logs at ``log_level``, once, when it declares ``logging``."""
        with self._logs_lock:
            caps = self.server_capabilities
            if self._logs_requested or caps is None or "logging" not in caps:
                return
            self._logs_requested = True
        try:
            self._request("logging/setLevel", {"level": self._opts.log_level}, is_call=False)
        except ClientError as exc:
            if exc.kind in ("closed", "transport"):
                raise
            log.warning("mcp_input_sync: server %s refused logging/setLevel: %s", self.server_id, exc)

    # ------------------------------------------------------------------ calls

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: Literal[False] = ...,
        wait: bool = ...,
    ) -> JsonDict: ...

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: bool,
        wait: bool = ...,
    ) -> Union[JsonDict, PendingCall]: ...

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        defer_input: bool = False,
        wait: bool = True,
    ) -> Union[JsonDict, PendingCall]:
        """Call a tool and return its ``CallToolResult`` (``isError: true`` is returned, not raised).

        Args:
            name: the tool's name.
            arguments: the tool's arguments.
            timeout: seconds to wait on the server (not counting time spent
                answering its input requests).
            max_total_timeout: hard bound on the whole call, in seconds.
            assigns: what callbacks answering this call's input see as ``ctx.assigns``.
            progress: called on the notification thread with each progress update.
            cancel: an Event another thread may set to cancel the call.
            defer_input: (2026-07-28 era) return a :class:`PendingCall` at the
                first round of input instead of calling the handler; continue
                it with :meth:`resume`.
            wait: with ``tasks=True``, follow a task to its result (True) or
                return the ``CreateTaskResult`` at once (False).

        Raises:
            ClientError: ``remote`` for a JSON-RPC error (``-32042`` included, its
                elicitations in ``.data``), ``timeout``, ``cancelled``, ``closed``,
                ``transport``, ``protocol``, and in the 2026-07-28 era
                ``input_handler``, ``refused`` and ``declined``.
        """
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("tools/call", params, timeout, max_total_timeout, assigns, progress, cancel, defer_input, wait)

    @overload
    def read_resource(
        self,
        uri: str,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: Literal[False] = ...,
    ) -> JsonDict: ...

    @overload
    def read_resource(
        self,
        uri: str,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: bool,
    ) -> Union[JsonDict, PendingCall]: ...

    def read_resource(
        self,
        uri: str,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        defer_input: bool = False,
    ) -> Union[JsonDict, PendingCall]:
        """Read a resource and return its ``ReadResourceResult``; see :meth:`call_tool`."""
        return self._call("resources/read", {"uri": uri}, timeout, max_total_timeout, assigns, progress, cancel, defer_input, True)

    @overload
    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: Literal[False] = ...,
    ) -> JsonDict: ...

    @overload
    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Seconds = ...,
        max_total_timeout: Seconds = ...,
        assigns: Optional[Mapping[str, Any]] = ...,
        progress: Optional[ProgressCallback] = ...,
        cancel: Optional[threading.Event] = ...,
        defer_input: bool,
    ) -> Union[JsonDict, PendingCall]: ...

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        defer_input: bool = False,
    ) -> Union[JsonDict, PendingCall]:
        """Get a prompt and return its ``GetPromptResult``; see :meth:`call_tool`."""
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("prompts/get", params, timeout, max_total_timeout, assigns, progress, cancel, defer_input, True)

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
        self._ensure_open()
        if self.era != v.MODERN:
            raise ClientError("protocol", "resume works only in the 2026-07-28 era")
        return self._modern.resume(
            pending,
            responses,
            clock=self._clock_for(timeout, max_total_timeout),
            assigns=assigns,
            progress=progress,
            cancel=cancel,
            defer_input=defer_input,
            wait=wait,
        )

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
        self._ensure_open()
        clock = self._clock_for(timeout, max_total_timeout)
        if self.era != v.MODERN:
            return self._legacy_await_task(task_id, clock, assigns, cancel)
        return self._modern.await_task(task_id, clock=clock, assigns=assigns, cancel=cancel)

    def cancel_task(self, task_id: str, *, timeout: Seconds = _UNSET) -> JsonDict:
        """Ask the server to cancel a task (cooperative: it may still end otherwise)."""
        self._ensure_open()
        return self._request("tasks/cancel", {"taskId": task_id}, is_call=False, timeout=timeout)

    def list_tools(self, *, timeout: Seconds = _UNSET) -> list[JsonDict]:
        """Every tool the server offers, following ``nextCursor`` across pages."""
        tools = self._list("tools/list", "tools", timeout)
        table = getattr(self._transport, "tool_headers", None)
        if self.era == v.MODERN and isinstance(table, dict):
            # 2026-07-28 HTTP: mirror x-mcp-header arguments; drop tools whose annotations are invalid
            kept = []
            for tool in tools:
                found = tool_header_map(tool)
                name = tool.get("name") if isinstance(tool, dict) else None
                if found is None:
                    log.warning("mcp_input_sync: tool %r of server %s has invalid x-mcp-header annotations; dropped", name, self.server_id)
                    continue
                if isinstance(name, str):
                    table[name] = found
                kept.append(tool)
            tools = kept
        for tool in tools:
            execution = tool.get("execution") if isinstance(tool, dict) else None
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._task_supports[tool["name"]] = support if isinstance(support, str) else "forbidden"
        return tools

    def list_resources(self, *, timeout: Seconds = _UNSET) -> list[JsonDict]:
        """Every resource the server offers, following ``nextCursor``."""
        return self._list("resources/list", "resources", timeout)

    def list_resource_templates(self, *, timeout: Seconds = _UNSET) -> list[JsonDict]:
        """Every resource template the server offers, following ``nextCursor``."""
        return self._list("resources/templates/list", "resourceTemplates", timeout)

    def list_prompts(self, *, timeout: Seconds = _UNSET) -> list[JsonDict]:
        """Every prompt the server offers, following ``nextCursor``."""
        return self._list("prompts/list", "prompts", timeout)

    def ping(self, *, timeout: Seconds = _UNSET) -> None:
        """Send ``ping`` and wait for the answer."""
        self._ensure_open()
        self._request("ping", None, is_call=False, timeout=timeout)

    def notify_roots_changed(self) -> None:
        """Tell a legacy server the roots changed (no-op without ``list_roots``)."""
        self._ensure_open()
        if overrides(self._handler, "list_roots") and self.era == v.LEGACY:
            self._send(jsonrpc.notification("notifications/roots/list_changed"))

    def _list(self, method: str, key: str, timeout: Seconds) -> list[JsonDict]:
        self._ensure_open()
        items: list[JsonDict] = []
        cursor: Optional[str] = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            params = None if cursor is None else {"cursor": cursor}
            page = self._request(method, params, is_call=False, timeout=timeout)
            found = page.get(key)
            if type(found) is not list:
                raise ClientError("protocol", f"{method} result has no {key!r} list")
            items.extend(found)
            cursor = page.get("nextCursor")
            if cursor is None:
                return items
            if not isinstance(cursor, str) or cursor in seen:
                raise ClientError("protocol", f"{method} returned a bad or repeated nextCursor")
            seen.add(cursor)
        raise ClientError("protocol", f"{method} returned more than {MAX_LIST_PAGES} pages")

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
        self._ensure_open()
        clock = self._clock_for(timeout, max_total_timeout)
        if self.era == v.MODERN:
            return self._modern.call(
                method, params, clock=clock, assigns=assigns, progress=progress, cancel=cancel, defer_input=defer_input, wait=wait
            )
        if defer_input:
            raise ClientError("protocol", "defer_input works only in the 2026-07-28 era")
        if method == "tools/call" and self._legacy_tasks_offered():
            support = self._task_support(params["name"])
            if support == "required" or (support == "optional" and not wait):
                # 2025-11-25: run it as a task, then follow it with tasks/get and tasks/result
                created = self._request(method, dict(params, task={}), is_call=True, clock=clock, assigns=assigns, cancel=cancel)
                task = created.get("task")
                task_id = task.get("taskId") if isinstance(task, dict) else None
                if not isinstance(task_id, str):
                    raise ClientError("protocol", "a task-augmented call returned no task", data=created, check="result")
                if not wait:
                    return created
                return self._legacy_await_task(task_id, clock, assigns, cancel)
        return self._request(method, params, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel)

    def _legacy_tasks_offered(self) -> bool:
        if not self._opts.tasks or self.era != v.LEGACY or self.protocol_version != "2025-11-25":
            return False
        tasks = (self.server_capabilities or {}).get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools

    def _task_support(self, name: str) -> Optional[str]:
        """A tool's ``execution.taskSupport`` (``tools/list`` is read once if the tool is unknown)."""
        if name not in self._task_supports:
            self.list_tools()
        return self._task_supports.get(name)

    def _legacy_await_task(
        self, task_id: str, clock: CallClock, assigns: Optional[Mapping[str, Any]], cancel: Optional[threading.Event]
    ) -> JsonDict:
        """2025-11-25: poll tasks/get until the task leaves "working", then tasks/result (its requests tie to it)."""
        while True:
            task = self._request("tasks/get", {"taskId": task_id}, is_call=False, clock=clock.child(_clock.monotonic()), cancel=cancel)
            status = task.get("status")
            if status == "cancelled":
                raise ClientError("cancelled", f"task {task_id} was cancelled")
            if status != "working":
                break
            interval = task.get("pollInterval")
            pause = interval / 1000.0 if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval > 0 else 1.0
            pause = min(max(pause, 0.01), 5.0, max(0.0, clock.remaining(_clock.monotonic())))
            if (cancel.wait(pause) if cancel is not None else threading.Event().wait(pause)):
                raise ClientError("cancelled", "await_task was cancelled")
            if clock.expired(_clock.monotonic()) is not None:
                raise ClientError("timeout", f"task {task_id} did not finish within max_total_timeout")
        # tasks/result blocks until the task ends: bounded by what is left of max_total_timeout
        remaining = max(0.001, clock.started + clock.max_total - _clock.monotonic())
        result_clock = CallClock(_clock.monotonic(), remaining, remaining)
        call = self._start("tasks/result", {"taskId": task_id}, is_call=True, clock=result_clock, assigns=assigns, task_id=task_id)
        return self._await(call, cancel)

    def _clock_for(self, timeout: Seconds, max_total_timeout: Seconds) -> CallClock:
        wait_s = self._opts.timeout if timeout is _UNSET else seconds("timeout", timeout)
        total_s = self._opts.max_total_timeout if max_total_timeout is _UNSET else seconds("max_total_timeout", max_total_timeout)
        return CallClock(_clock.monotonic(), wait_s, total_s)

    def _start(
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
    ) -> Call:
        """Register and write one request; the caller waits for it."""
        request_id = next(self._ids)
        call = Call(request_id, method, is_call, self._opts.assigns if assigns is None else assigns, clock, done)
        call.task_id = task_id
        if self._meta_version is not None:
            # modern: every request carries a fresh, complete _meta
            params = modern.with_meta(params, self._modern_meta())
        if progress is not None:
            # a fresh token on every request, so late progress of an old one is dropped
            call.progress = progress
            call.progress_token = token = f"mis-{request_id}"
            params = modern.with_meta(params, {"progressToken": token})
        if not self._calls.add(call):
            raise ClientError("closed", "the client is closed")
        try:
            self._send(jsonrpc.request(request_id, method, params))
        except ClientError:
            self._calls.forget(call)
            raise
        except KeyboardInterrupt:  # Ctrl-C while writing: the request may be out, so cancel it
            self._abandon(call, "interrupted")
            raise
        return call

    def _await(self, call: Call, cancel: Optional[threading.Event] = None) -> JsonDict:
        """Block until the call's response, a failure or a deadline; return its result."""
        try:
            if cancel is None and call.response is None and call.failure is None:
                call.done.wait(min(call.clock.remaining(_clock.monotonic()), _clock.MAX_WAIT))
            if call.response is None and call.failure is None:
                self._wait(call, cancel)
        except KeyboardInterrupt:
            self._abandon(call, "interrupted")
            raise
        if call.failure is not None:
            raise call.failure
        response = call.response
        assert response is not None
        if "error" in response:
            raise _remote_error(response["error"], call.method)
        if call.progress is not None and self._pump is not None:
            # progress that arrived before the result is delivered before the call returns
            self._pump.drain(1.0)
        result = response["result"]
        if type(result) is not dict:
            raise ClientError("protocol", f"{call.method} result is not an object", data=result)
        return result

    def _request(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        clock: Optional[CallClock] = None,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Send one request and block until its result, an error or a deadline."""
        if clock is None:
            clock = self._clock_for(timeout, max_total_timeout)
        call = self._start(method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress)
        try:
            return self._await(call, cancel)
        except ClientError as exc:
            if exc.kind != "remote" or exc.code != jsonrpc.UNSUPPORTED_VERSION or self._meta_version is None:
                raise
            # modern: the server asks for another version; switch once when we speak one it lists
            try:
                decision = modern.decide_from_supported(modern.supported_versions(exc.data))
            except v.ProtocolViolation:
                raise exc from None
            if decision.era != v.MODERN or decision.version == self._meta_version:
                raise
            self._meta_version = self.protocol_version = decision.version
            call = self._start(method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress)
            return self._await(call, cancel)

    def _wait(self, call: Call, cancel: Optional[threading.Event]) -> None:
        """Wait for the response in capped real-time steps, re-reading the library clock."""
        done = call.done
        while call.response is None and call.failure is None:
            if cancel is not None and cancel.is_set():
                self._abandon(call, "cancelled by the caller")
                if call.response is None or call.failure is not None:
                    raise ClientError("cancelled", f"{call.method} was cancelled")
                return
            why, left = self._calls.deadline_state(call, _clock.monotonic())
            if why is not None:
                self._abandon(call, "timeout")
                if call.failure is None and call.response is not None:
                    return  # the answer won the race
                what, limit = ("max_total_timeout", call.clock.max_total) if why == MAX_TOTAL else ("timeout", call.clock.timeout)
                raise ClientError("timeout", f"{call.method} exceeded its {what} of {limit:g} s")
            step = min(left, _clock.MAX_WAIT)
            if cancel is not None:
                step = min(step, 0.05)
            if done.wait(step) and call.response is None and call.failure is None:
                done.clear()  # an event shared during the era probe: another request's outcome woke us

    def _abandon(self, call: Call, reason: str) -> None:
        """The call ends without its result: forget it, tell the server, cancel its tied callbacks."""
        tied = self._calls.forget(call)
        if tied is None:
            return
        for inbound in tied:
            inbound.token.cancel("call ended")
        if call.method == "initialize":  # initialize must not be cancelled
            return
        cancel_stream = getattr(self._transport, "cancel_request", None)
        if cancel_stream is not None and cancel_stream(call.id):
            return  # modern HTTP: closing the response stream is the cancellation
        self._send_quietly(jsonrpc.notification("notifications/cancelled", {"requestId": call.id, "reason": reason}))

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
        responder = self._responder
        assert responder is not None
        data = error.data
        entries = data.get("elicitations") if error.code == jsonrpc.URL_ELICITATION_REQUIRED and isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("mode") == "url" for e in entries):
            raise ClientError("protocol", "not a -32042 error with URL elicitations", check="malformed")
        checks = responder.checks
        prepared: list[Prepared] = []
        for entry in entries:
            found = checks.before("elicitation/create", entry)
            step = found if found is not None else checks.prepare("elicitation/create", entry, in_flight=True)
            if isinstance(step, Refusal):
                responder.note_refusal("elicitation", step)
                kind = "refused" if step.check not in ("capability", "malformed", "method") else "protocol"
                raise ClientError(kind, step.message, code=step.code, check=step.check)
            prepared.append(step)
        # the callbacks run as a modern round's do: on this thread, under their deadlines
        clock = self._clock_for(_UNSET, _UNSET)
        answers = [self._modern.answer_one(step, clock, None) for step in prepared]
        return answers

    def check_input(self, method: str, params: Any) -> Union[Prepared, Refusal]:
        """Run one input request of a pending round through this client's checks (steps 4 and 5).

        For hosts that answer a :class:`PendingCall` later, such as the web
        bridge, which parks each request for a person: it returns the checked
        request (its compiled form, URL and kind), or the :class:`Refusal` that
        says why the client will not ask the user. Before :meth:`open` every
        request is refused (check ``capability``).
        """
        responder = self._responder
        if responder is None:
            return Refusal("capability", jsonrpc.METHOD_NOT_FOUND, "the client is not open")
        return responder.checks.prepare(method, params, in_flight=True)

    # ------------------------------------------------------------------ writing

    def _send(self, message: JsonDict) -> None:
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            raise ClientError("protocol", f"message cannot be encoded as JSON: {exc}") from None
        try:
            self._transport.send(data)
        except TransportClosed as exc:
            status = getattr(exc, "status", None)
            if status in (401, 403):
                raise ClientError("auth", str(exc), data=getattr(exc, "headers", None)) from exc
            if self._state in (ClientState.OPEN, ClientState.CONNECTING):
                raise ClientError("transport", str(exc)) from exc
            raise ClientError("closed", "the client is closed") from exc

    def _send_quietly(self, message: JsonDict) -> None:
        try:
            self._send(message)
        except ClientError as exc:
            log.debug("mcp_input_sync: could not send %s: %s", message.get("method"), exc)

    # ------------------------------------------------------------------ reading

    def _on_line(self, line: bytes, stream: Any = None) -> None:
        """Reader thread: one inbound message (``stream``: HTTP, the request whose stream carried it).

        Nothing a server sends may end the reader: an unexpected failure is
        logged, and a legacy request it concerned is answered -32603.
        """
        try:
            if type(line) is Oversized:
                self._malformed(line, f"a message of {line.size} bytes or more, over limits['message_bytes']", "limit")
                return
            try:
                message = jsonrpc.decode(line)
            except ValueError as exc:
                self._malformed(line, f"a message that is not JSON ({exc})", "malformed")
                return
            responder = self._responder
            assert responder is not None
            if type(message) is not dict:
                self._stats.add("malformed")
                log.warning("mcp_input_sync: server %s sent a message that is not an object; ignored", self.server_id)
                return
            depth = self._depth_limit
            if may_be_too_deep(line, depth) and too_deep(message, depth):
                self._malformed(line, f"a message nested deeper than limits['json_depth']={depth}", "limit")
                return
            method = message.get("method")
            if method is not None:
                if type(method) is not str:
                    responder.invalid(message)
                elif "id" in message:
                    if self.era == v.MODERN:
                        # the 2026-07-28 era has no server-to-client requests: never answered
                        responder.note_refusal(v.INPUT_METHODS.get(method, "other"), MODERN_REQUEST)
                    else:
                        responder.on_request(message["id"], method, message.get("params"), stream)
                elif method == "notifications/cancelled":
                    params = message.get("params")
                    if type(params) is dict:
                        if self.era == v.MODERN:
                            self._listen_ended(params.get("requestId"))
                        else:
                            responder.on_cancelled(params.get("requestId"))
                elif method == "notifications/subscriptions/acknowledged":
                    return  # the listen's handshake: nothing for the host
                else:
                    self._router.route(method, message.get("params"))
            elif "id" in message and ("result" in message or "error" in message):
                call = self._calls.pop(message["id"])
                if call is None:
                    log.debug("mcp_input_sync: late or unknown response %r dropped", message["id"])
                    return
                call.response = message
                call.done.set()
            else:
                responder.invalid(message)
        except Exception:
            log.exception("mcp_input_sync: a message from server %s could not be handled", self.server_id)
            self._answer_failed_line(line)

    def _malformed(self, line: Union[bytes, str], why: str, check: str) -> None:
        """A message that cannot be processed: log, count, and answer what can be answered.

        A legacy request whose id can be read gets -32700 (bad JSON) or
        -32600 (over a limit, or not a JSON-RPC message); a response whose id
        names a call of ours fails that call; the modern era writes nothing.
        """
        self._stats.add("malformed")
        log.warning("mcp_input_sync: server %s sent %s; ignored", self.server_id, why)
        found = salvage(line)
        if not found.found:
            return
        if found.is_request:
            responder = self._responder
            if self.era == v.LEGACY and responder is not None:
                code = jsonrpc.PARSE_ERROR if check == "malformed" else jsonrpc.INVALID_REQUEST
                responder.reject(found.id, code, "parse error" if check == "malformed" else "request over the client's limits")
            return
        call = self._calls.pop(found.id)
        if call is not None:
            call.failure = ClientError("protocol", f"the response to {call.method} could not be read: {why}", check=check)
            call.done.set()

    def _answer_failed_line(self, line: bytes) -> None:
        try:
            message = jsonrpc.decode(line)
        except ValueError:
            return
        if self.era != v.LEGACY or type(message) is not dict or "method" not in message:
            return
        request_id = message.get("id")
        responder = self._responder
        if responder is None or not (type(request_id) is int or type(request_id) is str):
            return
        with self._stats.lock:
            entry = responder.inbox.get(request_id)
        if entry is None:
            self._send_quietly(jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the client could not handle the request"))
        else:
            responder.answer(entry, jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the client could not handle the request"))

    def _on_lost(self, request_id: Any, error: BaseException) -> None:
        """A transport says a request's response can no longer come (its stream broke, or broke a limit)."""
        if isinstance(error, LimitExceeded):
            self._stats.add("malformed")
            log.warning("mcp_input_sync: server %s: %s", self.server_id, error)
        call = self._calls.get(request_id)
        tied = self._calls.forget(call) if call is not None else None
        if call is None or tied is None:
            return
        for inbound in tied:  # the call ended without its result: so do its callbacks
            inbound.token.cancel("call ended")
        status = getattr(error, "status", None)
        if isinstance(error, LimitExceeded):
            call.failure = ClientError("protocol", f"{call.method} failed: {error}", check="limit")
        elif status in (401, 403):
            call.failure = ClientError("auth", str(error), data=getattr(error, "headers", None))
        else:
            call.failure = ClientError("transport", f"{call.method} failed: {error}")
        call.done.set()

    def _listen_ended(self, request_id: Any) -> None:
        """Reader thread: the server ended our subscriptions/listen."""
        listen = self._listen
        if listen is not None and request_id == listen.id and type(request_id) is int:
            self._calls.forget(listen)

    def _on_transport_closed(self, error: Optional[BaseException]) -> None:
        """Reader thread: the connection ended without close(): fail every call and close."""
        if self._state not in (ClientState.OPEN, ClientState.CONNECTING):
            return
        why = "the server closed the connection" if error is None else f"the connection broke: {error}"
        log.warning("mcp_input_sync: %s (server %s)", why, self.server_id)
        for call in self._calls.close():
            call.failure = ClientError("transport", f"{call.method} failed: {why}")
            call.done.set()
        self.close()

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
        if self._state is ClientState.OPEN and self.era == v.LEGACY:
            self._request_logs()
        elif self._state is ClientState.OPEN and self.era == v.MODERN:
            self._listen_if_wanted()
        return sub

    # ------------------------------------------------------------------ subscriptions

    def subscribe_resource(self, uri: str) -> None:
        """Hear ``notifications/resources/updated`` for ``uri`` (``handle_notification``, subscribers).

        Legacy: ``resources/subscribe``. Modern: the URI joins the client's
        ``subscriptions/listen`` filter (the listen is reopened with it).
        """
        self._ensure_open()
        if uri not in self._resource_subscriptions:
            self._resource_subscriptions.append(uri)
        if self.era == v.LEGACY:
            self._request("resources/subscribe", {"uri": uri}, is_call=False)
        else:
            self._listen_if_wanted(force=True)

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop hearing updates for ``uri`` (``resources/unsubscribe``, or a narrower listen)."""
        self._ensure_open()
        if uri in self._resource_subscriptions:
            self._resource_subscriptions.remove(uri)
        if self.era == v.LEGACY:
            self._request("resources/unsubscribe", {"uri": uri}, is_call=False)
        else:
            self._listen_if_wanted(force=True)

    def _listen_filter(self) -> JsonDict:
        caps = self.server_capabilities or {}
        wanted: JsonDict = {}
        for capability, key in (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"), ("resources", "resourcesListChanged")):
            section = caps.get(capability)
            if isinstance(section, dict) and section.get("listChanged"):
                wanted[key] = True
        resources = caps.get("resources")
        if self._resource_subscriptions and isinstance(resources, dict) and resources.get("subscribe"):
            wanted["resourceSubscriptions"] = list(self._resource_subscriptions)
        return wanted

    def _listen_if_wanted(self, force: bool = False) -> None:
        """Modern: keep one ``subscriptions/listen`` open while someone hears notifications."""
        if self.era != v.MODERN:
            return
        hearing = overrides(self._handler, "handle_notification") or self._router.has_subscribers
        wanted = self._listen_filter() if hearing else {}
        with self._logs_lock:
            current = self._listen
            if current is not None and not force and self._calls.is_pending(current):
                return
            self._listen = None
        if current is not None and self._calls.forget(current) is not None:
            self._send_quietly(jsonrpc.notification("notifications/cancelled", {"requestId": current.id, "reason": "resubscribing"}))
        if not wanted:
            return
        # A long-lived request nobody waits on: its notifications reach the router.
        clock = CallClock(_clock.monotonic(), float("inf"), float("inf"))
        listen = self._start("subscriptions/listen", {"notifications": wanted}, is_call=False, clock=clock)
        with self._logs_lock:
            self._listen = listen

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
        calls = self._calls.close()
        for call in calls:
            call.failure = ClientError("closed", f"{call.method} was cancelled: the client closed")
            call.done.set()
        for token in list(self._live_tokens):
            token.cancel("closed")
        # 2. Server requests still open get -32603, then their tokens are set.
        if self._responder is not None:
            self._responder.close(answer=was_open)
        # 3. The server is told the calls are cancelled.
        for call in calls:
            if was_open and call.method != "initialize":
                try:
                    self._transport.send(
                        jsonrpc.encode(jsonrpc.notification("notifications/cancelled", {"requestId": call.id, "reason": "client closed"}))
                    )
                except TransportClosed:
                    pass
        if was_open:
            self._transport.close(budget.take(budget.left * 0.7))
        for thread in list(self._input_threads):
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


def _remote_error(error: Any, method: str) -> ClientError:
    if type(error) is not dict:
        return ClientError("protocol", f"{method} answered with a malformed error", data=error)
    code = error.get("code")
    message = error.get("message")
    if not isinstance(message, str):
        message = "(no message)"
    return ClientError(
        "remote",
        reflect.text(message, 4096),
        code=code if type(code) is int else None,
        data=error.get("data"),
    )


def connect_stdio(
    command: Sequence[str],
    *,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    **options: Any,
) -> Client:
    """Start ``command`` (an argv list) as an MCP server over stdio and connect to it.

    The handshake runs before this returns. Use the result as a context
    manager, or call ``close()``.

    Raises:
        ClientError: the server cannot be started or no version can be agreed.
        TypeError, ValueError: bad options.
    """
    from .transports.stdio import StdioTransport

    client = Client(StdioTransport(command, env=env, cwd=cwd), **options)
    client.open()
    return client


def connect_http(
    url: str,
    *,
    headers: Optional[Mapping[str, str]] = None,
    auth: Optional[Any] = None,
    **options: Any,
) -> Client:
    """Connect to an MCP server's Streamable HTTP endpoint; the era is detected before this returns.

    Args:
        url: the MCP endpoint, e.g. ``"https://example.com/mcp"``.
        headers: extra headers for every request.
        auth: a ``requests`` auth object or callable (a bearer-token hook, say).
        **options: the client options.

    Raises:
        ClientError: ``transport`` when the server cannot be reached, ``auth``
            for 401 or 403, ``protocol`` when no version can be agreed.
    """
    from .transports.http import HttpTransport

    client = Client(HttpTransport(url, headers=headers, auth=auth), **options)
    client.open()
    return client
