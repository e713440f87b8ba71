"""The counters behind ``client.stats``."""

from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Any, Mapping

#: The plain counters, by name (``refused`` is a nested mapping beside them).
COUNTERS = ("served", "timed_out", "notifications_dropped", "logs_dropped", "logs_delivered", "stuck_callbacks", "malformed", "cache_hits")


class Stats:
    """Thread-safe counters of one client."""

    def __init__(self) -> None:
        #: Guards ``counts`` and ``refused``, and nothing else.
        self._lock = threading.Lock()
        self.counts: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self.refused: dict[str, dict[str, int]] = {}

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def refuse(self, kind: str, check: str) -> None:
        with self._lock:
            by_kind = self.refused.setdefault(kind, {})
            by_kind[check] = by_kind.get(check, 0) + 1

    def snapshot(self) -> Mapping[str, Any]:
        """A read-only copy: the counters plus ``refused`` (kind -> check -> count)."""
        with self._lock:
            snap: dict[str, Any] = dict(self.counts)
            snap["refused"] = MappingProxyType({k: MappingProxyType(dict(v)) for k, v in self.refused.items()})
        return MappingProxyType(snap)
