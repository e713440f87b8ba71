"""The concurrency shell: the only code that owns threads.

It knows threads, queues and deadlines, not MCP. Every thread is a named
daemon thread (``mcp-input-sync-<role>-<n>``) started on open, never at
import or in a constructor.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable

_counters: dict[str, "itertools.count[int]"] = {}
_counters_lock = threading.Lock()


def thread_name(role: str) -> str:
    """A fresh ``mcp-input-sync-<role>-<n>`` name."""
    with _counters_lock:
        counter = _counters.setdefault(role, itertools.count(1))
        return f"mcp-input-sync-{role}-{next(counter)}"


def start_thread(role: str, target: Callable[[], None]) -> threading.Thread:
    """Start a named daemon thread running ``target``."""
    thread = threading.Thread(target=target, name=thread_name(role), daemon=True)
    thread.start()
    return thread


class RealBudget:
    """A real-time allowance spent in counted, capped waits.

    ``close()`` must return under a frozen clock, so its bounds are counted
    in real seconds handed to blocking waits (which freezegun leaves alone),
    never read from the library clock.
    """

    __slots__ = ("left",)

    def __init__(self, seconds: float) -> None:
        self.left = max(0.0, seconds)

    def take(self, seconds: float) -> float:
        """Reserve up to ``seconds`` of the budget and return what was granted."""
        granted = min(self.left, max(0.0, seconds))
        self.left -= granted
        return granted

    def join(self, thread: threading.Thread, share: float = 1.0) -> bool:
        """Join ``thread`` spending at most ``share`` of what is left; True when it ended."""
        if thread is threading.current_thread():
            return False
        thread.join(self.take(self.left * share))
        return not thread.is_alive()

    def wait_until(self, predicate: Callable[[], bool], seconds: float, step: float = 0.02) -> bool:
        """Poll ``predicate`` every ``step`` real seconds for at most ``seconds`` of the budget."""
        granted = self.take(seconds)
        pause = threading.Event()
        for _ in range(max(1, int(granted / step))):
            if predicate():
                return True
            pause.wait(step)
        return predicate()
