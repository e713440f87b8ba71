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
import itertools
import logging
import os
import threading
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from . import _clock, reflect
from ._calls import Call, CallTable, ProgressCallback
from ._legacy import LegacyResponder
from ._notifications import NotificationRouter, Subscriber, Subscription
from ._protocol import jsonrpc
from ._protocol import versions as v
from ._protocol.budget import TokenBucket
from ._protocol.calls import MAX_TOTAL, CallClock
from ._protocol.checks import CheckConfig, InputChecks, Prepared, Refusal
from ._protocol.jsonrpc import JsonDict
from ._runtime import RealBudget
from ._runtime.notify import NotificationPump
from ._runtime.watchdog import Watchdog
from ._runtime.workers import HandlerPool
from ._stats import Stats
from ._version import __version__
from .errors import ClientError, InputRefused
from .handler import InputContext, InputHandler, overrides
from .options import Options, seconds
from .transports.base import Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

__all__ = ["Client", "ClientState", "Subscription", "connect_stdio"]

#: Pages a list_* call follows before it gives up.
MAX_LIST_PAGES = 1000


class _Unset(enum.Enum):
    UNSET = "UNSET"


_UNSET = _Unset.UNSET
Seconds = Union[float, _Unset]


class ClientState(enum.Enum):
    """Where a client is in its life."""

    UNOPENED = "unopened"  #: built; nothing started yet
    OPEN = "open"  #: handshake done (or under way); calls allowed
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
        self._state = ClientState.UNOPENED
        self._state_lock = threading.RLock()
        self._closed = threading.Event()
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
            if self._state is not ClientState.UNOPENED:
                raise ClientError("closed", "the client is closed")
            self._pid = os.getpid()
            self._pool = HandlerPool(self._opts.max_server_requests)
            self._pump = NotificationPump()
            self._pump.start()
            self._router.pump = self._pump
            self._watchdog = Watchdog()
            self._watchdog.start()
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
            self._router.log_budget = TokenBucket(*self._opts.log_rate_limit, _clock.monotonic())
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
        handler = self._handler
        modes: Optional[tuple[str, ...]] = None
        if handler is not None and overrides(handler, "handle_elicitation"):
            modes = tuple(m for m in handler.elicitation_modes() if m in ("form", "url"))
        return v.client_capabilities(
            version=version,
            sampling=overrides(handler, "handle_sampling"),
            elicitation_modes=modes,
            roots=overrides(handler, "list_roots"),
            sampling_tools=bool(handler is not None and type(handler).sampling_tools),
            sampling_context=bool(self._opts.sampling["context"]),
        )

    def _handshake(self) -> None:
        responder = self._responder
        assert responder is not None
        offered, forced = self._offer()
        caps = self.capabilities(offered)
        responder.checks.config = self._check_config(offered, caps)
        params = v.initialize_params(offered, caps, {"name": self.name, "version": __version__})
        result = self._request("initialize", params, is_call=False)
        try:
            version, server_caps = v.accept_initialize_result(result, forced)
        except v.ProtocolViolation as exc:
            raise ClientError("protocol", exc.message, data=exc.data) from None
        responder.checks.config = self._check_config(version, caps)
        self.era = responder.era = self._router.era = v.LEGACY
        self.protocol_version = version
        self.server_capabilities = server_caps
        info = result.get("serverInfo")
        self.server_info = info if type(info) is dict else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._send(jsonrpc.notification("notifications/initialized"))
        if self._router.wants_logs:
            self._request_logs()

    def _check_config(self, version: str, caps: JsonDict) -> CheckConfig:
        """What the check pipeline needs: the session's version and what this client declared."""
        sampling_caps = caps.get("sampling", {})
        elicitation_caps = caps.get("elicitation", {})
        opts = self._opts
        origin = getattr(self._transport, "origin", None) or opts.elicitation["origin"]
        return CheckConfig(
            version=version,
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
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
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
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Get a prompt and return its ``GetPromptResult``; see :meth:`call_tool`."""
        params: JsonDict = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return self._call("prompts/get", params, timeout, max_total_timeout, assigns, progress, cancel)

    def list_tools(self, *, timeout: Seconds = _UNSET) -> list[JsonDict]:
        """Every tool the server offers, following ``nextCursor`` across pages."""
        return self._list("tools/list", "tools", timeout)

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
        timeout: Seconds = _UNSET,
        max_total_timeout: Seconds = _UNSET,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> JsonDict:
        """Send one request and block until its result, an error or a deadline."""
        wait_s = self._opts.timeout if timeout is _UNSET else seconds("timeout", timeout)
        total_s = self._opts.max_total_timeout if max_total_timeout is _UNSET else seconds("max_total_timeout", max_total_timeout)
        request_id = next(self._ids)
        clock = CallClock(_clock.monotonic(), wait_s, total_s)
        call = Call(request_id, method, is_call, self._opts.assigns if assigns is None else assigns, clock)
        if progress is not None:
            # a fresh token on every request, so late progress of an old one is dropped
            call.progress = progress
            call.progress_token = token = f"mis-{request_id}"
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
        if not self._calls.add(call):
            raise ClientError("closed", "the client is closed")
        try:
            self._send(jsonrpc.request(request_id, method, params))
        except ClientError:
            self._calls.forget(call)
            raise
        try:
            if cancel is not None or not call.done.wait(min(wait_s, total_s, _clock.MAX_WAIT)):
                self._wait(call, cancel)
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

    def _wait(self, call: Call, cancel: Optional[threading.Event]) -> None:
        """Wait for the response in capped real-time steps, re-reading the library clock."""
        done = call.done
        while not done.is_set():
            if cancel is not None and cancel.is_set():
                self._abandon(call, "cancelled by the caller")
                if not done.is_set() or call.failure is not None:
                    raise ClientError("cancelled", f"{call.method} was cancelled")
                return
            why, left = self._calls.deadline_state(call, _clock.monotonic())
            if why is not None:
                self._abandon(call, "timeout")
                if done.is_set() and call.failure is None and call.response is not None:
                    return  # the answer won the race
                what, limit = ("max_total_timeout", call.clock.max_total) if why == MAX_TOTAL else ("timeout", call.clock.timeout)
                raise ClientError("timeout", f"{call.method} exceeded its {what} of {limit:g} s")
            step = min(left, _clock.MAX_WAIT)
            if cancel is not None:
                step = min(step, 0.05)
            done.wait(step)

    def _abandon(self, call: Call, reason: str) -> None:
        """The call ends without its result: forget it, tell the server, cancel its tied callbacks."""
        tied = self._calls.forget(call)
        if tied is None:
            return
        for inbound in tied:
            inbound.token.cancel("call ended")
        if call.method != "initialize":  # initialize must not be cancelled
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
        handler = self._handler
        assert handler is not None  # the capability check passed
        answers = []
        for step in prepared:
            facts = step.url
            assert facts is not None
            ctx = InputContext(
                client=self.name,
                server_id=self.server_id,
                era=self.era,
                assigns=self._opts.assigns,
                mode="url",
                url=facts.url,
                host=facts.host,
                idn=facts.idn,
                origin_mismatch=facts.origin_mismatch,
            )
            try:
                value = handler.handle_elicitation(step.params, ctx)
            except InputRefused as refusal:
                raise ClientError("input_handler", refusal.message, code=refusal.code, data=refusal.data) from refusal
            except Exception as exc:
                raise ClientError("input_handler", "the input handler failed", code=jsonrpc.INTERNAL_ERROR) from exc
            verdict = checks.answer(step, value)
            if isinstance(verdict, Refusal):
                responder.note_refusal("elicitation", verdict)
                raise ClientError("input_handler", verdict.message, code=verdict.code, data=verdict.detail, check="answer")
            self._stats.add("served")
            answers.append(verdict)
        return answers

    # ------------------------------------------------------------------ writing

    def _send(self, message: JsonDict) -> None:
        try:
            data = jsonrpc.encode(message)
        except (TypeError, ValueError) as exc:
            raise ClientError("protocol", f"message cannot be encoded as JSON: {exc}") from None
        try:
            self._transport.send(data)
        except TransportClosed as exc:
            if self._state is ClientState.OPEN:
                raise ClientError("transport", str(exc)) from exc
            raise ClientError("closed", "the client is closed") from exc

    def _send_quietly(self, message: JsonDict) -> None:
        try:
            self._send(message)
        except ClientError as exc:
            log.debug("mcp_input_sync: could not send %s: %s", message.get("method"), exc)

    # ------------------------------------------------------------------ reading

    def _on_line(self, line: bytes) -> None:
        """Reader thread: one inbound message."""
        try:
            message = jsonrpc.decode(line)
        except ValueError:
            log.warning("mcp_input_sync: server %s sent a line that is not JSON; ignored", self.server_id)
            return
        responder = self._responder
        assert responder is not None
        if type(message) is not dict:
            log.warning("mcp_input_sync: server %s sent a message that is not an object; ignored", self.server_id)
            return
        method = message.get("method")
        if method is not None:
            if type(method) is not str:
                responder.invalid(message)
            elif "id" in message:
                responder.on_request(message["id"], method, message.get("params"))
            elif method == "notifications/cancelled":
                params = message.get("params")
                if type(params) is dict:
                    responder.on_cancelled(params.get("requestId"))
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

    def _on_transport_closed(self, error: Optional[BaseException]) -> None:
        """Reader thread: the connection ended without close(): fail every call and close."""
        if self._state is not ClientState.OPEN:
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
        return sub

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
                was_open = self._state is ClientState.OPEN
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
