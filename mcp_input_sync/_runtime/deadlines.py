"""DeadlineSweep: many deadlines enforced by one check on the watchdog thread.

A deadline that is usually met (a callback's time limit, say) costs a timer
per item if each gets its own: a heap push under a lock, and a cancel when
it is met. The sweep instead keeps the tracked deadlines in a queue and
looks at them on every wake of the watchdog (at least every 0.1 s while it
is registered), calling ``expire(subject)`` once for each that has passed.

:meth:`DeadlineSweep.track` (or :meth:`~DeadlineSweep.add`) and :meth:`Deadline.cancel` take no lock: the
first is one ``deque.append``, the second sets a flag, and the sweep drops
cancelled deadlines when it next looks (as the watchdog drops cancelled
timers). The one lock, ``_sweeping_lock``, guards whether the sweep is
registered with the watchdog, and is taken only when that changes: when
the first deadline arrives, and when the sweep stops, one wake after it
found nothing left. Staying one wake longer means a steady trickle of
short deadlines registers the sweep once, not once each.

It knows nothing of MCP: times are library-clock seconds
(:func:`mcp_input_sync._clock.monotonic`), subjects are any objects.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable, Protocol, TypeVar

from .. import _clock

log = logging.getLogger("mcp_input_sync")

S = TypeVar("S")


class Deadline:
    """One tracked deadline; :meth:`cancel` takes it off the sweep."""

    __slots__ = ("at", "expire", "subject", "done")

    def __init__(self, at: float, expire: Callable[[Any], object], subject: Any) -> None:
        self.at = at
        self.expire = expire
        self.subject = subject
        #: Cancelled, or expired: the sweep drops it.
        self.done = False

    def cancel(self) -> None:
        """The deadline was met (or no longer matters): never call its expiry. Idempotent."""
        self.done = True

    def expired(self) -> None:
        """The sweep: ``at`` passed first."""
        self.expire(self.subject)


class Tracked(Protocol):
    """What the sweep tracks: a :class:`Deadline`, or any object with the same three members
    (a legacy server request is its own deadline: ``_protocol/legacy_conn.Inbound``)."""

    at: float
    #: Set once met or expired: the sweep drops it.
    done: bool

    def expired(self) -> object: ...


class DeadlineSweep:
    """Calls ``expire(subject)`` of each tracked deadline once it has passed, on the watchdog thread.

    Args:
        watch: registers a check to call on every wake until it returns
            True (:meth:`mcp_input_sync._runtime.watchdog.Watchdog.watch`).
    """

    def __init__(self, watch: Callable[[Callable[[], bool]], object]) -> None:
        self._watch = watch
        #: Appended by any thread, emptied only by the sweep (deque appends and pops are atomic).
        self._tracked: "collections.deque[Tracked]" = collections.deque()
        #: Guards ``_sweeping``, which says whether the sweep is registered with the watchdog.
        self._sweeping_lock = threading.Lock()
        self._sweeping = False

    def track(self, at: float, expire: Callable[[S], object], subject: S) -> Deadline:
        """Call ``expire(subject)`` once the library clock passes ``at``, unless cancelled first.

        ``expire`` runs on the watchdog thread and must be short; what it
        raises is logged.
        """
        deadline = Deadline(at, expire, subject)
        self._tracked.append(deadline)
        if not self._sweeping:  # read without the lock: _arm decides under it
            self._arm()
        return deadline

    def add(self, item: Tracked) -> None:
        """Track an object that is its own deadline: ``item.expired()`` once the library clock passes
        ``item.at``, unless ``item.done`` is set first (:meth:`track` without the extra object)."""
        self._tracked.append(item)
        if not self._sweeping:
            self._arm()

    @property
    def sweeping(self) -> bool:
        """True while the sweep is registered with the watchdog."""
        return self._sweeping

    def __len__(self) -> int:
        """How many tracked deadlines are neither cancelled nor expired."""
        return sum(1 for deadline in list(self._tracked) if not deadline.done)

    def _arm(self) -> None:
        with self._sweeping_lock:
            if self._sweeping:
                return
            self._sweeping = True
        try:
            self._watch(self.sweep)
        except BaseException:  # Ctrl-C on a caller's thread here: not left marked as registered
            with self._sweeping_lock:
                self._sweeping = False
            raise

    def sweep(self) -> bool:
        """One look at the deadlines (the watchdog calls it on every wake); True once it stops.

        Expires each deadline that has passed, drops the cancelled ones, and
        stops when a wake finds the queue empty: nothing was tracked since the
        previous wake emptied it.
        """
        tracked = self._tracked
        if not tracked:
            with self._sweeping_lock:
                self._sweeping = False
                if not tracked:  # looked at after the flag: a track() that still saw it set is swept
                    return True
                self._sweeping = True
            return False
        now = _clock.monotonic()
        for _ in range(len(tracked)):  # the ones queued before this look; later ones go behind them
            deadline = tracked.popleft()
            if deadline.done:
                continue
            if deadline.at > now:
                tracked.append(deadline)
                continue
            deadline.done = True
            try:
                deadline.expired()
            except Exception:  # one failing expiry must not end the others
                log.exception("mcp_input_sync: a deadline's expiry failed")
        return False
