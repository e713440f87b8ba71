"""HTTP: a request is posted on the caller's own thread and aborted there at its deadline.

The slow-server rows (a status line, a JSON body or an event stream sent one
byte a second, each bounded by the call's timeout) are in test_faults_http.py;
here: which thread posts, that an abort never reaches a connection another
request may hold, and that a stream outliving the first deadline is not cut.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Iterator

import pytest
import requests
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync.transports._abortable import Abort, _shut_socket
from mcp_input_sync.transports.http import HttpTransport

from .harness import tool_json
from .http_peers import http_peer
from .test_modern import Answers

WAIT = 10.0


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    with http_peer("sdk_legacy_server.py") as url:
        yield url


def _posters() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-input-sync-http")]


def test_a_call_is_posted_on_the_callers_thread(legacy_url: str) -> None:
    with mis.connect_http(legacy_url) as client:
        for k in range(3):
            assert client.call_tool("echo", {"text": str(k)}, timeout=WAIT)["content"][0]["text"] == str(k)
        assert _posters() == []  # no thread of its own: no hand-off each way


def test_a_call_given_a_cancel_event_is_posted_on_a_thread(legacy_url: str) -> None:
    # the caller must stay free to notice the event: the request goes to a thread of its own
    with mis.connect_http(legacy_url) as client:
        assert client.call_tool("echo", {"text": "x"}, timeout=WAIT, cancel=threading.Event())["content"][0]["text"] == "x"
        assert _posters() != []


def test_a_session_of_the_callers_own_is_posted_on_a_thread(legacy_url: str) -> None:
    # a session the transport did not make cannot be aborted: its requests keep a thread each
    transport = HttpTransport(legacy_url, session=requests.Session())
    with mis.Client(transport) as client:
        assert client.call_tool("echo", {"text": "x"}, timeout=WAIT)["content"][0]["text"] == "x"
        assert _posters() != []


class _Connection:
    """What Abort shuts: an object with a ``sock``."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock


def _is_open(sock: socket.socket, peer: socket.socket) -> bool:
    try:
        peer.sendall(b"x")
        return sock.recv(1) == b"x"
    except OSError:
        return False


def test_an_abort_never_shuts_a_connection_given_back_to_its_pool() -> None:
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    try:
        handle = Abort()
        returned, held = _Connection(a), _Connection(c)
        handle.add(returned)
        handle.add(held)
        handle.discard(returned)  # back in the pool: another request may be using it now
        handle.fire()
        assert _is_open(a, b)
        assert not _is_open(c, d) or c.recv(1) == b""  # shut: the blocked read wakes with the end of the stream
        later = Abort()
        later.release()  # the request ended (or its stream went to a reader): a late fire does nothing
        later.add(_Connection(b))
        later.fire()
        assert _is_open(b, a)
    finally:
        for s in (a, b, c, d):
            _shut_socket(s)
            s.close()


class _Watched(HttpTransport):
    """Keeps the ``Setup`` the client gives (the transport contract), to reach its deadline sweep."""

    setup: Any = None

    def configure(self, setup: Any) -> None:
        self.setup = setup
        super().configure(setup)


class _SlowUser(Answers):
    """Answers the elicitation only after the library clock passed the call's deadline, and the sweep looked."""

    def __init__(self, frozen: Any, transport: _Watched) -> None:
        super().__init__()
        self.frozen = frozen
        self.transport = transport
        self.looked = threading.Event()

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        self.frozen.tick(60)  # a person took a minute; the call's clock is paused meanwhile
        # a deadline of our own, due now: once it fires, the sweep has looked at the POST's too
        self.transport.setup.track(0.0, lambda _: self.looked.set(), None)
        assert self.looked.wait(WAIT)
        return super().handle_elicitation(params, ctx)


def test_an_answer_stream_is_not_cut_when_a_tied_request_outlasts_the_first_deadline(legacy_url: str) -> None:
    with freeze_time("2026-12-03") as frozen:
        transport = _Watched(legacy_url)
        handler = _SlowUser(frozen, transport)
        with mis.Client(transport, handler=handler) as client:
            out = tool_json(client.call_tool("chain", {"prompt": "hi"}, timeout=5.0))
    assert out["elicit_action"] == "accept"
