"""handler_timeout is enforced by one sweep of the open requests, which stops when none is open."""

from __future__ import annotations

import threading
from typing import Any

import mcp_input_sync as mis
from mcp_input_sync import _clock
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync._runtime.deadlines import DeadlineSweep
from mcp_input_sync._runtime.watchdog import Watchdog
from mcp_input_sync.testing import FakeServer

from .wakes import WAKE_COUNTS, comes_to_rest, keeps_waking, needs_wake_counts, watchdog_of

WAIT = 10.0
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


@needs_wake_counts
def test_the_sweep_runs_only_while_requests_are_open() -> None:
    release = threading.Event()
    started = threading.Event()

    class Slow(mis.InputHandler):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            started.set()
            release.wait(WAIT)
            return {"action": "accept", "content": {"answer": "ok"}}

    with FakeServer() as fake:
        before = set(threading.enumerate())
        client = fake.client(Slow()).open()
        assert not [t for t in set(threading.enumerate()) - before if "watchdog" in t.name]  # idle: not even started
        fake.send_request(7, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
        assert started.wait(WAIT)
        watchdog = watchdog_of(set(threading.enumerate()) - before)  # started by the request's deadline
        assert keeps_waking(watchdog)  # the sweep: a wake at least every 0.1 s while a callback runs
        fake.send_request(8, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
        release.set()
        assert fake.wait_for_answer(7)["result"]["action"] == "accept"
        assert fake.wait_for_answer(8)["result"]["action"] == "accept"
        assert comes_to_rest(watchdog)  # the sweep notices the empty inbox on its next wake and stops
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


def test_answers_held_back_are_written_when_the_sweep_stops_first() -> None:
    # Answers held back on stdio are written by a flush check on the watchdog (watch_fast). While
    # a deadline sweep runs, registering that check does not wake the watchdog (the sweep wakes it
    # every 0.1 s anyway); when the sweep then finds nothing left and stops, the check still runs.
    dog = Watchdog()
    dog.start()
    try:
        sweep = DeadlineSweep(dog.watch)
        sweep.track(_clock.monotonic() + 3600, lambda _: None, None).cancel()  # registers the sweep, then nothing is left
        flushed = threading.Event()

        def flush() -> bool:
            flushed.set()
            return True

        dog.watch_fast(flush)
        assert flushed.wait(WAIT)
        if WAKE_COUNTS and dog.thread is not None:
            assert comes_to_rest(dog.thread)  # and the sweep stopped
    finally:
        dog.stop(RealBudget(WAIT))