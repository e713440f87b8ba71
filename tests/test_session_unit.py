"""The session alone, without a client and without a reader thread (docs/architecture.md#the-session).

The session is built over :class:`Wire`, a transport that records what is
written and delivers nothing by itself: each test hands the session what
the server "sent" by calling ``on_line`` (what a transport's reader does),
``on_lost`` or ``on_transport_closed`` itself. What the session does under
the transports' threading promises is tests/test_transport_contract.py's;
here, one thing at a time:

* request ids: unique, increasing, never reused (not even after a failed
  write), also when many threads start requests at once;
* the call table: a request is registered before it is written and leaves
  the table exactly once (its response, a failed write, ``abandon``,
  ``fail_all``, ``on_lost``); a progress token lives as long as its call;
* waiting: ``result`` is bounded by the call's clock (freezegun), its
  timeout paused while a server request is tied to it, ``max_total_timeout``
  never paused; a caller's cancel event ends the wait; each end tells the
  server (``notifications/cancelled``, except for ``initialize``, and not
  when the transport cancels by closing the stream);
* a response for an unknown, finished or differently typed id is dropped;
* the one mapping of failures to ``ClientError``: every transport error
  (``TransportClosed`` with and without ``check``, ``TransportAuthError``,
  ``HttpStatusError``, ``LimitExceeded``), once closed, and a JSON-RPC
  error answer;
* a stdio server's last words (exit status, stderr tail) added to a
  ``transport`` error when writing fails or the connection ends.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterator, Optional

import pytest
from freezegun import freeze_time

from mcp_input_sync import _clock
from mcp_input_sync._calls import Call, Inbound
from mcp_input_sync.handler import CancelToken
from mcp_input_sync._port import Port
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._protocol.limits import LimitExceeded
from mcp_input_sync._session import QUOTED_STDERR_LINES, Session, last_words, remote_error, transport_error
from mcp_input_sync._stats import Stats
from mcp_input_sync.errors import ClientError
from mcp_input_sync.transports.base import (
    HttpStatusError,
    OnClose,
    OnMessage,
    Outgoing,
    Transport,
    TransportAuthError,
    TransportClosed,
)

JsonDict = dict[str, Any]
#: The bound of every real-time wait in this file (none comes close when all is well).
WAIT = 10.0
CANCELLED = Outgoing("notifications/cancelled", bounded=True)


# ---------------------------------------------------------------------------- the fakes


class Wire(Transport):
    """A transport without threads: it records each message written and delivers nothing itself.

    ``fail`` is raised by the next writes; ``words`` is what ``last_words``
    says (a stdio server's exit status and stderr tail); ``cancels`` makes
    ``cancel_request`` close the request's stream (2026-07-28 HTTP).
    """

    def __init__(self, words: tuple[Optional[int], str] = (None, ""), cancels: bool = False) -> None:
        self.lock = threading.Lock()
        self.sent: list[tuple[JsonDict, Outgoing]] = []
        self.fail: Optional[BaseException] = None
        self.words = words
        self.cancels = cancels
        self.stream_cancels: list[Any] = []
        #: Called with what each message is, before it is written (a fast server may answer at once).
        self.before_send: Optional[Callable[[Outgoing], None]] = None

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        pass

    def send(self, data: bytes, info: Outgoing) -> None:
        if self.before_send is not None:
            self.before_send(info)
        if self.fail is not None:
            raise self.fail
        with self.lock:
            self.sent.append((json.loads(data), info))

    def close(self, timeout: float) -> None:
        pass

    def cancel_request(self, request_id: Any) -> bool:
        self.stream_cancels.append(request_id)
        return self.cancels

    def last_words(self) -> tuple[Optional[int], str]:
        return self.words

    def cancellations(self) -> list[JsonDict]:
        """The params of every ``notifications/cancelled`` written."""
        return [message["params"] for message, info in self.sent if info == CANCELLED]


class Life:
    """The client's side of the session: whether it is live, and how often it was told the connection broke."""

    def __init__(self) -> None:
        self.live = True
        self.broken = 0
        self.drained: list[float] = []

    def is_live(self) -> bool:
        return self.live

    def on_broken(self) -> None:
        self.broken += 1

    def drain(self, seconds: float) -> bool:
        self.drained.append(seconds)
        return True


class Receiver:
    """The era's engine, as the session sees it: records what it is handed (no server request is sent here)."""

    def __init__(self) -> None:
        self.handed: list[tuple[str, Any]] = []

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        self.handed.append(("request", request_id))

    def on_cancelled(self, request_id: Any) -> None:
        self.handed.append(("cancelled", request_id))

    def invalid(self, message: JsonDict) -> None:
        self.handed.append(("invalid", message.get("id")))

    def reject_unreadable(self, request_id: Any, code: int, message: str) -> None:
        self.handed.append(("unreadable", request_id))

    def answer_failed(self, request_id: Any) -> None:
        self.handed.append(("failed", request_id))


def session_over(wire: Wire, life: Optional[Life] = None) -> Session:
    """A session over ``wire``, hearing server requests into a :class:`Receiver`."""
    life = life or Life()
    return Session(
        Port(wire),
        stats=Stats(),
        server_id="unit",
        default_assigns={"who": "client"},
        depth_limit=64,
        route=lambda method, params: None,
        is_live=life.is_live,
        on_broken=life.on_broken,
        drain=life.drain,
        receiver=Receiver(),
    )


def clock(timeout: float = 30.0, max_total: float = 300.0) -> CallClock:
    return CallClock(_clock.monotonic(), timeout, max_total)


def respond(session: Session, message: JsonDict) -> None:
    """What a transport's reader does with one line from the server."""
    session.on_line(jsonrpc.encode(message))


def outcome(session: Session, call: Call, cancel: Optional[threading.Event] = None) -> Any:
    """``session.result(call)``, or the ClientError it raised."""
    try:
        return session.result(call, cancel)
    except ClientError as exc:
        return exc


class Waiter:
    """``session.result(call)`` on a thread of its own, joined (bounded) by :meth:`outcome`."""

    def __init__(self, session: Session, call: Call) -> None:
        self.got: list[Any] = []
        self.thread = threading.Thread(target=lambda: self.got.append(outcome(session, call)), name="unit-waiter", daemon=True)
        self.thread.start()

    def outcome(self) -> Any:
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "result() did not return within its bound"
        [got] = self.got
        return got


@pytest.fixture
def frozen() -> Iterator[Any]:
    with freeze_time("2026-12-01") as frozen:
        yield frozen


# ---------------------------------------------------------------------------- ids


def test_ids_are_unique_increasing_and_never_reused_even_after_a_failed_write() -> None:
    wire = Wire()
    session = session_over(wire)
    first = session.start("tools/list", None, is_call=False, clock=clock())
    wire.fail = TransportClosed("pipe closed")
    with pytest.raises(ClientError):
        session.start("tools/list", None, is_call=False, clock=clock())  # took id 2, then failed
    wire.fail = None
    third = session.start("tools/list", None, is_call=False, clock=clock())
    assert (first.id, third.id) == (1, 3)
    assert [message["id"] for message, _ in wire.sent] == [1, 3]
    assert [info.request_id for _, info in wire.sent] == [1, 3]  # the transport is told the same id


def test_ids_are_unique_when_many_threads_start_requests_at_once() -> None:
    wire = Wire()
    session = session_over(wire)
    go = threading.Barrier(8, timeout=WAIT)
    calls: list[Call] = []
    lock = threading.Lock()

    def starter() -> None:
        go.wait()
        mine = [session.start("ping", None, is_call=False, clock=clock()) for _ in range(25)]
        with lock:
            calls.extend(mine)

    threads = [threading.Thread(target=starter, name=f"unit-starter-{n}", daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(call.id for call in calls) == list(range(1, 201))
    assert all(session.calls.get(call.id) is call for call in calls)  # every one registered under its own id


# ---------------------------------------------------------------------------- the call table


def test_a_request_is_registered_before_it_is_written_and_leaves_the_table_with_its_response() -> None:
    wire = Wire()
    session = session_over(wire)
    seen_in_table: list[bool] = []
    wire.before_send = lambda info: seen_in_table.append(session.calls.get(info.request_id) is not None)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    assert seen_in_table == [True]
    assert session.calls.is_pending(call) and session.calls.has_calls()
    assert call.assigns == {"who": "client"}  # the client's assigns when the call names none
    respond(session, jsonrpc.result(call.id, {"content": []}))
    assert not session.calls.is_pending(call) and session.calls.get(call.id) is None
    assert not session.calls.has_calls()
    assert session.result(call) == {"content": []}


def test_a_request_that_is_no_call_never_counts_as_a_call_in_flight() -> None:
    session = session_over(Wire())
    listing = session.start("tools/list", None, is_call=False, clock=clock())
    assert session.calls.is_pending(listing) and not session.calls.has_calls()
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(), assigns={"who": "caller"})
    assert session.calls.has_calls() and call.assigns == {"who": "caller"}
    assert session.calls.tie(Inbound("s1", "roots/list", "roots"), _clock.monotonic()) is call  # the only call
    respond(session, jsonrpc.result(call.id, {}))
    assert not session.calls.has_calls() and session.calls.is_pending(listing)


def test_a_request_that_cannot_be_written_leaves_the_table() -> None:
    wire = Wire()
    session = session_over(wire)
    wire.fail = TransportClosed("pipe closed")
    with pytest.raises(ClientError) as caught:
        session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    assert caught.value.kind == "transport"
    assert session.calls.get(1) is None and not session.calls.has_calls()
    assert session.calls.close() == []  # nothing was left behind


def test_a_message_json_cannot_encode_is_refused_before_anything_is_written() -> None:
    wire = Wire()
    session = session_over(wire)
    with pytest.raises(ClientError) as caught:
        session.start("tools/call", {"name": "t", "arguments": {"x": {1, 2}}}, is_call=True, clock=clock())
    assert caught.value.kind == "protocol" and wire.sent == []
    assert session.calls.close() == []


def test_fail_all_fails_every_request_in_flight_and_closes_the_table() -> None:
    wire = Wire()
    session = session_over(wire)
    calls = [session.start("tools/call", {"name": f"t{n}"}, is_call=True, clock=clock()) for n in range(3)]
    failed = session.fail_all("closed", lambda method: f"{method} was cancelled: the client closed")
    assert sorted(call.id for call in failed) == [call.id for call in calls]
    for call in calls:
        error = outcome(session, call)
        assert (error.kind, error.message) == ("closed", "tools/call was cancelled: the client closed")
    assert session.fail_all("closed", str) == []  # nothing twice
    with pytest.raises(ClientError) as caught:
        session.start("ping", None, is_call=False, clock=clock())
    assert caught.value.kind == "closed" and len(wire.sent) == 3  # refused before it was written
    respond(session, jsonrpc.result(calls[0].id, {}))  # a response racing the close is dropped
    assert outcome(session, calls[0]).kind == "closed"


def test_a_progress_token_lives_as_long_as_its_call() -> None:
    wire = Wire()
    life = Life()
    session = session_over(wire, life)
    heard: list[JsonDict] = []
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(), progress=heard.append)
    message, _ = wire.sent[-1]
    token = message["params"]["_meta"]["progressToken"]
    assert token == f"mis-{call.id}" and session.calls.by_progress(token) is call
    respond(session, jsonrpc.result(call.id, {}))
    assert session.calls.by_progress(token) is None
    assert session.result(call) == {} and life.drained == [1.0]  # progress queued before the result is delivered first
    plain = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    respond(session, jsonrpc.result(plain.id, {}))
    assert session.result(plain) == {} and life.drained == [1.0]  # no progress: nothing to wait for


# ---------------------------------------------------------------------------- abandoning


def test_abandoning_forgets_the_call_cancels_its_tied_callbacks_and_tells_the_server_once() -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    tied = Inbound("s1", "elicitation/create", "elicitation", CancelToken())
    assert session.calls.tie(tied, _clock.monotonic()) is call
    session.abandon(call, "timeout")
    assert tied.token.reason == "call ended"
    assert session.calls.get(call.id) is None and not session.calls.has_calls()
    assert wire.cancellations() == [{"requestId": call.id, "reason": "timeout"}]
    session.abandon(call, "timeout")  # abandoned already: nothing more
    respond(session, jsonrpc.result(call.id, {}))  # its late response is dropped
    assert wire.cancellations() == [{"requestId": call.id, "reason": "timeout"}] and call.response is None


def test_initialize_is_abandoned_without_a_cancellation() -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("initialize", {}, is_call=False, clock=clock())
    session.abandon(call, "timeout")
    assert session.calls.get(call.id) is None and wire.cancellations() == [] and wire.stream_cancels == []


@pytest.mark.parametrize("cancels", [False, True], ids=["notification", "stream closed"])
def test_a_transport_that_cancels_by_closing_the_stream_gets_no_notification(cancels: bool) -> None:
    wire = Wire(cancels=cancels)
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    session.abandon(call, "cancelled by the caller")
    assert wire.stream_cancels == [call.id]  # asked first, in both cases
    assert wire.cancellations() == ([] if cancels else [{"requestId": call.id, "reason": "cancelled by the caller"}])


def test_a_cancellation_that_cannot_be_written_is_not_an_error() -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    wire.fail = TransportClosed("pipe closed")
    session.abandon(call, "timeout")  # logged, not raised
    assert session.calls.get(call.id) is None


# ---------------------------------------------------------------------------- responses for nobody


def test_a_response_for_an_unknown_finished_or_differently_typed_id_is_dropped() -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    for stray in (
        jsonrpc.result(call.id + 1, {"early": True}),  # an id not used yet
        jsonrpc.result(str(call.id), {"typed": "str"}),  # "1" is not 1
        jsonrpc.result(True, {"typed": "bool"}),  # nor is True
        jsonrpc.error("nobody", -1, "late"),
        {"jsonrpc": "2.0", "id": 987_654, "result": {}, "error": {}},
    ):
        respond(session, stray)
    assert session.calls.is_pending(call) and call.response is None
    respond(session, jsonrpc.result(call.id, {"n": 1}))
    respond(session, jsonrpc.result(call.id, {"n": 2}))  # a duplicate: the call has finished
    assert session.result(call) == {"n": 1}
    assert session.stats.snapshot()["malformed"] == 0  # dropped quietly: a late answer is no fault


def test_an_unreadable_response_fails_the_call_it_names_and_only_that_one() -> None:
    session = session_over(Wire())
    first = session.start("tools/call", {"name": "a"}, is_call=True, clock=clock())
    second = session.start("tools/call", {"name": "b"}, is_call=True, clock=clock())
    session.on_line(b'{"jsonrpc": "2.0", "id": ' + str(first.id).encode() + b', "result": {"cut": ')
    error = outcome(session, first)
    assert (error.kind, error.check) == ("protocol", "malformed") and "tools/call" in error.message
    assert session.calls.get(first.id) is None and session.calls.is_pending(second)
    deep = b'{"jsonrpc": "2.0", "id": ' + str(second.id).encode() + b', "result": ' + b"[" * 100 + b"]" * 100 + b"}"
    session.on_line(deep)  # over the depth limit of 64
    assert (outcome(session, second).kind, outcome(session, second).check) == ("protocol", "limit")
    assert session.stats.snapshot()["malformed"] == 2


# ---------------------------------------------------------------------------- waiting, bounded by the call's clock


def test_result_ends_at_the_calls_timeout_and_abandons_it(frozen: Any) -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(timeout=30.0))
    waiter = Waiter(session, call)
    frozen.tick(31)  # the waiter re-reads the library clock at least every MAX_WAIT real seconds
    error = waiter.outcome()
    assert (error.kind, error.message) == ("timeout", "tools/call exceeded its timeout of 30 s")
    assert session.calls.get(call.id) is None
    assert wire.cancellations() == [{"requestId": call.id, "reason": "timeout"}]


def test_the_timeout_is_paused_while_a_server_request_is_tied_to_the_call(frozen: Any) -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(timeout=30.0))
    waiter = Waiter(session, call)
    tied = Inbound("s1", "elicitation/create", "elicitation", CancelToken())
    assert session.calls.tie(tied, _clock.monotonic()) is call  # a person answers for a while
    frozen.tick(100)
    assert session.calls.deadline_state(call, _clock.monotonic())[0] is None
    session.calls.untie(tied, call, _clock.monotonic())
    frozen.tick(20)  # 20 s of waiting on the server, under the 30 s timeout
    assert session.calls.deadline_state(call, _clock.monotonic())[0] is None
    respond(session, jsonrpc.result(call.id, {"ok": True}))
    assert waiter.outcome() == {"ok": True}


def test_max_total_timeout_is_never_paused(frozen: Any) -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(timeout=30.0, max_total=300.0))
    waiter = Waiter(session, call)
    tied = Inbound("s1", "elicitation/create", "elicitation", CancelToken())
    assert session.calls.tie(tied, _clock.monotonic()) is call
    frozen.tick(301)
    error = waiter.outcome()
    assert (error.kind, error.message) == ("timeout", "tools/call exceeded its max_total_timeout of 300 s")
    assert tied.token.reason == "call ended"  # the callback answering for it is told
    assert wire.cancellations() == [{"requestId": call.id, "reason": "timeout"}]


def test_a_callers_cancel_event_ends_the_wait_and_tells_the_server(frozen: Any) -> None:
    wire = Wire()
    session = session_over(wire)
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    cancel = threading.Event()
    cancel.set()
    error = outcome(session, call, cancel)  # the frozen clock never moves: only the event ends it
    assert (error.kind, error.message) == ("cancelled", "tools/call was cancelled")
    assert session.calls.get(call.id) is None
    assert wire.cancellations() == [{"requestId": call.id, "reason": "cancelled by the caller"}]


def test_a_response_already_there_is_returned_whatever_the_clock_says(frozen: Any) -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock(timeout=30.0))
    respond(session, jsonrpc.result(call.id, {"ok": True}))
    frozen.tick(1000)
    assert session.result(call) == {"ok": True}


# ---------------------------------------------------------------------------- the one mapping of failures

AUTH_HEADERS = {"www-authenticate": 'Bearer error="invalid_token"'}


def closed() -> BaseException:
    return TransportClosed("pipe closed")


def redirect() -> BaseException:
    exc = TransportClosed("a redirect to another origin was refused")
    exc.check = "redirect"
    return exc


def auth() -> BaseException:
    return TransportAuthError(401, AUTH_HEADERS, check="token")


def http_status() -> BaseException:
    return HttpStatusError(502, "https://x/mcp")


def limit() -> BaseException:
    return LimitExceeded("message_bytes", "a response over 10 bytes")


HINT = "; to accept it, pass the client limits={'message_bytes': N} with a larger N"

#: (the failure, live) -> (kind, check, data, message) of the ClientError, for a failure "tools/call failed"
MAPPING: list[Any] = [
    pytest.param(closed, True, ("transport", None, None, "tools/call failed: pipe closed"), id="closed"),
    pytest.param(redirect, True, ("transport", "redirect", None, "tools/call failed: a redirect to another origin was refused"), id="closed, check"),
    pytest.param(
        http_status, True, ("transport", None, None, "tools/call failed: https://x/mcp answered HTTP 502 without a JSON-RPC answer"), id="http status"
    ),
    pytest.param(auth, True, ("auth", "token", AUTH_HEADERS, "HTTP 401: not authorised"), id="auth"),
    pytest.param(limit, True, ("protocol", "limit", None, "tools/call failed: a response over 10 bytes" + HINT), id="limit"),
    pytest.param(closed, False, ("closed", None, None, "the client is closed"), id="closed, not live"),
    pytest.param(redirect, False, ("closed", None, None, "the client is closed"), id="closed, check, not live"),
    pytest.param(http_status, False, ("closed", None, None, "the client is closed"), id="http status, not live"),
    pytest.param(auth, False, ("auth", "token", AUTH_HEADERS, "HTTP 401: not authorised"), id="auth, not live"),
    pytest.param(limit, False, ("protocol", "limit", None, "tools/call failed: a response over 10 bytes" + HINT), id="limit, not live"),
]


def seen(error: ClientError) -> tuple[str, Optional[str], Any, str]:
    return error.kind, error.check, error.data, error.message


@pytest.mark.parametrize(("failure", "live", "expected"), MAPPING)
def test_each_transport_failure_maps_to_one_client_error(failure: Callable[[], BaseException], live: bool, expected: Any) -> None:
    assert seen(transport_error(failure(), "tools/call failed", live)) == expected


def test_a_transport_error_naming_itself_is_not_said_twice() -> None:
    assert transport_error(TransportClosed("pipe closed"), "pipe closed").message == "pipe closed"


@pytest.mark.parametrize(("failure", "live", "expected"), [p for p in MAPPING if p.values[1]])
def test_a_lost_request_fails_with_the_same_mapping(failure: Callable[[], BaseException], live: bool, expected: Any) -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    tied = Inbound("s1", "elicitation/create", "elicitation", CancelToken())
    assert session.calls.tie(tied, _clock.monotonic()) is call
    exc = failure()
    session.on_lost(call.id, exc)
    assert seen(outcome(session, call)) == expected
    assert session.calls.get(call.id) is None and tied.token.reason == "call ended"
    assert session.stats.snapshot()["malformed"] == (1 if isinstance(exc, LimitExceeded) else 0)  # a broken limit is counted
    session.on_lost(call.id, exc)  # told twice: the call is not failed again
    session.on_lost(12345, exc)  # a request the session does not know: nothing to fail
    assert call.failure is not None and seen(call.failure) == expected
    # every broken limit a transport reports is counted, whoever the message was for
    assert session.stats.snapshot()["malformed"] == (3 if isinstance(exc, LimitExceeded) else 0)


@pytest.mark.parametrize(
    ("failure", "live", "kind", "check"),
    [
        (closed, True, "transport", None),
        (redirect, True, "transport", "redirect"),
        (auth, True, "auth", "token"),
        (http_status, True, "transport", None),
        (closed, False, "closed", None),
        (auth, False, "auth", "token"),
    ],
    ids=["closed", "redirect", "auth", "http status", "not live", "auth, not live"],
)
def test_a_write_that_fails_raises_the_same_mapping_from_start(
    failure: Callable[[], BaseException], live: bool, kind: str, check: Optional[str]
) -> None:
    wire = Wire()
    life = Life()
    session = session_over(wire, life)
    life.live = live
    wire.fail = exc = failure()
    with pytest.raises(ClientError) as caught:
        session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    assert (caught.value.kind, caught.value.check) == (kind, check)
    assert caught.value.__cause__ is exc
    assert session.calls.close() == []  # and it left the table


def test_a_json_rpc_error_answer_is_a_remote_error_with_its_code_data_and_a_clean_message() -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    respond(session, jsonrpc.error(call.id, -32000, "no\u202e such\x1b[31m tool" + "!" * 5000, {"why": "gone"}))
    error = outcome(session, call)
    assert (error.kind, error.code, error.data) == ("remote", -32000, {"why": "gone"})
    assert error.message.startswith("no such[31m tool") and len(error.message) == 4096  # hidden code points gone, capped


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": -1, "message": "m"}, ("remote", -1, "m")),
        ({"code": True, "message": "m"}, ("remote", None, "m")),  # a bool is no code
        ({"code": "-1", "message": 7}, ("remote", None, "(no message)")),
        ({}, ("remote", None, "(no message)")),
        ("just text", ("protocol", None, "tools/call answered with a malformed error")),
        (None, ("protocol", None, "tools/call answered with a malformed error")),
    ],
)
def test_remote_error_maps_any_error_object(error: Any, expected: tuple[str, Optional[int], str]) -> None:
    mapped = remote_error(error, "tools/call")
    assert (mapped.kind, mapped.code, mapped.message) == expected


def test_a_result_that_is_not_an_object_is_a_protocol_error() -> None:
    session = session_over(Wire())
    call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    respond(session, {"jsonrpc": "2.0", "id": call.id, "result": [1, 2]})
    error = outcome(session, call)
    assert (error.kind, error.data) == ("protocol", [1, 2])


# ---------------------------------------------------------------------------- a stdio server's last words


WORDS = [
    pytest.param(
        (2, "fatal: no key\nbye"), "; the server exited with status 2; its stderr ended with:\n  fatal: no key\n  bye", {"exit_status": 2},
        id="status and tail",
    ),
    pytest.param((-9, ""), "; the server was killed by signal 9 (SIGKILL)", {"exit_status": -9}, id="signal"),
    pytest.param((None, "still running\n"), "; its stderr ended with:\n  still running", None, id="tail only"),
]


def failed_write(words: tuple[Optional[int], str]) -> tuple[ClientError, Session]:
    """The error ``start`` raises when the write fails ("broken pipe") and the transport has ``words``."""
    wire = Wire(words=words)
    session = session_over(wire)
    wire.fail = TransportClosed("broken pipe")
    with pytest.raises(ClientError) as caught:
        session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    return caught.value, session


@pytest.mark.parametrize(("words", "added", "data"), WORDS)
def test_a_failed_write_adds_the_servers_last_words(words: tuple[Optional[int], str], added: str, data: Any) -> None:
    error, session = failed_write(words)
    assert error.kind == "transport" and error.message.startswith("broken pipe" + added)
    assert error.data == data
    assert session.server_words() == added


@pytest.mark.parametrize(("words", "added", "data"), WORDS)
def test_a_failed_write_ends_with_the_servers_last_words(words: tuple[Optional[int], str], added: str, data: Any) -> None:
    error, _ = failed_write(words)
    assert error.message == "broken pipe" + added  # as when the connection ends: the tail comes last


def test_a_failed_write_of_a_transport_without_words_adds_nothing() -> None:
    error, session = failed_write((None, ""))
    assert (error.kind, error.message, error.data) == ("transport", "broken pipe", None)
    assert session.server_words() == ""


def test_only_the_last_lines_of_stderr_are_quoted() -> None:
    tail = "\n".join(f"line {n}" for n in range(50))
    words = last_words(1, tail)
    quoted = words.split("its stderr ended with:\n", 1)[1].split("\n")
    assert quoted == [f"  line {n}" for n in range(50 - QUOTED_STDERR_LINES, 50)]


def test_a_failed_write_after_close_is_closed_without_last_words() -> None:
    wire = Wire(words=(2, "fatal"))
    life = Life()
    session = session_over(wire, life)
    life.live = False
    wire.fail = TransportClosed("broken pipe")
    with pytest.raises(ClientError) as caught:
        session.notify("notifications/initialized")
    assert (caught.value.kind, caught.value.data) == ("closed", None)


@pytest.mark.parametrize(
    ("error", "why"),
    [(None, "the server closed the connection"), (OSError("reset by peer"), "the connection broke: reset by peer")],
    ids=["end of stream", "broken"],
)
def test_the_end_of_the_connection_fails_every_call_with_the_servers_last_words(error: Optional[BaseException], why: str) -> None:
    wire = Wire(words=(3, "Traceback (most recent call last):\nValueError: no config"))
    life = Life()
    session = session_over(wire, life)
    calls = [session.start(method, None, is_call=False, clock=clock()) for method in ("tools/list", "prompts/list")]
    session.on_transport_closed(error)
    words = "; the server exited with status 3; its stderr ended with:\n  Traceback (most recent call last):\n  ValueError: no config"
    for call in calls:
        failure = outcome(session, call)
        assert (failure.kind, failure.message, failure.data) == ("transport", f"{call.method} failed: {why}{words}", {"exit_status": 3})
    assert life.broken == 1
    with pytest.raises(ClientError) as caught:  # made as the connection ended: it broke, the client is not closed
        session.start("ping", None, is_call=False, clock=clock())
    assert (caught.value.kind, caught.value.message) == ("transport", f"ping was not sent: {why}{words}")


def test_the_end_of_the_connection_after_close_changes_nothing() -> None:
    life = Life()
    session = session_over(Wire(words=(0, "")), life)
    call = session.start("tools/list", None, is_call=False, clock=clock())
    life.live = False
    session.on_transport_closed(None)  # close() is under way: it fails the calls itself
    assert session.calls.is_pending(call) and life.broken == 0


def test_an_ended_connection_without_words_adds_none() -> None:
    life = Life()
    session = session_over(Wire(), life)
    call = session.start("tools/list", None, is_call=False, clock=clock())
    session.on_transport_closed(None)
    failure = outcome(session, call)
    assert (failure.message, failure.data) == ("tools/list failed: the server closed the connection", None)


# ---------------------------------------------------------------------------- the one call that drives the reading seat


class HandingWire(Wire):
    """A wire that offers the reading hand-off (as stdio does), recording what the session asks of it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[Any] = []

    @property
    def hand_off(self) -> "HandingWire":
        return self

    def offer_reading(self, ident: int) -> None:
        self.asked.append(("offer", ident))

    def read_here(self, done: Callable[[], bool], seconds: float, cancel: Optional[threading.Event] = None) -> bool:
        self.asked.append(("read_here", done()))
        return False

    def release_reading(self) -> None:
        self.asked.append("release")


def test_inside_reading_rounds_this_threads_requests_may_be_read_here_and_the_outermost_exit_gives_back() -> None:
    wire = HandingWire()
    session = session_over(wire)
    outside = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    me = threading.get_ident()
    with session.reading_rounds():
        inside = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
        with session.reading_rounds():  # a callback of the round calling its own client: nested
            nested = session.start("tools/list", None, is_call=False, clock=clock())
        assert wire.asked == []  # the inner exit gives nothing back
        others: list[Call] = []
        other = threading.Thread(target=lambda: others.append(session.start("ping", None, is_call=False, clock=clock())))
        other.start()
        other.join(10.0)
        respond(session, {"jsonrpc": "2.0", "id": inside.id, "result": {}})
        assert wire.asked == [("offer", me)]  # the reader hands this thread the reading with the answer
    assert wire.asked == [("offer", me), "release"]  # the outermost exit gives it back
    assert (outside.waiter, inside.waiter, nested.waiter, others[0].waiter) == (0, me, me, 0)
    infos = {info.request_id: info.reads_answer for _, info in wire.sent}
    assert (infos[outside.id], infos[inside.id], infos[nested.id], infos[others[0].id]) == (False, True, True, False)


def test_reading_rounds_over_a_transport_that_hands_nothing_on_does_nothing() -> None:
    wire = Wire()
    session = session_over(wire)
    with session.reading_rounds():
        call = session.start("tools/call", {"name": "t"}, is_call=True, clock=clock())
    assert call.waiter == 0 and [info.reads_answer for _, info in wire.sent] == [False]


class DeadlineWire(Wire):
    """A wire that wants each request's deadline (as HTTP does)."""

    needs_deadlines = True


@freeze_time("2026-12-05")
def test_a_call_progress_keeps_alive_goes_with_its_max_total_deadline_and_asks_for_progress() -> None:
    wire = DeadlineWire()
    session = session_over(wire)
    now = _clock.monotonic()
    kept = session.start("tools/call", {"name": "t"}, is_call=True, clock=CallClock(now, 30.0, 900.0, resets=True), waits=True)
    plain = session.start("tools/call", {"name": "t"}, is_call=True, clock=CallClock(now, 30.0, 900.0), waits=True)
    (m1, i1), (m2, i2) = wire.sent
    assert i1.deadline == now + 900.0 and i2.deadline == now + 30.0  # the transport cuts a kept-alive call only at its end
    assert m1["params"]["_meta"]["progressToken"] == kept.progress_token  # progress asked for, no callback needed
    assert "_meta" not in m2["params"] and plain.progress_token is None
