"""The host's ``requests.Session`` keeps working: what ``Session.request`` would do, the transport does.

The HTTP transport sends through ``transports/_send.py``, which works out
once per URL what ``Session.request`` works out on every request (docs/
performance.md). Each test here checks one thing a host may have put on its
session (headers, cookies, an auth object, ~/.netrc, hooks, proxies, its own
``request``) against a real local server, and that the checks ``requests``
makes (a header value with a line break) still stand.
"""

from __future__ import annotations

import base64
import json
import queue
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import requests

from mcp_input_sync._protocol import jsonrpc
from mcp_input_sync.transports import Outgoing, TransportClosed
from mcp_input_sync.transports.base import ANSWER, Decoded
from mcp_input_sync.transports import _send
from mcp_input_sync.transports.http import HttpTransport

from .tiny_http import Reply, Seen, TinyServer, rpc

BOUND = 10.0


@pytest.fixture(autouse=True, params=["prepared-once", "session.request"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test on both paths: the transport's own (_send.py), and Session.request, taken by a
    session that overrides a step, which must behave alike."""
    if request.param == "session.request":
        monkeypatch.setattr(_send, "is_plain", lambda session: False)
    return str(request.param)


@pytest.fixture
def server() -> Iterator[TinyServer]:
    def answer(seen: Seen) -> Reply:
        if not isinstance(seen.body, dict) or "id" not in seen.body or "method" not in seen.body:
            return Reply(202)  # a notification or an answer
        return Reply(200, {"Set-Cookie": "route=a1; Path=/"}, rpc(seen.body["id"], {}))

    tiny = TinyServer(answer)
    yield tiny
    tiny.close()


def call(transport: HttpTransport, request_id: int = 1) -> Any:
    """Post one request on this thread and return its answer."""
    got: "queue.SimpleQueue[bytes]" = queue.SimpleQueue()
    transport.start(lambda data, stream=None: got.put(data), lambda error: None)
    transport.send(jsonrpc.encode(jsonrpc.request(request_id, "tools/list", {})), Outgoing("tools/list", request_id))
    return json.loads(got.get(timeout=BOUND))


def over(session: requests.Session, url: str, headers: Optional[dict[str, str]] = None) -> HttpTransport:
    return HttpTransport(url, headers=headers, session=session, request_threads=False)


def test_the_sessions_headers_go_with_each_request_and_the_transports_own_win(server: TinyServer) -> None:
    session = requests.Session()
    session.headers.update({"X-Team": "blue", "Accept": "text/plain"})
    transport = over(session, server.url, {"X-Own": "1"})
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    seen = server.posts("tools/list")[0].headers
    assert seen["x-team"] == "blue" and seen["x-own"] == "1"
    assert seen["accept"] == "application/json, text/event-stream"  # the transport's, not the session's


def test_a_cookie_the_server_sets_is_kept_in_the_sessions_jar_and_sent_back(server: TinyServer) -> None:
    session = requests.Session()
    transport = over(session, server.url)
    try:
        call(transport, 1)
        call(transport, 2)
    finally:
        transport.close(BOUND)
    assert session.cookies.get("route") == "a1"
    first, second = server.posts("tools/list")
    assert "cookie" not in first.headers and second.headers["cookie"] == "route=a1"


def test_the_sessions_auth_object_signs_every_request_with_its_body(server: TinyServer) -> None:
    class Signing(requests.auth.AuthBase):
        def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
            body = r.body if isinstance(r.body, bytes) else b""
            r.headers["X-Signature"] = str(len(body))
            return r

    session = requests.Session()
    session.auth = Signing()
    transport = over(session, server.url)
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    seen = server.posts("tools/list")[0]
    assert seen.headers["x-signature"] == seen.headers["content-length"] != "0"


def test_credentials_from_netrc_are_used_when_the_session_trusts_the_environment(server: TinyServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login ann password pw\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    transport = over(requests.Session(), server.url)
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    assert server.posts("tools/list")[0].headers["authorization"] == "Basic " + base64.b64encode(b"ann:pw").decode()


def test_the_sessions_response_hooks_run(server: TinyServer) -> None:
    statuses: list[int] = []
    session = requests.Session()
    session.hooks["response"].append(lambda response, **kwargs: statuses.append(response.status_code))
    transport = over(session, server.url)
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    assert statuses == [200]


def test_a_proxy_from_the_environment_is_used(server: TinyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = TinyServer(lambda seen: Reply(200, body=rpc(seen.body["id"], {"via": "proxy"})))
    try:
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url.rsplit("/", 1)[0])
        transport = over(requests.Session(), server.url)
        try:
            assert call(transport)["result"] == {"via": "proxy"}
        finally:
            transport.close(BOUND)
        assert proxy.posts()[0].path == server.url  # a forward proxy is asked for the whole URL
        assert server.posts() == []
    finally:
        proxy.close()


def test_a_session_with_its_own_request_method_is_used_through_it(server: TinyServer) -> None:
    class Tracing(requests.Session):
        def __init__(self) -> None:
            super().__init__()
            self.verbs: list[str] = []

        def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
            self.verbs.append(method)
            return super().request(method, url, *args, **kwargs)

    session = Tracing()
    transport = over(session, server.url)
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    assert session.verbs[:1] == ["POST"]


def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent(server: TinyServer) -> None:
    transport = over(requests.Session(), server.url, {"X-Bad": "a\r\nX-Injected: 1"})
    transport.start(lambda *message: None, lambda error: None)
    try:
        with pytest.raises(TransportClosed):
            transport.send(jsonrpc.encode(jsonrpc.request(1, "tools/list", {})), Outgoing("tools/list", 1))
    finally:
        transport.close(BOUND)
    assert server.requests == []


def test_an_answer_the_transport_decoded_is_handed_on_decoded(server: TinyServer) -> None:
    # the transport decodes a JSON body to tell a response from the rest; the client's reader
    # takes what it found instead of decoding the same bytes again
    got: "queue.SimpleQueue[bytes]" = queue.SimpleQueue()
    transport = over(requests.Session(), server.url)
    transport.start(lambda data, stream=None: got.put(data), lambda error: None)
    try:
        transport.send(jsonrpc.encode(jsonrpc.request(4, "tools/list", {})), Outgoing("tools/list", 4))
        data = got.get(timeout=BOUND)
    finally:
        transport.close(BOUND)
    assert type(data) is Decoded and data.message == json.loads(data) == rpc(4, {})


def test_answers_and_notifications_that_get_a_202_leave_the_connection_for_the_next_post(server: TinyServer) -> None:
    # an empty 202 closed unread would drop its connection: every answer would open a new one
    transport = over(requests.Session(), server.url)
    transport.start(lambda *message: None, lambda error: None)
    try:
        for n in range(20):
            transport.send(jsonrpc.encode(jsonrpc.result(n, {"action": "decline"})), ANSWER)
            transport.send(jsonrpc.encode(jsonrpc.notification("notifications/progress", {"n": n})), Outgoing("notifications/progress"))
    finally:
        transport.close(BOUND)
    assert len(server.posts()) == 40 and server.connections == 1


def test_a_session_header_set_to_none_is_not_sent(server: TinyServer) -> None:
    session = requests.Session()
    session.headers["User-Agent"] = None  # type: ignore[assignment]  # requests' way to remove a default header
    transport = over(session, server.url)
    try:
        call(transport)
    finally:
        transport.close(BOUND)
    assert "python-requests" not in server.posts("tools/list")[0].headers.get("user-agent", "")  # urllib3 may add its own
