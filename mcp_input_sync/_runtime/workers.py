"""HandlerPool: named daemon workers behind a bounded count of slots.

It has the submit/shutdown shape (:meth:`start`, :meth:`shutdown`) of ``concurrent.futures.ThreadPoolExecutor``
but its workers are daemon threads, so a callback that never returns cannot
keep the interpreter from exiting (docs/threads-and-time.md#shutdown). :meth:`start`
takes a slot with the job (never blocking: the caller refuses at once when
none is free); the slot is released only when the job really returns.

A job may return a follow-up callable, run on the same worker right after
the slot is released: the client writes a callback's answer there, so the
slot is already free when the server, having read the answer, sends its next
request.

With a relay (stdio), the reader runs a job itself when no job holds a
slot (:meth:`HandlerPool.submit`): two thread switches cost more than a
quick callback; the relay hands the reading on when the job turns out slow.

Workers are started when they are needed, and no sooner. A job that finds
no idle worker waits in the queue for a busy one, as long as the queue
moves: fast callbacks answer thousands of requests a second on one or two
threads, where a thread per request would spend its time handing the
interpreter lock around. ``nudge`` registers a check with the watchdog
(the client's first runs within 0.1 s, then every 20 ms of real
time, measured by the watchdog's waits and counters, never by a clock).
When a job queued before the previous check is still waiting, the
callbacks ahead of it are slow or blocked, and a worker is started for
every waiting job, up to ``size``. Without a ``nudge`` every job that finds
no idle worker gets a new one at once.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable, Optional

from . import RealBudget, start_thread
from .relay import Relay

log = logging.getLogger("mcp_input_sync")

FollowUp = Optional[Callable[[], object]]
Job = Callable[[], FollowUp]

#: A job that ran on the reader longer than this (real seconds) sends the next ``SLOW_SKIP`` jobs to workers.
SLOW = 0.005
SLOW_SKIP = 32


class HandlerPool:
    """At most ``size`` jobs at once, each on a daemon worker thread."""

    def __init__(
        self,
        size: int,
        role: str = "worker",
        nudge: Optional[Callable[[Callable[[], bool]], None]] = None,
        relay: Optional[Relay] = None,
    ) -> None:
        self.size = size
        #: Runs quick jobs on the reader thread (:meth:`submit`); None: every job goes to a worker.
        self.relay = relay
        #: Reader thread only: how many more jobs go to workers after a slow one ran on the reader.
        self._skip = 0
        self._role = role
        self._nudge = nudge
        #: Slots not taken: written under ``_lock`` (cheaper than a Semaphore's condition); read by anyone
        #: as a hint (0: a job now would be refused; :meth:`start` and :meth:`submit` decide).
        self.free = size
        self._jobs: "queue.SimpleQueue[Optional[tuple[Job, object]]]" = queue.SimpleQueue()
        #: True when no job waits for a worker (False: another answer is about to follow); the queue's own method.
        self.none_queued: Callable[[], bool] = self._jobs.empty
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # workers waiting for a job and not yet promised one
        self._waiting = 0  # queued jobs no idle worker was promised to
        self._queued = 0  # jobs that ever had to wait
        self._taken = 0  # of those, how many a worker took
        self._mark = 0  # _queued at the previous check
        self._checking = False
        self._running: dict[threading.Thread, object] = {}
        self._shutdown = False

    def start(self, job: Job, label: object) -> bool:
        """Take a slot and run ``job`` on a worker; False, and nothing runs, when all ``size`` are held.

        The slot is released when ``job`` really returns (a pool shut down with
        every slot held still says False). ``label`` names the
        job in logs and in :meth:`shutdown`'s list: anything whose ``str()``
        does (made into text only when it is needed).

        Raises:
            RuntimeError: the pool is shut down.
        """
        with self._lock:
            if self.free <= 0:  # first: every slot held is busy, shut down or not
                return False
            if self._shutdown:
                raise RuntimeError("pool is shut down")
            self.free -= 1
            nudge = None
            if self._idle > 0:
                self._idle -= 1
            elif not self._threads or (self._nudge is None and len(self._threads) < self.size):
                self._threads.append(start_thread(self._role, self._work))
            else:
                self._waiting += 1
                self._queued += 1
                if not self._checking and self._nudge is not None and len(self._threads) < self.size:
                    self._checking = True
                    nudge = self._nudge
        self._jobs.put((job, label))
        if nudge is not None:
            nudge(self._check)
        return True

    def submit(self, job: Job, label: object) -> bool:
        """Take a slot and run ``job``: right here, when that is the cheaper way, else on a worker (:meth:`start`).

        Here means on the calling thread (the reader), and only when the pool
        has a relay, no job holds a slot (none is slow or blocked now), and no
        job run here lately took more than ``SLOW``; the job and its follow-up
        then run before this returns, watched by the relay: if the job outlasts
        its looks, the reading moves to a new thread and the job finishes where
        it is. Returns False, and nothing runs, when all ``size`` slots are held.

        Raises:
            RuntimeError: the pool is shut down.
        """
        relay = self.relay
        if relay is None or self.free != self.size:
            return self.start(job, label)
        if self._skip:
            self._skip -= 1
            return self.start(job, label)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("pool is shut down")
            here = self.free == self.size
            if here:
                self.free -= 1
        if not here:
            return self.start(job, label)
        me = threading.current_thread()
        self._running[me] = label
        follow_up: FollowUp = None
        started = time.perf_counter()
        try:
            follow_up = relay.run(job)
        except BaseException:  # as on a worker: logged, and the reader reads on
            log.exception("mcp_input_sync: worker job %s failed", label)
        finally:
            self._running.pop(me, None)
            del job
            with self._lock:
                self.free += 1
        if time.perf_counter() - started > SLOW:
            self._skip = SLOW_SKIP
        if follow_up is not None:
            try:
                follow_up()
            except BaseException:
                log.exception("mcp_input_sync: follow-up of worker job %s failed", label)
        return True

    def _check(self) -> bool:
        """Watchdog thread, every nudge period while jobs wait: start workers when none finished."""
        with self._lock:
            if self._shutdown or self._waiting == 0 or len(self._threads) >= self.size:
                self._checking = False
                return True
            if self._taken >= self._mark:  # every job queued before the last check was taken
                self._mark = self._queued
                return False
            for _ in range(min(self._waiting, self.size - len(self._threads))):
                self._threads.append(start_thread(self._role, self._work))
                self._waiting -= 1
                self._taken += 1
            self._mark = self._queued
            self._checking = self._waiting > 0 and len(self._threads) < self.size
            return not self._checking

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, label = item
            self._running[me] = label
            follow_up: FollowUp = None
            try:
                follow_up = job()
            except BaseException:  # a job must never kill its worker
                log.exception("mcp_input_sync: worker job %s failed", label)
            finally:
                self._running.pop(me, None)
                del item, job
                with self._lock:
                    self.free += 1
                    # free already: a job queued meanwhile waits only for the follow-up
                    if self._waiting > 0:
                        self._waiting -= 1  # this worker takes a waiting job next
                        self._taken += 1
                    else:
                        self._idle += 1
            if follow_up is not None:
                try:
                    follow_up()
                except BaseException:
                    log.exception("mcp_input_sync: follow-up of worker job %s failed", label)
                del follow_up

    def shutdown(self, budget: RealBudget) -> list[str]:
        """Stop idle workers and wait for busy ones within ``budget``.

        Returns:
            The labels of jobs still running when the budget ran out (stuck
            callbacks). Their daemon threads are abandoned.
        """
        with self._lock:
            self._shutdown = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        # and any reader thread still inside a job it ran itself (submit)
        threads += [thread for thread in list(self._running) if thread not in threads]
        stuck: list[str] = []
        for thread in threads:
            if not budget.join(thread, share=0.5) and thread is not threading.current_thread():
                label = self._running.get(thread)
                if label is not None:
                    stuck.append(str(label))
        return stuck

    def alive(self) -> list[threading.Thread]:
        return [t for t in self._threads if t.is_alive()]
