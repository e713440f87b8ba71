"""Answering a legacy server's requests (behaviour.md section 5).

The reader thread hands each server request to :meth:`LegacyResponder.on_request`,
which runs the checks in order and either answers at once (ping, refusals)
or takes a worker slot and runs the handler on a worker thread under a
watchdog deadline. :meth:`LegacyResponder.answer` is the only place an answer
is written, and the inbox lets exactly one answer through per request id.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import Any, Callable, Optional, Union

from . import _clock, reflect
from ._calls import Call, CallTable
from ._protocol import jsonrpc
from ._protocol import versions as v
from ._protocol.checks import InputChecks, Prepared, Refusal
from ._protocol.inbox import LegacyInbox
from ._protocol.jsonrpc import JsonDict, RequestId
from ._runtime.watchdog import Watchdog
from ._runtime.workers import HandlerPool
from ._stats import Stats
from .errors import InputRefused
from ._callbacks import call_handler, checked_answer, input_context
from .handler import CancelToken, InputHandler
from .options import Options
from .transports.base import TransportClosed

log = logging.getLogger("mcp_input_sync")

Send = Callable[[bytes], None]

_INPUT_METHODS = v.INPUT_METHODS

BUSY = Refusal("busy", jsonrpc.SERVER_ERROR, "busy: too many requests in flight")


RELATED_TASK = "io.modelcontextprotocol/related-task"


def related_task(params: Any) -> Optional[str]:
    """The taskId of a request's ``_meta["io.modelcontextprotocol/related-task"]``, if any."""
    meta = params.get("_meta") if type(params) is dict else None
    if meta is None:  # most requests
        return None
    related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
    task_id = related.get("taskId") if isinstance(related, dict) else None
    return task_id if isinstance(task_id, str) else None


def _loggable(text: str) -> str:
    """Text a server chose (a method name, say), fit for the local log: no control
    characters (no forged log lines), lone surrogates escaped (no logging error)."""
    return reflect.text(text, 1024).encode("utf-8", "backslashreplace").decode("utf-8")


class Inbound:
    """One server request being answered by a callback."""

    __slots__ = ("id", "method", "kind", "token", "call", "deadline", "limit", "task_id")

    def __str__(self) -> str:  # how the handler pool names its job: "elicitation/create 7"
        return f"{self.method} {self.id!r}"

    def __init__(self, request_id: RequestId, method: str, kind: str, deadline: float = 0.0, limit: float = 0.0) -> None:
        self.id = request_id
        self.method = method
        self.kind = kind
        #: The 2025-11-25 task this request belongs to (``related-task``), if any.
        self.task_id: Optional[str] = None
        self.token = CancelToken()
        #: The call this request is tied to, or None.
        self.call: Optional[Call] = None
        #: When its handler_timeout runs out (library clock), and that timeout.
        self.deadline = deadline
        self.limit = limit


class LegacyResponder:
    """Checks, runs and answers the server's requests for one client."""

    def __init__(
        self,
        *,
        handler: Optional[InputHandler],
        options: Options,
        calls: CallTable,
        stats: Stats,
        send: Send,
        pool: HandlerPool,
        watchdog: Watchdog,
        client_name: str,
        server_id: str,
        checks: InputChecks,
    ) -> None:
        self.handler = handler
        #: The check pipeline (shared with the modern era); its budget is guarded by ``budget_lock``.
        self.checks = checks
        self.budget_lock = threading.Lock()
        self.options = options
        self._timeouts = options.handler_timeout
        self.calls = calls
        self.stats = stats
        self.send = send
        self.pool = pool
        self.watchdog = watchdog
        self.client_name = client_name
        self.server_id = server_id
        self.era: Optional[str] = None
        self.inbox: LegacyInbox[Inbound] = LegacyInbox()
        #: HTTP: tie server requests to the call whose stream carried them (not to the only call).
        self.ties_by_stream = False
        #: A deadline sweep is registered with the watchdog (guarded by ``stats.lock``).
        self._sweeping = False
        #: stdio: hold an answer back while another follows at once (``send_later``), and write it (``flush``).
        self.send_later: Optional[Callable[[bytes], bool]] = None
        self.flush: Optional[Callable[[], None]] = None
        self.closing = False

    # ------------------------------------------------------------------ reader thread

    def _send_message(self, message: JsonDict) -> None:
        try:
            self.send(jsonrpc.encode(message))
        except TransportClosed:
            log.debug("mcp_input_sync: could not answer %r: transport closed", message.get("id"))

    def refuse(self, request_id: RequestId, kind: str, refusal: Refusal) -> None:
        """Answer a request at once with the refusal's error, count it and log it."""
        self.note_refusal(kind, refusal)
        self._send_message(jsonrpc.error(request_id, refusal.code, refusal.message))

    def note_refusal(self, kind: str, refusal: Refusal) -> None:
        """Count a refusal and log it as a structured record (server_id, kind, check, code)."""
        self.stats.refuse(kind, refusal.check)
        log.warning(
            "mcp_input_sync: refused %s request from server %s: %s (check %s, code %d)%s",
            kind,
            self.server_id,
            _loggable(refusal.message),
            refusal.check,
            refusal.code,
            f": {_loggable(refusal.detail)}" if refusal.detail else "",
            extra={"server_id": self.server_id, "kind": kind, "check": refusal.check, "code": refusal.code},
        )

    def invalid(self, message: JsonDict) -> None:
        """A message that is neither a request, a notification nor a response."""
        log.warning("mcp_input_sync: server %s sent an invalid JSON-RPC message; ignored", self.server_id)
        self.stats.add("malformed")
        request_id = message.get("id")
        if type(request_id) is int or type(request_id) is str:
            if "result" not in message and "error" not in message:
                self.reject(request_id, jsonrpc.INVALID_REQUEST, "invalid request")

    def reject(self, request_id: RequestId, code: int, message: str) -> None:
        """Answer a request the client could not read, unless its id is already taken by an open one.

        The 2026-07-28 era answers no server request, not even an unreadable one.
        """
        if self.era != v.MODERN and not self._is_open(request_id):
            self._send_message(jsonrpc.error(request_id, code, message))

    def _is_open(self, request_id: RequestId) -> bool:
        # one dict lookup is atomic: no lock (admit() re-checks under the lock)
        return self.inbox.get(request_id) is not None

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        """Reader thread: one server request, checked in behaviour.md section 5's order."""
        if type(request_id) is not int and type(request_id) is not str:
            log.warning("mcp_input_sync: server request with an invalid id; answered -32600")
            self._send_message(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "invalid request id"))
            return
        if self._is_open(request_id):
            log.warning("mcp_input_sync: server reused the id %r of an unanswered request; dropped", request_id)
            return
        if method == "ping":
            self._send_message(jsonrpc.result(request_id, {}))
            return
        checks = self.checks
        kind = _INPUT_METHODS.get(method, "other")
        refusal = checks.before(method, params)
        now = _clock.monotonic()
        if refusal is None and not checks.unlimited:
            with self.budget_lock:
                refusal = checks.budget([kind], now)
        prepared: Union[Refusal, Prepared] = refusal if refusal is not None else checks.prepare(method, params, in_flight=self.calls.has_calls())
        if isinstance(prepared, Refusal):
            self.refuse(request_id, kind, prepared)
            return
        if self.pool.full():  # step 6, before the request is opened (start() below re-checks)
            self.refuse(request_id, kind, BUSY)
            return
        limit = self._timeouts[kind]
        entry = Inbound(request_id, method, kind, now + limit, limit)
        with self.stats.lock:
            closing = self.closing
            admitted = not closing and self.inbox.admit(request_id, entry)
            arm = admitted and not self._sweeping
            if arm:
                self._sweeping = True
        if not admitted:
            if closing:
                self._send_message(jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the client is closing"))
            return
        task_id = entry.task_id = related_task(params)
        entry.call = self.calls.tie(entry, now, task_id, stream, self.ties_by_stream)
        if arm:  # one sweep of deadlines while requests are open, not a timer per request
            self.watchdog.watch(self._sweep)
        try:
            started = self.pool.start(partial(self._run, entry, prepared), entry)
        except RuntimeError:  # the pool shut down meanwhile
            self.answer(entry, jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the client is closing"))
            return
        if not started:  # the last slot went to another thread meanwhile (HTTP): answered through the inbox
            self.note_refusal(kind, BUSY)
            self.answer(entry, jsonrpc.error(request_id, BUSY.code, BUSY.message))

    def on_cancelled(self, request_id: Any) -> None:
        """Reader thread: the server cancelled one of its requests: set the token, answer nothing."""
        with self.stats.lock:
            entry = self.inbox.cancel(request_id)
        if entry is None:
            return
        entry.token.cancel("cancelled by the server")
        self._untie(entry)

    # ------------------------------------------------------------------ worker thread

    def _run(self, entry: Inbound, prepared: Prepared) -> Callable[[], object]:
        """Worker thread: run the handler; return the answer to write once the slot is free."""
        handler = self.handler
        assert handler is not None
        request_id = entry.id
        kind = entry.kind
        call = entry.call
        assigns, related = (self.options.assigns, None) if call is None else (call.assigns, call.id)
        ctx = input_context(prepared, self.client_name, self.server_id, self.era, assigns, related, entry.token)
        try:
            value = call_handler(handler, prepared, ctx)
        except InputRefused as refusal:
            return partial(self.answer, entry, jsonrpc.error(request_id, refusal.code, refusal.message, refusal.data))
        except BaseException:  # SystemExit too: a worker answers, then lives on
            log.exception("mcp_input_sync: %s callback for server %s raised; answered -32603", entry.method, self.server_id)
            return partial(self.answer, entry, jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "the input handler failed"))
        verdict = checked_answer(self.checks, prepared, value)
        if isinstance(verdict, Refusal):
            self.note_refusal(kind, verdict)
            return partial(self.answer, entry, jsonrpc.error(request_id, verdict.code, verdict.message))
        for note in prepared.notes:
            log.warning("mcp_input_sync: %s answer to server %s: %s", entry.method, self.server_id, note)
        if entry.task_id is not None:  # 2025-11-25: a task's responses carry its related-task _meta
            meta = dict(verdict.get("_meta") or {})
            meta[RELATED_TASK] = {"taskId": entry.task_id}
            verdict = dict(verdict, _meta=meta)
        return partial(self.answer, entry, jsonrpc.result(request_id, verdict), "served")

    # ------------------------------------------------------------------ answering

    def answer(self, entry: Inbound, answer: JsonDict, count: Optional[str] = None) -> bool:
        """Write the one answer of a server request, unless it already has one.

        Returns:
            True when this was the request's answer; False when it already had
            one or the server cancelled it (the answer is dropped). ``count``
            names the stats counter this answer adds to.
        """
        try:
            data = jsonrpc.encode(answer)
        except (TypeError, ValueError):
            log.error("mcp_input_sync: %s answer is not JSON-serialisable; answered -32603", entry.method)
            data = jsonrpc.encode(jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the input handler returned an invalid answer"))
            count = None
        with self.stats.lock:
            if self.inbox.settle(entry.id) is not entry:
                return False  # timed out, cancelled or answered at close: the late result is dropped
            if count is not None:
                self.stats.add_locked(count)
        try:
            later = self.send_later
            if later is not None and self.pool.has_queued():
                # another answer follows at once: write them together, waking the server once
                if later(data):
                    # While the sweep runs the watchdog wakes within 0.1 s anyway; waking it for
                    # every burst would cost a thread switch each. A sweep that stopped flushed first.
                    self.watchdog.watch_fast(self._flush_soon(), wake=not self._sweeping)
            else:
                self.send(data)
        except TransportClosed:
            log.debug("mcp_input_sync: answer to %r not sent: transport closed", entry.id)
        self._untie(entry)
        return True

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
            flush = self.flush
            if flush is not None:
                try:
                    flush()
                except TransportClosed:
                    pass
            return True

        return check

    def _untie(self, entry: Inbound) -> None:
        if entry.call is not None:
            self.calls.untie(entry, entry.call, _clock.monotonic())

    def _sweep(self) -> bool:
        """Watchdog thread, on every wake (at least every 0.1 s) while requests are open.

        Answers -32603 to each whose handler_timeout ran out; returns True
        (stop sweeping) once none is open, after writing any answer still
        held back (whoever holds one back later wakes the watchdog itself).
        """
        now = _clock.monotonic()
        with self.stats.lock:
            entries = list(self.inbox)
        try:
            for entry in entries:
                if entry.deadline <= now:
                    self._timed_out(entry, entry.limit)
        except BaseException:  # the watchdog drops a failing watcher: the next request re-arms it
            with self.stats.lock:
                self._sweeping = False
            raise
        with self.stats.lock:
            stop = len(self.inbox) == 0
            if stop:
                self._sweeping = False
        if stop and self.flush is not None:
            try:
                self.flush()
            except TransportClosed:
                pass
        return stop

    def _timed_out(self, entry: Inbound, limit: float) -> None:
        """Watchdog thread: a callback ran past handler_timeout.

        The error is answered before the token is set, so a callback that
        returns as soon as it sees the token cannot answer first.
        """
        error = jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the input handler timed out")
        if not self.answer(entry, error, count="timed_out"):
            return  # answered or cancelled meanwhile
        entry.token.cancel("timeout")
        log.warning(
            "mcp_input_sync: %s callback for server %s ran past its handler_timeout of %g s; answered -32603",
            entry.method,
            self.server_id,
            limit,
        )

    # ------------------------------------------------------------------ shutdown

    def close(self, answer: bool) -> None:
        """Stop taking requests; answer the open ones -32603 (when ``answer``) and set their tokens."""
        with self.stats.lock:
            self.closing = True
            entries = list(self.inbox)
        for entry in entries:
            if answer:  # answer first: a callback woken by its token must not answer instead
                self.answer(entry, jsonrpc.error(entry.id, jsonrpc.INTERNAL_ERROR, "the client is closing"))
            entry.token.cancel("closed")
