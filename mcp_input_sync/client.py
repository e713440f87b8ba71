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
- ``close(timeout)`` is idempotent: it cancels every callback's token,
  answers unanswered server requests with -32603, cancels the client's own
  calls (which raise ``ClientError(kind="closed")``), closes the transport and
  joins the library's threads within ``timeout`` real seconds. A callback
  that ignores its token is abandoned (its daemon thread never blocks
  interpreter exit), logged and counted in ``stats["stuck_callbacks"]``.
"""

from __future__ import annotations

import enum
import itertools
import logging
import os
import threading
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from . import _clock, reflect
from ._protocol import jsonrpc
from ._protocol import versions as v
from ._protocol.calls import MAX_TOTAL, CallClock
from ._protocol.inbox import LegacyInbox
from ._protocol.jsonrpc import JsonDict, RequestId
from ._runtime import RealBudget
from ._runtime.notify import NotificationPump
from ._runtime.watchdog import Timer, Watchdog
from ._runtime.workers import HandlerPool
from ._version import __version__
from .errors import ClientError, InputRefused
from .handler import CancelToken, InputContext, InputHandler, overrides
from .options import Options, seconds
from .transports.base import Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

__all__ = ["Client", "Subscription", "connect_stdio"]

#: Pages a list_* call follows before it gives up.
MAX_LIST_PAGES = 1000

ProgressCallback = Callable[[JsonDict], None]
Subscriber = Callable[[str, JsonDict], None]


class _Unset(enum.Enum):
    UNSET = "UNSET"


_UNSET = _Unset.UNSET


class ClientState(enum.Enum):
    """Where a client is in its life."""

    UNOPENED = "unopened"  #: built; nothing started yet
    OPEN = "open"  #: handshake done; calls allowed
    BROKEN = "broken"  #: the transport broke; calls raise "closed" until close()
    CLOSED = "closed"  #: close() ran; calls raise "closed"


_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class _Call:
    """One request of the client waiting for its response."""

    __slots__ = (
        "id",
        "method",
        "is_call",
        "assigns",
        "clock",
        "done",
        "response",
        "failure",
        "tied",
        "progress",
        "progress_token",
    )

    def __init__(self, request_id: int, method: str, is_call: bool, assigns: Mapping[str, Any]) -> None:
        self.id = request_id
        self.method = method
        self.is_call = is_call
        self.assigns = assigns
        self.clock: Optional[CallClock] = None
        self.done = threading.Event()
        self.response: Optional[JsonDict] = None
        self.failure: Optional[ClientError] = None
        self.tied: set[_Inbound] = set()
        self.progress: Optional[ProgressCallback] = None
        self.progress_token: Optional[str] = None


class _Inbound:
    """One server request being answered by a callback."""

    __slots__ = ("id", "method", "kind", "token", "call", "timer")

    def __init__(self, request_id: RequestId, method: str, kind: str) -> None:
        self.id = request_id
        self.method = method
        self.kind = kind
        self.token = CancelToken()
        self.call: Optional[_Call] = None
        self.timer: Optional[Timer] = None


class Subscription:
    """A registered notification subscriber; call, ``with`` or ``unsubscribe()`` to remove it."""

    def __init__(self, client: "Client", callback: Subscriber) -> None:
        self._client: Optional[Client] = client
        self.callback = callback

    def unsubscribe(self) -> None:
        """Stop receiving notifications (idempotent)."""
        client, self._client = self._client, None
        if client is not None:
            client._remove_subscriber(self)

    __call__ = unsubscribe

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()


class Client:
    """A synchronous MCP client.

    Args:
        transport: a started-on-open transport (see :mod:`mcp_input_sync.transports`).
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
        self.name = opts.name
        self.server_id: str = opts.server_id or str(getattr(transport, "default_server_id", "server"))
        set_server_id = getattr(transport, "set_server_id", None)
        if set_server_id is not None:
            set_server_id(self.server_id)
        self._server_log = logging.getLogger(f"mcp_input_sync.server.{self.server_id}")
        self._state = ClientState.UNOPENED
        self._state_lock = threading.RLock()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._progress_ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        self._in_flight = 0  # calls (not list/ping/initialize) awaiting their result
        self._progress: dict[str, _Call] = {}
        self._inbox: LegacyInbox[_Inbound] = LegacyInbox()
        self._subscribers: list[Subscription] = []
        self._pid = os.getpid()
        self._pool: Optional[HandlerPool] = None
        self._pump: Optional[NotificationPump] = None
        self._watchdog: Optional[Watchdog] = None
        self._closing = False
        self._logs_requested = False
        self.era: Optional[str] = None
        self.protocol_version: Optional[str] = None
        #: The server's ``serverInfo`` from the handshake (None before).
        self.server_info: Optional[JsonDict] = None
        #: The server's capabilities from the handshake (None before).
        self.server_capabilities: Optional[JsonDict] = None
        #: The server's ``instructions`` from the handshake, if any.
        self.instructions: Optional[str] = None
        self._declared: frozenset[str] = frozenset()
        self._counts: dict[str, Any] = {
            "served": 0,
            "refused": {},
            "timed_out": 0,
            "notifications_dropped": 0,
            "logs_dropped": 0,
            "logs_delivered": 0,
            "stuck_callbacks": 0,
        }
        h = self._handler
        self._has = {
            "sampling": overrides(h, "handle_sampling"),
            "elicitation": overrides(h, "handle_elicitation"),
            "roots": overrides(h, "list_roots"),
            "log": overrides(h, "handle_log"),
            "notification": overrides(h, "handle_notification"),
        }

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
                ``protocol`` when no version can be agreed, ``closed`` after close().
        """
        with self._state_lock:
            if self._state is ClientState.OPEN:
                self._check_pid()
                return self
            if self._state is not ClientState.UNOPENED:
                raise ClientError("closed", "the client is closed")
            self._pid = os.getpid()
            self._pool = HandlerPool(self._opts.max_server_requests)
            self._pump = NotificationPump()
            self._pump.start()
            self._watchdog = Watchdog()
            self._watchdog.start()
            self._state = ClientState.OPEN
            try:
                self._transport.start(self._on_line, self._on_transport_closed)
            except TransportClosed as exc:
                self.close()
                raise ClientError("transport", str(exc)) from exc
            try:
                self._handshake()
            except BaseException:
                self.close()
                raise
        return self

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
        raise ClientError("closed", "the client is closed")

    @property
    def state(self) -> ClientState:
        """The client's :class:`ClientState`."""
        return self._state

    # ------------------------------------------------------------------ handshake

    def _wants_logs(self) -> bool:
        return self._has["log"] or bool(self._subscribers)

    def _offer(self) -> tuple[str, Optional[str]]:
        protocol = self._opts.protocol
        if protocol in ("auto", "legacy"):
            return v.LATEST_LEGACY_VERSION, None
        if protocol in v.FORCEABLE_LEGACY_VERSIONS:
            return protocol, protocol
        raise ClientError(
            "protocol",
            f"protocol {protocol!r} is not supported by this version of mcp_input_sync "
            f"(it speaks {', '.join(v.FORCEABLE_LEGACY_VERSIONS)})",
        )

    def capabilities(self, version: str) -> JsonDict:
        """The ``ClientCapabilities`` this client declares at ``version``."""
        modes: Optional[tuple[str, ...]] = None
        if self._has["elicitation"]:
            assert self._handler is not None
            modes = tuple(m for m in self._handler.elicitation_modes() if m in ("form", "url"))
        sampling_opts = self._opts.sampling
        return v.client_capabilities(
            version=version,
            sampling=self._has["sampling"],
            elicitation_modes=modes,
            roots=self._has["roots"],
            sampling_tools=bool(self._handler is not None and type(self._handler).sampling_tools),
            sampling_context=bool(sampling_opts["context"]),
        )

    def _handshake(self) -> None:
        offered, forced = self._offer()
        caps = self.capabilities(offered)
        self._declared = v.declared_kinds(caps, offered)
        params = v.initialize_params(offered, caps, {"name": self.name, "version": __version__})
        result = self._request("initialize", params, is_call=False)
        try:
            version, server_caps = v.accept_initialize_result(result, forced)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        self._declared = v.declared_kinds(caps, version)
        self.era = v.LEGACY
        self.protocol_version = version
        self.server_capabilities = server_caps
        info = result.get("serverInfo")
        self.server_info = info if type(info) is dict else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._send(jsonrpc.notification("notifications/initialized"))
        if self._wants_logs():
            self._request_logs()

    def _request_logs(self) -> None:
        """Ask the server for logs at ``log_level`` once (when it declares ``logging``)."""
        with self._lock:
            if self._logs_requested or self.server_capabilities is None:
                return
            if "logging" not in self.server_capabilities:
                return
            self._logs_requested = True
        try:
            self._request("logging/setLevel", {"level": self._opts.log_level}, is_call=False)
        except ClientError as exc:
            if exc.kind in ("closed", "transport"):
                raise
            log.warning("mcp_input_sync: server %s refused logging/setLevel: %s", self.server_id, exc)

    # ------------------------------------------------------------------ calls

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Union[float, _Unset] = _UNSET,
        max_total_timeout: Union[float, _Unset] = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Call a tool and return its ``CallToolResult`` (``isError: true`` is returned, not raised).

        Args:
            name: the tool's name.
            arguments: the tool's arguments.
            timeout: seconds to wait on the server (paused while tied input runs).
            max_total_timeout: hard bound on the whole call, in seconds.
            assigns: what callbacks tied to this call see as ``ctx.assigns``.
            progress: called on the notification thread with each progress update.
            cancel: an Event another thread may set to cancel the call.

        Raises:
            ClientError: ``remote`` for a JSON-RPC error (``-32042`` included, its
                elicitations in ``.data``), ``timeout``, ``cancelled``, ``closed``,
                ``transport`` or ``protocol``.
        """
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("tools/call", params, timeout, max_total_timeout, assigns, progress, cancel)

    def read_resource(
        self,
        uri: str,
        *,
        timeout: Union[float, _Unset] = _UNSET,
        max_total_timeout: Union[float, _Unset] = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Read a resource and return its ``ReadResourceResult``; see :meth:`call_tool`."""
        return self._call("resources/read", {"uri": uri}, timeout, max_total_timeout, assigns, progress, cancel)

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        *,
        timeout: Union[float, _Unset] = _UNSET,
        max_total_timeout: Union[float, _Unset] = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Get a prompt and return its ``GetPromptResult``; see :meth:`call_tool`."""
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("prompts/get", params, timeout, max_total_timeout, assigns, progress, cancel)

    def list_tools(self, *, timeout: Union[float, _Unset] = _UNSET) -> list[JsonDict]:
        """Every tool the server offers, following ``nextCursor`` across pages."""
        return self._list("tools/list", "tools", timeout)

    def list_resources(self, *, timeout: Union[float, _Unset] = _UNSET) -> list[JsonDict]:
        """Every resource the server offers, following ``nextCursor``."""
        return self._list("resources/list", "resources", timeout)

    def list_resource_templates(self, *, timeout: Union[float, _Unset] = _UNSET) -> list[JsonDict]:
        """Every resource template the server offers, following ``nextCursor``."""
        return self._list("resources/templates/list", "resourceTemplates", timeout)

    def list_prompts(self, *, timeout: Union[float, _Unset] = _UNSET) -> list[JsonDict]:
        """Every prompt the server offers, following ``nextCursor``."""
        return self._list("prompts/list", "prompts", timeout)

    def ping(self, *, timeout: Union[float, _Unset] = _UNSET) -> None:
        """Send ``ping`` and wait for the answer."""
        self._ensure_open()
        self._request("ping", None, is_call=False, timeout=timeout)

    def notify_roots_changed(self) -> None:
        """Tell a legacy server the roots changed (no-op without ``list_roots``)."""
        self._ensure_open()
        if self._has["roots"] and self.era == v.LEGACY:
            self._send(jsonrpc.notification("notifications/roots/list_changed"))

    def _list(self, method: str, key: str, timeout: Union[float, _Unset]) -> list[JsonDict]:
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
        timeout: Union[float, _Unset],
        max_total_timeout: Union[float, _Unset],
        assigns: Optional[Mapping[str, Any]],
        progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event],
    ) -> JsonDict:
        self._ensure_open()
        return self._request(
            method,
            params,
            is_call=True,
            timeout=timeout,
            max_total_timeout=max_total_timeout,
            assigns=assigns,
            progress=progress,
            cancel=cancel,
        )

    def _request(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        timeout: Union[float, _Unset] = _UNSET,
        max_total_timeout: Union[float, _Unset] = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Send one request and block until its result, an error or a deadline."""
        wait_s = self._opts.timeout if timeout is _UNSET else seconds("timeout", timeout)
        total_s = (
            self._opts.max_total_timeout
            if max_total_timeout is _UNSET
            else seconds("max_total_timeout", max_total_timeout)
        )
        request_id = next(self._ids)
        call = _Call(request_id, method, is_call, self._opts.assigns if assigns is None else assigns)
        if progress is not None:
            token = f"mis-{request_id}-{next(self._progress_ids)}"
            call.progress = progress
            call.progress_token = token
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
        message = jsonrpc.request(request_id, method, params)
        call.clock = clock = CallClock(_clock.monotonic(), wait_s, total_s)
        with self._lock:
            if self._closing:
                raise ClientError("closed", "the client is closed")
            self._calls[request_id] = call
            if is_call:
                self._in_flight += 1
            if call.progress_token is not None:
                self._progress[call.progress_token] = call
        try:
            self._send(message)
        except ClientError:
            self._forget(call)
            raise
        done = call.done
        try:
            if not done.wait(min(wait_s, total_s, _clock.MAX_WAIT) if cancel is None else 0.0):
                self._wait(call, clock, cancel)
        except KeyboardInterrupt:
            self._abandon(call, "interrupted")
            raise
        if call.failure is not None:
            raise call.failure
        response = call.response
        assert response is not None
        if "error" in response:
            raise _remote_error(response["error"], method)
        if call.progress is not None and self._pump is not None:
            # progress that arrived before the result is delivered before the call returns
            self._pump.drain(1.0)
        result = response["result"]
        if type(result) is not dict:
            raise ClientError("protocol", f"{method} result is not an object", data=result)
        return result

    def _wait(self, call: _Call, clock: CallClock, cancel: Optional[threading.Event]) -> None:
        done = call.done
        while not done.is_set():
            if cancel is not None and cancel.is_set():
                self._abandon(call, "cancelled by the caller")
                if not done.is_set() or call.failure is not None:
                    raise ClientError("cancelled", f"{call.method} was cancelled")
                return
            now = _clock.monotonic()
            with self._lock:
                why = clock.expired(now)
                left = clock.remaining(now)
            if why is not None:
                self._abandon(call, "timeout")
                if done.is_set() and call.failure is None and call.response is not None:
                    return  # the answer won the race
                what = "max_total_timeout" if why == MAX_TOTAL else "timeout"
                limit = clock.max_total if why == MAX_TOTAL else clock.timeout
                raise ClientError("timeout", f"{call.method} exceeded its {what} of {limit:g} s")
            step = min(left, _clock.MAX_WAIT)
            if cancel is not None:
                step = min(step, 0.05)
            done.wait(step)

    def _forget(self, call: _Call) -> bool:
        """Remove a call from the tables; True when it was still pending."""
        with self._lock:
            found = self._calls.pop(call.id, None) is not None
            if found and call.is_call:
                self._in_flight -= 1
            if call.progress_token is not None:
                self._progress.pop(call.progress_token, None)
            tied = list(call.tied)
        if found:
            for inbound in tied:
                inbound.token.cancel("call ended")
        return found

    def _abandon(self, call: _Call, reason: str) -> None:
        """The call ends without its result: forget it and tell the server."""
        if self._forget(call) and call.method != "initialize":
            try:
                self._send(
                    jsonrpc.notification("notifications/cancelled", {"requestId": call.id, "reason": reason})
                )
            except ClientError:
                pass

    # ------------------------------------------------------------------ writing

    def _send(self, message: JsonDict) -> None:
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            raise ClientError("protocol", f"message cannot be encoded as JSON: {exc}") from None
        try:
            self._transport.send(data)
        except TransportClosed as exc:
            if self._state is ClientState.OPEN and not self._closing:
                raise ClientError("transport", str(exc)) from exc
            raise ClientError("closed", "the client is closed") from exc

    def _send_quietly(self, message: JsonDict) -> None:
        try:
            self._send(message)
        except ClientError as exc:
            log.debug("mcp_input_sync: could not send %s: %s", message.get("method", "answer"), exc)

    # ------------------------------------------------------------------ reading

    def _on_line(self, line: bytes) -> None:
        """Reader thread: one inbound message."""
        try:
            message = jsonrpc.decode(line)
        except ValueError:
            log.warning("mcp_input_sync: server %s sent a line that is not JSON; ignored", self.server_id)
            return
        if type(message) is not dict:
            log.warning("mcp_input_sync: server %s sent a message that is not an object; ignored", self.server_id)
            return
        if "method" in message:
            method = message["method"]
            if type(method) is not str:
                self._invalid(message)
            elif "id" in message:
                self._on_request(message["id"], method, message.get("params"))
            else:
                self._on_notification(method, message.get("params"))
        elif "id" in message and ("result" in message or "error" in message):
            self._on_response(message)
        else:
            self._invalid(message)

    def _invalid(self, message: JsonDict) -> None:
        log.warning("mcp_input_sync: server %s sent an invalid JSON-RPC message; ignored", self.server_id)
        request_id = message.get("id")
        if (type(request_id) is int or type(request_id) is str) and "result" not in message and "error" not in message:
            with self._lock:
                open_already = self._inbox.get(request_id) is not None
            if not open_already:
                self._send_quietly(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, "invalid request"))

    def _on_response(self, message: JsonDict) -> None:
        request_id = message["id"]
        if type(request_id) is not int:
            log.debug("mcp_input_sync: response with unknown id %r dropped", request_id)
            return
        with self._lock:
            call = self._calls.pop(request_id, None)
            if call is None:
                log.debug("mcp_input_sync: late or unknown response %r dropped", request_id)
                return
            if call.is_call:
                self._in_flight -= 1
            if call.progress_token is not None:
                self._progress.pop(call.progress_token, None)
        call.response = message
        call.done.set()

    def _on_transport_closed(self, error: Optional[BaseException]) -> None:
        """Reader thread: the connection ended without close()."""
        with self._state_lock:
            if self._closing or self._state is not ClientState.OPEN:
                return
            self._state = ClientState.BROKEN
        why = "the server closed the connection" if error is None else f"the connection broke: {error}"
        log.warning("mcp_input_sync: %s (server %s)", why, self.server_id)
        with self._lock:
            self._closing = True
            calls = list(self._calls.values())
            self._calls.clear()
            self._progress.clear()
            self._in_flight = 0
            inbound = list(self._inbox)
        for entry in inbound:
            entry.token.cancel("closed")
        for call in calls:
            call.failure = ClientError("transport", f"{call.method} failed: {why}")
            call.done.set()

    # ------------------------------------------------------------------ server requests

    def _refuse(self, request_id: RequestId, kind: str, check: str, code: int, message: str) -> None:
        with self._lock:
            by_kind = self._counts["refused"].setdefault(kind, {})
            by_kind[check] = by_kind.get(check, 0) + 1
        self._send_quietly(jsonrpc.error(request_id, code, message))

    def _on_request(self, request_id: Any, method: str, params: Any) -> None:
        """Reader thread: a server request. Checks in behaviour.md section 5's order."""
        if not jsonrpc.is_valid_id(request_id):
            log.warning("mcp_input_sync: server request with an invalid id; answered -32600")
            self._send_quietly(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "invalid request id"))
            return
        with self._lock:
            if self._inbox.get(request_id) is not None:
                duplicate = True
            else:
                duplicate = False
        if duplicate:
            log.warning("mcp_input_sync: server reused the id %r of an unanswered request; dropped", request_id)
            return
        if method == "ping":
            self._send_quietly(jsonrpc.result(request_id, {}))
            return
        kind = v.INPUT_METHODS.get(method)
        if kind is None:
            self._refuse(request_id, "other", "method", jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}")
            return
        if kind not in self._declared:
            self._refuse(request_id, kind, "capability", jsonrpc.METHOD_NOT_FOUND, f"client does not support {method}")
            return
        problem = v.missing_param(method, params)
        if problem is not None:
            self._refuse(request_id, kind, "malformed", jsonrpc.INVALID_PARAMS, f"invalid params: {problem}")
            return
        pool = self._pool
        if pool is None or not pool.try_acquire():
            self._refuse(request_id, kind, "busy", jsonrpc.SERVER_ERROR, "busy: too many requests in flight")
            return
        entry = _Inbound(request_id, method, kind)
        now = _clock.monotonic()
        with self._lock:
            if self._closing:
                admitted = False
            else:
                admitted = self._inbox.admit(request_id, entry)
                if admitted and self._in_flight == 1:
                    # stdio ties a request to the one call in flight (behaviour.md section 5)
                    for call in self._calls.values():
                        if call.is_call:
                            entry.call = call
                            call.tied.add(entry)
                            if call.clock is not None:
                                call.clock.pause(now)
                            break
        if not admitted:
            pool.release()
            return
        watchdog = self._watchdog
        if watchdog is not None:
            limit = self._opts.handler_timeout[kind]
            entry.timer = watchdog.schedule(now + limit, lambda: self._handler_timed_out(entry, limit))
        try:
            pool.submit(lambda: self._run_callback(entry, params), f"{method} {request_id!r}")
        except RuntimeError:
            self._answer(entry, jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "client is closing"))

    def _run_callback(self, entry: _Inbound, params: Any) -> None:
        """Worker thread: run the handler and answer."""
        handler = self._handler
        assert handler is not None
        request_id = entry.id
        kind = entry.kind
        call_params: JsonDict = params if type(params) is dict else {}
        call = entry.call
        mode: Optional[str] = None
        if kind == "elicitation":
            mode = "url" if call_params.get("mode") == "url" else "form"
        ctx = InputContext(
            client=self.name,
            server_id=self.server_id,
            era=self.era,
            assigns=call.assigns if call is not None else self._opts.assigns,
            related_request_id=call.id if call is not None else None,
            mode=mode,
            token=entry.token,
        )
        try:
            if kind == "elicitation":
                value = handler.handle_elicitation(call_params, ctx)
            elif kind == "sampling":
                value = handler.handle_sampling(call_params, ctx)
            else:
                value = handler.list_roots(ctx)
        except InputRefused as refusal:
            answer = jsonrpc.error(request_id, refusal.code, refusal.message, refusal.data)
        except Exception:
            log.exception(
                "mcp_input_sync: %s callback for server %s raised; answered -32603", entry.method, self.server_id
            )
            answer = jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the input handler failed")
        else:
            if type(value) is not dict:
                log.error(
                    "mcp_input_sync: %s callback returned %s, not a dict; answered -32603",
                    entry.method,
                    type(value).__name__,
                )
                answer = jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer")
            else:
                answer = jsonrpc.result(request_id, value)
                self._answer(entry, answer, count="served")
                return
        self._answer(entry, answer)

    def _answer(self, entry: _Inbound, answer: JsonDict, count: Optional[str] = None) -> bool:
        """Send the one answer of a server request, unless it already has one.

        Returns:
            True when this was the request's answer; False when it already had
            one or the server cancelled it (the answer is dropped).
            ``count`` names the stats counter this answer adds to.
        """
        try:
            data = jsonrpc.encode(answer)
        except (TypeError, ValueError):
            log.error("mcp_input_sync: %s answer is not JSON-serialisable; answered -32603", entry.method)
            data = jsonrpc.encode(
                jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer")
            )
            count = None
        with self._lock:
            if self._inbox.settle(entry.id) is not entry:
                return False  # timed out, cancelled or answered at close: the late result is dropped
            if count is not None:
                self._counts[count] += 1
        timer = entry.timer
        if timer is not None:
            timer.cancel()
        try:
            self._transport.send(data)
        except TransportClosed:
            log.debug("mcp_input_sync: answer to %r not sent: transport closed", entry.id)
        self._untie(entry)
        return True

    def _untie(self, entry: _Inbound) -> None:
        call = entry.call
        if call is None:
            return
        now = _clock.monotonic()
        with self._lock:
            if entry in call.tied:
                call.tied.discard(entry)
                if call.clock is not None:
                    call.clock.resume(now)

    def _handler_timed_out(self, entry: _Inbound, limit: float) -> None:
        """Watchdog thread: a callback ran past handler_timeout.

        The error is answered before the token is set, so a callback that
        returns as soon as it sees the token cannot answer first.
        """
        answer = jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the input handler timed out")
        if not self._answer(entry, answer, count="timed_out"):
            return  # answered or cancelled meanwhile
        entry.token.cancel("timeout")
        log.warning(
            "mcp_input_sync: %s callback for server %s ran past its handler_timeout of %g s; answered -32603",
            entry.method,
            self.server_id,
            limit,
        )

    # ------------------------------------------------------------------ notifications

    def _on_notification(self, method: str, params: Any) -> None:
        """Reader thread: route one server notification (behaviour.md section 8)."""
        if method == "notifications/cancelled":
            if type(params) is dict:
                self._server_cancelled(params.get("requestId"))
            return
        if type(params) is not dict:
            params = {} if params is None else {"value": params}
        if method == "notifications/progress":
            self._on_progress(params)
            return
        pump = self._pump
        if pump is None:
            return
        if method == "notifications/message":
            posted = pump.post(self._deliver_log, params)
        else:
            posted = pump.post(self._deliver_notification, method, params)
        if not posted:
            with self._lock:
                self._counts["notifications_dropped"] += 1

    def _server_cancelled(self, request_id: Any) -> None:
        with self._lock:
            entry = self._inbox.cancel(request_id)
        if entry is None:
            return
        entry.token.cancel("cancelled by the server")
        if entry.timer is not None:
            entry.timer.cancel()
        self._untie(entry)

    def _on_progress(self, params: JsonDict) -> None:
        token = params.get("progressToken")
        if not isinstance(token, str):
            return
        with self._lock:
            call = self._progress.get(token)
        progress = params.get("progress")
        if call is None or call.progress is None or isinstance(progress, bool):
            return
        if not isinstance(progress, (int, float)):
            return
        update: JsonDict = {"progress": progress}
        total = params.get("total")
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            update["total"] = total
        message = params.get("message")
        if isinstance(message, str):
            update["message"] = reflect.text(message, 4096)
        pump = self._pump
        if pump is None or not pump.post(call.progress, update):
            with self._lock:
                self._counts["notifications_dropped"] += 1

    def _notification_context(self) -> InputContext:
        return InputContext(client=self.name, server_id=self.server_id, era=self.era)

    def _deliver_notification(self, method: str, params: JsonDict) -> None:
        """Notification thread."""
        if self._has["notification"]:
            assert self._handler is not None
            try:
                self._handler.handle_notification(method, params, self._notification_context())
            except Exception:
                log.exception("mcp_input_sync: handle_notification(%s) raised; skipped", method)
        self._publish(method, params)

    def _deliver_log(self, params: JsonDict) -> None:
        """Notification thread."""
        entry = reflect.log_entry(params)
        if entry is None:
            return
        if self._has["log"]:
            assert self._handler is not None
            try:
                self._handler.handle_log(entry, self._notification_context())
            except Exception:
                log.exception("mcp_input_sync: handle_log raised; skipped")
        else:
            level = _LOG_LEVELS.get(str(entry["level"]), logging.INFO)
            logger = entry.get("logger")
            if logger is not None:
                self._server_log.log(level, "[%s] %s", logger, entry.get("data"))
            else:
                self._server_log.log(level, "%s", entry.get("data"))
        with self._lock:
            self._counts["logs_delivered"] += 1
        self._publish("notifications/message", entry)

    def _publish(self, method: str, params: JsonDict) -> None:
        for sub in list(self._subscribers):
            try:
                sub.callback(method, params)
            except Exception:
                log.exception("mcp_input_sync: subscriber %r raised; skipped", sub.callback)

    def subscribe(self, callback: Subscriber) -> Subscription:
        """Call ``callback(method, params)`` for every notification and log entry.

        Runs on the notification thread, after the handler's hook. Returns a
        :class:`Subscription`; registering the first one on an open legacy
        client asks the server for logs (``logging/setLevel``).
        """
        sub = Subscription(self, callback)
        with self._lock:
            self._subscribers = self._subscribers + [sub]
        if self._state is ClientState.OPEN and self.era == v.LEGACY:
            self._request_logs()
        return sub

    def _remove_subscriber(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers = [s for s in self._subscribers if s is not sub]

    # ------------------------------------------------------------------ stats and close

    @property
    def stats(self) -> Mapping[str, Any]:
        """Counters: ``served``, ``refused`` (kind -> check -> count), ``timed_out``,
        ``notifications_dropped``, ``logs_dropped``, ``logs_delivered``, ``stuck_callbacks``."""
        with self._lock:
            snapshot = dict(self._counts)
            snapshot["refused"] = MappingProxyType(
                {k: MappingProxyType(dict(v)) for k, v in self._counts["refused"].items()}
            )
        return MappingProxyType(snapshot)

    def close(self, timeout: float = 5.0) -> None:
        """Shut the client down within ``timeout`` real seconds (idempotent).

        Sets every callback's token, answers unanswered server requests with
        -32603, cancels the client's own calls (they raise
        ``ClientError(kind="closed")``), closes the transport and joins the
        library's threads. Callbacks that ignore their token are abandoned,
        logged and counted in ``stats["stuck_callbacks"]``.
        """
        with self._state_lock:
            if self._state is ClientState.CLOSED:
                return
            was_open = self._state is ClientState.OPEN
            self._state = ClientState.CLOSED
        budget = RealBudget(timeout)
        with self._lock:
            self._closing = True
            inbound = list(self._inbox)
            calls = list(self._calls.values())
            self._calls.clear()
            self._progress.clear()
            self._in_flight = 0
        for entry in inbound:
            if was_open:  # answer first: a callback woken by its token must not answer instead
                self._answer(entry, jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the client is closing"))
            entry.token.cancel("closed")
        for call in calls:
            for tied in list(call.tied):
                tied.token.cancel("closed")
            if was_open and call.method != "initialize":
                self._send_quietly(
                    jsonrpc.notification("notifications/cancelled", {"requestId": call.id, "reason": "client closed"})
                )
            call.failure = ClientError("closed", f"{call.method} was cancelled: the client closed")
            call.done.set()
        self._transport.close(budget.take(budget.left * 0.7))
        if self._watchdog is not None:
            self._watchdog.stop(budget)
        if self._pump is not None:
            self._pump.stop(budget)
        if self._pool is not None:
            stuck = self._pool.shutdown(budget)
            if stuck:
                with self._lock:
                    self._counts["stuck_callbacks"] += len(stuck)
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
