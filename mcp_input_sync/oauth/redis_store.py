"""A token store on Redis, for a web app whose workers (processes or hosts) share the users' logins.

::

    import redis
    from mcp_input_sync.oauth import OAuth
    from mcp_input_sync.oauth.redis_store import RedisStore

    store = RedisStore(redis.Redis.from_url("redis://localhost:6379/0"))
    auth = OAuth(store=store, account=str(request.user.pk))

The client object is redis-py's ``redis.Redis`` (bytes or decoded responses
both work), or anything with ``get``, ``set``, ``delete`` and ``eval``; this
module does not import redis itself. Records live at
``<prefix>:oauth:<hash of the key>`` as JSON (the hash keeps a server's URL
and a user's id out of key listings). The lock of a record is a
``SET NX PX`` key with a random owner token, released only by its owner (a
compare-and-delete script), and it expires after ``lock_ttl`` seconds, so a
worker that dies while refreshing holds nobody up for longer than that.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
from typing import Any, Iterator, Optional

from .stores import _KeyLocks

__all__ = ["RedisStore"]

#: Pause between two tries of a lock another worker holds (real seconds).
_LOCK_POLL = 0.05

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class RedisStore:
    """Token records in Redis, shared by every worker (see the module docstring).

    Args:
        client: a ``redis.Redis``.
        prefix: the key prefix (one per application).
        lock_ttl: seconds after which a lock left by a dead worker expires;
            keep it above the longest time a lock is held (a refresh, or a
            login through ``Browser`` for a store shared with scripts: 300 s).
    """

    def __init__(self, client: Any, *, prefix: str = "mcp_input_sync", lock_ttl: float = 600.0) -> None:
        if not isinstance(lock_ttl, (int, float)) or lock_ttl <= 0:
            raise ValueError("lock_ttl must be a positive number of seconds")
        self.redis = client
        self.prefix = prefix
        self.lock_ttl = float(lock_ttl)
        self._locks = _KeyLocks()
        self._held = threading.local()

    def __repr__(self) -> str:
        return f"RedisStore(prefix={self.prefix!r})"

    def _name(self, what: str, key: str) -> str:
        return f"{self.prefix}:{what}:{hashlib.sha256(key.encode('utf-8')).hexdigest()[:40]}"

    def load(self, key: str) -> Optional[dict[str, Any]]:
        raw = self.redis.get(self._name("oauth", key))
        if raw is None:
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        self.redis.set(self._name("oauth", key), json.dumps(record))

    def delete(self, key: str) -> None:
        self.redis.delete(self._name("oauth", key))

    @contextlib.contextmanager
    def lock(self, key: str, timeout: float) -> Iterator[None]:
        with self._locks.hold(key, timeout):  # threads of this process queue here first
            held: dict[str, int] = self._held.__dict__.setdefault("depth", {})
            if held.get(key):  # re-entered by the thread that holds it
                held[key] += 1
                try:
                    yield
                finally:
                    held[key] -= 1
                return
            name, owner = self._name("oauth-lock", key), secrets.token_hex(16)
            pause = threading.Event()
            # tries counted in real pauses, not read from a clock (a frozen clock cannot stall it)
            for _ in range(max(1, int(timeout / _LOCK_POLL))):
                if self.redis.set(name, owner, nx=True, px=max(1, int(self.lock_ttl * 1000))):
                    break
                pause.wait(_LOCK_POLL)
            else:
                raise TimeoutError("another worker is still logging in to or refreshing this server")
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
                self.redis.eval(_RELEASE, 1, name, owner)
