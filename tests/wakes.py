"""Watch a library thread from outside: found by its documented name, its wakes counted by the kernel.

docs/threads-and-time.md names every thread a client runs. Linux counts, per
thread, how often it went to sleep and woke again (``voluntary_ctxt_switches``
in ``/proc/self/task/<id>/status``), so a test can see that a thread rests
(the watchdog with nothing to sweep, a worker with no callback to run) or keeps
waking, without reading any attribute of the client. Elsewhere the helpers are
not available: ``needs_wake_counts`` skips a test, ``WAKE_COUNTS`` lets one
skip a step.
"""

from __future__ import annotations

import os
import threading
from typing import Collection

import pytest

WAIT = 10.0

#: True where the kernel counts each thread's wakes (Linux).
WAKE_COUNTS = os.path.isdir("/proc/self/task")

needs_wake_counts = pytest.mark.skipif(not WAKE_COUNTS, reason="per-thread wake counts are Linux's")

#: Real seconds a thread must stay asleep to be resting; the deadline sweep wakes the watchdog every 0.1 s.
REST = 0.3


def threads_named(role: str, among: Collection[threading.Thread] = ()) -> list[threading.Thread]:
    """The live ``mcp-input-sync-<role>-<n>`` threads (among ``among`` when given, e.g. those a client started)."""
    prefix = f"mcp-input-sync-{role}-"
    return [t for t in (among or threading.enumerate()) if t.name.startswith(prefix) and t.is_alive()]


def watchdog_of(client_threads: Collection[threading.Thread]) -> threading.Thread:
    """The one watchdog thread among ``client_threads`` (the threads a client started when it opened)."""
    (watchdog,) = threads_named("watchdog", client_threads)
    return watchdog


def _status(thread: threading.Thread) -> dict[str, str]:
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def wakes(thread: threading.Thread) -> int:
    """How many times ``thread`` went to sleep and woke again (its voluntary context switches)."""
    return int(_status(thread)["voluntary_ctxt_switches"])


def rests(*threads: threading.Thread) -> bool:
    """True when none of ``threads`` wakes for ``REST`` real seconds, and each is asleep at the end."""
    before = [wakes(t) for t in threads]
    threading.Event().wait(REST)
    return [wakes(t) for t in threads] == before and all(_status(t)["State"].startswith("S") for t in threads)


def comes_to_rest(*threads: threading.Thread) -> bool:
    """Wait (bounded) until ``threads`` all stay asleep for ``REST`` seconds; False if they never do."""
    return any(rests(*threads) for _ in range(int(WAIT / REST)))


def keeps_waking(thread: threading.Thread) -> bool:
    """Wait (bounded) until ``thread`` has woken twice more; False if it does not."""
    before = wakes(thread)
    pause = threading.Event()
    for _ in range(int(WAIT / 0.02)):
        if wakes(thread) >= before + 2:
            return True
        pause.wait(0.02)
    return False
