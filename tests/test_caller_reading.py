"""A 2026-07-28 call over stdio reads its own rounds: the reader hands the reading to the caller.

After an ``input_required`` answer to a retry, the caller will send again and
wait at once, so the reader lets it read its next answer itself: one thread
switch less a round. The reading must come back to the reader thread whenever
the caller does not read: a slow callback, a cancelled call, a server that
ends, a close (docs/threads-and-time.md#threads). The tests watch the
transport's reading seat from outside (``transport.seat``: its state and how
many times the caller began to read); the seat's transitions alone are
tests/test_reading_seat.py.
"""

from __future__ import annotations

import select
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.transports.base import OnClose, OnMessage
from mcp_input_sync.transports.stdio import StdioTransport

WAIT = 10.0

SERVER = r"""
import json, sys
out = sys.stdout
def send(m):
    out.write(json.dumps(m) + "\n"); out.flush()
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
V = "2026-07-28"
for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": rid, "result": {"supportedVersions": [V], "capabilities": {"tools": {}},
              "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rounds", "version": "1"}}}})
    elif method == "tools/call":
        name, args = params["name"], params.get("arguments") or {}
        done = int(params.get("requestState") or 0) + (1 if params.get("inputResponses") else 0)
        if name == "rounds" and done >= args["n"]:
            send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "content": [{"type": "text", "text": str(done)}]}})
            continue
        if name == "stall" and done >= 2:
            send({"jsonrpc": "2.0", "method": "notifications/stalled", "params": {}})
            if args.get("die"):
                sys.exit(3)
            continue  # never answers this retry
        send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "input_required", "requestState": str(done),
              "inputRequests": {"q": {"method": "elicitation/create", "params": {"mode": "form", "message": f"round {done}", "requestedSchema": SCHEMA}}}}})
        if name == "rounds" and args.get("note_after") == done:
            send({"jsonrpc": "2.0", "method": "notifications/between", "params": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete"}})
"""


class Answers(mis.InputHandler):
    """Accepts every form; records the thread of each notification."""

    def __init__(self) -> None:
        self.noted: dict[str, threading.Event] = {"notifications/between": threading.Event(), "notifications/stalled": threading.Event()}
        self.wait_in_round = -1
        self.read_meanwhile = False

    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        if params["message"] == f"round {self.wait_in_round}":
            # blocks until the server's next message was read: the caller does not read now
            self.read_meanwhile = self.noted["notifications/between"].wait(WAIT)
        return {"action": "accept", "content": {"answer": "a"}}

    def handle_notification(self, method: str, params: Any, ctx: mis.InputContext) -> None:
        if method in self.noted:
            self.noted[method].set()


@pytest.fixture
def server(tmp_path: Path) -> Path:
    script = tmp_path / "rounds_server.py"
    script.write_text(SERVER)
    return script


def open_with(server: Path, handler: mis.InputHandler, transport: Optional[StdioTransport] = None) -> tuple[mis.Client, StdioTransport]:
    transport = transport or StdioTransport([sys.executable, str(server)])
    client = mis.Client(transport, handler=handler, protocol="modern", timeout=WAIT, max_rounds=100, input_rate_limit=(1000, 1000))
    client.open()
    return client, transport


def open_client(server: Path, handler: mis.InputHandler) -> mis.Client:
    return open_with(server, handler)[0]


def reading_back(transport: StdioTransport) -> bool:
    """Bounded: True once the reading is with the reader thread again."""
    deadline = time.monotonic() + WAIT
    while transport.seat.state != "READER" and time.monotonic() < deadline:
        threading.Event().wait(0.005)
    return transport.seat.state == "READER" and transport.seat.holder == 0


@pytest.fixture
def no_leaks() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and [t for t in threading.enumerate() if t not in before and t.name.startswith("mcp-input-sync-")]:
        threading.Event().wait(0.01)
    assert not [t.name for t in threading.enumerate() if t not in before and t.name.startswith("mcp-input-sync-")]


def test_the_rounds_after_the_first_retry_are_read_by_the_caller(server: Path, no_leaks: None) -> None:
    client, transport = open_with(server, Answers())
    with client:
        assert client.call_tool("rounds", {"n": 40})["content"][0]["text"] == "40"
        # the first answer and the one to the first retry come through the reader; the rest the caller read
        assert transport.seat.caller_reads >= 38
        assert reading_back(transport)  # given back as the call ended
        assert client.call_tool("rounds", {"n": 1})["content"][0]["text"] == "1"  # the reader reads again
        assert client.call_tool("rounds", {"n": 5})["content"][0]["text"] == "5"


def test_a_slow_callback_gets_the_reading_back_to_the_reader(server: Path, no_leaks: None) -> None:
    handler = Answers()
    handler.wait_in_round = 3
    with open_client(server, handler) as client:
        # the server sends a notification right behind round 3's question, which the caller
        # holds the reading for; its callback waits for that notification: only a reader
        # that took the reading back can read it
        result = client.call_tool("rounds", {"n": 6, "note_after": 3})
        assert result["content"][0]["text"] == "6"
        assert handler.read_meanwhile


def test_a_cancelled_call_gives_the_reading_back(server: Path, no_leaks: None) -> None:
    handler = Answers()
    client, transport = open_with(server, handler)
    with client:
        cancel = threading.Event()
        stalled = handler.noted["notifications/stalled"]
        # the server reports that it will not answer; the caller, reading itself, gets that too
        def cancel_when_stalled() -> None:
            if stalled.wait(WAIT):
                cancel.set()

        threading.Thread(target=cancel_when_stalled, daemon=True).start()
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("stall", {}, cancel=cancel)
        assert info.value.kind == "cancelled"
        assert reading_back(transport)
        assert client.call_tool("rounds", {"n": 2})["content"][0]["text"] == "2"


def test_a_server_that_ends_while_the_caller_reads_fails_the_call(server: Path, no_leaks: None) -> None:
    with open_client(server, Answers()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("stall", {"die": True})
        assert info.value.kind == "transport"
        assert "3" in str(info.value)  # the exit status, read by the reader thread that ended the connection


def test_close_while_the_caller_reads_ends_the_call_and_every_thread(server: Path, no_leaks: None) -> None:
    handler = Answers()
    client = open_client(server, handler)
    box: list[BaseException] = []

    def call() -> None:
        try:
            client.call_tool("stall", {})
        except mis.ClientError as exc:
            box.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert handler.noted["notifications/stalled"].wait(WAIT)
    finally:
        client.close(timeout=5.0)
        caller.join(WAIT)
    assert not caller.is_alive()
    assert isinstance(box[0], mis.ClientError) and box[0].kind == "closed"


def test_only_the_thread_offered_the_reading_reads() -> None:
    transport = StdioTransport([sys.executable, "-c", "pass"])
    assert transport.read_here(lambda: False, 0.0) is False  # nothing was offered
    transport.release_reading()  # nothing held: nothing happens
    assert transport.seat.state == "READER" and transport.seat.holder == 0


def test_rounds_of_two_threads_at_once_each_get_their_own_answers(server: Path, no_leaks: None) -> None:
    with open_client(server, Answers()) as client:
        results: dict[int, str] = {}

        def rounds(n: int) -> None:
            results[n] = client.call_tool("rounds", {"n": n})["content"][0]["text"]

        threads = [threading.Thread(target=rounds, args=(n,)) for n in (25, 30, 35)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert results == {25: "25", 30: "30", 35: "35"}


class Interrupting:
    """Stands in for a part the caller uses while it reads: raises KeyboardInterrupt (as Ctrl-C would) once."""

    def __init__(self, when: Any) -> None:
        self.when = when
        self.fired = False

    def hit(self, *args: Any) -> bool:
        if not self.fired and self.when(*args):
            self.fired = True
            return True
        return False


def test_ctrl_c_while_the_caller_waits_for_the_server_leaves_the_connection_whole(
    server: Path, no_leaks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = threading.get_ident()
    stand_in = Interrupting(lambda: threading.get_ident() == caller)
    real_poll = select.poll

    class Poll:
        """``select.poll`` as the transport's seat gets it: its first wait on the calling thread is cut by a Ctrl-C."""

        def __init__(self) -> None:
            self.real = real_poll()

        def register(self, fd: int, mask: int) -> None:
            self.real.register(fd, mask)

        def poll(self, timeout: float) -> Any:
            if stand_in.hit():
                raise KeyboardInterrupt
            return self.real.poll(timeout)

    with monkeypatch.context() as patch:  # only while the client opens: the seat makes its polls then
        patch.setattr(select, "poll", Poll)
        client, transport = open_with(server, Answers())
    with client:
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("rounds", {"n": 4})
        assert stand_in.fired and reading_back(transport)
        assert client.call_tool("rounds", {"n": 4})["content"][0]["text"] == "4"  # nothing was cut


class CutsRoundThree(StdioTransport):
    """Its ``on_message`` raises KeyboardInterrupt (as Ctrl-C would) in the middle of round 3's question, on the caller."""

    def __init__(self, command: list[str]) -> None:
        super().__init__(command)
        caller = threading.get_ident()
        self.stand_in = Interrupting(lambda line: b"round 3" in line and threading.get_ident() == caller)

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        def handle(line: bytes, stream: Any = None) -> None:
            if self.stand_in.hit(line):
                raise KeyboardInterrupt  # as if in the middle of it: the message may be half handled
            on_message(line)

        super().start(handle, on_close)


def test_ctrl_c_while_the_caller_handles_a_message_ends_the_connection(server: Path, no_leaks: None) -> None:
    transport = CutsRoundThree([sys.executable, str(server)])
    client, _ = open_with(server, Answers(), transport)
    with client:
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("rounds", {"n": 6})
        assert transport.stand_in.fired
        # never read on from the middle of a message: the connection ended, and says why
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("rounds", {"n": 1})
        assert info.value.kind in ("transport", "closed")
        assert "interrupted (Ctrl-C)" in str(info.value), str(info.value)


class CallsBack(Answers):
    """In rounds 1 and 2 the callback calls its own client: a call (whose answer it never reads itself) and a ping."""

    def __init__(self) -> None:
        super().__init__()
        self.client: Any = None
        self.outcomes: list[str] = []

    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        if params["message"] in ("round 1", "round 2"):
            for nested in (lambda: self.client.call_tool("rounds", {"n": 0}, timeout=3.0), lambda: self.client.ping(timeout=3.0)):
                try:
                    nested()
                    self.outcomes.append("ok")
                except mis.ClientError as exc:
                    self.outcomes.append(exc.kind)
        return super().handle_elicitation(params, ctx)


def test_a_callback_that_calls_its_client_while_the_caller_holds_the_reading_gets_its_answers(server: Path, no_leaks: None) -> None:
    # from round 1 the caller holds the reading; a request it sends that it will not read itself gives the
    # reading back first (before, the parked reader left its answer to a caller that never read it: a timeout)
    handler = CallsBack()
    client, transport = open_with(server, handler)
    handler.client = client
    with client:
        assert client.call_tool("rounds", {"n": 4})["content"][0]["text"] == "4"
        assert handler.outcomes == ["ok"] * 4
        assert client.call_tool("rounds", {"n": 40})["content"][0]["text"] == "40"
        assert transport.seat.caller_reads >= 38  # the caller still reads its own rounds
