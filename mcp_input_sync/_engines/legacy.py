"""The legacy era (2025-06-18 / 2025-11-25): server-to-client requests, tasks, logs.

The server's requests are a sans-IO connection
(:class:`~mcp_input_sync._protocol.legacy_conn.LegacyConnection`): it runs
every check (docs/reference.md#order-of-checks) and keeps the open requests,
so each gets exactly one answer. This engine is the one place that does the
I/O around it: the reader thread hands each request to :meth:`LegacyEngine.on_request`,
which feeds it to the connection with the time and then either writes what
the connection said (ping, refusals) or takes a worker slot, where the
callback runs under the runtime's deadline sweep (``handler_timeout``); the
connection checks and encodes its answer, and :meth:`LegacyEngine._write`
writes it. This engine also receives whatever the server sends before the
handshake has decided the era.
"""

from __future__ import annotations

import logging
import sys
import threading
from functools import partial
from typing import Any, Callable, Mapping, Optional, Union

from .. import _clock
from .._calls import CallSpec, ProgressCallback
from .._input import InputDesk, loggable
from .._protocol.eras import outcome_of
from .._telemetry import LOADED
from .._notifications import NotificationRouter
from .._port import Port
from .._protocol import jsonrpc
from .._protocol import eras
from .._protocol.deadlines import CallClock
from .._protocol.checks import Refusal
from .._protocol.jsonrpc import JsonDict, RequestId
from .._protocol.legacy_conn import BUSY, CLOSING, Inbound, LegacyConnection, Said, encode_error
from .._protocol.modern import PendingCall
from .._runtime.deadlines import DeadlineSweep
from .._runtime.watchdog import Watchdog
from .._runtime.workers import HandlerPool
from .._session import Session, collect_pages
from ..errors import ClientError, InputRefused
from ..handler import CancelToken, declares_roots
from ..options import Options
from .._port import SESSION_READY, TransportClosed
from .base import AGAIN, poll_task, wrong_era

log = logging.getLogger("mcp_input_sync")

FAILED = "the input handler failed"


class LegacyEngine:
    """The I/O around a legacy server's requests (a :class:`LegacyConnection`); legacy calls, tasks and logs."""

    era = eras.LEGACY

    def __init__(
        self,
        *,
        session: Session,
        desk: InputDesk,
        port: Port,
        options: Options,
        router: NotificationRouter,
        pool: HandlerPool,
        watchdog: Watchdog,
        sweep: DeadlineSweep,
    ) -> None:
        self.session = session
        self.desk = desk
        self.calls = session.calls
        self.stats = desk.stats
        self.options = options
        self.router = router
        self.pool = pool
        self.watchdog = watchdog
        self.server_id = desk.server_id
        #: The server's requests: every check, the open ones, the one answer each.
        self.conn = LegacyConnection(desk.checks, desk.take_budget, desk.timeouts, CancelToken, threading.Lock())
        #: Write one answer (the transport is told it is one).
        self.send = port.answer
        #: The handler_timeout of each open request, on the runtime's deadline sweep (shared: one watchdog check).
        self.sweep = sweep
        self._expire = self._timed_out
        #: HTTP: tie server requests to the call whose stream carried them (not to the only call).
        self.ties_by_stream = port.ties_by_stream
        #: stdio: hold an answer back while another follows at once, and write it later (None: not offered).
        self.holding = port.holding
        #: The negotiated version (None before the handshake).
        self.negotiated: Optional[str] = None
        self.server_capabilities: Optional[JsonDict] = None
        self._logs_lock = threading.Lock()
        self._logs_requested = False
        #: Each tool's ``execution.taskSupport`` as last listed (2025-11-25 tasks).
        self._task_supports: dict[str, str] = {}

    @property
    def version(self) -> Optional[str]:
        return self.negotiated

    # ------------------------------------------------------------------ reader thread

    def _send_data(self, data: Optional[bytes], about: Any = None) -> None:
        if data is None:
            return
        try:
            self.send(data)
        except TransportClosed:
            log.debug("mcp_input_sync: could not answer %r: transport closed", about)

    def invalid(self, message: JsonDict) -> None:
        """A message that is neither a request, a notification nor a response."""
        log.warning("mcp_input_sync: server %s sent an invalid JSON-RPC message; ignored", self.server_id)
        self.stats.add("malformed")
        request_id = message.get("id")
        if type(request_id) is int or type(request_id) is str:
            if "result" not in message and "error" not in message:
                self.reject(request_id, jsonrpc.INVALID_REQUEST, "invalid request")

    def reject(self, request_id: RequestId, code: int, message: str) -> None:
        """Answer a request the client could not read, unless its id is already taken by an open one."""
        if not self.conn.is_open(request_id):
            self._send_data(encode_error(request_id, code, message), request_id)

    def reject_unreadable(self, request_id: RequestId, code: int, message: str) -> None:
        """A request that could not be read: answered once the era is known to be legacy."""
        if self.negotiated is not None:  # started: the era is legacy
            self.reject(request_id, code, message)

    def answer_failed(self, request_id: RequestId) -> None:
        """Handling a request raised inside the library: answer it -32603 (once the era is legacy)."""
        if self.negotiated is None:  # not started: the era is not decided
            return
        entry = self.conn.get(request_id)
        message = "the client could not handle the request"
        if entry is None:
            self._send_data(encode_error(request_id, jsonrpc.INTERNAL_ERROR, message), request_id)
        else:
            self._write(entry, self.conn.fail(entry, jsonrpc.INTERNAL_ERROR, message))

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        """Reader thread: one server request, fed to the connection; then its callback, or what the connection said."""
        now = _clock.monotonic()
        # step 6's slot count is a hint read without a call: submit() below decides
        entry = self.conn.receive(request_id, method, params, now, self.calls.in_flight > 0, self.pool.free <= 0)
        if isinstance(entry, Said):
            self._said(entry, request_id)
            return
        entry.on_expiry = self._expire
        # tied first: whatever ends the request from here on (its deadline, a cancel) finds its call to resume
        entry.call = call = self.calls.tie(entry, now, stream, self.ties_by_stream)
        tracing = self.desk.tracing
        if tracing is not None and (tracing.found or LOADED in sys.modules):  # telemetry: a SERVER span, the call's child
            meta = params.get("_meta") if type(params) is dict else None
            entry.traced = tracing.server(method, request_id, None if call is None or call.traced is None else call.traced.span, meta)
        if entry.done:  # cancelled meanwhile (HTTP: on another thread, maybe before the call was set)
            if call is not None:
                self.calls.untie(entry, call, _clock.monotonic())
            return
        # one sweep of deadlines while requests are open, not a timer per request
        self.sweep.add(entry)
        try:
            # a quick callback is cheaper run right here than handed to a worker (docs/threads-and-time.md)
            started = self.pool.submit(partial(self._run, entry), entry)
        except RuntimeError:  # the pool shut down meanwhile
            settle(entry, "cancelled", "closed")
            self._write(entry, self.conn.fail(entry, jsonrpc.INTERNAL_ERROR, CLOSING))
            return
        if not started:  # step 6: every slot is held (answered through the connection: it is open)
            self.desk.note_refusal(entry.kind, BUSY)
            settle(entry, "refused", str(BUSY.code), BUSY.check)
            self._write(entry, self.conn.fail(entry, BUSY.code, BUSY.message))

    def _said(self, said: Said, request_id: Any) -> None:
        """What the connection said instead of admitting a request: log it, count a refusal, write the answer."""
        if said.warning:
            log.warning("mcp_input_sync: %s", said.warning)
        refusal = said.refusal
        if refusal is not None:
            self.desk.note_refusal(said.kind, refusal)
            self.desk.refused_span(said.kind, request_id, refusal)
        self._send_data(said.data)

    def on_cancelled(self, request_id: Any) -> None:
        """Reader thread: the server cancelled one of its requests: set the token, answer nothing."""
        entry = self.conn.cancelled(request_id)
        if entry is None:
            return
        entry.token.cancel("cancelled by the server")
        settle(entry, "cancelled", "cancelled")
        if entry.call is not None:
            self.calls.untie(entry, entry.call, _clock.monotonic())

    # ------------------------------------------------------------------ worker thread (or the reader, run here)

    def _run(self, entry: Inbound) -> Optional[Callable[[], object]]:
        """The callback, then its answer through the connection; returns the write, done once the slot is free."""
        prepared = entry.prepared
        if prepared is None:  # cancelled before it ran
            return None
        call = entry.call
        assigns, related = (self.options.assigns, None) if call is None else (call.assigns, call.id)
        conn = self.conn
        try:
            value = self.desk.callback(prepared, assigns, related, entry.token)
        except InputRefused as refusal:
            settle(entry, "refused", str(refusal.code), "handler")
            return partial(self._write, entry, conn.fail(entry, refusal.code, refusal.message, refusal.data))
        except BaseException:  # SystemExit too: a worker answers, then lives on
            log.exception("mcp_input_sync: %s callback for server %s raised; answered -32603", entry.method, self.server_id)
            settle(entry, "error", str(jsonrpc.INTERNAL_ERROR))
            return partial(self._write, entry, conn.fail(entry, jsonrpc.INTERNAL_ERROR, FAILED))
        try:
            data = conn.answer(entry, value)
        except Exception:
            log.exception("mcp_input_sync: a %s answer could not be checked; refused as invalid", entry.kind)
            data = Refusal("answer", jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer", "unreadable answer")
        if type(data) is Refusal:  # step 8 refused the answer: answered with its error, then counted and logged
            settle(entry, "refused", str(data.code), data.check)
            out = conn.fail(entry, data.code, data.message)
            if out is not None:  # not when the request was answered meanwhile (timed out, cancelled, closing)
                self.desk.note_refusal(entry.kind, data)
            return partial(self._write, entry, out)
        notes = prepared.notes
        if notes:
            for note in notes:
                log.warning("mcp_input_sync: %s answer to server %s: %s", entry.method, self.server_id, note)
        if entry.traced is not None:
            entry.traced.settle(outcome_of(value))
        return partial(self._write, entry, data, "served")  # type: ignore[arg-type]

    # ------------------------------------------------------------------ answering

    def _write(self, entry: Inbound, data: Optional[bytes], count: Optional[str] = None) -> None:
        """Write the one answer of a server request the connection settled (None: it had one already).

        ``count`` names the stats counter this answer adds to. The request's
        call, if it was tied to one, goes on waiting for the server.
        """
        if data is None:
            return  # timed out, cancelled or answered at close: the late result is dropped
        if count is not None:
            self.stats.add(count)
        try:
            holding = self.holding
            if holding is not None and not self.pool.none_queued():
                # another answer follows at once: write them together, waking the server once
                if holding.send_later(data):
                    # the watchdog is woken for it only when no sweep keeps it waking (0.1 s) anyway
                    self.watchdog.watch_fast(self._flush_soon())
            else:
                self.send(data)
        except TransportClosed:
            log.debug("mcp_input_sync: answer to %r not sent: transport closed", entry.id)
        call = entry.call
        if call is not None:
            self.calls.untie(entry, call, _clock.monotonic())

    def _flush_quietly(self) -> None:
        holding = self.holding
        if holding is not None:
            try:
                holding.flush()
            except TransportClosed:
                pass

    def _flush_soon(self) -> Callable[[], bool]:
        """A watchdog check that writes held-back answers one period later at the latest.

        Normally the worker's next answer writes them; this covers a next
        callback that waits for a person.
        """
        calls = 0

        def check() -> bool:
            nonlocal calls
            calls += 1
            if calls < 2:
                return False  # give the worker one period to write it with its next answer
            self._flush_quietly()
            return True

        return check

    def _timed_out(self, entry: Inbound) -> None:
        """Watchdog thread (the deadline sweep): a callback ran past handler_timeout.

        The error is answered before the token is set, so a callback that
        returns as soon as it sees the token cannot answer first.
        """
        try:
            data = self.conn.fail(entry, jsonrpc.INTERNAL_ERROR, "the input handler timed out")
            if data is None:
                return  # answered or cancelled meanwhile
            settle(entry, "timeout", "timeout")
            self._write(entry, data, "timed_out")
        except Exception:  # the callback must still learn that its time is up
            log.exception("mcp_input_sync: a %s deadline could not be enforced", entry.kind)
            entry.token.cancel("timeout")
            return
        entry.token.cancel("timeout")
        log.warning(
            "mcp_input_sync: %s callback for server %s ran past its handler_timeout of %g s; answered -32603",
            loggable(entry.method),
            self.server_id,
            entry.limit,
        )

    # ------------------------------------------------------------------ the client's calls

    def started(self, version: str, server_capabilities: Optional[JsonDict]) -> Optional[JsonDict]:
        """The handshake chose this era: ``notifications/initialized``, then logs if someone reads them."""
        self.negotiated = version
        self.server_capabilities = server_capabilities
        self.session.notify("notifications/initialized", step=SESSION_READY)
        if self.router.wants_logs:
            self.request_logs()
        return None

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
        return self.session.request(
            method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress, cancel=cancel, idempotent=idempotent
        )

    def call(self, method: str, params: JsonDict, spec: CallSpec) -> Union[JsonDict, PendingCall]:
        """A call in this era; a tool that wants 2026-07-28 fails with ``check="era"`` (the era router learns from it)."""
        if spec.defer_input:
            raise ClientError("protocol", "defer_input works only in the 2026-07-28 era")
        clock = spec.clock
        if method == "tools/call" and self._tasks_offered():
            support = self._task_support(params["name"], clock)
            if support == "required" or (support == "optional" and not spec.wait):
                # 2025-11-25: run it as a task, then follow it with tasks/get and tasks/result
                created = self.request(
                    method, dict(params, task={}), is_call=True, clock=clock, assigns=spec.assigns, cancel=spec.cancel, idempotent=spec.idempotent
                )
                task = created.get("task")
                task_id = task.get("taskId") if isinstance(task, dict) else None
                if not isinstance(task_id, str):
                    raise ClientError("protocol", "a task-augmented call returned no task", data=created, check="result")
                if not spec.wait:
                    return created
                return self.await_task(task_id, spec)
        try:
            result = self.request(
                method, params, is_call=True, clock=clock, assigns=spec.assigns, progress=spec.progress, cancel=spec.cancel, idempotent=spec.idempotent
            )
        except ClientError as exc:
            wrong = wrong_era(self.era, self.negotiated, method, params, exc=exc)
            if wrong is None:
                raise
            raise wrong from exc
        wrong = wrong_era(self.era, self.negotiated, method, params, result=result) if result.get("isError") is True else None
        if wrong is not None:  # FastMCP's isError with no back-channel: docs/modern.md#servers-with-no-back-channel
            raise wrong
        return result

    def resume(self, pending: PendingCall, responses: Mapping[str, Any], spec: CallSpec) -> Union[JsonDict, PendingCall]:
        raise ClientError("protocol", "resume works only in the 2026-07-28 era")

    def _tasks_offered(self) -> bool:
        if not self.options.tasks or self.negotiated != "2025-11-25":
            return False
        tasks = (self.server_capabilities or {}).get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools

    def _task_support(self, name: str, clock: CallClock) -> Optional[str]:
        """A tool's ``execution.taskSupport`` (``tools/list`` is read once if the tool is unknown)."""
        if name not in self._task_supports:
            def fetch(method: str, params: Optional[JsonDict]) -> JsonDict:
                return self.request(method, params, is_call=False, clock=self.options.clock())

            self.note_tools(collect_pages(fetch, "tools/list", "tools", self.options.limits["listing_bytes"]))
        return self._task_supports.get(name)

    def note_tools(self, tools: list[JsonDict]) -> list[JsonDict]:
        for tool in tools:
            execution = tool.get("execution") if isinstance(tool, dict) else None
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._task_supports[tool["name"]] = support if isinstance(support, str) else "forbidden"
        return tools

    def await_task(self, task_id: str, spec: CallSpec) -> JsonDict:
        """2025-11-25: poll tasks/get until the task leaves "working", then tasks/result (its requests tie to it)."""
        clock, cancel = spec.clock, spec.cancel

        def fetch(poll_clock: CallClock) -> JsonDict:
            return self.request("tasks/get", {"taskId": task_id}, is_call=False, clock=poll_clock, cancel=cancel)

        poll_task(task_id, fetch, lambda task: AGAIN if task.get("status") == "working" else task, clock, cancel, "pollInterval")
        # tasks/result blocks until the task ends: bounded by what is left of max_total_timeout
        remaining = max(0.001, clock.started + clock.max_total - _clock.monotonic())
        result_clock = CallClock(_clock.monotonic(), remaining, remaining)
        call = self.session.start(
            "tasks/result", {"taskId": task_id}, is_call=True, clock=result_clock, assigns=spec.assigns, task_id=task_id, waits=cancel is None
        )
        return self.session.result(call, cancel)

    def request_logs(self) -> None:
        """Ask the server for logs at ``log_level``, once, when it declares ``logging``."""
        with self._logs_lock:
            caps = self.server_capabilities
            if self._logs_requested or caps is None or "logging" not in caps:
                return
            self._logs_requested = True
        opts = self.options
        try:
            self.request("logging/setLevel", {"level": opts.log_level}, is_call=False, clock=opts.clock())
        except ClientError as exc:
            if exc.kind in ("closed", "transport"):
                raise
            log.warning("mcp_input_sync: server %s refused logging/setLevel: %s", self.server_id, exc)

    def set_log_level(self, level: str, clock: CallClock) -> None:
        """``logging/setLevel`` now (``client.set_log_level``); the level then stays, whoever starts hearing logs."""
        with self._logs_lock:
            self._logs_requested = True
        self.request("logging/setLevel", {"level": level}, is_call=False, clock=clock)

    def hear(self) -> None:
        self.request_logs()

    def subscribe_resource(self, uri: str, subscribe: bool) -> None:
        method = "resources/subscribe" if subscribe else "resources/unsubscribe"
        self.request(method, {"uri": uri}, is_call=False, clock=self.options.clock())

    def roots_changed(self) -> None:
        if declares_roots(self.desk.handler):  # a handler offering no roots declared none: nothing to tell
            self.session.notify("notifications/roots/list_changed")

    # ------------------------------------------------------------------ shutdown

    def close(self, answer: bool) -> None:
        """Stop taking requests; answer the open ones -32603 (when ``answer``) and set their tokens."""
        for entry in self.conn.close():
            settle(entry, "cancelled", "closed")
            if answer:  # answer first: a callback woken by its token must not answer instead
                self._write(entry, self.conn.fail(entry, jsonrpc.INTERNAL_ERROR, CLOSING))
            entry.token.cancel("closed")


def settle(entry: Inbound, outcome: str, error: Optional[str] = None, check: Optional[str] = None) -> None:
    """End the request's SERVER span, if it has one, with how it was answered (docs/telemetry.md)."""
    if entry.traced is not None:
        entry.traced.settle(outcome, error, check)
