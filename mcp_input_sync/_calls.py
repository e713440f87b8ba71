"""The client's own requests in flight, the calls server requests tie to, and those requests.

A *call* is a call_tool, read_resource or get_prompt request that has been
written and is not yet answered, timed out, cancelled or abandoned (the
list methods, ping and the handshake are requests, not calls). On stdio a
server request is tied to the call in flight when there is exactly one and
no call that ended without its result may still be at work on the server
(docs/reference.md#tying-server-requests-to-calls). An :class:`Inbound` is
one server request being answered by a callback; a :class:`CallSpec` is what
one public call asks for beyond its method and params.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from ._protocol.deadlines import CallClock
from ._protocol.jsonrpc import JsonDict
from ._protocol.legacy_conn import Inbound

if TYPE_CHECKING:
    from .errors import ClientError

#: Called on the notification thread with each ``notifications/progress`` params of a call.
ProgressCallback = Callable[[JsonDict], None]


class CallSpec:
    """What one public call asks for beyond its method and params.

    ``clock`` holds its deadlines; ``assigns`` is what callbacks answering its
    input see as ``ctx.assigns`` (None: the client's); ``progress`` hears its
    progress; ``cancel`` is the caller's event; ``defer_input`` (2026-07-28)
    returns a :class:`~mcp_input_sync._protocol.modern.PendingCall` at the
    first round of input; ``wait`` follows a task to its result;
    ``idempotent``: a ``tools/call`` safe to send twice after a failure that
    may have reached the server (docs/http.md#reconnect-and-retry);
    ``direct`` (set by the engine) says the result came in one answer.
    """

    __slots__ = ("clock", "assigns", "progress", "cancel", "defer_input", "wait", "idempotent", "direct")

    def __init__(
        self,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: "Optional[threading.Event]" = None,
        defer_input: bool = False,
        wait: bool = True,
        idempotent: bool = False,
    ) -> None:
        self.clock = clock
        self.assigns = assigns
        self.progress = progress
        self.cancel = cancel
        self.defer_input = defer_input
        self.wait = wait
        self.idempotent = idempotent
        #: Set by the engine: the result came in one answer (no round of input, no task), so it may be cached.
        self.direct = True


class Latch:
    """A one-shot flag with the ``set``/``is_set``/``wait``/``clear`` of ``threading.Event``.

    One lock instead of an Event's condition: waiting and waking cost a lock
    operation each, where an Event allocates a lock per wait. Every call has
    one, so this is on the path of every round trip.
    """

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            try:
                self._lock.release()
            except RuntimeError:  # a racing set() released it first
                pass

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False
        self._lock.acquire(blocking=False)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block up to ``timeout`` real seconds (forever when None); True once set."""
        if self._set:
            return True
        if self._lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            try:
                self._lock.release()  # let any other waiter through too
            except RuntimeError:
                pass
        return self._set


class Call:
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
        "task_id",
        "waiter",
        "last_progress",
        "traced",
    )

    def __init__(
        self,
        request_id: int,
        method: str,
        is_call: bool,
        assigns: Mapping[str, Any],
        clock: CallClock,
        done: "Optional[threading.Event | Latch]" = None,
    ) -> None:
        self.id = request_id
        self.method = method
        #: True for calls (they tie server requests), False for other requests.
        self.is_call = is_call
        self.assigns = assigns
        self.clock = clock
        #: Set when the response (or a failure) arrives; several requests may share one.
        self.done: "threading.Event | Latch" = done if done is not None else Latch()
        self.response: Optional[JsonDict] = None
        self.failure: Optional[ClientError] = None
        #: Server requests tied to this call and not yet answered.
        self.tied: set[Inbound] = set()
        self.progress: Optional[ProgressCallback] = None
        self.progress_token: Optional[str] = None
        #: The 2025-11-25 task this call waits on (``tasks/result``), for tying by related-task.
        self.task_id: Optional[str] = None
        #: The ident of the thread that waits for the response and will most likely send
        #: again at once (a 2026-07-28 round): the reader may hand it the reading; 0: none.
        self.waiter = 0
        #: The highest progress value the server reported for this request (a reset needs more).
        self.last_progress = float("-inf")
        #: Its span (``_telemetry.Traced``: ``finish(error_type, response)`` ends it once), or None.
        self.traced: Any = None


#: How many abandoned calls a table names one by one; past it the connection ties nothing by being alone again.
MAX_ABANDONED = 256


class CallTable:
    """Requests in flight by id, with the one lock that guards them and their clocks.

    It also remembers the *abandoned* calls: those that ended without their
    result (timeout, cancel, Ctrl-C) and whose late answer has not arrived.
    The server may still be at work on one and ask for input on its behalf,
    so while any is remembered no server request is tied to a call for being
    the only one in flight (it could be the abandoned call's).
    """

    def __init__(self, ties_alone: bool = True) -> None:
        self.lock = threading.Lock()
        #: False where every server request names its call (HTTP: by the stream that carried it): nothing to remember.
        self.ties_alone = ties_alone
        self._by_id: dict[int, Call] = {}
        self._by_progress: dict[str, Call] = {}
        #: How many calls are in flight: written under ``lock``, read by anyone (a sampling request is not idle).
        self.in_flight = 0
        #: The call in flight when there is exactly one and none is abandoned (what a stdio request ties to), else None.
        self._sole: Optional[Call] = None
        #: The ids of abandoned calls; ``_too_many`` once more than MAX_ABANDONED were (it never clears).
        self._abandoned: set[int] = set()
        self._too_many = False
        self.closed = False

    def add(self, call: Call) -> bool:
        """Register a request about to be written; False once closed."""
        with self.lock:
            if self.closed:
                return False
            self._by_id[call.id] = call
            if call.is_call:
                self.in_flight += 1
                self._sole = call if self.in_flight == 1 and not self._abandoned and not self._too_many else None
            if call.progress_token is not None:
                self._by_progress[call.progress_token] = call
            return True

    def _drop(self, call: Call) -> None:
        if call.is_call:
            self.in_flight -= 1
            self._choose_sole(call)
        if call.progress_token is not None:
            self._by_progress.pop(call.progress_token, None)

    def _choose_sole(self, leaving: Optional[Call]) -> None:
        self._sole = None
        if self.in_flight == 1 and not self._abandoned and not self._too_many:
            for other in self._by_id.values():
                if other.is_call and other is not leaving:
                    self._sole = other
                    break

    def pop(self, request_id: Any) -> Optional[Call]:
        """Take the request a response answers; None for an unknown or finished id (an abandoned call's late answer)."""
        if type(request_id) is not int:
            return None
        with self.lock:
            call = self._by_id.pop(request_id, None)
            if call is not None:  # _drop(), inline: once per response
                if call.is_call:
                    self.in_flight -= 1
                    if self.in_flight == 0:  # the last call: none left to choose from
                        self._sole = None
                    else:
                        self._choose_sole(call)
                if call.progress_token is not None:
                    self._by_progress.pop(call.progress_token, None)
            elif self._abandoned and request_id in self._abandoned:
                self._abandoned.discard(request_id)  # its late answer: the server is done with it
                self._choose_sole(None)
            return call

    def get(self, request_id: Any) -> Optional[Call]:
        """The request in flight with this id, if any (it stays in the table)."""
        if type(request_id) is not int:
            return None
        with self.lock:
            return self._by_id.get(request_id)

    def forget(self, call: Call, abandoned: bool = False, why: str = "cancelled") -> Optional[list["Inbound"]]:
        """Remove a request that ends without its response.

        ``abandoned``: the request went out and the server may still be at
        work on it (a timeout, a cancel, Ctrl-C): a call is remembered as
        abandoned until its late answer arrives. ``why``: the ``error.type``
        its span ends with (docs/telemetry.md).

        Returns:
            The server requests tied to it when it was still in flight, else None.
        """
        with self.lock:
            if self._by_id.pop(call.id, None) is None:
                return None
            if abandoned and call.is_call and self.ties_alone:
                if len(self._abandoned) < MAX_ABANDONED:
                    self._abandoned.add(call.id)
                else:
                    self._too_many = True
            self._drop(call)
            tied = list(call.tied)
        if call.traced is not None:
            call.traced.finish(why)
        return tied

    def abandoned(self) -> int:
        """How many calls ended without their result and have not had their late answer (-1: too many to name)."""
        with self.lock:
            return -1 if self._too_many else len(self._abandoned)

    def close(self, why: str = "closed") -> list[Call]:
        """Refuse new requests and take every one in flight (their spans end with ``error.type`` ``why``)."""
        with self.lock:
            self.closed = True
            calls = list(self._by_id.values())
            self._by_id.clear()
            self._by_progress.clear()
            self.in_flight = 0
            self._sole = None
        for call in calls:
            if call.traced is not None:
                call.traced.finish(why)
        return calls

    def tie(self, inbound: Inbound, now: float, stream: Any = None, by_stream: bool = False) -> Optional[Call]:
        """Tie a server request to a call (docs/reference.md#tying-server-requests-to-calls), and pause that call's clock.

        The call waiting on the request's related task; else, over HTTP (``by_stream``),
        the call whose response stream carried it (``stream`` is that call's
        id); else, on stdio, the only call in flight, while no call is
        abandoned (see the class).
        """
        with self.lock:
            chosen: Optional[Call] = None
            task_id = inbound.task_id
            if task_id is not None:
                chosen = next((c for c in self._by_id.values() if c.task_id == task_id), None)
            if chosen is None and by_stream:
                candidate = self._by_id.get(stream) if type(stream) is int else None
                chosen = candidate if candidate is not None and candidate.is_call else None
            elif chosen is None:
                chosen = self._sole
            if chosen is not None:
                chosen.tied.add(inbound)
                chosen.clock.pause(now)
            return chosen

    def untie(self, inbound: "Inbound", call: Call, now: float) -> None:
        """A tied request was answered or cancelled: resume its call's clock."""
        with self.lock:
            if inbound in call.tied:
                call.tied.discard(inbound)
                call.clock.resume(now)

    def deadline_state(self, call: Call, now: float) -> tuple[Optional[str], float]:
        """(why the call expired or None, seconds until its next deadline)."""
        with self.lock:
            return call.clock.expired(now), call.clock.remaining(now)

    def is_pending(self, call: Call) -> bool:
        """True while ``call`` waits for its response."""
        with self.lock:
            return self._by_id.get(call.id) is call

    def has_calls(self) -> bool:
        """True while at least one call is in flight (a sampling request is not idle)."""
        return self.in_flight > 0

    def progressed(self, call: Call, progress: float, now: float) -> bool:
        """A progress notification of ``call``: with ``reset_timeout_on_progress`` and a value above the
        last one, its ``timeout`` counts again from ``now``. True when it did (a repeated or lower value
        keeps nothing alive)."""
        with self.lock:
            if not call.clock.resets or not progress > call.last_progress or self._by_id.get(call.id) is not call:
                return False
            call.last_progress = progress
            call.clock.restart(now)
            return True

    def by_progress(self, token: Any) -> Optional[Call]:
        if not isinstance(token, str):
            return None
        with self.lock:
            return self._by_progress.get(token)
