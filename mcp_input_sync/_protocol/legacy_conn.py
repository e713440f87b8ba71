"""The legacy era's server requests as a sans-IO connection (2025-06-18 / 2025-11-25).

As h11's ``Connection`` is for HTTP/1.1, :class:`LegacyConnection` is for a
legacy server's requests: a pure object, fed each server request with the
time, that says what happened, and fed each answer, that says what to write.
It reads no clock, starts no thread, writes nothing and logs nothing; the
legacy engine (``_engines/legacy.py``) is the one place that does I/O around
it. Every check of the legacy era runs here, in docs/reference.md#order-of-checks's
order: the request id, a duplicate of an open id, ``ping``, then the input
checks (steps 1 to 5, :class:`~mcp_input_sync._protocol.checks.InputChecks`),
and, for the answer, step 8 and the encoding.

The connection's state is its *inbox*: the open requests by id, so each gets
exactly one answer::

    (absent) --receive--> OPEN --answer / fail--> (absent)   one answer to write
                          OPEN --cancelled------> (absent)   the server cancelled: none

A request reusing the id of one still OPEN is a duplicate, dropped. Only OPEN
requests are kept, so memory is bounded by the requests in flight. The
engine answers from several threads (workers, the deadline sweep, close), so
it hands the connection a lock for the inbox (the module itself knows no
threads), held only for a dict operation.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Hashable, Mapping, Optional, Union

from .checks import InputChecks, Prepared, Refusal
from .eras import INPUT_REQUEST_KINDS
from .jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, SERVER_ERROR, JsonDict, RequestId, dumps, error, id_key, encode

RELATED_TASK = "io.modelcontextprotocol/related-task"

#: The input budget (step 4): ``take(kinds, now)`` returns the refusal, or None when a token was taken.
TakeBudget = Callable[[list[str], float], Optional[Refusal]]


class Inbound:
    """One open server request: what the callback needs, and its deadline on the runtime's sweep.

    It carries the callback's cancellation ``token`` and the engine ties it to
    a ``call``; ``at``, ``done`` and :meth:`expired` make it an entry of the deadline
    sweep (``_runtime/deadlines.py``) itself, so a request costs no separate
    deadline object.
    """

    __slots__ = ("id", "method", "kind", "prepared", "task_id", "limit", "at", "done", "on_expiry", "token", "call", "traced")

    def __str__(self) -> str:  # how the handler pool names its job: "elicitation/create 7"
        return f"{self.method} {self.id!r}"

    def __init__(
        self, request_id: RequestId, method: str, kind: str, token: Any = None, prepared: Any = None, limit: float = 0.0, at: float = 0.0
    ) -> None:
        self.id = request_id
        self.method = method
        self.kind = kind
        #: What passed the checks (a :class:`Prepared`); None once the request is settled or cancelled, so
        #: an entry still on the deadline sweep until its next look does not hold the server's params.
        self.prepared = prepared
        #: The 2025-11-25 task this request belongs to (``related-task``), if any.
        self.task_id: Optional[str] = None
        #: Its handler_timeout in seconds, and when that runs out (library clock).
        self.limit = limit
        self.at = at
        #: Answered, cancelled or expired: the sweep drops it.
        self.done = False
        #: Called with this request when ``at`` passes first (set by the engine).
        self.on_expiry: Optional[Callable[["Inbound"], object]] = None
        #: The callback's cancellation token (a ``CancelToken``).
        self.token = token
        #: The call this request is tied to (a ``_calls.Call``), or None.
        self.call: Any = None
        #: Its SERVER span (``_telemetry.Traced``), or None.
        self.traced: Any = None

    def expired(self) -> None:
        """The deadline sweep: ``at`` passed before the request was answered."""
        if self.on_expiry is not None:
            self.on_expiry(self)


class Said:
    """What the connection says back instead of an admitted request: bytes to write, a refusal to note, or nothing.

    ``data``: write it (None: nothing to write). ``refusal`` and ``kind``: a
    check refused the request (the engine counts and logs it). ``warning``:
    something for the local log (a duplicate id, an invalid id).
    """

    __slots__ = ("data", "refusal", "kind", "warning")

    def __init__(self, data: Optional[bytes], refusal: Optional[Refusal] = None, kind: str = "", warning: str = "") -> None:
        self.data = data
        self.refusal = refusal
        self.kind = kind
        self.warning = warning


CLOSING = "the client is closing"
#: Step 6: no worker slot is free.
BUSY = Refusal("busy", SERVER_ERROR, "busy: too many requests in flight")
INVALID_ID = Said(encode(error(None, INVALID_REQUEST, "invalid request id")), warning="server request with an invalid id; answered -32600")
DUPLICATE = Said(None, warning="server reused the id of an unanswered request; dropped")


def related_task(params: Any) -> Optional[str]:
    """The taskId of a request's ``_meta["io.modelcontextprotocol/related-task"]``, if any."""
    meta = params.get("_meta") if type(params) is dict else None
    if meta is None:  # most requests
        return None
    related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
    task_id = related.get("taskId") if isinstance(related, dict) else None
    return task_id if isinstance(task_id, str) else None


def encode_error(request_id: Optional[RequestId], code: int, message: str, data: Any = None) -> bytes:
    """One JSON-RPC error answer, encoded."""
    return encode(error(request_id, code, message, data))


class LegacyConnection:
    """The open server requests of one legacy session, and every check they and their answers pass.

    Args:
        checks: the client's input checks (configured per handshake by the desk).
        take_budget: step 4, the input budget (shared with 2026-07-28 rounds);
            not called when the rate is unlimited.
        timeouts: ``handler_timeout`` by kind, in seconds.
        new_token: makes each admitted request's cancellation token (``CancelToken``).
        lock: guards the inbox (a ``threading.Lock``): the engine answers from several threads.
    """

    def __init__(
        self, checks: InputChecks, take_budget: TakeBudget, timeouts: Mapping[str, float], new_token: Callable[[], Any], lock: ContextManager[Any]
    ) -> None:
        self.checks = checks
        self._new_token = new_token
        self._take_budget = take_budget
        self._timeouts = timeouts
        #: The inbox: open requests by ``id_key``; guarded by ``_lock`` (a dict operation at a time).
        self._open: dict[Hashable, Inbound] = {}
        self._lock = lock
        #: Closing: from now on a request that passes every check is answered "the client is closing"
        #: (a ping still gets its answer, a refused one its refusal).
        self.closing = False

    # ------------------------------------------------------------------ requests in

    def receive(self, request_id: Any, method: str, params: Any, now: float, in_flight: bool, busy: bool = False) -> Union[Inbound, Said]:
        """One server request: the open :class:`Inbound` for a callback to answer, or what to say instead.

        ``now`` is when it arrived (its deadline and the budget are counted
        from it); ``in_flight``: a call of the client is in flight (a sampling
        request is not idle); ``busy``: every worker slot is held (step 6:
        refused ``busy`` before it is opened).
        """
        if type(request_id) is not int and type(request_id) is not str:
            return INVALID_ID
        key = (type(request_id) is str, request_id)  # id_key(), inline: once per request
        if key in self._open:  # one dict lookup is atomic: the admission below re-checks under the lock
            return DUPLICATE
        if method == "ping":
            return Said(encode({"jsonrpc": "2.0", "id": request_id, "result": {}}))
        checks = self.checks
        refusal = checks.before(method, params)
        kind = INPUT_REQUEST_KINDS.get(method, "other")
        if refusal is None and not checks.unlimited:
            refusal = self._take_budget([kind], now)
        if refusal is None:
            prepared = checks.prepare(method, params, in_flight=in_flight)
            if type(prepared) is Refusal:
                refusal = prepared
        if refusal is None and busy:
            refusal = BUSY
        if refusal is not None:
            return Said(encode_error(request_id, refusal.code, refusal.message), refusal, kind)
        limit = self._timeouts[kind]
        entry = Inbound(request_id, method, kind, self._new_token(), prepared, limit, now + limit)
        if type(params) is dict and "_meta" in params:
            entry.task_id = related_task(params)
        with self._lock:
            if self.closing:
                return Said(encode_error(request_id, INTERNAL_ERROR, CLOSING))
            if key in self._open:
                return DUPLICATE
            self._open[key] = entry
        return entry

    def cancelled(self, request_id: Any) -> Optional[Inbound]:
        """The server cancelled one of its requests: closed without an answer. Returns it, if it was open."""
        if type(request_id) is not str and type(request_id) is not int:
            return None
        with self._lock:
            entry = self._open.pop(id_key(request_id), None)
        if entry is not None:
            entry.done = True
            entry.prepared = None
        return entry

    def is_open(self, request_id: RequestId) -> bool:
        """True while a request with this id waits for its answer."""
        return (type(request_id) is str, request_id) in self._open

    def get(self, request_id: RequestId) -> Optional[Inbound]:
        """The open request with this id, if any."""
        return self._open.get((type(request_id) is str, request_id))

    def __len__(self) -> int:
        return len(self._open)

    def open_requests(self) -> list[Inbound]:
        """Every request still unanswered, a snapshot."""
        with self._lock:
            return list(self._open.values())

    # ------------------------------------------------------------------ answers out

    def answer(self, entry: Inbound, value: Any) -> Union[bytes, Refusal, None]:
        """A callback's answer: checked (step 8) and encoded, and the request settled.

        Returns the bytes to write; a :class:`Refusal` when the answer check
        refused it (the request stays open: answer it with :meth:`fail`); None
        when the request already had its answer or was cancelled (drop it).

        Raises:
            Exception: whatever the answer check raised on an answer too strange to check.
        """
        prepared = entry.prepared
        if prepared is None:  # settled or cancelled meanwhile: a late answer is neither checked nor written
            return None
        verdict = self.checks.answer(prepared, value)
        if type(verdict) is Refusal:
            return verdict
        task_id = entry.task_id
        if task_id is not None:  # 2025-11-25: a task's responses carry its related-task _meta
            meta = dict(verdict.get("_meta") or {})  # type: ignore[union-attr]
            meta[RELATED_TASK] = {"taskId": task_id}
            verdict = dict(verdict, _meta=meta)  # type: ignore[arg-type]
        try:
            data = (dumps({"jsonrpc": "2.0", "id": entry.id, "result": verdict}) + "\n").encode("ascii")  # encode(), inline
        except (TypeError, ValueError):
            return Refusal("answer", INTERNAL_ERROR, "the input handler returned an invalid answer", "not JSON-serialisable")
        key = (type(entry.id) is str, entry.id)  # _settle(), inline: once per answer
        with self._lock:
            if self._open.get(key) is not entry:
                return None
            del self._open[key]
        entry.done = True
        entry.prepared = None
        return data

    def fail(self, entry: Inbound, code: int, message: str, data: Any = None) -> Optional[bytes]:
        """Answer a request with an error; None when it already had its answer or was cancelled."""
        try:
            out = encode_error(entry.id, code, message, data)
        except (TypeError, ValueError):  # an InputRefused's data JSON cannot carry
            out = encode_error(entry.id, code, message)
        return out if self._settle(entry) else None

    def _settle(self, entry: Inbound) -> bool:
        """Claim the right to answer ``entry``: True once; a late answer to a request whose id the
        server has since used again leaves the new request open."""
        key = (type(entry.id) is str, entry.id)
        with self._lock:
            if self._open.get(key) is not entry:
                return False
            del self._open[key]
        entry.done = True
        entry.prepared = None
        return True

    def close(self) -> list[Inbound]:
        """Take no more requests; returns the open ones (still open: the engine answers or drops them)."""
        with self._lock:
            self.closing = True
            return list(self._open.values())
