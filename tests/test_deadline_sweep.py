"""handler_timeout is enforced by one sweep of the open requests, which stops when none is open."""

from __future__ import annotations

import threading
from typing import Any

import mcp_input_sync as mis
from mcp_input_sync.testing import FakeServer

WAIT = 10.0
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


def test_the_sweep_runs_only_while_requests_are_open() -> None:
    release = threading.Event()
    started = threading.Event()

    class Slow(mis.InputHandler):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            started.set()
            release.wait(WAIT)
            return {"action": "accept", "content": {"answer": "ok"}}

    with FakeServer() as fake:
        client = fake.client(Slow()).open()
        watchdog = client._watchdog
        assert watchdog is not None
        assert watchdog._watchers == []  # idle: nothing to sweep, nothing wakes the watchdog
        fake.send_request(7, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
        assert started.wait(WAIT)
        assert len(watchdog._watchers) == 1  # one sweep, however many requests are open
        fake.send_request(8, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
        release.set()
        assert fake.wait_for_answer(7)["result"]["action"] == "accept"
        assert fake.wait_for_answer(8)["result"]["action"] == "accept"
        pause = threading.Event()
        for _ in range(200):  # the sweep notices the empty inbox on its next wake (0.1 s)
            if not watchdog._watchers:
                break
            pause.wait(0.02)
        assert watchdog._watchers == []
        client.close()


def test_a_deadline_past_in_the_sweep_answers_internal_error_once() -> None:
    release = threading.Event()

    class Stuck(mis.InputHandler):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            ctx.wait_cancelled(WAIT)
            release.set()
            return {"action": "accept", "content": {"answer": "late"}}

    with FakeServer() as fake:
        client = fake.client(Stuck(), handler_timeout=0.2).open()
        fake.send_request(9, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
        answer = fake.wait_for_answer(9)
        assert answer["error"]["code"] == -32603
        assert release.wait(WAIT)  # the token was set
        assert client.stats["timed_out"] == 1
        assert len([m for m in fake.answers if m.get("id") == 9]) == 1  # the late result is dropped
        client.close()


def test_a_sweep_that_stops_first_writes_the_answers_held_back() -> None:
    # Answers held back on stdio are normally written with the next one; when the request
    # behind them was cancelled, the sweep that finds nothing open is the one to write them.
    with FakeServer() as fake:
        client = fake.client(mis.InputHandler()).open()
        responder, desk = client._legacy, client._desk
        assert responder is not None and desk is not None
        flushed: list[int] = []
        responder.flush = lambda: flushed.append(1)
        with client._stats.lock:
            desk.sweeping = True
        assert desk._sweep() is True
        assert flushed == [1] and not desk.sweeping
        client.close()
