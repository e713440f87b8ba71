"""The transport contract (``transports/base.py``): what a transport is told, and the session under each threading promise.

A transport is told what each message is (:class:`Outgoing`) by the code
that built it, and never decodes what it sends. Messages of one stream
arrive in order on one thread; a transport with several streams (HTTP)
delivers from several threads at once. The session is driven here over a
scripted in-memory transport under both promises, without a client; the
last tests show a transport written from ``base.py`` alone working with one.
"""

from __future__ import annotations

import base64
import json
import queue
import threading
from typing import Any, Callable, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync import _clock
from mcp_input_sync._port import Port
from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._protocol.headers import header_arguments, routed_name
from mcp_input_sync._session import Session
from mcp_input_sync._stats import Stats
from mcp_input_sync.transports.base import (
    ANSWER,
    NEW_SESSION,
    SESSION_READY,
    HttpStatusError,
    OnClose,
    OnMessage,
    Outgoing,
    Setup,
    Transport,
    TransportClosed,
)
from mcp_input_sync.transports.http import HttpTransport

from .tiny_http import Reply, Seen, TinyServer, rpc, sse

JsonDict = dict[str, Any]
V = "2026-07-28"
#: How long any wait in this file may take (real seconds); none is expected to come close.
BOUND = 10.0

ONE_READER = "one reader, in order"
MANY_THREADS = "many threads, streams out of order"


def clock() -> CallClock:
    return CallClock(_clock.monotonic(), BOUND, BOUND)


class FixedStamp:
    """A stamp as the modern engine's: a fresh ``_meta`` naming ``version``."""

    def __init__(self, version: str) -> None:
        self.version = version

    def __call__(self, params: Optional[JsonDict]) -> JsonDict:
        return jsonrpc.with_meta(params, {"io.modelcontextprotocol/protocolVersion": self.version})


# ---------------------------------------------------------------------------- a scripted transport


Script = Callable[[Outgoing], list[JsonDict]]


class Scripted(Transport):
    """An in-memory transport whose server is a script of what to send back for each request.

    The script reads only the :class:`Outgoing` the transport is told, never
    the bytes. Under ``ONE_READER`` (stdio, memory) every message goes out on
    one reader thread, in order. Under ``MANY_THREADS`` (HTTP) each request's
    messages form a stream of their own, held until :meth:`release`, which
    delivers every stream on a thread of its own, all at once, the newest
    request's stream started first; each message carries its stream's request id.
    """

    def __init__(self, promise: str, script: Script) -> None:
        self.promise = promise
        self.script = script
        self.ties_by_stream = promise == MANY_THREADS
        #: What the transport was told of each message, in the order sent.
        self.told: list[Outgoing] = []
        self._lock = threading.Lock()
        self._held: list[tuple[Any, list[JsonDict]]] = []
        self._inbox: "queue.SimpleQueue[Optional[bytes]]" = queue.SimpleQueue()
        self._reader: Optional[threading.Thread] = None
        self._on_message: Optional[OnMessage] = None

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._on_message = on_message

        def read() -> None:
            while (data := self._inbox.get()) is not None:
                on_message(data)

        self._reader = threading.Thread(target=read, name="scripted-reader", daemon=True)
        self._reader.start()

    def send(self, data: bytes, info: Outgoing) -> None:
        with self._lock:
            self.told.append(info)
        replies = self.script(info)
        if self.promise == ONE_READER:
            for reply in replies:
                self._inbox.put(jsonrpc.encode(reply))
        elif replies:
            with self._lock:
                self._held.append((info.request_id, replies))

    def release(self) -> set[str]:
        """MANY_THREADS: deliver every held stream at once, newest first; the names of the threads that delivered."""
        with self._lock:
            held, self._held = self._held, []
        on_message = self._on_message
        assert on_message is not None
        go = threading.Barrier(len(held))
        names: set[str] = set()

        def stream(request_id: Any, replies: list[JsonDict]) -> None:
            go.wait(BOUND)
            names.add(threading.current_thread().name)
            for reply in replies:  # in order within the stream
                on_message(jsonrpc.encode(reply), request_id)

        threads = [
            threading.Thread(target=stream, args=(request_id, replies), name=f"scripted-stream-{request_id}", daemon=True)
            for request_id, replies in reversed(held)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BOUND)
        assert not any(thread.is_alive() for thread in threads)
        return names

    def close(self, timeout: float) -> None:
        self._inbox.put(None)
        if self._reader is not None:
            self._reader.join(timeout)


class Heard:
    """The session's receiver and router: what reached each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[Any, str, Any]] = []
        self.notes: list[Any] = []
        self.invalid: list[JsonDict] = []

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        with self.lock:
            self.requests.append((request_id, method, stream))

    def on_cancelled(self, request_id: Any) -> None:
        pass

    def invalid_message(self, message: JsonDict) -> None:
        with self.lock:
            self.invalid.append(message)

    def reject_unreadable(self, request_id: Any, code: int, message: str) -> None:
        pass

    def answer_failed(self, request_id: Any) -> None:
        pass

    def route(self, method: str, params: Any) -> None:
        with self.lock:
            self.notes.append(params)


class _Receiver:
    """Adapts :class:`Heard` to the session's ``Receiver`` protocol (``invalid`` is a method name there)."""

    def __init__(self, heard: Heard) -> None:
        self.on_request = heard.on_request
        self.on_cancelled = heard.on_cancelled
        self.invalid = heard.invalid_message
        self.reject_unreadable = heard.reject_unreadable
        self.answer_failed = heard.answer_failed


def session_over(transport: Transport, heard: Heard) -> Session:
    """A session over ``transport``, started, hearing into ``heard`` (the one place that builds one here)."""
    port = Port(transport)
    session = Session(
        port,
        stats=Stats(),
        server_id="scripted",
        default_assigns={},
        depth_limit=64,
        route=heard.route,
        is_live=lambda: True,
        on_broken=lambda: None,
        receiver=_Receiver(heard),
    )
    port.configure("scripted", {"message_bytes": 1 << 20, "sse_line_bytes": 1 << 16}, session.on_lost)
    port.start(session.on_line, session.on_transport_closed)
    return session


@pytest.fixture
def closing() -> Iterator[list[Transport]]:
    opened: list[Transport] = []
    yield opened
    for transport in opened:
        transport.close(BOUND)


def each_call_asks_then_answers(info: Outgoing) -> list[JsonDict]:
    """A stream per call: a log notification, a server request, then the response, all naming the call."""
    if info.request_id is None:
        return []
    n = info.request_id
    return [
        jsonrpc.notification("notifications/message", {"level": "info", "data": n}),
        jsonrpc.request(f"s{n}", "elicitation/create", {"message": str(n)}),
        jsonrpc.result(n, {"n": n}),
    ]


# ---------------------------------------------------------------------------- the session under each promise


@pytest.mark.parametrize("promise", [ONE_READER, MANY_THREADS])
def test_the_session_matches_every_response_under_each_threading_promise(promise: str, closing: list[Transport]) -> None:
    transport = Scripted(promise, each_call_asks_then_answers)
    closing.append(transport)
    heard = Heard()
    session = session_over(transport, heard)
    calls = [session.start("tools/call", {"name": f"t{i}"}, is_call=True, clock=clock()) for i in range(8)]
    if promise == MANY_THREADS:
        names = transport.release()
        assert len(names) == 8  # eight streams, each delivered from its own thread
    for call in calls:
        assert session.result(call) == {"n": call.id}
        # within one stream the order holds: the call's notification was routed before its response
        with heard.lock:
            assert any(note.get("data") == call.id for note in heard.notes)
    with heard.lock:
        requests = sorted(heard.requests, key=lambda r: str(r[0]))
    expected_stream = (lambda n: n) if promise == MANY_THREADS else (lambda n: None)
    assert requests == sorted(((f"s{c.id}", "elicitation/create", expected_stream(c.id)) for c in calls), key=lambda r: str(r[0]))
    assert heard.invalid == []


@pytest.mark.parametrize("promise", [ONE_READER, MANY_THREADS])
def test_a_response_to_no_call_in_flight_is_dropped_under_each_promise(promise: str, closing: list[Transport]) -> None:
    def twice(info: Outgoing) -> list[JsonDict]:
        if info.request_id is None:
            return []
        return [jsonrpc.result(info.request_id, {"first": True}), jsonrpc.result(info.request_id, {"first": False})]

    transport = Scripted(promise, twice)
    closing.append(transport)
    session = session_over(transport, Heard())
    calls = [session.start("ping", None, is_call=False, clock=clock()) for _ in range(4)]
    if promise == MANY_THREADS:
        transport.release()
    assert [session.result(call) for call in calls] == [{"first": True}] * 4  # the late duplicate never wins


# ---------------------------------------------------------------------------- what the transport is told


def silent(info: Outgoing) -> list[JsonDict]:
    return []


TOLD = [
    pytest.param(
        lambda s: s.start("tools/call", {"name": "sql", "arguments": {"region": "eu"}}, is_call=True, clock=clock()),
        Outgoing("tools/call", 1, None, "sql", bounded=True),
        id="a legacy call",
    ),
    pytest.param(lambda s: s.notify("notifications/roots/list_changed"), Outgoing("notifications/roots/list_changed"), id="a notification"),
    pytest.param(lambda s: s.port.answer(b'{"jsonrpc":"2.0","id":"s1","result":{}}'), ANSWER, id="an answer"),
    pytest.param(
        lambda s: s.start(
            "tools/call", {"name": "sql", "arguments": {"region": "eu"}}, is_call=True, clock=clock(), stamp=FixedStamp(V),
            header_args=(("Region", "eu"),),
        ),
        Outgoing("tools/call", 1, V, "sql", (("Region", "eu"),), bounded=True),
        id="a modern call with tool headers",
    ),
    pytest.param(
        lambda s: s.start("resources/read", {"uri": "file:///a"}, is_call=False, clock=clock(), stamp=FixedStamp(V)),
        Outgoing("resources/read", 1, V, "file:///a", bounded=True),
        id="a modern resource read",
    ),
    pytest.param(
        lambda s: s.start("tasks/get", {"taskId": "t-1"}, is_call=False, clock=clock(), stamp=FixedStamp(V)),
        Outgoing("tasks/get", 1, V, "t-1", bounded=True),
        id="a modern task poll",
    ),
    pytest.param(
        lambda s: s.start("server/discover", None, is_call=False, clock=clock(), stamp=FixedStamp(V), bounded=False),
        Outgoing("server/discover", 1, V),
        id="the probe (the handshake's: not bounded)",
    ),
    pytest.param(
        lambda s: s.abandon(s.start("tools/list", None, is_call=False, clock=clock()), "timeout"),
        Outgoing("notifications/cancelled", bounded=True),
        id="the cancellation of an abandoned request",
    ),
]


@pytest.mark.parametrize(("act", "expected"), TOLD)
def test_the_transport_is_told_what_each_message_is(act: Callable[[Session], Any], expected: Outgoing, closing: list[Transport]) -> None:
    transport = Scripted(ONE_READER, silent)
    closing.append(transport)
    session = session_over(transport, Heard())
    act(session)
    assert transport.told[-1] == expected
    assert transport.told[-1].expects_answer is (expected.request_id is not None)


@pytest.mark.parametrize(
    ("method", "params", "name"),
    [
        ("tools/call", {"name": "sql"}, "sql"),
        ("prompts/get", {"name": "greet"}, "greet"),
        ("resources/read", {"uri": "file:///a"}, "file:///a"),
        ("tasks/update", {"taskId": "t"}, "t"),
        ("tools/call", {"name": 7}, None),
        ("tools/list", {"name": "x"}, None),
        ("tools/call", None, None),
    ],
)
def test_the_routed_name_of_each_method(method: str, params: Any, name: Optional[str]) -> None:
    assert routed_name(method, params) == name


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"region": "eu", "opts": {"dry": True, "n": 3}}, (("Region", "eu"), ("Dry", "true"), ("N", "3"))),
        ({"opts": {"dry": False}}, (("Dry", "false"),)),
        ({"region": None, "opts": "flat"}, ()),
        ("not an object", ()),
    ],
)
def test_the_header_arguments_of_a_call(arguments: Any, expected: tuple[tuple[str, str], ...]) -> None:
    header_map = {("region",): "Region", ("opts", "dry"): "Dry", ("opts", "n"): "N"}
    assert header_arguments(header_map, arguments) == expected


# ---------------------------------------------------------------------------- the defaults of the contract


class Bare(Transport):
    """Only the three methods a transport must have."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, Outgoing]] = []

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        pass

    def send(self, data: bytes, info: Outgoing) -> None:
        self.sent.append((data, info))

    def close(self, timeout: float) -> None:
        pass


def test_a_transport_with_only_the_three_methods_keeps_every_default() -> None:
    bare = Bare()
    port = Port(bare)
    assert (port.default_server_id, port.origin, port.era_key(), port.last_words()) == ("server", None, None, (None, ""))
    assert (port.ties_by_stream, port.slow_answers, port.mirrors_tool_headers, port.needs_deadlines) == (False, False, False, False)
    # no capability: each answer written at once, no callback on a reader, no reading handed on, no restart
    assert (port.holding, port.relief, port.hand_off, port.restarter) == (None, None, None, None)
    assert port.cancel_request(1) is False  # the session sends notifications/cancelled instead
    port.configure("x", {"message_bytes": 1}, lambda request_id, error: None)
    port.set_protocol("legacy", "2025-11-25")
    port.answer(b"a")
    assert bare.sent == [(b"a", ANSWER)]


def test_setup_and_outgoing_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Outgoing("ping").method = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Setup("s", {}, lambda request_id, error: None).server_id = "t"  # type: ignore[misc]


# ---------------------------------------------------------------------------- HTTP: headers from what it is told



def test_http_takes_its_headers_from_what_it_is_told_never_from_the_body(tiny: list[TinyServer]) -> None:
    server = TinyServer(lambda seen: Reply(202))
    tiny.append(server)
    transport = HttpTransport(server.url, request_threads=False)
    transport.start(lambda *message: None, lambda error: None)
    try:
        transport.set_protocol("legacy", "2025-11-25")
        decoy = json.dumps({"jsonrpc": "2.0", "method": "decoy", "params": {"name": "not-this"}}).encode()
        transport.send(decoy, Outgoing("notifications/initialized"))
        transport.send(decoy, Outgoing("tools/call", 5, V, "sql", (("Region", "eu west"), ("Note", "café"))))
    finally:
        transport.close(BOUND)
    legacy, modern = server.posts()[:2]
    assert legacy.headers["mcp-protocol-version"] == "2025-11-25" and "mcp-method" not in legacy.headers
    assert modern.headers["mcp-protocol-version"] == V
    assert (modern.headers["mcp-method"], modern.headers["mcp-name"], modern.headers["mcp-param-region"]) == ("tools/call", "sql", "eu west")
    assert modern.headers["mcp-param-note"] == "=?base64?" + base64.b64encode("café".encode()).decode() + "?="


def test_http_takes_a_session_from_the_step_it_is_told_never_from_the_method(tiny: list[TinyServer]) -> None:
    # the session id an answer names is taken only from a request told NEW_SESSION, whatever its method,
    # and only a message told SESSION_READY opens the GET stream
    sessions = iter(["from-decoy", "from-told"])

    def answer(seen: Seen) -> Reply:
        if seen.verb == "GET":
            return Reply(405)
        if isinstance(seen.body, dict) and "id" in seen.body:
            return Reply(200, {"Mcp-Session-Id": next(sessions)}, {"jsonrpc": "2.0", "id": seen.body["id"], "result": {}})
        return Reply(202)

    server = TinyServer(answer)
    tiny.append(server)
    transport = HttpTransport(server.url, request_threads=False)
    transport.start(lambda *message: None, lambda error: None)
    try:
        named = jsonrpc.encode(jsonrpc.request(1, "initialize", {}))
        transport.send(named, Outgoing("initialize", 1))  # called initialize, told nothing: no session begins
        assert transport.session_id is None
        transport.send(named, Outgoing("anything", 2, step=NEW_SESSION))  # told: a session begins
        assert transport.session_id == "from-told"
        transport.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', Outgoing("notifications/initialized"))
        assert [seen.verb for seen in server.requests] == ["POST", "POST", "POST"]  # not told ready: no GET stream
    finally:
        transport.close(BOUND)


@pytest.mark.parametrize("request_threads", [True, False])
def test_http_request_threads_is_a_named_choice(request_threads: bool, tiny: list[TinyServer]) -> None:
    server = TinyServer(lambda seen: Reply(502))
    tiny.append(server)
    transport = HttpTransport(server.url, request_threads=request_threads)
    lost: "queue.SimpleQueue[tuple[Any, BaseException, str]]" = queue.SimpleQueue()
    transport.configure(Setup("s", {"message_bytes": 1 << 20, "sse_line_bytes": 1 << 16}, lambda i, e: lost.put((i, e, threading.current_thread().name))))
    transport.start(lambda *message: None, lambda error: None)
    request = jsonrpc.encode(jsonrpc.request(3, "tools/call", {"name": "x"}))
    try:
        if request_threads:
            transport.send(request, Outgoing("tools/call", 3, None, "x", bounded=True))  # returns at once: the POST runs on its own thread
            request_id, error, thread = lost.get(timeout=BOUND)
            assert request_id == 3 and isinstance(error, HttpStatusError) and error.status == 502
            assert thread.startswith("mcp-input-sync-http-")
        else:
            with pytest.raises(HttpStatusError):
                transport.send(request, Outgoing("tools/call", 3, None, "x", bounded=True))  # on the caller's thread
            assert lost.empty()
    finally:
        transport.close(BOUND)


class _Untracked:
    """What a deadline sweep's ``track`` returns; this one never fires (the server answers at once)."""

    def cancel(self) -> None:
        pass


@pytest.mark.parametrize(
    ("info", "where"),
    [
        pytest.param(Outgoing("initialize", 3, deadline=1.0, bounded=True), "here, told", id="bounded with a deadline, even initialize"),
        pytest.param(Outgoing("tools/call", 3, None, "x", bounded=True), "thread", id="bounded without a deadline"),
        pytest.param(Outgoing("notifications/progress", bounded=True), "thread", id="a bounded notification"),
        pytest.param(Outgoing("tools/call", 3, None, "x", deadline=1.0), "here, raised", id="not bounded, even tools/call"),
        pytest.param(Outgoing("notifications/cancelled"), "here, raised", id="not bounded, even notifications/cancelled"),
    ],
)
def test_http_posts_as_the_message_says_whatever_its_method(info: Outgoing, where: str, tiny: list[TinyServer]) -> None:
    # how a message is posted is what its Outgoing says (bounded, deadline), never what its method is called
    server = TinyServer(lambda seen: Reply(502))
    tiny.append(server)
    transport = HttpTransport(server.url)
    lost: "queue.SimpleQueue[tuple[Any, BaseException, str]]" = queue.SimpleQueue()
    limits = {"message_bytes": 1 << 20, "sse_line_bytes": 1 << 16}
    on_lost = lambda i, e: lost.put((i, e, threading.current_thread().name))  # noqa: E731
    transport.configure(Setup("s", limits, on_lost, lambda at, expire, subject: _Untracked()))
    transport.start(lambda *message: None, lambda error: None)
    if info.deadline is not None:  # an hour from now on the library clock
        info = info._replace(deadline=_clock.monotonic() + 3600)
    data = jsonrpc.encode(jsonrpc.request(3, "x", {}) if info.request_id is not None else jsonrpc.notification("x", {}))
    try:
        if where == "here, raised":
            with pytest.raises(HttpStatusError):
                transport.send(data, info)
            assert lost.empty()
        else:
            transport.send(data, info)
            request_id, error, thread = lost.get(timeout=BOUND)
            assert request_id == info.request_id and isinstance(error, HttpStatusError) and error.status == 502
            if where == "thread":
                assert thread.startswith("mcp-input-sync-http-")
            else:  # posted on the caller's thread, under the sweep's abort: a failure is told, not raised
                assert thread == threading.current_thread().name
    finally:
        transport.close(BOUND)


def test_http_delivers_each_stream_from_a_thread_of_its_own(tiny: list[TinyServer]) -> None:
    def answer(seen: Seen) -> Reply:
        request_id = seen.body["id"]
        return Reply(200, body=sse("event: message\ndata: " + json.dumps(rpc(request_id, {"n": request_id}))))

    server = TinyServer(answer)
    tiny.append(server)
    transport = HttpTransport(server.url, request_threads=False)
    got: "queue.SimpleQueue[tuple[Any, Any, str]]" = queue.SimpleQueue()
    transport.start(lambda data, stream: got.put((json.loads(data)["id"], stream, threading.current_thread().name)), lambda error: None)
    try:
        for n in (1, 2):
            transport.send(jsonrpc.encode(jsonrpc.request(n, "tools/call", {"name": "x"})), Outgoing("tools/call", n, None, "x"))
        delivered = sorted(got.get(timeout=BOUND) for _ in range(2))
    finally:
        transport.close(BOUND)
    assert [(i, stream) for i, stream, _ in delivered] == [(1, 1), (2, 2)]  # each tied to the request whose stream carried it
    # read on a reader thread, never the caller's; a reader is kept for the next stream once its own ends
    assert all(name.startswith("mcp-input-sync-sse-") for _, _, name in delivered)


# ---------------------------------------------------------------------------- a transport from base.py alone, with a Client


class Loopback(Transport):
    """A transport written from ``transports/base.py`` alone: an in-process server behind one reader thread.

    ``serve(info, message, reply)`` is the server: it reads the message the
    client sent (a server may) and replies with ``reply(message)``.
    """

    default_server_id = "loopback"

    def __init__(self, serve: Callable[[Outgoing, JsonDict, Callable[[JsonDict], None]], None], *, mirrors: bool = False) -> None:
        self.serve = serve
        self.mirrors_tool_headers = mirrors
        self.told: list[Outgoing] = []
        self._inbox: "queue.SimpleQueue[Optional[bytes]]" = queue.SimpleQueue()
        self._reader: Optional[threading.Thread] = None
        self._closed = False

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        def read() -> None:
            while (data := self._inbox.get()) is not None:
                on_message(data)

        self._reader = threading.Thread(target=read, name="loopback-reader", daemon=True)
        self._reader.start()

    def send(self, data: bytes, info: Outgoing) -> None:
        if self._closed:
            raise TransportClosed("loopback is closed")
        self.told.append(info)
        self.serve(info, json.loads(data), lambda message: self._inbox.put(jsonrpc.encode(message)))

    def close(self, timeout: float) -> None:
        self._closed = True
        self._inbox.put(None)
        if self._reader is not None:
            self._reader.join(timeout)


class Region(mis.InputHandler):
    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "accept", "content": {"region": "eu"}}


def legacy_server() -> Callable[[Outgoing, JsonDict, Callable[[JsonDict], None]], None]:
    """2025-11-25: a tools/call that asks the client for a region first."""
    waiting: dict[str, Any] = {}

    def serve(info: Outgoing, message: JsonDict, reply: Callable[[JsonDict], None]) -> None:
        method = message.get("method")
        if method == "initialize":
            reply(jsonrpc.result(message["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "loop", "version": "1"}}))
        elif method == "tools/call":
            waiting["call"] = message["id"]
            schema = {"type": "object", "properties": {"region": {"type": "string"}}}
            reply(jsonrpc.request("ask-1", "elicitation/create", {"message": "Region?", "requestedSchema": schema}))
        elif method is None and message.get("id") == "ask-1":  # the client's answer
            region = message["result"]["content"]["region"]
            reply(jsonrpc.result(waiting["call"], {"content": [{"type": "text", "text": f"deployed to {region}"}]}))
        elif "id" in message:
            reply(jsonrpc.error(message["id"], -32601, "not here"))

    return serve


def modern_server() -> Callable[[Outgoing, JsonDict, Callable[[JsonDict], None]], None]:
    """2026-07-28: a tool whose ``region`` argument is mirrored into ``Mcp-Param-Region``."""
    region = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}

    def serve(info: Outgoing, message: JsonDict, reply: Callable[[JsonDict], None]) -> None:
        method = message.get("method")
        request_id: Any = message.get("id")
        if method == "server/discover":
            reply(jsonrpc.result(request_id, {"resultType": "complete", "supportedVersions": [V], "capabilities": {"tools": {}}}))
        elif method == "tools/list":
            reply(jsonrpc.result(request_id, {"resultType": "complete", "tools": [{"name": "sql", "inputSchema": region}]}))
        elif method == "tools/call":
            reply(jsonrpc.result(request_id, {"resultType": "complete", "content": [{"type": "text", "text": "ran"}]}))
        elif request_id is not None:
            reply(jsonrpc.error(request_id, -32601, "not here"))

    return serve


def test_a_transport_written_from_base_alone_carries_a_legacy_call_with_a_server_request() -> None:
    transport = Loopback(legacy_server())
    with mis.Client(transport, handler=Region(), protocol="legacy") as client:
        result = client.call_tool("deploy", {})
        assert result["content"][0]["text"] == "deployed to eu"
    told = transport.told
    assert told[0] == Outgoing("initialize", 1, step=NEW_SESSION)  # the handshake says which step it is
    assert told[1] == Outgoing("notifications/initialized", step=SESSION_READY)
    assert told[2] == Outgoing("tools/call", 2, None, "deploy", bounded=True)
    assert told[3] is ANSWER  # the answer to elicitation/create


def test_a_transport_written_from_base_alone_is_told_the_modern_version_and_tool_headers() -> None:
    transport = Loopback(modern_server(), mirrors=True)
    with mis.Client(transport, protocol="modern") as client:
        assert [tool["name"] for tool in client.list_tools()] == ["sql"]
        assert client.call_tool("sql", {"region": "eu"})["content"][0]["text"] == "ran"
    by_method = {info.method: info for info in transport.told}
    assert by_method["server/discover"].version == V
    assert by_method["tools/list"] == Outgoing("tools/list", by_method["tools/list"].request_id, V, bounded=True)
    call = by_method["tools/call"]
    assert (call.version, call.name, call.header_args, call.expects_answer) == (V, "sql", (("Region", "eu"),), True)


def test_without_mirroring_no_tool_headers_are_computed() -> None:
    transport = Loopback(modern_server(), mirrors=False)
    with mis.Client(transport, protocol="modern") as client:
        client.list_tools()
        client.call_tool("sql", {"region": "eu"})
    assert [info.header_args for info in transport.told if info.method == "tools/call"] == [()]
