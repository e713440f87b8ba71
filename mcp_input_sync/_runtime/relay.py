"""Relay: quick jobs run on the thread that reads the connection; a slow one hands the reading on.

Handing a job to a worker thread costs a thread switch each way, with the
interpreter lock: on a small machine that is more CPU than a quick callback
and its checks together (docs/performance.md#callbacks-on-the-reader). So
the reader runs a job itself when no other job is running, and the relay
watches it: a job still running at two consecutive looks of the watchdog
(20 ms to about a tenth of a second, one wake per look, not one per job)
has the transport start a new reader thread, so the connection is read on
while the job goes on where it is (:meth:`Relay.check`). The old reader
stops reading once its job returns. A job that calls back into the client
and waits for its answer would wait for itself: :meth:`Relay.yield_reader`
hands the reading on at once instead.

The relay decides nothing else: which jobs may run here, the slots they
take and how long they took are the pool's business
(:meth:`mcp_input_sync._runtime.workers.HandlerPool.submit`). It knows
nothing of MCP.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class Relay:
    """Tracks the one job running on the reader thread and hands reading on when it lasts.

    Args:
        relieve: the transport's ``relieve``: start a new reader thread that
            reads from where the busy one stopped; called under this relay's
            lock, only while a job runs on the reader (so before it returns).
        watch: registers a check with the watchdog that is called every
            20 ms of real time until it returns True (``watch_fast`` without
            a wake of its own: the job's deadline sweep keeps the watchdog
            waking anyway).
    """

    def __init__(self, relieve: Callable[[], None], watch: Callable[[Callable[[], bool]], object]) -> None:
        self._relieve = relieve
        self._watch = watch
        #: Guards everything below: the running job, whether it was handed on, the check's state.
        self._lock = threading.Lock()
        self._seq = 0
        #: The number of the job running on the reader (0: none), and its thread's ident.
        self._here = 0
        self._ident = 0
        #: The job the previous look found running (0: none).
        self._seen = 0
        #: A job ran since the previous look (so the check stays registered for the next).
        self._active = False
        self._watching = False
        #: How many times a reader was relieved (tests and stats read it).
        self.relieved = 0

    def run(self, job: Callable[[], T]) -> T:
        """Reader thread: run ``job`` here, watched: if it outlasts two looks, the reading moves on
        to a new thread and the job finishes where it is. Returns what ``job`` returned."""
        with self._lock:
            self._seq += 1
            self._here = seq = self._seq
            self._ident = threading.get_ident()
            self._active = True
            arm = not self._watching
            self._watching = True
        if arm:
            self._watch(self.check)
        try:
            return job()
        finally:
            with self._lock:
                if self._here == seq:  # not handed on meanwhile
                    self._here = 0

    def _hand_on_locked(self) -> None:
        self._here = 0  # the job goes on where it is; the reader it ran on reads no more
        self._seen = 0
        self.relieved += 1
        self._relieve()

    def check(self) -> bool:
        """Watchdog thread: hand the reading on when one job ran through two looks; True once idle."""
        with self._lock:
            here = self._here
            if here and here == self._seen:
                self._hand_on_locked()
            else:
                self._seen = here
            if here or self._active:
                self._active = False
                return False
            self._watching = False
            return True

    def yield_reader(self) -> None:
        """A thread about to wait for the connection: if it is the reader, running a job, hand reading on now."""
        if self._here and self._ident == threading.get_ident():  # read without the lock; decided under it
            with self._lock:
                if self._here and self._ident == threading.get_ident():
                    self._hand_on_locked()
