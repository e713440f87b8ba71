"""The library's one clock.

Every timeout, deadline and rate limit reads :func:`monotonic`. It calls
``time.monotonic()`` through the ``time`` module at call time, so a test that
freezes or moves time with freezegun moves the library's deadlines too.

freezegun hands out *real* time to a caller when the calling frame or any of
its four callers belongs to an ignore-listed module (``threading``, ``queue``,
...). A library thread's stack starts in ``threading``, so the read happens
five frames deep inside this module: whatever thread asks, freezegun only
sees frames of this module and answers with the same (frozen or real) clock.
Keep the chain at five frames; a shorter chain makes worker threads and the
caller's thread read clocks 1.7e9 seconds apart under a freeze.

When ``time.monotonic`` is the interpreter's own function (no freezegun, no
other patch written in Python), nothing inspects the stack, so the chain is
skipped: it runs once or twice per server request.
"""

from __future__ import annotations

import time
from types import BuiltinFunctionType as _BUILTIN  # not type(time.x): freezegun may have patched those


def _read() -> float:
    return time.monotonic()


def _hop4() -> float:
    return _read()


def _hop3() -> float:
    return _hop4()


def _hop2() -> float:
    return _hop3()


def _hop1() -> float:
    return _hop2()


def monotonic() -> float:
    """Return the library clock in seconds (``time.monotonic``, freezegun-aware)."""
    clock = time.monotonic
    if type(clock) is _BUILTIN:  # not patched: no frame inspection to steer
        now: float = clock()
        return now
    return _hop1()


#: Longest real-time wait a deadline guard may block before it re-reads the
#: clock. Blocking waits run on real time even under freezegun, so a deadline
#: moved by ``tick()`` is noticed within this many real seconds.
MAX_WAIT = 0.5
