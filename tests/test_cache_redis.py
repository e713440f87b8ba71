"""The Redis cache store against a real redis-server: workers share a public listing, keys hide the server and the user."""

from __future__ import annotations

from typing import Any

import mcp_input_sync as mis
from mcp_input_sync.cache import RedisCache
from mcp_input_sync.testing import FakeServer

from .test_web_redis import redis, redis_url  # noqa: F401 - the module's skips and its redis-server fixture

LISTING: dict[str, Any] = {
    "resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "ttlMs": 60_000, "cacheScope": "public",
}


def test_two_workers_share_a_public_listing_through_redis(redis_url: str) -> None:  # noqa: F811
    raw, decoded = redis.Redis.from_url(redis_url), redis.Redis.from_url(redis_url, decode_responses=True)
    asked = []
    for worker, client in enumerate((raw, decoded)):  # each worker its own connection, bytes or text
        with FakeServer(era="modern") as server:
            server.override("tools/list", lambda params: LISTING)
            server.transport.cache_identity = lambda: ("https://mcp.example/mcp", f'["Bearer worker-{worker}"]')  # type: ignore[method-assign]
            with server.client(cache=RedisCache(client, prefix="cache-test")) as mcp:
                assert [t["name"] for t in mcp.list_tools()] == ["echo"]
                asked.append(len(server.requests_seen("tools/list")))
    assert asked == [1, 0]  # the second worker was served what the first kept
    keys = [k if isinstance(k, str) else k.decode() for k in decoded.keys("cache-test:cache:*")]
    assert keys and all("mcp.example" not in k and "worker" not in k for k in keys)
    ttl = decoded.pttl(keys[0])
    assert 0 < ttl <= 60_000  # Redis expires it by the server's ttlMs
    assert repr(RedisCache(raw, prefix="cache-test")) == "RedisCache(prefix='cache-test')"


def test_a_private_result_in_redis_stays_with_its_user(redis_url: str) -> None:  # noqa: F811
    client = redis.Redis.from_url(redis_url)
    texts = []
    for user in ("alice", "bob", "alice"):
        with FakeServer(era="modern") as server:
            answer: dict[str, Any] = {
                "resultType": "complete", "contents": [{"uri": "file:///a", "text": f"{user}'s"}], "ttlMs": 60_000, "cacheScope": "private"}
            server.override("resources/read", lambda params, answer=answer: answer)  # type: ignore[misc]
            server.transport.cache_identity = lambda user=user: ("https://mcp.example/mcp", user)  # type: ignore[method-assign,misc]
            with server.client(cache=mis.Cache(RedisCache(client, prefix="private-test"))) as mcp:
                texts.append(mcp.read_resource("file:///a")["contents"][0]["text"])
                texts.append(str(len(server.requests_seen("resources/read"))))
    assert texts == ["alice's", "1", "bob's", "1", "alice's", "0"]
