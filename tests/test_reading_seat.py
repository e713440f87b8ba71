"""The stdio transport's reading seat alone: who reads the server's stdout now (transports/_seat.py).

A table of transitions (from state, event -> to state), with a stand-in
reader thread and the test's own thread as the caller; then the reader's
park, which waits until the reading is back. A transition from a state it
is not meant for is ignored (documented in _seat.py), never raised.
"""

from __future__ import annotations

import os
import queue
import threading
from functools import partial
from typing import Any, Callable, Iterator

import pytest

from mcp_input_sync.transports._lines import Lines
from mcp_input_sync.transports._seat import (
    ABOUT_TO_READ,
    CALLER_READING,
    CLOSED,
    OFFERED,
    PARK_LOOK,
    READER,
    RETURNING,
    ReadingSeat,
)

WAIT = 10.0


class Reader:
    """A stand-in reader thread: runs each job it is given, in order, and hands back its result."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[Any] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="seat-test-reader", daemon=True)
        self.thread.start()
        self.ident = self.thread.ident

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            fn, box, done = job
            box.append(fn())
            done.set()

    def later(self, fn: Callable[[], Any]) -> tuple[list[Any], threading.Event]:
        box: list[Any] = []
        done = threading.Event()
        self.jobs.put((fn, box, done))
        return box, done

    def __call__(self, fn: Callable[[], Any]) -> Any:
        box, done = self.later(fn)
        assert done.wait(WAIT)
        return box[0]

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


class Rig:
    """A seat on a pipe standing in for the server's stdout, its reader thread, and this thread as the caller."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        self.lines = Lines(partial(os.read, self.r), 1000, lambda: None)
        self.seat = ReadingSeat(self.lines, self.r)
        self.reader = Reader()
        self.reader(lambda: self.seat.reader_begins(0))
        self.me = threading.get_ident()

    def into(self, state: str) -> None:
        """Bring the seat into ``state`` by the transitions that lead there."""
        seat = self.seat
        if state == CLOSED:
            seat.close()
            return
        if state == READER:
            return
        self.reader(lambda: seat.offer(self.me))
        if state == ABOUT_TO_READ:
            seat.about_to_read()
        elif state == CALLER_READING:
            assert seat.begin_reading() == self.me
        elif state == RETURNING:
            seat.give_back()
        assert seat.state == state

    def close(self) -> None:
        self.reader.stop()
        os.close(self.r)
        os.close(self.w)


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig()
    yield made
    made.close()


#: event -> what it does, on which thread: "caller" is the test's thread, "reader" the stand-in reader.
EVENTS: dict[str, Callable[[Rig], Any]] = {
    "offer": lambda rig: rig.reader(lambda: rig.seat.offer(rig.me)),
    "offer, not by the reader": lambda rig: rig.seat.offer(rig.reader.ident or 1),
    "about_to_read": lambda rig: rig.seat.about_to_read(),
    "begin_reading": lambda rig: rig.seat.begin_reading(),
    "end_reading kept": lambda rig: rig.seat.end_reading(True),
    "end_reading not kept": lambda rig: rig.seat.end_reading(False),
    "give_back": lambda rig: rig.seat.give_back(),
    "give_back, not by the holder": lambda rig: rig.reader(rig.seat.give_back),
    "take_back": lambda rig: rig.seat.take_back(),
    "close": lambda rig: rig.seat.close(),
}

#: (from state, event) -> to state; a pair not listed leaves the state as it was (ignored).
TABLE: dict[tuple[str, str], str] = {
    (READER, "offer"): OFFERED,
    (READER, "close"): CLOSED,
    (OFFERED, "about_to_read"): ABOUT_TO_READ,
    (OFFERED, "begin_reading"): CALLER_READING,
    (OFFERED, "end_reading not kept"): RETURNING,
    (OFFERED, "give_back"): RETURNING,
    (OFFERED, "take_back"): RETURNING,
    (OFFERED, "close"): CLOSED,
    (ABOUT_TO_READ, "begin_reading"): CALLER_READING,
    (ABOUT_TO_READ, "end_reading kept"): OFFERED,
    (ABOUT_TO_READ, "end_reading not kept"): RETURNING,
    (ABOUT_TO_READ, "give_back"): RETURNING,
    (ABOUT_TO_READ, "take_back"): RETURNING,
    (ABOUT_TO_READ, "close"): CLOSED,
    (CALLER_READING, "end_reading kept"): OFFERED,
    (CALLER_READING, "end_reading not kept"): RETURNING,
    (CALLER_READING, "give_back"): RETURNING,  # a callback on the reading caller writes a request it will not read
    (CALLER_READING, "take_back"): RETURNING,
    (CALLER_READING, "close"): CLOSED,
    (RETURNING, "offer"): OFFERED,  # the reader offers again before it parked
    (RETURNING, "close"): CLOSED,
}

STATES = (READER, OFFERED, ABOUT_TO_READ, CALLER_READING, RETURNING, CLOSED)


@pytest.mark.parametrize("start", STATES)
@pytest.mark.parametrize("event", list(EVENTS))
def test_each_transition(rig: Rig, start: str, event: str) -> None:
    rig.into(start)
    EVENTS[event](rig)
    to = TABLE.get((start, event), start)
    seat = rig.seat
    assert seat.state == to
    # the caller holds the reading exactly in the caller's states
    assert seat.holder == (rig.me if to in (OFFERED, ABOUT_TO_READ, CALLER_READING) else 0)


def test_take_back_relieves_the_reader_when_no_caller_holds_the_reading(rig: Rig) -> None:
    seat = rig.seat
    assert seat.take_back() == 1 and seat.ticket == 1 and seat.state == READER
    rig.reader(lambda: seat.offer(rig.me))  # the relieved reader offers nothing more
    assert seat.state == READER
    successor = Reader()
    try:
        successor(lambda: seat.reader_begins(0))  # a stale ticket does not count
        assert seat.reader == 0
        successor(lambda: seat.reader_begins(1))
        successor(lambda: seat.offer(rig.me))
        assert seat.state == OFFERED and seat.reader == successor.ident
    finally:
        successor.stop()
    seat.close()
    assert seat.take_back() == 0 and seat.ticket == 1  # closed: nothing is relieved


def test_begin_reading_counts_and_makes_the_caller_the_reader(rig: Rig) -> None:
    seat = rig.seat
    assert seat.begin_reading() == 0  # nothing offered
    rig.into(OFFERED)
    assert seat.begin_reading() == rig.me and seat.caller_reads == 1 and seat.reader == rig.me
    seat.end_reading(True)
    assert seat.begin_reading() == rig.me and seat.caller_reads == 2
    assert rig.reader(seat.begin_reading) == 0  # only the holder reads
    assert seat.caller_reads == 2


def test_an_offer_to_the_reader_itself_is_ignored(rig: Rig) -> None:
    rig.reader(lambda: rig.seat.offer(rig.reader.ident or 1))
    assert rig.seat.state == READER


# ---------------------------------------------------------------------------- the reader's park


def test_park_takes_a_returning_reading_up_at_once_and_ends_on_close(rig: Rig) -> None:
    seat = rig.seat
    rig.into(RETURNING)
    assert rig.reader(lambda: seat.park(0)) is True
    assert seat.state == READER and seat.reader == rig.reader.ident
    seat.close()
    assert rig.reader(lambda: seat.park(0)) is False


def test_park_waits_while_the_caller_reads_and_wakes_on_the_give_back(rig: Rig) -> None:
    seat = rig.seat
    rig.into(CALLER_READING)
    box, done = rig.reader.later(lambda: seat.park(0))
    assert not done.wait(PARK_LOOK * 3)  # looks pass; the caller still reads
    seat.end_reading(False)
    assert done.wait(WAIT) and box == [True]
    assert seat.state == READER and seat.reader == rig.reader.ident


def test_park_ends_when_the_transport_closes(rig: Rig) -> None:
    seat = rig.seat
    rig.into(ABOUT_TO_READ)
    box, done = rig.reader.later(lambda: seat.park(0))
    seat.close()
    assert done.wait(WAIT) and box == [False]


def test_park_takes_the_reading_back_from_a_caller_that_stays_away(rig: Rig) -> None:
    seat = rig.seat
    rig.into(OFFERED)  # the caller never comes to read: after one or two looks the reader reads on
    assert rig.reader(lambda: seat.park(0)) is True
    assert seat.state == READER and seat.holder == 0


def test_park_takes_the_reading_back_when_the_server_writes_while_the_caller_does_not_read(rig: Rig) -> None:
    seat = rig.seat
    rig.into(OFFERED)
    os.write(rig.w, b'{"jsonrpc": "2.0", "method": "notifications/x"}\n')
    assert rig.reader(lambda: seat.park(0)) is True
    assert seat.state == READER


def test_park_takes_the_reading_back_at_once_with_a_message_in_hand(rig: Rig) -> None:
    seat, lines = rig.seat, rig.lines
    os.write(rig.w, b"one\ntwo\n")
    assert rig.reader(lines.take) == b"one\n"  # "two" is in hand, read already
    rig.into(OFFERED)
    assert rig.reader(lambda: seat.park(0)) is True
    assert rig.reader(lines.take) == b"two\n"


def test_a_reader_relieved_while_parked_does_not_count_as_the_reader(rig: Rig) -> None:
    seat = rig.seat
    rig.into(RETURNING)
    assert seat.take_back() == 1
    assert rig.reader(lambda: seat.park(0)) is True  # it stops: the transport checks the ticket
    assert seat.state == READER and seat.reader == 0
