"""Who reads the server's stdout now: the stdio transport's reading seat.

A 2026-07-28 call over stdio reads its own rounds (docs/threads-and-time.md#threads):
the reader thread hands the reading to the calling thread and waits (parks)
until it comes back. The seat is that hand-off, one state at a time, in the
manner of ``concurrent.futures.Future``: a named state, one lock (with a
Condition on it for the parked reader), and one method per transition that
says who calls it and from which states. A transition asked for from any
other state is ignored (the method returns False or nothing): the callers
race by design (a give-back and a take-back may cross), so a late one is
not an error.

::

    READER --offer--> OFFERED --about_to_read--> ABOUT_TO_READ
    OFFERED / ABOUT_TO_READ --begin_reading--> CALLER_READING
    CALLER_READING --end_reading(kept)--> OFFERED
    OFFERED / ABOUT_TO_READ / CALLER_READING --give_back, take_back, end_reading(not kept)--> RETURNING
    OFFERED (the caller does not read, and the server wrote or it stayed away a look) --park--> READER
    RETURNING --park--> READER;  RETURNING --offer--> OFFERED (the reader offers again before it parked)
    any --close--> CLOSED

The fields are public to read (tests and the transport's hot path read
them without the lock, as ``Future`` is read through ``done()``) and written
only by the seat's own methods.
"""

from __future__ import annotations

import select
import threading
from threading import get_ident
from typing import Callable, Optional

from ._lines import Lines

#: The reader thread reads (or is relieved, and a new one is about to).
READER = "READER"
#: A caller holds the reading but does not read now: just offered, or between two rounds.
OFFERED = "OFFERED"
#: The caller wrote a request whose answer it will read itself.
ABOUT_TO_READ = "ABOUT_TO_READ"
#: The caller reads now (inside ``StdioTransport.read_here``).
CALLER_READING = "CALLER_READING"
#: Given back (or taken back); the parked reader thread has not taken it up yet.
RETURNING = "RETURNING"
#: The transport closes; nobody reads through the seat again (a new start makes a new seat).
CLOSED = "CLOSED"

#: How often the parked reader looks whether the caller still reads (seconds): a caller that
#: does not read loses the reading after one to two looks, or at once when the server writes.
PARK_LOOK = 0.02


class ReadingSeat:
    """Who reads the server's stdout now: the reader thread, or a caller it handed the reading to.

    ``state`` is one of the names above; ``holder`` the caller's thread
    ident while a caller holds the reading (0 otherwise); ``reader`` the ident
    of the thread that reads, or read last (the transport holds an answer
    back only on it; 0 while a relieved reader's successor starts);
    ``ticket`` the number of the reader thread that reads (each relief
    counts one up); ``caller_reads`` how many times a caller began to read.
    ``caller_poll`` and ``park_poll`` wait for the server's stdout (one
    ``select.poll`` each: one may not be polled from two threads at once).
    """

    __slots__ = ("state", "holder", "reader", "ticket", "caller_reads", "caller_poll", "park_poll", "_lines", "_lock", "_cond")

    def __init__(self, lines: Optional[Lines] = None, fd: Optional[int] = None) -> None:
        self.state = READER
        self.holder = 0
        self.reader = 0
        #: Which reader thread reads: :meth:`take_back` moves it on when it relieves one, and an older one stops.
        self.ticket = 0
        self.caller_reads = 0
        self._lines = lines
        self._lock = threading.Lock()  # taken directly on the hot transitions: no Python-level Condition.__enter__
        self._cond = threading.Condition(self._lock)  # the parked reader waits on it
        self.caller_poll: Optional[Callable[[float], list[tuple[int, int]]]] = None
        self.park_poll: Optional[Callable[[float], list[tuple[int, int]]]] = None
        if fd is not None:
            caller, park = select.poll(), select.poll()
            caller.register(fd, select.POLLIN)
            park.register(fd, select.POLLIN)
            self.caller_poll, self.park_poll = caller.poll, park.poll

    def __repr__(self) -> str:
        return f"<ReadingSeat {self.state} holder={self.holder} caller_reads={self.caller_reads}>"

    # ------------------------------------------------------------------ the reader thread

    def reader_begins(self, ticket: int) -> None:
        """A reader thread, as it starts (the first, or a relieved one's successor): it reads from here on.

        Ignored when ``ticket`` is no longer the newest (relieved again before it began).
        """
        with self._lock:
            if ticket == self.ticket:
                self.reader = get_ident()

    def offer(self, ident: int) -> None:
        """The reader thread, inside ``on_message``: the caller ``ident`` takes the reading over.

        READER or RETURNING -> OFFERED. Ignored from another thread than the
        one that reads, for ``ident`` itself, and in every other state.
        """
        me = get_ident()
        if ident == me or self.reader != me:
            return
        with self._lock:
            state = self.state
            if (state is READER or state is RETURNING) and self.reader == me:
                self.state, self.holder = OFFERED, ident

    def park(self, ticket: int) -> bool:
        """The reader thread numbered ``ticket``, once ``on_message`` returns in any state but READER: wait until the reading is back.

        True with READER (the reader reads on), False with CLOSED. While the
        caller reads (ABOUT_TO_READ, CALLER_READING) this waits in looks of
        :data:`PARK_LOOK`; from RETURNING it takes the reading up at once.
        While the caller holds it without reading (OFFERED: it runs a
        callback, or its call ended), this waits for the server instead and
        takes the reading back as soon as anything arrives (an answer to
        another thread, a notification, the end) or is already in hand, and
        when the caller has not begun to read between two looks; so nothing
        the server sends waits for the caller's callback. A reader relieved
        meanwhile (``ticket`` no longer the newest) returns True too, but
        does not count as the one that reads: it stops.
        """
        lines, poll, cond = self._lines, self.park_poll, self._cond
        assert lines is not None and poll is not None
        seen = -1
        while True:
            with cond:
                state = self.state
                if state is CLOSED:
                    return False
                idle = state is OFFERED
                if not idle and (state is RETURNING or state is READER):
                    return self._to_reader(ticket)
                if idle and (self.caller_reads == seen or lines.pos < lines.end):
                    return self._to_reader(ticket)
                seen = self.caller_reads
                if not idle:  # the caller reads: a give-back or a close wakes this early
                    cond.wait(PARK_LOOK)
                    continue
            if poll(PARK_LOOK * 1000.0):  # the server wrote while the caller does not read
                with cond:
                    state = self.state
                    if state is CLOSED:
                        return False
                    if state is OFFERED or state is RETURNING:
                        return self._to_reader(ticket)
                    cond.wait(PARK_LOOK)  # the caller came back and reads it

    def _to_reader(self, ticket: int) -> bool:
        """Lock held, on the reader thread: the reading is the reader's again (this one's, unless relieved)."""
        self.state, self.holder = READER, 0
        if ticket == self.ticket:
            self.reader = get_ident()
        return True

    # ------------------------------------------------------------------ the caller holding the reading

    def about_to_read(self) -> None:
        """The holder, writing a request whose answer it will read: OFFERED -> ABOUT_TO_READ.

        Called before the request is written, so the parked reader leaves its
        answer to the caller. Ignored from any other thread and state.
        """
        if self.holder == get_ident():
            with self._lock:
                if self.holder == get_ident() and self.state is OFFERED:
                    self.state = ABOUT_TO_READ

    def begin_reading(self) -> int:
        """The holder, entering ``read_here``: OFFERED, ABOUT_TO_READ (or CALLER_READING, nested) -> CALLER_READING.

        Returns the caller's ident, or 0 (nothing changes) for any other
        thread and in READER, RETURNING and CLOSED.
        """
        me = get_ident()
        if self.holder != me:
            return 0
        with self._lock:
            if self.holder != me:  # taken back, or closed (which clears the holder)
                return 0
            self.state, self.reader = CALLER_READING, me
            self.caller_reads += 1
        return me

    def end_reading(self, kept: bool) -> None:
        """The holder, leaving ``read_here``: CALLER_READING -> OFFERED when ``kept`` (its answer came), else RETURNING.

        Ignored once the reading was taken back (the state is then no longer the caller's).
        """
        me = get_ident()
        with self._lock:
            if self.holder != me:
                return
            if kept:
                self.state = OFFERED
            else:
                self._returning()

    def give_back(self) -> None:
        """The holder: its call ended, or it writes a request it will not read itself.

        OFFERED, ABOUT_TO_READ or CALLER_READING (a callback on the reading
        caller calling its client) -> RETURNING. Ignored from any other thread.
        """
        me = get_ident()
        if self.holder == me:
            with self._lock:
                if self.holder == me:
                    self._returning()

    # ------------------------------------------------------------------ any thread

    def take_back(self) -> int:
        """Any thread (``relieve``): a reading a caller holds goes back to the parked reader.

        OFFERED, ABOUT_TO_READ or CALLER_READING -> RETURNING, and 0: a
        caller inside ``read_here`` stops at its next look. READER or
        RETURNING: the reader thread is relieved, and the new ticket is
        returned for its successor, which the transport starts; the old one
        offers nothing more (``reader`` 0 until the new one begins) and stops
        once its ``on_message`` returns. CLOSED: 0, nothing changes.
        """
        with self._lock:
            if self.holder:
                self._returning()
                return 0
            if self.state is CLOSED:
                return 0
            self.ticket += 1
            self.reader = 0
            return self.ticket

    def close(self) -> None:
        """The transport closes: any state -> CLOSED; a parked reader ends, a reading caller stops."""
        with self._lock:
            self.state, self.holder = CLOSED, 0
            self._cond.notify_all()

    def _returning(self) -> None:
        """Lock held: the caller's reading goes back; wake the parked reader."""
        self.state, self.holder = RETURNING, 0
        self._cond.notify_all()
