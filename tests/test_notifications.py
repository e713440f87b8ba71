"""Notifications, logs, progress and subscriptions (docs/index.md#notifications-and-logs, docs/safety.md#logs)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer

from .harness import Peer

JsonDict = dict[str, Any]
WAIT = 10.0


class Collecting(mis.InputHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any, str]] = []
        self.count = threading.Semaphore(0)

    def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
        self.events.append((method, params, threading.current_thread().name))
        assert ctx.client == "mcp_input_sync" and ctx.era == "legacy" and ctx.mode is None
        self.count.release()

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        self.events.append(("log", entry, threading.current_thread().name))
        self.count.release()


def wait_count(handler: Collecting, n: int) -> None:
    for _ in range(n):
        assert handler.count.acquire(timeout=WAIT)


def test_logs_and_progress_reach_the_handler_and_the_call_in_order(peer: Peer) -> None:
    handler = Collecting()
    client = peer.client(handler)
    updates: list[JsonDict] = []
    result = client.call_tool("log_and_progress", {"steps": 3}, progress=updates.append)
    assert result["content"][0]["text"] == "done 3 steps"
    wait_count(handler, 3)
    logs = [e for e in handler.events if e[0] == "log"]
    assert [entry for _, entry, _ in logs] == [
        {"level": "info", "logger": "sdk-peer", "data": f"step {i}/3"} for i in (1, 2, 3)
    ]
    assert all(name.startswith("mcp-input-sync-notify-") for *_, name in logs)
    # progress reaches the call's callback on the notification thread, in order (drained by close)
    peer.close()
    assert [u["progress"] for u in updates] == [1, 2, 3]
    assert all(u["total"] == 3 for u in updates)
    call = peer.sent_method("tools/call")[0]
    assert "progressToken" in call["params"]["_meta"]
    assert client.stats["logs_delivered"] == 3


def test_a_progress_token_is_sent_only_with_a_progress_callback(peer: Peer) -> None:
    client = peer.client()
    client.call_tool("echo", {"text": "a"})
    client.call_tool("echo", {"text": "b"}, progress=lambda p: None)
    client.call_tool("echo", {"text": "c"}, progress=lambda p: None)
    first, second, third = peer.sent_method("tools/call")
    assert "_meta" not in first["params"]
    assert second["params"]["_meta"]["progressToken"] != third["params"]["_meta"]["progressToken"]


def test_set_level_is_sent_when_logs_are_wanted_and_the_server_declares_logging(fake: FakeServer) -> None:
    with mis.Client(fake.transport, handler=Collecting(), log_level="warning"):
        pass
    assert fake.log_level == "warning"
    assert fake.requests_seen("logging/setLevel")[0] == {"level": "warning"}


def test_set_level_is_not_sent_when_nobody_wants_logs(fake: FakeServer) -> None:
    with mis.Client(fake.transport, handler=None):
        pass
    assert fake.requests_seen("logging/setLevel") == []


def test_the_first_subscriber_asks_for_logs(fake: FakeServer) -> None:
    with mis.Client(fake.transport) as client:
        sub = client.subscribe(lambda method, params: None)
        fake.wait_for("logging/setLevel")
        sub.unsubscribe()
        sub.unsubscribe()
    assert len(fake.requests_seen("logging/setLevel")) == 1


def test_notifications_run_on_one_thread_in_arrival_order(fake: FakeServer) -> None:
    handler = Collecting()
    with mis.Client(fake.transport, handler=handler):
        for i in range(200):
            fake.notify("notifications/resources/updated", {"uri": f"file:///{i}"})
        wait_count(handler, 200)
    assert [p["uri"] for _, p, _ in handler.events] == [f"file:///{i}" for i in range(200)]
    assert len({name for *_, name in handler.events}) == 1


def test_a_raising_hook_is_logged_and_skipped(fake: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    class Flaky(mis.InputHandler):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            if params.get("n") == 1:
                raise RuntimeError("hook broke")
            seen.append(method)

    got = threading.Semaphore(0)
    with mis.Client(fake.transport, handler=Flaky()) as client:
        client.subscribe(lambda method, params: got.release())
        with caplog.at_level(logging.ERROR, logger="mcp_input_sync"):
            for n in range(3):
                fake.notify("notifications/tools/list_changed", {"n": n})
            for _ in range(3):
                assert got.acquire(timeout=WAIT)
    assert seen == ["notifications/tools/list_changed"] * 2
    assert "hook broke" in caplog.text


def test_beyond_1000_waiting_notifications_new_ones_are_dropped_and_counted(fake: FakeServer) -> None:
    gate = threading.Event()
    entered = threading.Event()
    count = [0]

    class Blocked(mis.InputHandler):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            entered.set()
            gate.wait(WAIT)
            count[0] += 1

    with mis.Client(fake.transport, handler=Blocked()) as client:
        fake.notify("notifications/tools/list_changed", {})
        assert entered.wait(WAIT)
        for _ in range(1100):
            fake.notify("notifications/tools/list_changed", {})
        fake.send_request("sync", "ping")  # handled by the reader after the 1100 notifications
        fake.wait_for_answer("sync")
        assert client.stats["notifications_dropped"] == 100
        gate.set()


def test_subscribers_see_notifications_after_the_hook_and_logs_sanitised(fake: FakeServer) -> None:
    order: list[str] = []
    params_seen: list[JsonDict] = []
    got = threading.Semaphore(0)

    class Hooked(mis.InputHandler):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            order.append("hook")

    def subscriber(method: str, params: JsonDict) -> None:
        order.append(method)
        params_seen.append(params)
        got.release()

    with mis.Client(fake.transport, handler=Hooked()) as client:
        with client.subscribe(subscriber):
            fake.notify("notifications/prompts/list_changed")
            fake.notify("notifications/message", {"level": "LOUD", "logger": "x\u202ey", "data": "a\x00b", "extra": 1})
            assert got.acquire(timeout=WAIT) and got.acquire(timeout=WAIT)
    assert order == ["hook", "notifications/prompts/list_changed", "notifications/message"]
    assert params_seen[1] == {"level": "info", "logger": "xy", "data": "ab"}


def test_without_handle_log_entries_go_to_python_logging(fake: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    got = threading.Semaphore(0)
    with caplog.at_level(logging.DEBUG, logger="mcp_input_sync.server.memory"):
        with mis.Client(fake.transport) as client:
            client.subscribe(lambda m, p: got.release())
            fake.notify("notifications/message", {"level": "error", "logger": "db", "data": "disk \x1b[31mfull"})
            assert got.acquire(timeout=WAIT)
    (record,) = [r for r in caplog.records if r.name == "mcp_input_sync.server.memory"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "[db] disk [31mfull"


def test_progress_for_an_unknown_token_is_dropped(fake: FakeServer) -> None:
    handler = Collecting()
    with mis.Client(fake.transport, handler=handler):
        fake.notify("notifications/progress", {"progressToken": "nobody", "progress": 1})
        fake.notify("notifications/tools/list_changed")
        wait_count(handler, 1)
    assert [m for m, *_ in handler.events] == ["notifications/tools/list_changed"]
