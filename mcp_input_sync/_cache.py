"""One client's side of the response cache: keys, freshness, eviction (docs/caching.md).

:class:`ResponseCache` sits between the client's ``list_*`` and
``read_resource`` calls and a :class:`~mcp_input_sync.cache.CacheStore`.
A result is looked up under its ``"private"`` key (this client's
authorization context) and then its ``"public"`` key; what a call fetched
is stored under the key its ``cacheScope`` names, only when it came in one
answer (no ``input_required`` round, not a resumed call). A notification
that makes a result stale deletes it from the reader thread before anything
else sees the notification, and bumps a generation so that a fetch already
in flight does not write the stale result back.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Iterable, Literal, Optional

from ._protocol.caching import LISTINGS, STALE_AFTER, Scope, cache_key, freshness
from ._protocol.jsonrpc import JsonDict
from ._stats import Stats
from .cache import Cache, CacheStore, MemoryCache

log = logging.getLogger("mcp_input_sync")

#: ``identity()``: the server and the authorization context, as the transport names them.
Identity = Callable[[], tuple[str, str]]

_SCOPES: tuple[Scope, Scope] = ("private", "public")

#: A call's ``cache_mode``: serve and store, store only, or neither.
MODES = ("use", "refresh", "bypass")
CacheMode = Literal["use", "refresh", "bypass"]


def mode_for(cache_mode: Any, meta: Any) -> str:
    """A call's ``cache_mode`` checked; a call with ``meta`` asks the server (``"use"`` becomes ``"refresh"``).

    Raises:
        ValueError: not one of ``"use"``, ``"refresh"``, ``"bypass"``.
    """
    if cache_mode not in MODES:
        raise ValueError(f"cache_mode must be one of {MODES}, not {cache_mode!r}")
    return "refresh" if cache_mode == "use" and meta is not None else str(cache_mode)


class ResponseCache:
    """The client's cached listings and reads (the ``cache`` option)."""

    def __init__(
        self, option: Cache, identity: Identity, version: Callable[[], Optional[str]], modern: Callable[[], bool], stats: Stats
    ) -> None:
        self.store: CacheStore = MemoryCache() if option.store is None else option.store
        #: A store outside this process gets keys it cannot read: hashed (a key may hold a header the
        #: transport sends). hashlib loads OpenSSL (3.7 MB), so only a client with such a store pays for it.
        self._hashed = type(self.store) is not MemoryCache
        self.default_ttl = option.default_ttl
        self._identity = identity
        self._version = version
        self._modern = modern
        self._lock = threading.Lock()
        #: Moves at each eviction: a fetch that began before it does not store its result.
        self._generation = 0
        #: The store operation that failed last (warned once until one works again).
        self._failing = False
        #: ``stats["cache_hits"]``: results served from the store.
        self._stats = stats

    # ------------------------------------------------------------------ the calls' side

    def get(self, method: str, subject: str = "") -> Optional[Any]:
        """A fresh result kept for ``method`` (and the URI ``subject``), as new objects; None when there is none."""
        for scope, key in self._keys(method, subject):
            text = self._do(self.store.get, key)
            if not isinstance(text, str):
                continue
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            # an entry written under another scope's key (a foreign writer) is not trusted
            if isinstance(entry, dict) and entry.get("scope") == scope and "value" in entry:
                self._stats.add("cache_hits")
                return entry["value"]
        return None

    def mark(self) -> int:
        """Taken before a fetch; :meth:`put` stores its result only if nothing was evicted since."""
        return self._generation

    def put(self, method: str, subject: str, pages: Iterable[Any], value: Any, mark: int, refresh: bool) -> None:
        """Keep ``value`` (made of the answers ``pages``) as long as they allow; ``refresh``: drop any older one when they do not."""
        fresh = freshness(pages, modern=self._modern(), default_ttl=self.default_ttl)
        keys = dict(self._keys(method, subject))
        if fresh is None:
            if refresh:  # the fetch superseded what was kept
                for key in keys.values():
                    self._do(self.store.delete, key)
            return
        ttl, scope = fresh
        if mark != self._generation:
            return  # made stale while it was fetched
        other = keys["public" if scope == "private" else "private"]
        self._do(self.store.delete, other)  # the server changed its mind about the scope
        try:
            text = json.dumps({"scope": scope, "value": value}, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return
        self._do(self.store.set, keys[scope], text, ttl)
        if mark != self._generation:  # evicted while being stored
            self._do(self.store.delete, keys[scope])

    def keep(self, method: str, subject: str, mark: int, refresh: bool, result: Any, direct: bool) -> None:
        """A call's end (``_call``'s ``keep``): its result is kept when it came in one answer."""
        if isinstance(result, dict) and direct:
            self.put(method, subject, (result,), result, mark, refresh)
        elif refresh:
            self.evict(method, subject)

    # ------------------------------------------------------------------ the reader thread's side

    def stale(self, method: str, params: JsonDict) -> None:
        """A notification: drop what it makes stale (reader thread, before the notification goes on)."""
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self.evict("resources/read", uri)
            return
        for listing in STALE_AFTER.get(method, ()):
            self.evict(listing)

    def evict(self, method: str, subject: str = "") -> None:
        """Drop what is kept for ``method`` (and ``subject``) under this client's keys."""
        with self._lock:
            self._generation += 1
        for _, key in self._keys(method, subject):
            self._do(self.store.delete, key)

    def forget_listings(self) -> None:
        """A reconnect: the server may have restarted with other tools, prompts or resources."""
        for method in LISTINGS:
            self.evict(method)

    # ------------------------------------------------------------------ helpers

    def _keys(self, method: str, subject: str) -> list[tuple[Scope, str]]:
        server, principal = self._identity()
        version = self._version()
        keys = [(scope, cache_key(server, version, scope, principal, method, subject)) for scope in _SCOPES]
        if self._hashed:
            import hashlib

            keys = [(scope, f"{method}:{hashlib.sha256(key.encode('ascii')).hexdigest()}") for scope, key in keys]
        return keys

    def _do(self, operation: Callable[..., Any], *args: Any) -> Any:
        """One store operation; a store that raises is a store that holds nothing (warned once)."""
        try:
            done = operation(*args)
        except Exception as exc:  # the store is the application's: anything it raises is a miss
            if not self._failing:
                self._failing = True
                log.warning("mcp_input_sync: the cache store failed (%s); calls go to the server", type(exc).__name__)
            return None
        self._failing = False
        return done
