"""HTTP: what a request posted on the caller's thread leaves out of its deadline's reach, and when it is not posted there.

A review of the change that posts requests on the caller's thread found
four ways it differed from a request posted on a thread of its own; each
row here is one of them:

- behind a proxy (``HTTP_PROXY``) urllib3's own pools carry the request,
  whose connections no abort handle reaches: such a request keeps a thread
  of its own, and its call still ends at its timeout;
- a server that forgot the session gets a new handshake that the call's
  deadline does not cut (it goes on on a thread of its own), so the next
  call has a session;
- a connection that belongs to the OAuth fetcher's pool leaves the abort
  handle when it goes back to that pool;
- a connect that does not complete ends at the call's deadline (a socket
  being connected has nothing for the abort to shut).

And one it found in the code before: a call that timed out waited for its
``notifications/cancelled`` to be taken, as long as the server liked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.oauth._reach import _CheckedHTTPPool, _CheckedHTTPSPool
from mcp_input_sync.transports._abortable import Abort, _HTTPPool, _HTTPSPool

from .faulty_http import FaultyHttp, answer_of
from .test_faults_stdio import Box, in_thread
from .test_http import legacy_answer
from .tiny_http import Reply, Seen, TinyServer

WAIT = 10.0
JsonDict = dict[str, Any]
_INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "forgetful", "version": "1"}}


@pytest.fixture
def server() -> Iterator[FaultyHttp]:
    s = FaultyHttp()
    yield s
    s.close()


def _posters() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-input-sync-http")]


def _times_out_in_time(box: Box, timeout: float, where: str) -> None:
    """The call in ``box`` raised its own timeout, at most 2.5 s after ``timeout``."""
    assert box.thread is not None
    box.thread.join(timeout + 2.5)
    assert not box.thread.is_alive(), f"call_tool(timeout={timeout}) {where} still blocked {timeout + 2.5} s later"
    assert isinstance(box.error, mis.ClientError) and box.error.kind == "timeout", box.error


def test_behind_a_proxy_a_call_keeps_a_thread_of_its_own_and_ends_at_its_timeout(server: FaultyHttp, monkeypatch: pytest.MonkeyPatch) -> None:
    # the faulty server is the proxy too: requests sends it "POST http://mcp.invalid/mcp"
    monkeypatch.setenv("HTTP_PROXY", server.url.rsplit("/", 1)[0])
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = mis.connect_http("http://mcp.invalid/mcp")
    box: Box = in_thread(client.call_tool, "slow_headers", timeout=1.0)
    try:
        _times_out_in_time(box, 1.0, "behind a proxy")
        assert _posters() != []  # posted on a thread: the caller was free at its deadline
    finally:
        server.cut.set()
        box.join(WAIT)
        client.close()


class _Forgetful(FaultyHttp):
    """Forgets session ``s1`` once told to (404), and holds its second ``initialize`` until ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.forgot = False
        self.inits = 0
        #: the session id each tools/call carried
        self.sessions: list[Optional[str]] = []

    def _handle(self, conn: socket.socket) -> None:
        try:
            request = self._read_request(conn)
            if request is None:
                return
            verb, headers, body = request
            if verb != "POST":
                self._reply(conn, "405 Method Not Allowed")
                return
            message = json.loads(body)
            method, session = message.get("method"), headers.get("mcp-session-id")
            with self.lock:
                if method == "tools/call":
                    self.sessions.append(session)
                if method == "initialize":
                    self.inits += 1
                inits = self.inits
                self.got_post.notify_all()
            if method == "initialize":
                if inits > 1:
                    self.gate.wait(WAIT)  # a server slow to start its new session
                answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": _INIT_RESULT}).encode()
                self._reply(conn, "200 OK", answer, extra={"Mcp-Session-Id": f"s{inits}"})
            elif method == "server/discover":
                self._reply(conn, "400 Bad Request", json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}).encode())
            elif self.forgot and session == "s1":
                self._reply(conn, "404 Not Found")
            elif "id" not in message:
                self._reply(conn, "202 Accepted")
            else:
                self._reply(conn, "200 OK", answer_of(message["id"], "ok"))
        except OSError:
            pass
        finally:
            conn.close()


def test_a_lost_session_is_started_again_even_when_the_call_times_out_meanwhile() -> None:
    server = _Forgetful()
    try:
        with mis.connect_http(server.url) as client:
            server.forgot = True
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("ok", timeout=1.0)  # 404, then the new initialize waits for the gate
            assert info.value.kind == "timeout", info.value
            server.gate.set()  # the server answers the new handshake after the call gave up
            assert server.wait_for(lambda: server.sessions[-1:] == ["s2"])  # the call was sent again, in session s2
            assert client.call_tool("ok", timeout=WAIT)["content"][0]["text"] == "ok"
            assert server.sessions[-1] == "s2"
    finally:
        server.gate.set()
        server.close()


@pytest.mark.parametrize("checked, plain", [(_CheckedHTTPPool, _HTTPPool), (_CheckedHTTPSPool, _HTTPSPool)])
def test_the_oauth_fetchers_pools_take_a_returned_connection_off_its_abort_handles(checked: Any, plain: Any) -> None:
    # an OAuth exchange made during a POST registers with the POST's handle; back in the
    # fetcher's pool, its connection may serve another exchange, so the POST's handle lets go of it
    assert issubclass(checked, plain)
    pool = checked("127.0.0.1", 9)
    handle = Abort()

    class Conn:
        _mis_abort = (handle,)

        def close(self) -> None:  # the pool is full (of its empty slots): it closes what comes back
            pass

    conn = Conn()
    handle.add(conn)
    pool._put_conn(conn)
    assert handle._connections == [] and conn._mis_abort == ()
    pool.close()


def test_a_connect_that_does_not_complete_ends_at_the_calls_deadline() -> None:
    handle = Abort(deadline=time.monotonic() + 0.5)
    connect, read = handle.bound((30.0, 300.0))
    assert connect <= 0.5 and read == 300.0  # the connect waits no longer than the call
    assert Abort().bound((30.0, 300.0)) == (30.0, 300.0)  # a handle without a deadline: as given
    assert Abort(deadline=time.monotonic() - 5).bound((30.0, 300.0))[0] > 0  # past: still a (short) positive timeout


def test_a_call_that_times_out_is_not_held_by_its_cancel_notice(tiny: list[TinyServer]) -> None:
    # a server that never answers the notice (wedged, or a host that stopped accepting): the
    # caller gave up at its timeout and goes; the notice is posted on a thread of its own
    release = threading.Event()
    noticed = threading.Event()
    state: JsonDict = {}

    def call(seen: Seen, body: JsonDict) -> Reply:
        def stream() -> Iterator[str]:
            release.wait(WAIT)  # the call never gets its answer
            yield ": bye\n\n"

        return Reply(200, body=stream())

    state["call"] = call
    answer = legacy_answer(state)

    def answer_or_hang(seen: Seen) -> Reply:
        if isinstance(seen.body, dict) and seen.body.get("method") == "notifications/cancelled":
            noticed.set()
            release.wait(WAIT)
            return Reply(202)
        return answer(seen)

    server = TinyServer(answer_or_hang)
    tiny.append(server)
    client = mis.connect_http(server.url)
    box: Box = in_thread(client.call_tool, "slow", timeout=0.5)
    try:
        _times_out_in_time(box, 0.5, "on its cancel notice")
        assert noticed.wait(WAIT)  # and the server was told
    finally:
        release.set()
        box.join(WAIT)
        client.close()
