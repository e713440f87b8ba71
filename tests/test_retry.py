"""Retry what is safe: the ``retry`` option (issue 34, item 2).

A busy gateway (tests/gateway.py) in front of a real FastMCP server answers
429 or 503, with or without ``Retry-After``, or 502, for the requests a test
picks; the client sends again what the server cannot have acted on, and a
``tools/call`` that may have reached it only when the tool's annotations or
its caller say it is safe to run twice.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from typing import Any, Iterator, Optional

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync._protocol.retry import may_send_again, retry_after, tool_is_idempotent

from .gateway import Gateway, Seen
from .harness import PEERS_DIR
from .http_peers import PeerProcess, free_port
from .test_oauth_fastmcp import FASTMCP_PYTHON

FASTMCP = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
needs_fastmcp = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")


# ---------------------------------------------------------------------------- the rules


def test_the_policy_and_its_back_off() -> None:
    assert mis.Retry() == mis.Retry(attempts=3, max_delay=10.0)
    assert [mis.Retry(6, 3.0).backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    wrong: list[tuple[tuple[Any, ...], type[Exception]]] = [
        ((0,), ValueError), ((21,), ValueError), ((True,), TypeError), ((3, -1), ValueError), ((3, float("inf")), ValueError), ((3, "1"), TypeError),
    ]
    for args, error in wrong:
        with pytest.raises(error):
            mis.Retry(*args)
    from mcp_input_sync.transports.http import HttpTransport

    with pytest.raises(TypeError):
        mis.Client(HttpTransport("http://127.0.0.1:9/mcp"), retry="yes")


@freeze_time("2026-12-05 10:00:00")
def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = time.time()
    assert retry_after("7", now) == 7.0 and retry_after(" 0 ", now) == 0.0
    assert retry_after("Sat, 05 Dec 2026 10:00:30 GMT", now) == 30.0
    assert retry_after("Sat, 05 Dec 2026 09:00:00 GMT", now) == 0.0  # in the past: at once
    for unreadable in (None, "", "soon", "-3", "1.5", "Sat, 05 Dec 2026 10:00:30"):
        assert retry_after(unreadable, now) is None


def test_what_may_be_sent_again_after_it_may_have_reached_the_server() -> None:
    assert may_send_again("tools/list", False) and may_send_again("resources/read", False) and may_send_again(None, False)
    assert not may_send_again("tools/call", False) and may_send_again("tools/call", True)
    assert tool_is_idempotent({"name": "a", "annotations": {"readOnlyHint": True}})
    assert tool_is_idempotent({"name": "a", "annotations": {"idempotentHint": True, "readOnlyHint": False}})
    for tool in ({"name": "a"}, {"name": "a", "annotations": {"readOnlyHint": "true"}}, {"name": "a", "annotations": None}, "a"):
        assert not tool_is_idempotent(tool)


# ---------------------------------------------------------------------------- against FastMCP, behind a gateway


@pytest.fixture(scope="module")
def upstream() -> Iterator[PeerProcess]:
    if not FASTMCP_PYTHON.exists():
        pytest.skip("run peers/setup.sh to install FastMCP (pinned)")
    made = PeerProcess(FASTMCP)
    made.start()
    yield made
    made.stop()


class Script:
    """Answers the next ``tools/call`` of ``tool`` with each of ``replies`` in turn, then forwards."""

    def __init__(self, tool: str, *replies: tuple[int, dict[str, str]]) -> None:
        self.tool, self.replies = tool, list(replies)
        self.lock = threading.Lock()

    def __call__(self, seen: Seen) -> Optional[tuple[int, dict[str, str]]]:
        with self.lock:
            if seen.tool == self.tool and self.replies:
                return self.replies.pop(0)
        return None


@pytest.fixture
def gateway(upstream: PeerProcess) -> Iterator[Any]:
    made: list[Gateway] = []

    def make(verdict: Any) -> Gateway:
        made.append(Gateway(upstream.url, verdict))
        return made[-1]

    yield make
    for one in made:
        one.close()


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@needs_fastmcp
@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_a_429_with_retry_after_is_sent_again_and_logged(gateway: Any, protocol: str, caplog: pytest.LogCaptureFixture) -> None:
    gate = gateway(Script("echo", (429, {"Retry-After": "0"}), (503, {})))
    with mis.connect_http(gate.url, protocol=protocol) as client, caplog.at_level(logging.INFO, logger="mcp_input_sync"):
        assert text(client.call_tool("echo", {"text": "hi"})) == "hi"
    assert [s.answered for s in gate.calls("echo")] == [429, 503, None]  # the third went through, once
    said = [r.getMessage() for r in caplog.records if "sent again" in r.getMessage()]
    assert len(said) == 2 and "HTTP 429 (Retry-After 0 s)" in said[0] and "HTTP 503;" in said[1] and "attempt 3 of 3" in said[1]


@needs_fastmcp
def test_a_retry_after_as_an_http_date(gateway: Any) -> None:
    gate = gateway(Script("echo", (503, {"Retry-After": email.utils.formatdate(usegmt=True)})))
    with mis.connect_http(gate.url) as client:
        assert text(client.call_tool("echo", {"text": "dated"})) == "dated"
    assert [s.answered for s in gate.calls()] == [503, None]


@needs_fastmcp
def test_a_retry_after_longer_than_max_delay_fails_at_once(gateway: Any) -> None:
    gate = gateway(Script("echo", (429, {"Retry-After": "3600"})))
    with mis.connect_http(gate.url) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "x"})
    assert caught.value.kind == "transport" and "3600 s, more than the retry's max_delay of 10 s" in str(caught.value)
    assert len(gate.calls()) == 1


@needs_fastmcp
def test_the_last_attempt_fails_and_retry_false_sends_once(gateway: Any) -> None:
    gate = gateway(Script("echo", *[(503, {"Retry-After": "0"})] * 5))
    with mis.connect_http(gate.url, retry=mis.Retry(attempts=2, max_delay=1)) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "x"})
        assert caught.value.kind == "transport" and "HTTP 503" in str(caught.value)
        assert len(gate.calls()) == 2
    with mis.connect_http(gate.url, retry=False) as client:
        with pytest.raises(mis.ClientError):
            client.call_tool("echo", {"text": "x"})
    assert len(gate.calls()) == 3


@needs_fastmcp
def test_a_tool_that_may_have_run_is_sent_again_only_when_safe(gateway: Any) -> None:
    bad: tuple[int, dict[str, str]] = (502, {})
    gate = gateway(Script("echo", bad))
    with mis.connect_http(gate.url) as client:
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "x"})  # a 502: the gateway may have passed it on
        assert caught.value.kind == "transport" and len(gate.calls("echo")) == 1
        gate.verdict = Script("echo", bad)
        assert text(client.call_tool("echo", {"text": "y"}, idempotent=True)) == "y"  # the caller says it is safe
        assert [s.answered for s in gate.calls("echo")][1:] == [502, None]
        client.list_tools()  # the annotations: lookup read-only, put idempotent
        for tool in ("lookup", "put"):
            gate.verdict = Script(tool, bad)
            assert text(client.call_tool(tool, {"text": "z"})).lower() == "z"
            assert [s.answered for s in gate.calls(tool)] == [502, None]
        gate.verdict = Script("lookup", bad)
        with pytest.raises(mis.ClientError):
            client.call_tool("lookup", {"text": "z"}, idempotent=False)  # the caller's word wins
        assert [s.answered for s in gate.calls("lookup")][2:] == [502]


@needs_fastmcp
def test_a_list_is_sent_again_after_a_502(gateway: Any) -> None:
    replies: list[tuple[int, dict[str, str]]] = [(502, {})]

    def verdict(seen: Seen) -> Optional[tuple[int, dict[str, str]]]:
        return replies.pop() if seen.method == "tools/list" and replies else None

    gate = gateway(verdict)
    with mis.connect_http(gate.url) as client:
        assert client.list_tools()
    assert [s.answered for s in gate.seen if s.method == "tools/list"] == [502, None]


def test_a_connection_that_could_not_be_made_is_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with caplog.at_level(logging.INFO, logger="mcp_input_sync"):
        with pytest.raises(mis.ClientError) as caught:
            mis.connect_http(url, retry=mis.Retry(attempts=3, max_delay=0))
    assert caught.value.kind == "transport" and caught.value.check == "unreachable"
    said = [r.getMessage() for r in caplog.records if "sent again" in r.getMessage()]
    assert len(said) == 2 and "Connection refused" in said[0] and "attempt 3 of 3" in said[1]


@needs_fastmcp
def test_a_lost_session_is_found_again_through_a_busy_gateway(gateway: Any, upstream: PeerProcess) -> None:
    """The server restarts behind the gateway (its session lost: 404), and the new initialize meets a 503 first."""
    busy = [(503, {"Retry-After": "0"})]

    def verdict(seen: Seen) -> Optional[tuple[int, dict[str, str]]]:
        return busy.pop() if seen.method == "initialize" and restarted.is_set() and busy else None

    restarted = threading.Event()
    gate = gateway(verdict)
    with mis.connect_http(gate.url, protocol="legacy") as client:
        assert text(client.call_tool("echo", {"text": "one"})) == "one"
        upstream.stop()
        upstream.start()
        restarted.set()
        assert text(client.call_tool("echo", {"text": "two"})) == "two"
    inits = [s.answered for s in gate.seen if s.method == "initialize"]
    assert inits == [None, 503, None]
