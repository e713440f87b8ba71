"""A call's deadlines, with its ``timeout`` paused while tied input runs.

``timeout`` counts only time spent waiting on the server: from the moment a
tied server request is read until its answer is written, the call's clock is
paused (overlapping tied requests pause it once: the union of their
intervals). A clock that ``resets`` (``reset_timeout_on_progress``) counts
``timeout`` again from each :meth:`CallClock.restart` (the call's progress).
``max_total_timeout`` counts everything. Times are passed in.
"""

from __future__ import annotations

from typing import Optional

#: Returned by CallClock.expired.
TIMEOUT = "timeout"
MAX_TOTAL = "max_total_timeout"


class CallClock:
    """Deadlines of one call (pure: the caller passes ``now``)."""

    __slots__ = ("started", "timeout", "max_total", "resets", "_since", "_paused_since", "_paused_total", "_pauses")

    def __init__(self, now: float, timeout: float, max_total: float, resets: bool = False) -> None:
        self.started = now
        self.timeout = timeout
        self.max_total = max_total
        #: Progress restarts ``timeout`` (:meth:`restart`); ``max_total`` still bounds the call.
        self.resets = resets
        #: Where ``timeout`` counts from: the start, or the last restart.
        self._since = now
        self._paused_since = 0.0
        self._paused_total = 0.0
        self._pauses = 0

    @property
    def paused(self) -> bool:
        return self._pauses > 0

    def pause(self, now: float) -> None:
        """A tied request was read."""
        if self._pauses == 0:
            self._paused_since = now
        self._pauses += 1

    def resume(self, now: float) -> None:
        """A tied request was answered (or cancelled)."""
        if self._pauses == 0:
            return
        self._pauses -= 1
        if self._pauses == 0:
            self._paused_total += max(0.0, now - self._paused_since)

    def waited(self, now: float) -> float:
        """Seconds spent waiting on the server since the start or the last restart (pauses excluded)."""
        paused = self._paused_total
        if self._pauses:
            paused += max(0.0, now - self._paused_since)
        return max(0.0, now - self._since - paused)

    def restart(self, now: float) -> None:
        """The call made progress: ``timeout`` counts again from ``now`` (a pause in course goes on)."""
        self._since = now
        self._paused_total = 0.0
        if self._pauses:
            self._paused_since = now

    def total_left(self, now: float) -> float:
        """Seconds left of ``max_total`` (at least 0)."""
        return max(0.0, self.max_total - (now - self.started))

    def expired(self, now: float) -> Optional[str]:
        """TIMEOUT, MAX_TOTAL or None."""
        if now - self.started >= self.max_total:
            return MAX_TOTAL
        if not self._pauses and self.waited(now) >= self.timeout:
            return TIMEOUT
        return None

    def remaining(self, now: float) -> float:
        """Seconds until the next deadline could fire (at least 0)."""
        total_left = self.max_total - (now - self.started)
        if self._pauses:
            return max(0.0, total_left)
        return max(0.0, min(total_left, self.timeout - self.waited(now)))

    def child(self, now: float) -> "CallClock":
        """The clock of one request inside a long wait (a task's polls): its own
        ``timeout``, bounded by what is left of ``max_total``."""
        remaining = max(0.001, self.started + self.max_total - now)
        return CallClock(now, min(self.timeout, remaining), remaining)
