"""Cached listings and reads: the ``cache`` option and its stores (docs/caching.md).

A 2026-07-28 server says how long a listing or a read stays good
(``ttlMs``) and whether it holds one user's data (``cacheScope``). The
client keeps such results and serves them again within that time; a
``list_changed`` (or ``resources/updated``) notification drops them at once.

* ``cache=True`` (the default): a :class:`MemoryCache` of the client's own.
* ``cache=False``: nothing is kept.
* ``cache=store``: any object with ``get``, ``set`` and ``delete`` (a
  :class:`RedisCache` shared by many workers), or ``cache=Cache(store,
  default_ttl=...)`` to keep results that carry no ``ttlMs`` too.

A store holds text under keys the client makes (hashes: no URL, user or
token can be read from a key). A ``"private"`` result's key names the
authorization context the client sends (its OAuth account, or its headers,
or for stdio its environment), so two users never share one; a
``"public"`` result is shared by every client of the same server.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Optional, Protocol, runtime_checkable

from . import _clock

__all__ = ["Cache", "CacheStore", "MemoryCache", "RedisCache"]


@runtime_checkable
class CacheStore(Protocol):
    """Where cached results live: text under a key, kept ``ttl`` seconds.

    The client calls a store from any of its threads; a store is thread-safe.
    A store that raises is treated as empty (the call goes to the server),
    with one warning logged until it works again.
    """

    def get(self, key: str) -> Optional[str]:
        """The text kept under ``key``, or None when there is none or it expired."""
        ...

    def set(self, key: str, value: str, ttl: float) -> None:
        """Keep ``value`` under ``key`` for ``ttl`` seconds (more than 0)."""
        ...

    def delete(self, key: str) -> None:
        """Drop what is kept under ``key`` (nothing when there is none)."""
        ...


class MemoryCache:
    """A store in this process: at most ``max_entries`` results and ``max_bytes`` of text, the least recently used dropped first.

    Expiry reads the library's clock (freezegun moves it in tests).

    Raises:
        ValueError: a bound below 1.
    """

    def __init__(self, *, max_entries: int = 1024, max_bytes: int = 32 * 1024 * 1024) -> None:
        for name, bound in (("max_entries", max_entries), ("max_bytes", max_bytes)):
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
                raise ValueError(f"{name} must be an int of at least 1")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryCache(max_entries={self.max_entries}, max_bytes={self.max_bytes})"

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Optional[str]:
        now = _clock.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[1] <= now:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def set(self, key: str, value: str, ttl: float) -> None:
        if len(value) > self.max_bytes:
            self.delete(key)
            return
        expires = _clock.monotonic() + ttl
        with self._lock:
            self._drop(key)
            self._entries[key] = (value, expires)
            self._bytes += len(value)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def delete(self, key: str) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[0])


class RedisCache:
    """A store in Redis, shared by every worker of an application.

    ``client`` is redis-py's ``redis.Redis`` (bytes or decoded responses
    both work), or anything with ``get``, ``set(name, value, px=...)`` and
    ``delete``; this module does not import redis. Entries live at
    ``<prefix>:cache:<key>`` and expire by Redis's own clock.
    """

    def __init__(self, client: Any, *, prefix: str = "mcp_input_sync") -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        self.redis = client
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"RedisCache(prefix={self.prefix!r})"

    def get(self, key: str) -> Optional[str]:
        raw = self.redis.get(f"{self.prefix}:cache:{key}")
        if raw is None:
            return None
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)

    def set(self, key: str, value: str, ttl: float) -> None:
        self.redis.set(f"{self.prefix}:cache:{key}", value, px=max(1, int(ttl * 1000)))

    def delete(self, key: str) -> None:
        self.redis.delete(f"{self.prefix}:cache:{key}")


class Cache:
    """The ``cache`` option spelled out: the store, and what to do with results that carry no ``ttlMs``.

    Args:
        store: where results live (None: a :class:`MemoryCache` of each client's own).
        default_ttl: seconds to keep a result the server gave no ``ttlMs``
            (or an older server's result); 0 (the default) keeps none. Such
            results are always ``"private"``.

    Raises:
        TypeError: a store without ``get``, ``set`` and ``delete``.
        ValueError: a negative or infinite ``default_ttl``.
    """

    __slots__ = ("store", "default_ttl")

    def __init__(self, store: Optional[CacheStore] = None, *, default_ttl: float = 0.0) -> None:
        if store is not None and not isinstance(store, CacheStore):
            raise TypeError("a cache store needs get(key), set(key, value, ttl) and delete(key)")
        if isinstance(default_ttl, bool) or not isinstance(default_ttl, (int, float)) or not 0 <= default_ttl < float("inf"):
            raise ValueError("default_ttl must be a finite number of seconds, 0 or more")
        self.store = store
        self.default_ttl = float(default_ttl)

    def __repr__(self) -> str:
        return f"Cache(store={self.store!r}, default_ttl={self.default_ttl:g})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cache):
            return NotImplemented
        return self.store is other.store and self.default_ttl == other.default_ttl

    def __hash__(self) -> int:
        return hash((id(self.store), self.default_ttl))
