"""Time travel with freezegun, and shutdown (docs/threads-and-time.md#time-and-freezegun, docs/threads-and-time.md#shutdown)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from freezegun import freeze_time
import freezegun.api

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.transports import StdioTransport

from .harness import PEERS_DIR
from .test_legacy_requests import in_thread

JsonDict = dict[str, Any]
WAIT = 10.0


def real_now() -> float:
    """Real monotonic time, even under a freeze (freezegun leaves its own module alone)."""
    return freezegun.api.real_monotonic()
STUBBORN = [sys.executable, str(PEERS_DIR / "stubborn_server.py")]
# "within about a second of real time": the library re-reads the clock every
# 0.5 s of real time; the margin absorbs a loaded CI machine.
ABOUT_A_SECOND = 2.5


def with_tools(server: FakeServer) -> FakeServer:
    """The tools these tests call, on the public kit's fake."""

    @server.tool
    def echo(call: ToolCall) -> str:
        return str(call.arguments.get("text", ""))

    @server.tool
    def slow(call: ToolCall) -> str:
        call.cancelled.wait(float(call.arguments.get("seconds", 30)))  # real seconds
        return "slept"

    @server.tool
    def elicit_form(call: ToolCall) -> str:
        answer = call.elicit("Please fill the form", {"type": "object", "properties": {}}, timeout=30)
        return str(answer.get("action"))

    return server


class Waiting(mis.InputHandler):
    def __init__(self) -> None:
        self.entered = threading.Event()
        self.cancel_seen_on: list[str] = []

    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        self.entered.set()
        if ctx.wait_cancelled(WAIT):
            self.cancel_seen_on.append(threading.current_thread().name)
        return {"action": "decline"}


def test_a_300s_elicitation_timeout_fires_within_a_second_of_tick() -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:
        server = FakeServer(timeout=WAIT)
        handler = Waiting()
        with mis.Client(server.transport, handler=handler) as client:
            server.send_request(7, "elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {}}})
            assert handler.entered.wait(WAIT)
            frozen.tick(299)
            started = real_now()
            frozen.tick(2)
            answer = server.wait_for_answer(7)
            assert [a for a in server.answers if a["id"] == 7] == [answer]  # answered once
            elapsed = real_now() - started
            assert answer["error"]["code"] == -32603
            assert elapsed < ABOUT_A_SECOND
            assert client.stats["timed_out"] == 1
        server.close()
    assert handler.cancel_seen_on and handler.cancel_seen_on[0].startswith("mcp-input-sync-worker-")


def test_a_60s_call_timeout_fires_within_a_second_of_tick() -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:
        server = with_tools(FakeServer(timeout=WAIT))
        with mis.Client(server.transport) as client:
            thread, box = in_thread(client.call_tool, "slow", {"seconds": 30})
            server.wait_for("tools/call")
            frozen.tick(59)
            started = real_now()
            frozen.tick(2)
            thread.join(WAIT)
            elapsed = real_now() - started
            assert box["error"].kind == "timeout"
            assert elapsed < ABOUT_A_SECOND
        server.close()


def test_time_spent_in_a_tied_callback_does_not_count_against_the_call_timeout() -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:

        class Thinking(mis.InputHandler):
            def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
                frozen.tick(3600)  # the user took an hour; the call's 60 s timeout is paused
                return {"action": "decline"}

        server = with_tools(FakeServer(timeout=WAIT))
        with mis.Client(server.transport, handler=Thinking()) as client:
            result = client.call_tool("elicit_form", timeout=60, max_total_timeout=7200)
            assert not result["isError"]
            assert result["content"][0]["text"] == "decline"
        server.close()


def test_close_returns_under_a_frozen_clock_against_a_server_that_ignores_eof() -> None:
    release = threading.Event()
    entered = threading.Event()

    class IgnoresToken(mis.InputHandler):
        def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
            entered.set()
            release.wait(WAIT)  # ignores ctx.cancelled on purpose
            return {"action": "decline"}

    with freeze_time("2026-11-29 12:00:00"):
        transport = StdioTransport(STUBBORN)  # what connect_stdio builds, kept to see its process
        client = mis.Client(transport, handler=IgnoresToken(), protocol="legacy").open()
        thread, box = in_thread(client.call_tool, "anything")
        assert entered.wait(WAIT)
        started = real_now()
        client.close(timeout=2.0)
        elapsed = real_now() - started
    try:
        assert elapsed < 2.0 + 1.0
        assert client.stats["stuck_callbacks"] == 1
        process = transport.process
        assert process is not None and process.poll() is not None  # killed: it ignored EOF and SIGTERM
        thread.join(WAIT)
        assert box["error"].kind == "closed"
    finally:
        release.set()


def test_a_process_whose_callback_ignores_cancellation_exits_promptly_after_close() -> None:
    script = textwrap.dedent(
        f"""
        import sys, threading
        import mcp_input_sync as mis

        entered = threading.Event()

        class Forever(mis.InputHandler):
            def handle_elicitation(self, params, ctx):
                entered.set()
                threading.Event().wait()  # never returns, ignores its token

        client = mis.connect_stdio({STUBBORN!r}, handler=Forever(), protocol="legacy")
        threading.Thread(target=lambda: client.call_tool("x"), daemon=True).start()
        assert entered.wait(10)
        client.close(timeout=1.0)
        print("closed", client.stats["stuck_callbacks"], flush=True)
        """
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["closed", "1"]


def test_an_idle_client_runs_only_its_reader() -> None:
    # a host with many servers open holds one thread per idle memory client, none per idle HTTP client
    server = with_tools(FakeServer(timeout=WAIT))
    before = set(threading.enumerate())
    client = mis.Client(server.transport, handler=Waiting()).open()
    try:
        started = {t.name.rsplit("-", 1)[0] for t in set(threading.enumerate()) - before if t.name.startswith("mcp-input-sync-")}
        assert started == {"mcp-input-sync-reader"}
    finally:
        client.close()
        server.close()


def test_close_joins_every_library_thread() -> None:
    server = with_tools(FakeServer(timeout=WAIT))
    client = mis.Client(server.transport, handler=Waiting())
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-")]  # nothing before open
    client.open()
    client.call_tool("echo", {"text": "x"})
    names = {t.name.rsplit("-", 1)[0] for t in threading.enumerate() if t.name.startswith("mcp-input-sync-")}
    # the watchdog and the notification thread start when first needed (docs/threads-and-time.md)
    assert "mcp-input-sync-reader" in names <= {"mcp-input-sync-reader", "mcp-input-sync-notify", "mcp-input-sync-watchdog"}
    client.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-") and t.is_alive()]
    server.close()


FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}


class Quick(mis.InputHandler):
    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "accept", "content": {}}

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        pass


def answer_codes(server: FakeServer, ids: range) -> list[Any]:
    answers = [server.wait_for_answer(i) for i in ids]
    return [a["error"]["code"] if "error" in a else "ok" for a in answers]


def test_the_input_budget_refills_after_a_tick() -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:
        server = FakeServer(timeout=WAIT)
        with mis.Client(server.transport, handler=Quick(), max_server_requests=64) as client:
            for i in range(21):
                server.send_request(i, "elicitation/create", FORM)
            assert answer_codes(server, range(21)) == ["ok"] * 20 + [-32000]
            frozen.tick(1.0)  # 10 tokens per second
            for i in range(100, 111):
                server.send_request(i, "elicitation/create", FORM)
            assert answer_codes(server, range(100, 111)) == ["ok"] * 10 + [-32000]
            frozen.tick(3600)  # never more than the burst of 20
            for i in range(200, 221):
                server.send_request(i, "elicitation/create", FORM)
            assert answer_codes(server, range(200, 221)) == ["ok"] * 20 + [-32000]
            assert client.stats["refused"]["elicitation"]["budget"] == 3
        server.close()


def test_the_log_rate_limit_refills_after_a_tick() -> None:
    with freeze_time("2026-11-29 12:00:00") as frozen:
        server = FakeServer(timeout=WAIT)
        with mis.Client(server.transport, handler=Quick()) as client:

            def burst(n: int, tag: str) -> None:
                for _ in range(n):
                    server.notify("notifications/message", {"level": "info", "data": "x"})
                server.send_request(tag, "ping")  # answered after the logs were read
                server.wait_for_answer(tag)

            burst(120, "a")
            assert (client.stats["logs_dropped"], client.stats["notifications_dropped"]) == (20, 0)
            frozen.tick(1.0)  # 50 per second
            burst(60, "b")
            assert client.stats["logs_dropped"] == 30
        server.close()


def test_two_clients_never_share_a_budget() -> None:
    servers = [FakeServer(timeout=WAIT), FakeServer(timeout=WAIT)]
    clients = [mis.Client(s.transport, handler=Quick(), server_id="same", input_rate_limit=(0.001, 2)).open() for s in servers]
    try:
        for server in servers:
            for i in range(3):
                server.send_request(i, "elicitation/create", FORM)
            assert answer_codes(server, range(3)) == ["ok", "ok", -32000]
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.close()


DEAF = [
    sys.executable,
    "-c",
    "import json, sys, threading\n"
    "m = json.loads(sys.stdin.readline())\n"
    "print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': '2025-11-25', 'capabilities': {}, 'serverInfo': {'name': 'deaf', 'version': '1'}}}), flush=True)\n"
    "sys.stdin.readline()\n"
    "threading.Event().wait()  # never reads stdin again\n",
]


def test_a_server_that_stops_reading_stdin_cannot_hang_a_call_or_close() -> None:
    from mcp_input_sync.transports import StdioTransport

    transport = StdioTransport(DEAF)
    transport.write_timeout = 1.0
    client = mis.Client(transport, protocol="legacy")
    client.open()
    started = real_now()
    with pytest.raises(mis.ClientError) as info:
        client.call_tool("big", {"blob": "x" * 4_000_000}, timeout=30)
    assert info.value.kind in ("transport", "closed")
    client.close(timeout=2.0)
    assert real_now() - started < 10
    assert transport.process is not None and transport.process.poll() is not None
