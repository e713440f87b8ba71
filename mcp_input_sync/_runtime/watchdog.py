"""Watchdog: one thread that fires callbacks at deadlines of the library clock.

Deadlines are library-clock times (:func:`mcp_input_sync._clock.monotonic`).
The thread never blocks longer than ``MAX_WAIT`` real seconds while a
deadline is pending, so a clock moved by freezegun's ``tick()`` is noticed
promptly. Callbacks run on the watchdog thread and must be short.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from typing import Callable, Optional

from .. import _clock
from . import RealBudget, start_thread

log = logging.getLogger("mcp_input_sync")

#: Real seconds between calls of a fast watcher (see :meth:`Watchdog.watch_fast`).
FAST = 0.02


class Timer:
    """A scheduled callback; :meth:`cancel` stops it from firing."""

    __slots__ = ("deadline", "fn", "cancelled")

    def __init__(self, deadline: float, fn: Callable[[], None]) -> None:
        self.deadline = deadline
        self.fn: Optional[Callable[[], None]] = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.fn = None


class Watchdog:
    """Fires :class:`Timer` callbacks on one named thread."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition(threading.Lock())
        self._stopped = False
        self._started = False
        self._thread: Optional[threading.Thread] = None
        self._watchers: list[Callable[[], bool]] = []
        self._fast: list[Callable[[], bool]] = []

    def start(self) -> None:
        """From now on timers and checks run; the thread itself starts with the first one.

        A client with nothing due (no request open, no deadline) runs no
        watchdog thread: a host with fifty idle clients holds none.
        """
        with self._cv:
            self._started = True
            if self._thread is None and (self._heap or self._watchers or self._fast):
                self._thread = start_thread("watchdog", self._run)

    def _needed_locked(self) -> None:
        """Under ``_cv``: something was registered; start the thread if it is not running."""
        if self._thread is None and self._started and not self._stopped:
            self._thread = start_thread("watchdog", self._run)

    def schedule(self, deadline: float, fn: Callable[[], None]) -> Timer:
        """Call ``fn`` on the watchdog thread once the library clock reaches ``deadline``."""
        timer = Timer(deadline, fn)
        with self._cv:
            heap = self._heap
            earliest = not heap or deadline < heap[0][0]
            heapq.heappush(heap, (deadline, next(self._seq), timer))
            # Lazy deletion keeps cancel() O(1); rebuild when most entries are dead.
            if len(heap) > 64 and len(heap) % 64 == 0:
                live = [e for e in heap if not e[2].cancelled]
                if len(live) * 2 < len(heap):
                    heapq.heapify(live)
                    self._heap = live
            if earliest:
                self._cv.notify()
            self._needed_locked()
        return timer

    def watch(self, fn: Callable[[], bool]) -> None:
        """Call ``fn`` on every wake (at least every ``MAX_WAIT`` real seconds) until it returns True.

        For conditions that are not deadlines of the library clock, such as a
        caller's cancel event, so they are noticed even under a frozen clock.
        The watchdog is woken for it only when no other watcher is
        registered (a wait started with one registered is capped at 0.1 s).
        """
        with self._cv:
            if not self._watchers:
                self._cv.notify()
            self._watchers.append(fn)
            self._needed_locked()

    def watch_fast(self, fn: Callable[[], bool], wake: bool = True) -> None:
        """Like :meth:`watch`, but call ``fn`` every :data:`FAST` real seconds until it returns True.

        For short real-time checks of progress, such as the handler pool's
        decision to start a worker; ``fn`` must be quick. Its first call
        comes at the next wake. The watchdog is woken for it only when no
        plain watcher (:meth:`watch`) is registered: one keeps every wait
        within 0.1 s, and a wake-up is a thread switch, with the interpreter
        lock. With ``wake=False`` it is never woken: for callers that know a
        plain watcher will be registered.
        """
        with self._cv:
            self._fast.append(fn)
            if wake and not self._watchers:  # see watch()
                self._cv.notify()
            self._needed_locked()

    def _cap(self) -> Optional[float]:
        """The longest real-time wait allowed now (None: no cap)."""
        if self._fast:
            return FAST
        if self._watchers:
            return 0.1
        return None

    def _run_watchers(self, watchers: list[Callable[[], bool]]) -> None:
        """Call each of ``watchers`` (``self._fast`` or ``self._watchers``); drop those that are done."""
        with self._cv:
            current = list(watchers)
        finished = []
        for fn in current:
            try:
                if fn():
                    finished.append(fn)
            except BaseException:
                log.exception("mcp_input_sync: watchdog watcher failed")
                finished.append(fn)
        if finished:
            with self._cv:
                # by identity, once each: a watcher registered again meanwhile (an equal bound
                # method, say the next deadline sweep) must stay
                for fn in finished:
                    for i, registered in enumerate(watchers):
                        if registered is fn:
                            del watchers[i]
                            break

    def _run(self) -> None:
        cv = self._cv
        while True:
            if self._fast:
                self._run_watchers(self._fast)
            if self._watchers:
                self._run_watchers(self._watchers)
            due: list[Timer] = []
            with cv:
                if self._stopped:
                    return
                heap = self._heap
                while heap and heap[0][2].cancelled:
                    heapq.heappop(heap)
                if not heap:
                    cap = self._cap()
                    cv.wait(None if cap is None else min(cap, _clock.MAX_WAIT))
                    continue
                now = _clock.monotonic()
                while heap and (heap[0][2].cancelled or heap[0][0] <= now):
                    timer = heapq.heappop(heap)[2]
                    if not timer.cancelled:
                        due.append(timer)
                if not due:
                    cap = self._cap()
                    cv.wait(min(heap[0][0] - now, _clock.MAX_WAIT, _clock.MAX_WAIT if cap is None else cap))
                    continue
            for timer in due:
                fn = timer.fn
                timer.cancel()
                if fn is not None:
                    try:
                        fn()
                    except BaseException:
                        log.exception("mcp_input_sync: watchdog callback failed")

    def stop(self, budget: RealBudget) -> None:
        with self._cv:
            self._stopped = True
            self._heap.clear()
            self._cv.notify()
        if self._thread is not None:
            budget.join(self._thread, share=0.5)

    @property
    def thread(self) -> Optional[threading.Thread]:
        return self._thread
