"""A server restart survived: the ``reconnect`` option (issue 34, item 1).

Against real servers: FastMCP over stdio killed between two calls and
during one, FastMCP over HTTP stopped and started again on the same port,
the official SDK's servers swapped behind one URL (the era changes), and
server-everything's subscriptions restored. The fast part checks the
option, the back-off and the failure after the last attempt.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports.base import ANSWER, Outgoing
from mcp_input_sync.transports.stdio import StdioTransport

from .harness import PEERS_DIR, SDK_SERVER
from .http_peers import PeerProcess
from .test_everything import EVERYTHING, NODE22
from .test_oauth_fastmcp import FASTMCP_PYTHON

WAIT = 10.0
FASTMCP = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
needs_fastmcp = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")
needs_everything = pytest.mark.skipif(not (NODE22.exists() and EVERYTHING.exists()), reason="run peers/setup.sh")


class Sent(StdioTransport):
    """stdio that records every message it writes, and whose fresh self records into the same list.

    ``made`` lists every transport of the family, the current one last (its ``process`` is public).
    """

    def __init__(self, command: list[str], sent: Optional[list[dict[str, Any]]] = None, made: Optional[list["Sent"]] = None) -> None:
        super().__init__(command)
        self.sent = [] if sent is None else sent
        self.made = [] if made is None else made
        self.made.append(self)

    def fresh(self) -> "Sent":
        return Sent(self.command, self.sent, self.made)

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        if data:
            self.sent.extend(json.loads(line) for line in data.splitlines() if line.strip())
        super().send(data, info)


def kill(transport: Sent) -> int:
    """Kill the current stdio server of ``transport``'s family (SIGKILL) and reap it; returns its pid."""
    process = transport.made[-1].process
    assert process is not None
    process.kill()
    process.wait(WAIT)
    return int(process.pid)


def wait_state(client: mis.Client, state: mis.ClientState) -> None:
    assert _poll(lambda: client.state is state), f"still {client.state}"


def _poll(test: Any) -> bool:
    from mcp_input_sync._runtime import RealBudget

    return RealBudget(WAIT).wait_until(test, WAIT, step=0.01)


def methods(sent: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in sent if "method" in m and "id" in m]


# ---------------------------------------------------------------------------- the option


def test_the_option_takes_true_false_none_or_a_policy() -> None:
    assert mis.Reconnect() == mis.Reconnect(attempts=3, first_delay=0.5, max_delay=10.0)
    assert [mis.Reconnect(5, 1.0, 3.0).delay(n) for n in range(1, 6)] == [0.0, 1.0, 2.0, 3.0, 3.0]
    for bad in ("yes", 3):
        with pytest.raises(TypeError):
            mis.Client(StdioTransport(["true"]), reconnect=bad)
    wrong: list[tuple[tuple[Any, ...], type[Exception]]] = [
        ((0,), ValueError), ((3, 0.0), ValueError), ((3, 2.0, 1.0), ValueError), ((True,), TypeError), ((3, None), TypeError),
    ]
    for args, error in wrong:
        with pytest.raises(error):
            mis.Reconnect(*args)
    assert repr(mis.Reconnect()) == "Reconnect(attempts=3, first_delay=0.5, max_delay=10)"


def test_without_it_a_stdio_client_closes_when_its_server_dies() -> None:
    transport = Sent(SDK_SERVER)
    with mis.Client(transport) as client:  # off over stdio by default
        kill(transport)
        _poll(lambda: client.state is mis.ClientState.CLOSED)
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "x"})
    assert caught.value.kind == "closed" and "killed by signal" in str(caught.value)


# ---------------------------------------------------------------------------- stdio, FastMCP


@needs_fastmcp
def test_a_fastmcp_server_killed_between_calls_is_started_again(caplog: pytest.LogCaptureFixture) -> None:
    heard: list[tuple[str, str]] = []
    transport = Sent(FASTMCP)
    with mis.Client(transport, reconnect=True, discover_timeout=2) as client:
        client.subscribe(lambda method, params: heard.append((method, threading.current_thread().name)))
        assert client.call_tool("echo", {"text": "one"})["content"][0]["text"] == "one"
        client.call_tool("log_and_progress")
        assert _poll(lambda: len(heard) == 3)
        kill(transport)
        wait_state(client, mis.ClientState.BROKEN)
        with caplog.at_level(logging.INFO, logger="mcp_input_sync"):
            assert client.call_tool("echo", {"text": "two"})["content"][0]["text"] == "two"
        assert len(transport.made) == 2 and client.state is mis.ClientState.OPEN
        client.call_tool("log_and_progress")
        assert _poll(lambda: len(heard) == 6)  # the subscriber still hears the new server, on the same thread
    assert {method for method, _ in heard} == {"notifications/message"} and len({thread for _, thread in heard}) == 1
    assert "connected to server" in caplog.text and "again" in caplog.text


@needs_fastmcp
def test_a_call_in_flight_when_the_server_dies_fails_and_is_never_sent_again() -> None:
    asked, token_set = threading.Event(), threading.Event()

    class Waits(mis.InputHandler):
        def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
            asked.set()
            if ctx.wait_cancelled(WAIT):
                token_set.set()
            return {"action": "decline"}

    transport = Sent(FASTMCP)
    client = mis.Client(transport, handler=Waits(), reconnect=True, discover_timeout=2, protocol="legacy")
    failure: list[BaseException] = []

    def call() -> None:
        try:
            client.call_tool("elicit_dataclass")
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            failure.append(exc)

    with client:
        worker = threading.Thread(target=call)
        worker.start()
        assert asked.wait(WAIT)
        kill(transport)
        worker.join(WAIT)
        assert not worker.is_alive() and token_set.wait(WAIT)
        assert isinstance(failure[0], mis.ClientError) and failure[0].kind == "transport"
        assert client.call_tool("echo", {"text": "after"})["content"][0]["text"] == "after"
    calls = [m["params"]["name"] for m in transport.sent if m.get("method") == "tools/call"]
    assert calls == ["elicit_dataclass", "echo"]  # the call that was in flight went out once
    assert methods(transport.sent).count("initialize") == 2


class Holds(logging.Handler):
    """Holds the reader thread inside the log record ``words`` begins, so a test can act while it waits there."""

    def __init__(self, words: str) -> None:
        super().__init__(logging.INFO)
        self.words, self.inside, self.go_on = words, threading.Event(), threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage() and not self.inside.is_set():
            self.inside.set()
            self.go_on.wait(3 * WAIT)  # longer than any wait of the test: it lets go first


def test_a_call_made_as_the_server_dies_connects_again_and_goes_out() -> None:
    """Found by the soak (benchmarks/soak.py): a call made after the reader failed the calls in flight, but
    before it marked the connection broken, raised ``closed`` (the client is gone) though the next one
    connected again. Now that call marks it broken itself and connects again; the reader is held in between."""
    transport = Sent(SDK_SERVER)
    holds = Holds("the server closed the connection")
    logger = logging.getLogger("mcp_input_sync")
    level = logger.level
    answer: list[Any] = []
    with mis.Client(transport, reconnect=True) as client:
        logger.addHandler(holds)
        logger.setLevel(logging.INFO)
        try:
            kill(transport)
            assert holds.inside.wait(WAIT)  # the calls in flight have failed; the reader has not marked it broken
            caller = threading.Thread(target=lambda: _catch(answer, lambda: answer.append(client.call_tool("echo", {"text": "x"}))))
            caller.start()
            assert _poll(lambda: client.state is not mis.ClientState.OPEN)  # the caller marked it, not the held reader
        finally:
            holds.go_on.set()
            logger.removeHandler(holds)
            logger.setLevel(level)
        caller.join(WAIT)
        assert not caller.is_alive() and answer and not isinstance(answer[0], BaseException), answer
        assert answer[0]["content"][0]["text"] == "x" and client.state is mis.ClientState.OPEN
    assert len(transport.made) == 2 and [m["params"]["arguments"]["text"] for m in transport.sent if m.get("method") == "tools/call"] == ["x"]


def test_every_attempt_failing_names_the_attempts_and_the_last_cause(tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    wrapper = tmp_path / "server.py"
    wrapper.write_text(
        "import runpy, sys\n"
        f"if __import__('os').path.exists({str(flag)!r}):\n"
        "    sys.stderr.write('fatal: the configuration is gone\\n')\n"
        "    sys.exit(3)\n"
        f"sys.argv = [{SDK_SERVER[1]!r}]\n"
        f"runpy.run_path({SDK_SERVER[1]!r}, run_name='__main__')\n"
    )
    policy = mis.Reconnect(attempts=2, first_delay=0.01, max_delay=0.01)
    transport = Sent([sys.executable, str(wrapper)])
    with mis.Client(transport, reconnect=policy, discover_timeout=1, timeout=5) as client:
        flag.write_text("")
        kill(transport)
        wait_state(client, mis.ClientState.BROKEN)
        with pytest.raises(mis.ClientError) as caught:
            client.call_tool("echo", {"text": "x"})
        assert client.state is mis.ClientState.BROKEN  # the next call tries again
        flag.unlink()
        assert client.call_tool("echo", {"text": "back"})["content"][0]["text"] == "back"
    text = str(caught.value)
    assert caught.value.kind == "transport" and "in 2 attempts" in text
    assert "status 3" in text and "fatal: the configuration is gone" in text


def test_close_during_the_back_off_returns_at_once(tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    wrapper = tmp_path / "server.py"
    wrapper.write_text(
        f"import os, runpy, sys\nif os.path.exists({str(flag)!r}):\n    sys.exit(3)\n"
        f"sys.argv = [{SDK_SERVER[1]!r}]\nrunpy.run_path({SDK_SERVER[1]!r}, run_name='__main__')\n"
    )
    transport = Sent([sys.executable, str(wrapper)])
    client = mis.Client(transport, reconnect=mis.Reconnect(attempts=5, first_delay=600, max_delay=600), timeout=5).open()
    flag.write_text("")
    kill(transport)
    wait_state(client, mis.ClientState.BROKEN)
    failure: list[BaseException] = []
    waiting = threading.Thread(target=lambda: _catch(failure, lambda: client.call_tool("echo", {"text": "x"})))
    waiting.start()
    assert _poll(lambda: len(transport.made) == 2 and transport.made[1].process is not None and transport.made[1].process.poll() == 3)
    client.close(timeout=WAIT)  # the first attempt failed: the caller waits 600 s for the second
    waiting.join(WAIT)
    assert not waiting.is_alive()
    assert isinstance(failure[0], mis.ClientError) and failure[0].kind == "closed"
    assert client.state is mis.ClientState.CLOSED


def _catch(into: list[BaseException], work: Any) -> None:
    try:
        work()
    except BaseException as exc:  # noqa: BLE001 - the test reads it
        into.append(exc)


# ---------------------------------------------------------------------------- HTTP


@pytest.fixture
def server() -> Iterator[PeerProcess]:
    made = PeerProcess(FASTMCP)
    yield made
    made.stop()


@needs_fastmcp
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_an_http_server_stopped_and_started_again_on_the_same_port(server: PeerProcess, protocol: str) -> None:
    with mis.connect_http(server.start().url, protocol=protocol) as client:
        era = client.era
        assert client.call_tool("echo", {"text": "one"})["content"][0]["text"] == "one"
        server.stop()
        with pytest.raises(mis.ClientError) as down:
            client.call_tool("echo", {"text": "down"})
        assert down.value.kind == "transport" and down.value.check == "unreachable"
        assert client.state is mis.ClientState.BROKEN
        server.start()
        assert client.call_tool("echo", {"text": "two"})["content"][0]["text"] == "two"
        assert client.state.value == "open" and client.era == era


def test_a_server_restarted_in_the_other_era_is_met_in_it() -> None:
    legacy = [sys.executable, str(PEERS_DIR / "sdk_legacy_server.py")]
    modern = [sys.executable, str(PEERS_DIR / "sdk_modern_server.py")]  # serves both eras: prefer-modern picks 2026-07-28
    server = PeerProcess(legacy).start()
    try:
        with mis.connect_http(server.url, protocol="prefer-modern") as client:
            assert client.era == "legacy"  # the handshake era's server knows no server/discover
            server.stop()
            with pytest.raises(mis.ClientError):
                client.call_tool("echo", {"text": "down"})
            server.start(modern)
            assert client.call_tool("echo", {"text": "now"})["content"][0]["text"] == "now"
            assert client.era == "modern"
    finally:
        server.stop()


def test_without_it_an_http_client_stays_open_and_the_next_call_goes_out_as_before(server: PeerProcess) -> None:
    legacy = PeerProcess([sys.executable, str(PEERS_DIR / "sdk_legacy_server.py")])
    with mis.connect_http(legacy.start().url, reconnect=False) as client:
        legacy.stop()
        with pytest.raises(mis.ClientError) as down:
            client.call_tool("echo", {"text": "down"})
        assert down.value.check == "unreachable" and client.state is mis.ClientState.OPEN
        legacy.start()  # the lost session is met by one new handshake on its 404, as before
        assert client.call_tool("echo", {"text": "two"})["content"][0]["text"] == "two"
    legacy.stop()


# ---------------------------------------------------------------------------- subscriptions


@needs_everything
def test_server_everything_subscriptions_are_restored() -> None:
    transport = Sent([str(NODE22), str(EVERYTHING), "stdio"])
    with mis.Client(transport, reconnect=True, discover_timeout=2) as client:
        resource = client.list_resources()[0]["uri"]
        client.subscribe_resource(resource)
        other = client.list_resources()[1]["uri"]
        client.subscribe_resource(other)
        client.unsubscribe_resource(other)
        kill(transport)
        wait_state(client, mis.ClientState.BROKEN)
        assert client.list_tools()
    subscribed = [m["params"]["uri"] for m in transport.sent if m.get("method") == "resources/subscribe"]
    assert subscribed == [resource, other, resource]  # the one still wanted, again on the new connection
    assert methods(transport.sent).count("initialize") == 2
