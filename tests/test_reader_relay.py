"""Quick callbacks on the stdio reader: the relay, the pool's ``submit``, the line reader, and a real server.

A callback run where its request was read saves two thread switches; the
price is that the reader must hand its reading to a new thread when the
callback turns out slow, or calls back into the client (docs/threads-and-time.md).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync._runtime import RealBudget, workers
from mcp_input_sync._runtime.relay import Relay
from mcp_input_sync._runtime.workers import HandlerPool
from mcp_input_sync.transports.base import Oversized
from mcp_input_sync.transports._lines import Lines

from .test_runtime_pieces import Watch

WAIT = 10.0


class Looks(Watch):
    """Stands in for the watchdog's ``watch_fast``: keeps the check; the test calls it (one look each)."""


def relay_and_reliefs() -> tuple[Relay, Looks, list[int]]:
    looks, reliefs = Looks(), []
    relay = Relay(lambda: reliefs.append(1), looks)
    return relay, looks, reliefs


# ---------------------------------------------------------------------------- Relay


def test_a_job_seen_at_two_looks_hands_the_reading_on_once() -> None:
    relay, looks, reliefs = relay_and_reliefs()
    seen: list[tuple[bool, list[int]]] = []

    def slow() -> str:
        (check,) = looks.registered
        seen.append((check(), list(reliefs)))  # first look: running
        seen.append((check(), list(reliefs)))  # second look: the same job, so it is slow
        seen.append((check(), list(reliefs)))  # once: the job is no longer the reader's, and the check ends
        return "done"

    assert relay.run(slow) == "done"  # the job returns on its old reader: nothing more
    assert seen == [(False, []), (False, [1]), (True, [1])]
    relay.run(lambda: None)
    assert len(looks.registered) == 2 and relay.relieved == 1


def test_quick_jobs_between_looks_never_hand_on() -> None:
    relay, looks, reliefs = relay_and_reliefs()
    for _ in range(3):
        relay.run(lambda: None)
        relay.run(lambda: None)
        assert looks.registered[0]() is False  # jobs ran since the last look: stay registered
    assert looks.registered[0]() is True and reliefs == [] and len(looks.registered) == 1


def test_what_a_job_raises_reaches_the_caller_and_the_relay_forgets_the_job() -> None:
    relay, looks, reliefs = relay_and_reliefs()

    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        relay.run(boom)
    assert looks.registered[0]() is False  # a job ran since the last look
    assert looks.registered[0]() is True and reliefs == []  # and none runs now


def test_a_job_left_on_its_old_reader_does_not_end_the_next_readers_job() -> None:
    relay, looks, reliefs = relay_and_reliefs()
    handed_on, old_may_end, old_ended = threading.Event(), threading.Event(), threading.Event()

    def old_job() -> None:
        looks.registered[0]()
        looks.registered[0]()  # handed on
        handed_on.set()
        old_may_end.wait(WAIT)

    old = threading.Thread(target=lambda: (relay.run(old_job), old_ended.set()), name="old-reader")
    old.start()
    try:
        assert handed_on.wait(WAIT)

        def new_job() -> None:  # the new reader's first job
            old_may_end.set()  # the old job ends meanwhile
            assert old_ended.wait(WAIT)
            looks.registered[0]()
            looks.registered[0]()

        relay.run(new_job)
        assert reliefs == [1, 1]  # the new job was still tracked, and was slow too
    finally:
        old_may_end.set()
        old.join(WAIT)


def test_a_job_that_waits_for_the_connection_hands_the_reading_on_at_once() -> None:
    relay, _, reliefs = relay_and_reliefs()
    inside: list[list[int]] = []

    def job() -> None:
        other = threading.Thread(target=relay.yield_reader)
        other.start()
        other.join(WAIT)
        inside.append(list(reliefs))  # another thread waiting is none of the reader's business
        relay.yield_reader()
        relay.yield_reader()
        inside.append(list(reliefs))

    relay.run(job)
    relay.yield_reader()
    assert inside == [[], [1]] and reliefs == [1]


# ---------------------------------------------------------------------------- HandlerPool.submit


def where(pool: HandlerPool, label: str = "job") -> str:
    """Submit a job that says which thread it ran on; wait for it."""
    ran: list[str] = []
    done = threading.Event()

    def job() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    assert pool.submit(job, label) is True
    assert done.wait(WAIT)
    return "here" if ran == [threading.current_thread().name] else "worker"


def test_a_pool_without_a_relay_runs_nothing_on_the_reader() -> None:
    pool = HandlerPool(2)
    try:
        assert where(pool) == "worker"
    finally:
        pool.shutdown(RealBudget(WAIT))


def test_submit_frees_the_slot_before_the_follow_up_and_skips_after_a_slow_job(monkeypatch: pytest.MonkeyPatch) -> None:
    relay, _, _ = relay_and_reliefs()
    pool = HandlerPool(1, relay=relay)
    seen: list[int] = []

    def job() -> Callable[[], object]:
        seen.append(pool.free)
        return lambda: seen.append(pool.free)

    assert pool.submit(job, "job") is True
    assert seen == [0, 1]  # the slot was held by the job, and free for its follow-up
    clock = iter([0.0, 1.0])  # the next job takes a second of real time
    monkeypatch.setattr(workers.time, "perf_counter", lambda: next(clock))
    assert pool.submit(lambda: None, "slow") is True
    monkeypatch.undo()
    skipped = [where(pool, "after") for _ in range(workers.SLOW_SKIP)]
    assert skipped == ["worker"] * workers.SLOW_SKIP
    assert where(pool, "again") == "here"
    pool.shutdown(RealBudget(1.0))


def test_submit_leaves_a_job_to_the_workers_while_one_holds_a_slot() -> None:
    relay, _, _ = relay_and_reliefs()
    pool = HandlerPool(2, relay=relay)
    gate, entered = threading.Event(), threading.Event()

    def blocking() -> None:
        entered.set()
        gate.wait(WAIT)

    assert pool.start(blocking, "worker job") is True
    assert entered.wait(WAIT)
    assert where(pool) == "worker"
    gate.set()
    assert pool.shutdown(RealBudget(WAIT)) == []


def test_a_full_pool_refuses_even_once_shut_down() -> None:
    pool = HandlerPool(1)
    gate = threading.Event()
    assert pool.submit(lambda: gate.wait(WAIT) and None, "held") is True
    assert pool.submit(lambda: None, "refused") is False
    assert pool.shutdown(RealBudget(0.01)) == ["held"]
    assert pool.submit(lambda: None, "refused, not raised") is False  # every slot held: busy, shut down or not
    gate.set()
    for thread in pool.alive():
        thread.join(WAIT)
    assert pool.alive() == []


def test_a_job_stuck_on_a_relieved_reader_is_reported_at_shutdown() -> None:
    relay, looks, _ = relay_and_reliefs()
    pool = HandlerPool(2, relay=relay)
    gate, entered = threading.Event(), threading.Event()

    def stuck() -> None:
        entered.set()
        gate.wait(WAIT)

    reader = threading.Thread(target=pool.submit, args=(stuck, "stuck callback"), name="mcp-input-sync-reader-test")
    reader.start()
    try:
        assert entered.wait(WAIT)
        looks.registered[0]()
        looks.registered[0]()  # handed on; the job goes on on the old reader
        assert pool.shutdown(RealBudget(0.05)) == ["stuck callback"]
    finally:
        gate.set()
        reader.join(WAIT)


# ---------------------------------------------------------------------------- the line reader


def lines_of(chunks: list[bytes], limit: int = 100) -> tuple[list[bytes], int]:
    """Every message Lines finds in ``chunks`` (one read each); and how many reads waited."""
    feed: Iterator[bytes] = iter(chunks)
    waits = []
    lines = Lines(lambda n: next(feed, b""), limit, lambda: waits.append(1))
    out: list[bytes] = []
    while True:
        line = lines.take()
        if line is None:
            return out, len(waits)
        out.append(line)


def test_a_burst_in_one_read_is_cut_into_its_messages_with_one_wait() -> None:
    out, waits = lines_of([b'{"a":1}\n{"b":2}\n\n  \n{"c":3}\n'])
    assert out == [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n']  # blank lines skipped
    assert waits == 2  # the burst, then the end


def test_a_message_split_across_reads_is_joined() -> None:
    out, _ = lines_of([b'{"a":', b"1", b'}\n{"b"', b":2}\n"])
    assert out == [b'{"a":1}\n', b'{"b":2}\n']


def test_a_last_message_without_its_newline_is_still_one() -> None:
    out, _ = lines_of([b'{"a":1}\n{"b":2}'])
    assert out == [b'{"a":1}\n', b'{"b":2}']


def test_lines_over_the_limit_are_dropped_whole_and_handed_on_as_oversized() -> None:
    big = b"x" * 150
    out, _ = lines_of([big[:60], big[60:120], big[120:] + b'\n{"ok":1}\n', b"y" * 101 + b"\n", b"z" * 100 + b"\n"], limit=100)
    first, second, third, fourth = out
    assert type(first) is Oversized and first.size == 151 and bytes(first) == big[:120]  # the bytes kept when it went over
    assert second == b'{"ok":1}\n'
    assert type(third) is Oversized and third.size == 102
    assert fourth == b"z" * 100 + b"\n"  # exactly the limit, newline excluded: kept


def test_an_oversized_last_line_at_the_end_of_the_stream_is_reported() -> None:
    out, _ = lines_of([b"x" * 80, b"x" * 80], limit=100)
    (only,) = out
    assert type(only) is Oversized and only.size == 160


# ---------------------------------------------------------------------------- a real stdio server

SERVER = r"""
import json, sys
out = sys.stdout
def send(m):
    out.write(json.dumps(m) + "\n"); out.flush()
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
asked = {}
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "relay", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [{"name": "ask", "inputSchema": {"type": "object"}}, {"name": "echo", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call" and msg["params"]["name"] == "ask":
        key = f"e{msg['id']}"
        asked[key] = msg["id"]
        send({"jsonrpc": "2.0", "id": key, "method": "elicitation/create", "params": {"mode": "form", "message": "m", "requestedSchema": SCHEMA}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "echo"}]}})
    elif method is None and msg.get("id") in asked:
        answer = msg.get("result", {}).get("content", {}).get("answer", "?")
        send({"jsonrpc": "2.0", "id": asked.pop(msg["id"]), "result": {"content": [{"type": "text", "text": answer}]}})
"""


def connect(tmp_path: Path, handler: mis.InputHandler) -> mis.Client:
    script = tmp_path / "relay_server.py"
    script.write_text(SERVER)
    return mis.connect_stdio([sys.executable, str(script)], handler=handler, protocol="legacy")


def test_a_callback_that_blocks_on_the_reader_does_not_stop_the_reading(tmp_path: Path) -> None:
    echoed = threading.Event()
    threads: list[str] = []

    class Waits(mis.InputHandler):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            threads.append(threading.current_thread().name)
            # waits until the host's other call came back: that answer was read by another reader
            return {"action": "accept", "content": {"answer": "after" if echoed.wait(WAIT) else "never"}}

    with connect(tmp_path, Waits()) as client:
        box: list[Any] = []
        asking = threading.Thread(target=lambda: box.append(client.call_tool("ask", timeout=WAIT)))
        asking.start()
        try:
            assert client.call_tool("echo", timeout=WAIT)["content"][0]["text"] == "echo"
        finally:
            echoed.set()
            asking.join(WAIT)
        assert box[0]["content"][0]["text"] == "after"
    assert threads[0].startswith("mcp-input-sync-reader-")


def test_a_callback_that_calls_its_own_client_is_not_left_waiting_for_itself(tmp_path: Path) -> None:
    class CallsBack(mis.InputHandler):
        client: Optional[mis.Client] = None

        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            assert self.client is not None
            text = self.client.call_tool("echo", timeout=WAIT)["content"][0]["text"]
            return {"action": "accept", "content": {"answer": text}}

    handler = CallsBack()
    with connect(tmp_path, handler) as client:
        handler.client = client
        for _ in range(3):  # each time the reader hands on at once, and the next reader runs the next
            assert client.call_tool("ask", timeout=WAIT)["content"][0]["text"] == "echo"
