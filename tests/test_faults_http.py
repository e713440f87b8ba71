"""Faults over real Streamable HTTP (issue #8): a raw-socket server that breaks the rules.

``faulty_http.FaultyHttp`` is a legacy (2025-11-25) endpoint whose
``tools/call`` answer is a fault picked by tool name: an SSE answer cut in
the middle of an event (FIN or RST), a JSON body shorter than announced, 500
and 502, one byte a second (headers, JSON body or SSE), junk and forged
answers on the stream, a server request followed by a cut.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis

from .faulty_http import FaultyHttp
from .harness import tool_text
from .test_faults_stdio import Box, figure, in_thread, library_threads, wait_until

JsonDict = dict[str, Any]
WAIT = 10.0


@pytest.fixture
def server() -> Iterator[FaultyHttp]:
    s = FaultyHttp()
    yield s
    s.close()


def echo_works(client: mis.Client, text: str = "still here") -> None:
    assert tool_text(client.call_tool("ok", {"text": text}, timeout=WAIT)) == text
    assert tool_text(client.call_tool("sse_ok", {"text": text}, timeout=WAIT)) == text


@pytest.mark.parametrize("fault", ["sse_cut", "sse_cut_close_delimited", "sse_reset", "sse_cut_after_id", "json_cut"])
def test_fault_http_response_cut_mid_stream_raises_transport_and_later_calls_work(server: FaultyHttp, fault: str) -> None:
    with mis.connect_http(server.url) as client:
        assert client.era == "legacy"
        started = time.monotonic()
        with pytest.raises(mis.ClientError) as info:
            client.call_tool(fault, timeout=WAIT)
        figure(f"http_{fault}_to_error_s", round(time.monotonic() - started, 3))
        assert info.value.kind == "transport", info.value
        echo_works(client)
        assert client.state is mis.ClientState.OPEN


@pytest.mark.parametrize("fault", ["http500", "http500_jsonrpc", "http502_empty"])
def test_fault_http_5xx_mid_session_raises_transport_and_later_calls_work(server: FaultyHttp, fault: str) -> None:
    with mis.connect_http(server.url) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool(fault, timeout=WAIT)
        assert info.value.kind == "transport", info.value
        echo_works(client)


def test_fault_http_junk_forged_and_duplicate_answers_on_the_stream_are_ignored(server: FaultyHttp) -> None:
    with mis.connect_http(server.url) as client:
        assert tool_text(client.call_tool("sse_garbage", {"text": "real"}, timeout=WAIT)) == "real"
        # the forged answer named the next id: that call still gets its own answer
        echo_works(client, "the next call")


@pytest.mark.parametrize("fault", ["sse_deep", "json_deep"])
def test_fault_http_deeply_nested_json_is_handled_like_other_junk(server: FaultyHttp, fault: str) -> None:
    with mis.connect_http(server.url) as client:
        if fault == "sse_deep":  # junk before the answer on the stream: ignored
            assert tool_text(client.call_tool(fault, {"text": "real"}, timeout=WAIT)) == "real"
        else:  # the only body is junk: the call fails with a ClientError, nothing else
            try:
                client.call_tool(fault, timeout=WAIT)
            except mis.ClientError:
                pass
            except RecursionError as exc:
                pytest.fail(f"call_tool raised {exc!r}, not a ClientError")
        echo_works(client)


def test_fault_http_a_request_on_a_close_delimited_stream_is_answered_while_it_is_open(server: FaultyHttp) -> None:
    class Quick(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            return {"action": "accept", "content": {"answer": "ok"}}

    with mis.connect_http(server.url, handler=Quick()) as client:
        assert tool_text(client.call_tool("sse_ask_close_delimited", timeout=WAIT)) == "answered"
        assert server.asked_in_time is True


def test_fault_http_slow_sse_is_bounded_by_the_call_timeout(server: FaultyHttp) -> None:
    with mis.connect_http(server.url) as client:
        started = time.monotonic()
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("slow_sse", timeout=1.0)
        took = time.monotonic() - started
        figure("http_slow_sse_timeout_1s_took_s", round(took, 3))
        assert info.value.kind == "timeout"
        assert took < 1.0 + 2.5
        # legacy HTTP: the call is cancelled with a notification
        assert server.wait_for(lambda: any(m == "notifications/cancelled" for m, _ in server.notes))
        echo_works(client)


def _bounded_slow_call(server: FaultyHttp, fault: str) -> None:
    """Shared by the slow JSON body / slow headers tests: the call must end within its timeout."""
    client = mis.connect_http(server.url)
    box: Box = in_thread(client.call_tool, fault, timeout=1.0)
    try:
        assert box.thread is not None
        box.thread.join(1.0 + 2.5)
        still_blocked = box.thread.is_alive()
        figure(f"http_{fault}_timeout_1s_still_blocked_after_3.5s", still_blocked)
        assert not still_blocked, f"call_tool(timeout=1.0) still blocked after 3.5 s on {fault}"
        assert isinstance(box.error, mis.ClientError) and box.error.kind == "timeout", box.error
    finally:
        server.cut.set()  # the slow writer stops and closes: the blocked call ends
        box.join(WAIT)
        client.close()


def test_fault_http_slow_json_body_is_bounded_by_the_call_timeout(server: FaultyHttp) -> None:
    _bounded_slow_call(server, "slow_json")


def test_fault_http_slow_headers_are_bounded_by_the_call_timeout(server: FaultyHttp) -> None:
    _bounded_slow_call(server, "slow_headers")


def test_fault_http_stream_cut_after_a_server_request_still_answers_it_once(server: FaultyHttp) -> None:
    class Tied(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            server.gate.set()  # the server cuts the stream now
            return {"action": "decline"}

    with mis.connect_http(server.url, handler=Tied()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("sse_ask_then_cut", timeout=WAIT)
        assert info.value.kind == "transport"
        # the request is still answered (its answer is POSTed on its own), exactly once
        assert server.wait_for(lambda: any(a.get("id") == "ask-1" for a in server.answers))
        echo_works(client)
    answers = [a for a in server.answers if a.get("id") == "ask-1"]
    assert len(answers) == 1, answers


def test_fault_http_stream_cut_after_a_server_request_sets_the_tied_callbacks_token(server: FaultyHttp) -> None:
    saw_cancel = threading.Event()

    class Tied(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            server.gate.set()  # the server cuts the stream now
            if ctx.wait_cancelled(3.0):
                saw_cancel.set()
            return {"action": "decline"}

    with mis.connect_http(server.url, handler=Tied()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("sse_ask_then_cut", timeout=WAIT)
        assert info.value.kind == "transport"
        assert saw_cancel.wait(3.0), "the tied callback's token was not set when its call's stream broke"


def test_fault_http_close_with_calls_hanging_on_open_streams_returns_within_its_timeout(server: FaultyHttp) -> None:
    client = mis.connect_http(server.url)
    calls = [in_thread(client.call_tool, "hang", timeout=60) for _ in range(3)]
    calls.append(in_thread(client.call_tool, "slow_sse", timeout=60))
    assert server.wait_for(lambda: len([p for p in server.posts if p[0] == "tools/call"]) == 4)
    assert wait_until(lambda: len([t for t in library_threads() if "-sse-" in t.name]) >= 4)
    started = time.monotonic()
    client.close(timeout=2.0)
    took = time.monotonic() - started
    figure("http_close_with_4_open_streams_s", round(took, 3))
    assert took < 2.0 + 0.5
    for box in calls:
        box.join()
        assert isinstance(box.error, mis.ClientError) and box.error.kind == "closed", box.error
    assert not library_threads(), [t.name for t in library_threads()]


# ---------------------------------------------------------------------------- a host urllib3 cannot parse

#: Hosts urllib3 refuses while it parses them (an empty label; a label over 63 characters): no name is looked up.
UNPARSABLE = ("a..b", "a" * 64 + ".example")


@pytest.fixture
def no_lookup(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The names the test tried to look up on the network: refused here, so none ever is (127.0.0.1 and localhost pass).

    A name that cannot be IDNA-encoded fails as the real ``getaddrinfo`` fails
    before any lookup, so it is not counted: only a name that would reach a
    resolver is.
    """
    import socket

    looked_up: list[Any] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("127.0.0.1", "localhost"):
            return real(host, *args, **kwargs)
        if isinstance(host, str):
            host.encode("idna")  # what getaddrinfo does first: UnicodeError, and no lookup
        looked_up.append(host)
        raise socket.gaierror("the tests look up no name but 127.0.0.1's")

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # no proxy takes the request somewhere
    return looked_up


@pytest.mark.parametrize("host", UNPARSABLE)
def test_fault_http_a_host_urllib3_cannot_parse_cannot_be_reached_like_any_other(host: str, no_lookup: list[Any]) -> None:
    with pytest.raises(mis.ClientError) as info:  # before: urllib3's LocationParseError, untyped
        mis.connect_http(f"http://{host}/mcp", timeout=3)
    assert info.value.kind == "transport" and "cannot reach" in str(info.value), info.value
    assert no_lookup == []  # refused while parsing, before any lookup
