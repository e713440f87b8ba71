"""NotificationPump: one thread that runs notification jobs in arrival order.

The queue is bounded: beyond ``capacity`` waiting jobs, :meth:`post` drops
the new one and returns False (the caller counts it). A job that raises is
logged and skipped; the pump keeps going. The thread starts with the first
job after :meth:`start`: a client that hears nothing runs none (a host
with fifty idle clients would otherwise hold fifty sleeping threads).
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable, Optional

from . import RealBudget, start_thread

log = logging.getLogger("mcp_input_sync")

Job = Callable[..., None]

DEFAULT_CAPACITY = 1000


class NotificationPump:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._items: "collections.deque[Optional[tuple[Job, tuple[Any, ...]]]]" = collections.deque()
        self._cv = threading.Condition(threading.Lock())
        self._waiting = False
        self._stopped = False
        self._started = False
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """From now on jobs run; the thread itself starts with the first one."""
        with self._cv:
            self._started = True
            if self._items and self._thread is None:
                self._thread = start_thread("notify", self._run)

    def post(self, job: Job, *args: Any) -> bool:
        """Queue ``job(*args)``; False (dropped) when full or stopped."""
        with self._cv:
            if self._stopped or len(self._items) >= self.capacity:
                return False
            self._items.append((job, args))
            if self._waiting:
                self._cv.notify()
            elif self._thread is None and self._started:
                self._thread = start_thread("notify", self._run)
        return True

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` real seconds until every job posted so far has run.

        Returns at once (False) when called from the pump's own thread.
        """
        if threading.current_thread() is self._thread:
            return False
        done = threading.Event()
        with self._cv:
            if self._stopped:
                return False
            if not self._items and (self._waiting or self._thread is None):
                return True  # nothing posted is still to run
            self._items.append((done.set, ()))  # a marker: not subject to the cap
            if self._waiting:
                self._cv.notify()
        return done.wait(timeout)

    def _run(self) -> None:
        items = self._items
        cv = self._cv
        while True:
            with cv:
                while not items:
                    self._waiting = True
                    cv.wait()
                    self._waiting = False
                item = items.popleft()
            if item is None:
                return
            job, args = item
            try:
                job(*args)
            except BaseException:  # SystemExit from a hook must not end the notification thread
                log.exception("mcp_input_sync: notification callback %r failed", job)
            del item, job, args

    def stop(self, budget: RealBudget) -> None:
        """Drop what is waiting, stop the thread and join it within ``budget``."""
        with self._cv:
            self._stopped = True
            self._items.clear()
            self._items.append(None)
            self._cv.notify()
        if self._thread is not None:
            budget.join(self._thread, share=0.5)

    @property
    def thread(self) -> Optional[threading.Thread]:
        return self._thread
