"""The Redis token store against a real redis-server: records, the lock between workers, one refresh for two."""

from __future__ import annotations

import json
import uuid
from typing import Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.oauth import Headless, OAuth
from mcp_input_sync.oauth.redis_store import RedisStore
from mcp_input_sync.oauth.stores import issuer_key, record_key

from .oauth_peer import OAuthPeer, race_renewals
from .test_web_redis import redis, redis_url  # noqa: F401 - the module's skips and its redis-server fixture


@pytest.fixture
def stores(redis_url: str) -> Iterator[tuple[RedisStore, RedisStore]]:  # noqa: F811
    """Two stores on separate connections with one prefix: two web workers (one decodes, one does not)."""
    prefix = f"test-{uuid.uuid4().hex}"
    a, b = redis.Redis.from_url(redis_url), redis.Redis.from_url(redis_url, decode_responses=True)
    yield RedisStore(a, prefix=prefix), RedisStore(b, prefix=prefix)
    a.close()
    b.close()


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


def test_records_are_shared_and_keyed_by_a_hash(stores: tuple[RedisStore, RedisStore]) -> None:
    a, b = stores
    a.save("alice\nhttps://mcp.example/mcp", {"tokens": {"access_token": "secret-1"}})
    assert b.load("alice\nhttps://mcp.example/mcp") == {"tokens": {"access_token": "secret-1"}}
    assert b.load("bob\nhttps://mcp.example/mcp") is None
    keys = [k if isinstance(k, str) else k.decode() for k in b.redis.keys(f"{b.prefix}:*")]
    assert len(keys) == 1 and "mcp.example" not in keys[0] and "alice" not in keys[0]
    b.redis.set(keys[0], "not json")
    assert a.load("alice\nhttps://mcp.example/mcp") is None  # a damaged record reads as no login
    a.delete("alice\nhttps://mcp.example/mcp")
    assert b.load("alice\nhttps://mcp.example/mcp") is None
    assert "secret" not in repr(a) and repr(a) == f"RedisStore(prefix={a.prefix!r})"


def test_the_lock_is_exclusive_between_workers_and_reentrant_in_one_thread(stores: tuple[RedisStore, RedisStore]) -> None:
    a, b = stores
    with a.lock("k", 1.0):
        with a.lock("k", 1.0):  # the same thread again
            pass
        with pytest.raises(TimeoutError):
            with b.lock("k", 0.2):
                pass
        with b.lock("other", 0.2):
            pass
    with b.lock("k", 0.2):  # released by its owner
        pass


def test_a_lock_left_by_a_dead_worker_expires(stores: tuple[RedisStore, RedisStore]) -> None:
    a, b = stores
    dead = RedisStore(a.redis, prefix=a.prefix, lock_ttl=0.3)
    holder = dead.lock("k", 1.0)
    holder.__enter__()  # a worker that dies holding the lock never leaves the block
    with b.lock("k", 5.0):  # waits out the 0.3 s, no longer
        pass


def test_two_workers_refresh_once(stores: tuple[RedisStore, RedisStore], peer: OAuthPeer) -> None:
    a, b = stores
    with mis.connect_http(peer.url, handler=mis.InputHandler(), auth=OAuth(consent=Headless(), store=a, account="u1"), protocol="legacy") as client:
        client.call_tool("whoami", {})
    with peer.lock:
        peer.access.clear()
    first, second = OAuth(store=a, account="u1"), OAuth(store=b, account="u1")
    sent = first.authorization(peer.url)
    assert sent is not None and sent == second.authorization(peer.url)
    outcomes = race_renewals(peer, [first, second], sent)
    assert outcomes == [None, None] and peer.counts["refresh"] == 1
    assert first.authorization(peer.url) == second.authorization(peer.url) != sent
    record = a.load(record_key(peer.url, "u1"))
    assert record is not None and json.dumps(record)


def test_an_account_named_issuer_cannot_erase_the_apps_registration(stores: tuple[RedisStore, RedisStore], peer: OAuthPeer) -> None:
    # issue 31: RedisStore hashes the key it is given, so it had the collision of the others (test_store_keys.py)
    a, b = stores
    alice = OAuth(store=a, account="alice")
    pending = alice.begin(peer.url, "http://127.0.0.1:9/callback")  # registers dynamically, kept per issuer
    registration = b.load(issuer_key(peer.origin))
    assert registration is not None and "web" in registration
    assert OAuth(store=b, account="issuer").logout(peer.origin) is False  # another worker
    assert a.load(issuer_key(peer.origin)) == registration
    location = alice.fetcher.redirect_location(pending["url"])
    assert location is not None
    alice.finish(pending, location)
    assert alice.tokens(peer.url) is not None


def test_a_record_an_earlier_version_kept_in_redis_is_read_and_moved(stores: tuple[RedisStore, RedisStore], peer: OAuthPeer) -> None:
    a, b = stores
    auth = OAuth(consent=Headless(), store=a, account="u1")
    with mis.connect_http(peer.url, handler=mis.InputHandler(), auth=auth, protocol="legacy") as client:
        client.call_tool("whoami", {})
    old = "u1\n" + peer.url  # where a version before issue 31 kept it
    record = a.load(record_key(peer.url, "u1"))
    assert record is not None and old != record_key(peer.url, "u1")
    a.save(old, record)
    a.delete(record_key(peer.url, "u1"))
    upgraded = OAuth(consent=None, store=b, account="u1")
    assert upgraded.tokens(peer.url) is not None and upgraded.logout(peer.url) is True
    assert a.load(old) is None and OAuth(store=a, account="u1").tokens(peer.url) is None
