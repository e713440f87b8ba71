"""A legacy (2025-11-25) HTTP call the client gives up on has its response stream closed (issue #31).

The client sends ``notifications/cancelled``, and the transport also closes
the stream that carries the call's response (``HttpTransport.cancel_request``),
so a server that keeps the stream alive with SSE comments holds neither a
reader thread nor a connection of the client's: before, each timed-out call
kept both until the server ended the stream. Also closed: a stream that
opens after the call was given up (its POST was still out, or the stream was
being resumed). A server request that came on the stream still gets its one
answer, which is a POST of its own.

The endpoint is ``tests/tiny_http.py`` (127.0.0.1); the streams it feeds are
counted by :class:`Feeds`, which sees the client go when a write fails.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports.http import HttpTransport

from .harness import wait_until
from .test_http import legacy_answer
from .tiny_http import Reply, Seen, TinyServer

JsonDict = dict[str, Any]
WAIT = 10.0
FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}


class Feeds:
    """SSE bodies that never answer: a comment every 20 ms until the client goes (or :attr:`stop`)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.changed = threading.Condition()
        self.open = 0  # streams being fed now
        self.opened = 0  # streams ever fed

    def body(self, first: str = "") -> Iterator[str]:
        with self.changed:
            self.open += 1
            self.opened += 1
            self.changed.notify_all()
        try:
            if first:
                yield first
            while not self.stop.wait(0.02):  # the server's pace, not a wait of the test
                yield ":\n\n"
        finally:  # the handler's write failed (the client closed), or the test ends
            with self.changed:
                self.open -= 1
                self.changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool]) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, WAIT)


@pytest.fixture
def feeds() -> Iterator[Feeds]:
    f = Feeds()
    yield f
    f.stop.set()  # a stream the client kept open (the fault) ends with the test


def serve(tiny: list[TinyServer], call: Callable[[Seen, JsonDict], Reply], get: Callable[[Seen], Reply] = lambda seen: Reply(405)) -> TinyServer:
    """A legacy endpoint: ``call`` answers ``tools/call``, ``get`` a GET; notices and answers are kept."""
    answer = legacy_answer({"call": call})

    def route(seen: Seen) -> Reply:
        return get(seen) if seen.verb == "GET" else answer(seen)

    server = TinyServer(route)
    server.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # a write to a client that went
    tiny.append(server)
    return server


def cancelled_ids(server: TinyServer) -> list[Any]:
    return [seen.body["params"]["requestId"] for seen in server.posts("notifications/cancelled")]


def test_each_timed_out_call_has_its_stream_closed_and_is_still_cancelled(tiny: list[TinyServer], feeds: Feeds) -> None:
    server = serve(tiny, lambda seen, body: Reply(200, body=feeds.body()))
    transport = HttpTransport(server.url)
    with mis.Client(transport) as client:
        assert client.era == "legacy"
        for n in range(1, 4):
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("hang", timeout=0.3)
            assert info.value.kind == "timeout"
            # the client went from the stream: the server feeds none of the calls' streams
            assert feeds.wait_for(lambda: feeds.opened == n and feeds.open == 0), f"{feeds.open} of {n} streams still open"
        assert wait_until(lambda: not transport._streams, WAIT)  # no reader holds one
        calls = [seen.body["id"] for seen in server.posts("tools/call")]
        assert wait_until(lambda: sorted(cancelled_ids(server)) == sorted(calls), WAIT)  # and each was cancelled


def test_a_server_request_on_the_closed_stream_still_gets_its_one_answer(tiny: list[TinyServer], feeds: Feeds) -> None:
    ask = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": FORM}
    server = serve(tiny, lambda seen, body: Reply(200, body=feeds.body(f"event: message\ndata: {json.dumps(ask)}\n\n")))
    asked, release = threading.Event(), threading.Event()
    saw_cancel: list[bool] = []

    class Slow(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            asked.set()
            saw_cancel.append(ctx.wait_cancelled(WAIT))  # its call timed out: the tied callback's token is set
            release.wait(WAIT)  # still answering after the stream was closed
            return {"action": "decline"}

    try:
        with mis.connect_http(server.url, handler=Slow()) as client:
            with pytest.raises(mis.ClientError) as info:  # timeout is paused while its callback runs: not max_total_timeout
                client.call_tool("ask", timeout=WAIT, max_total_timeout=0.5)
            assert info.value.kind == "timeout" and asked.is_set()
            assert feeds.wait_for(lambda: feeds.opened == 1 and feeds.open == 0), "the stream was not closed"
            release.set()
            assert wait_until(lambda: any(seen.body.get("id") == "ask-1" for seen in server.posts()), WAIT)
    finally:
        release.set()
    assert saw_cancel == [True]
    answers = [seen.body for seen in server.posts() if seen.body.get("id") == "ask-1" and "method" not in seen.body]
    assert len(answers) == 1, answers


def test_a_stream_that_opens_after_its_call_was_given_up_is_closed(tiny: list[TinyServer], feeds: Feeds) -> None:
    # the call is given up while its POST waits for the answer's headers (a cancel event posts it on a thread)
    cancel, noticed = threading.Event(), threading.Event()

    def call(seen: Seen, body: JsonDict) -> Reply:
        cancel.set()  # the caller gives up now
        noticed.wait(WAIT)  # the server answers once told
        return Reply(200, body=feeds.body())

    server = serve(tiny, call)
    original = server.answer

    def noticing(seen: Seen) -> Reply:
        reply = original(seen)
        if isinstance(seen.body, dict) and seen.body.get("method") == "notifications/cancelled":
            noticed.set()
        return reply

    server.answer = noticing
    try:
        with mis.connect_http(server.url) as client:
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("late", timeout=WAIT, cancel=cancel)
            assert info.value.kind == "cancelled"
            assert feeds.wait_for(lambda: feeds.opened == 1 and feeds.open == 0), "the late stream was read"
    finally:
        noticed.set()


def test_a_stream_being_resumed_when_its_call_is_given_up_is_not_read(tiny: list[TinyServer], feeds: Feeds) -> None:
    # the call's stream ends with an event id: the client resumes it (GET, Last-Event-ID); the call
    # times out while that GET waits, and the stream it opens is closed, not read
    noticed = threading.Event()

    def get(seen: Seen) -> Reply:
        if seen.headers.get("last-event-id") != "ev-1":
            return Reply(405)  # the session's own GET stream
        noticed.wait(WAIT)
        return Reply(200, body=feeds.body())

    server = serve(tiny, lambda seen, body: Reply(200, body=iter(["id: ev-1\ndata:\n\n", "retry: 0\n\n"])), get)
    original = server.answer

    def noticing(seen: Seen) -> Reply:
        if isinstance(seen.body, dict) and seen.body.get("method") == "notifications/cancelled":
            noticed.set()
        return original(seen)

    server.answer = noticing
    try:
        with mis.connect_http(server.url) as client:
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("resumed", timeout=0.5)
            assert info.value.kind == "timeout"
            assert feeds.wait_for(lambda: feeds.opened == 1 and feeds.open == 0), "the resumed stream was read"
    finally:
        noticed.set()
