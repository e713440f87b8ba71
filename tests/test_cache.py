"""Cached listings and reads (the ``cache`` option): what is kept, for how long, for whom, and what drops it.

In memory against the testing kit's fake server (the hints scripted), then
against the official SDK's server with ``cache_hints`` over stdio and HTTP
(tests/peers/sdk_cache_server.py), and server-everything's own list_changed.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any, Iterator, Optional

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync._protocol.caching import cache_key, freshness
from mcp_input_sync.cache import Cache, MemoryCache, RedisCache
from mcp_input_sync.testing import FakeServer
from mcp_input_sync.transports.http import HttpTransport
from mcp_input_sync.transports.stdio import StdioTransport

from .harness import PEERS_DIR
from .http_peers import http_peer
from .test_everything import EVERYTHING, NODE22

JsonDict = dict[str, Any]
WAIT = 10.0
TOOL: JsonDict = {"name": "echo", "inputSchema": {"type": "object"}}
CACHE_PEER = [sys.executable, str(PEERS_DIR / "sdk_cache_server.py")]


def listing(ttl_ms: Optional[int] = 60_000, scope: str = "private", **extra: Any) -> JsonDict:
    result: JsonDict = {"resultType": "complete", "tools": [TOOL], **extra}
    if ttl_ms is not None:
        result.update(ttlMs=ttl_ms, cacheScope=scope)
    return result


def read(text: str, ttl_ms: Optional[int] = 60_000, scope: str = "private") -> JsonDict:
    result: JsonDict = {"resultType": "complete", "contents": [{"uri": "file:///a", "text": text}]}
    if ttl_ms is not None:
        result.update(ttlMs=ttl_ms, cacheScope=scope)
    return result


class Heard:
    """A subscriber: wait (bounded) until a notification named ``method`` was heard (the cache dropped its entry first)."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.cond = threading.Condition()

    def __call__(self, method: str, params: JsonDict) -> None:
        with self.cond:
            self.methods.append(method)
            self.cond.notify_all()

    def wait(self, method: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: method in self.methods, WAIT), f"{method} never heard: {self.methods}"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer(era="modern") as server:
        yield server


# ============================================================================ the pure parts


def test_freshness_reads_the_hints_of_the_modern_era_only() -> None:
    assert freshness([{"ttlMs": 5000, "cacheScope": "public"}], modern=True, default_ttl=0) == (5.0, "public")
    assert freshness([{"ttlMs": 5000, "cacheScope": "private"}], modern=True, default_ttl=0) == (5.0, "private")
    assert freshness([{"ttlMs": 0, "cacheScope": "public"}], modern=True, default_ttl=0) is None  # stale at once
    assert freshness([{}], modern=True, default_ttl=0) is None  # no hint: not kept
    assert freshness([{"ttlMs": 5000, "cacheScope": "public"}], modern=False, default_ttl=0) is None  # an older era promises nothing
    assert freshness([{}], modern=False, default_ttl=3) == (3.0, "private")  # default_ttl: never shared
    for bad in (-1, True, 1.5, "60000", None):
        assert freshness([{"ttlMs": bad, "cacheScope": "public"}], modern=True, default_ttl=0) is None
    assert freshness([{"ttlMs": 10**12, "cacheScope": "public"}], modern=True, default_ttl=0) == (86400.0, "public")  # a day at most
    # a listing: its shortest page, public only when every page is
    pages = [{"ttlMs": 9000, "cacheScope": "public"}, {"ttlMs": 4000, "cacheScope": "private"}]
    assert freshness(pages, modern=True, default_ttl=0) == (4.0, "private")
    assert freshness([{"ttlMs": 9000, "cacheScope": "public"}, {}], modern=True, default_ttl=0) is None


def test_a_public_key_leaves_the_principal_out_and_a_private_one_keeps_it() -> None:
    a = cache_key("srv", "2026-07-28", "private", "alice", "tools/list")
    b = cache_key("srv", "2026-07-28", "private", "bob", "tools/list")
    assert a != b
    assert cache_key("srv", "2026-07-28", "public", "alice", "tools/list") == cache_key("srv", "2026-07-28", "public", "bob", "tools/list")
    assert cache_key("srv", "2026-07-28", "public", "", "tools/list") != cache_key("srv", "2025-11-25", "public", "", "tools/list")
    # parts cannot run into each other
    assert cache_key("a", "v", "private", "b|c", "m") != cache_key("a|b", "v", "private", "c", "m")


def test_the_memory_store_expires_and_stays_within_its_bounds() -> None:
    with freeze_time("2026-12-01") as frozen:
        store = MemoryCache(max_entries=2, max_bytes=10)
        store.set("a", "1234", 5.0)
        frozen.tick(4.9)
        assert store.get("a") == "1234"
        frozen.tick(0.2)
        assert store.get("a") is None and len(store) == 0
        store.set("a", "1234", 60)
        store.set("b", "5678", 60)
        store.get("a")  # a is now the most recently used
        store.set("c", "90", 60)  # over max_entries: b goes
        assert (store.get("a"), store.get("b"), store.get("c")) == ("1234", None, "90")
        store.set("d", "12345", 60)  # over max_bytes (4 + 2 + 5): a goes
        assert store.get("a") is None and store.get("d") == "12345"
        store.set("e", "x" * 11, 60)  # larger than the whole store: not kept
        assert store.get("e") is None
        store.delete("d")
        assert store.get("d") is None
    with pytest.raises(ValueError):
        MemoryCache(max_entries=0)


def test_the_option_takes_true_false_a_store_or_a_cache() -> None:
    store = MemoryCache()
    for value in (True, False, store, Cache(store, default_ttl=5)):
        with FakeServer(era="modern") as server:
            server.client(cache=value)
    with pytest.raises(TypeError, match="cache must be"), FakeServer(era="modern") as server:
        server.client(cache="yes")
    with pytest.raises(TypeError, match="get"):
        Cache(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Cache(default_ttl=-1)
    with pytest.raises(ValueError, match="cache_mode"):
        with FakeServer(era="modern") as server, server.client() as client:
            client.list_tools(cache_mode="always")  # type: ignore[arg-type]


# ============================================================================ in memory, the hints scripted


def test_a_listing_is_served_again_within_its_ttl_then_asked_for_again(fake: FakeServer) -> None:
    fake.override("tools/list", lambda params: listing(ttl_ms=5000))
    with freeze_time("2026-12-01") as frozen, fake.client() as client:
        assert client.list_tools() == [TOOL]
        assert client.list_tools() == [TOOL]
        assert len(fake.requests_seen("tools/list")) == 1
        frozen.tick(5.1)
        client.list_tools()
        assert len(fake.requests_seen("tools/list")) == 2


def test_cache_modes_refresh_and_bypass(fake: FakeServer) -> None:
    answers = iter([listing(tools=[{"name": "one", "inputSchema": {"type": "object"}}]), listing(), listing(ttl_ms=None), listing()])
    fake.override("tools/list", lambda params: next(answers))
    with fake.client() as client:
        assert [t["name"] for t in client.list_tools()] == ["one"]
        assert client.list_tools(cache_mode="refresh") == [TOOL]  # asked again, and kept
        assert client.list_tools() == [TOOL]
        assert client.list_tools(cache_mode="bypass") == [TOOL]  # asked, not kept (it carried no ttlMs anyway)
        assert client.list_tools() == [TOOL]  # the refreshed entry still serves
        assert len(fake.requests_seen("tools/list")) == 3
        client.list_tools(meta={"com.example/trace": "t1"})  # a call with meta always asks
        assert len(fake.requests_seen("tools/list")) == 4


def test_a_result_without_ttl_or_of_zero_ttl_is_not_kept(fake: FakeServer) -> None:
    fake.override("prompts/list", lambda params: {"resultType": "complete", "prompts": [], "ttlMs": 0, "cacheScope": "public"})
    fake.override("resources/list", lambda params: {"resultType": "complete", "resources": []})
    with fake.client() as client:
        for _ in range(2):
            client.list_prompts()
            client.list_resources()
        assert len(fake.requests_seen("prompts/list")) == len(fake.requests_seen("resources/list")) == 2


def test_a_listing_of_several_pages_is_kept_whole_for_its_shortest_page(fake: FakeServer) -> None:
    def paged(params: JsonDict) -> JsonDict:
        if "cursor" not in params:
            return {"resultType": "complete", "resources": [{"uri": "file:///a", "name": "a"}], "nextCursor": "2", "ttlMs": 60000, "cacheScope": "public"}
        return {"resultType": "complete", "resources": [{"uri": "file:///b", "name": "b"}], "ttlMs": 2000, "cacheScope": "private"}

    fake.override("resources/list", paged)
    with freeze_time("2026-12-01") as frozen, fake.client() as client:
        assert [r["name"] for r in client.list_resources()] == ["a", "b"]
        assert [r["name"] for r in client.list_resources()] == ["a", "b"]
        assert len(fake.requests_seen("resources/list")) == 2  # two pages, once
        frozen.tick(2.5)
        client.list_resources()
        assert len(fake.requests_seen("resources/list")) == 4


def test_a_list_changed_notification_drops_the_listing_at_once(fake: FakeServer) -> None:
    fake.override("tools/list", lambda params: listing())
    fake.override("resources/list", lambda params: {"resultType": "complete", "resources": [], "ttlMs": 60000, "cacheScope": "private"})
    fake.override("resources/templates/list", lambda params: {"resultType": "complete", "resourceTemplates": [], "ttlMs": 60000, "cacheScope": "private"})
    heard = Heard()
    with fake.client() as client:
        client.subscribe(heard)
        client.list_tools()
        client.list_resources()
        client.list_resource_templates()
        fake.notify("notifications/resources/list_changed")
        heard.wait("notifications/resources/list_changed")
        client.list_tools()
        client.list_resources()
        client.list_resource_templates()
        assert [len(fake.requests_seen(m)) for m in ("tools/list", "resources/list", "resources/templates/list")] == [1, 2, 2]
        fake.notify("notifications/tools/list_changed")
        heard.wait("notifications/tools/list_changed")
        client.list_tools()
        assert len(fake.requests_seen("tools/list")) == 2


def test_a_read_is_kept_and_a_resource_update_drops_it(fake: FakeServer) -> None:
    reads = iter(read(f"v{n}") for n in range(1, 10))
    fake.override("resources/read", lambda params: next(reads))
    heard = Heard()
    with fake.client() as client:
        client.subscribe(heard)
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v1"
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v1"
        fake.notify("notifications/resources/updated", {"uri": "file:///other"})
        heard.wait("notifications/resources/updated")
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v1"
        fake.notify("notifications/resources/updated", {"uri": "file:///a"})
        with heard.cond:
            heard.methods.clear()
        heard.wait("notifications/resources/updated")
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v2"
        assert client.read_resource("file:///a", cache_mode="refresh")["contents"][0]["text"] == "v3"
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v3"
        assert client.read_resource("file:///a", cache_mode="bypass")["contents"][0]["text"] == "v4"
        assert client.read_resource("file:///a")["contents"][0]["text"] == "v3"


def test_a_served_result_is_a_copy_the_caller_may_change(fake: FakeServer) -> None:
    fake.override("resources/read", lambda params: read("kept"))
    with fake.client() as client:
        first = client.read_resource("file:///a")
        first["contents"][0]["text"] = "changed by the caller"
        assert client.read_resource("file:///a")["contents"][0]["text"] == "kept"


class Answers(mis.InputHandler):
    def handle_elicitation(self, params: JsonDict, ctx: mis.InputContext) -> JsonDict:
        return {"action": "accept", "content": {"answer": "yes"}}


def test_a_read_reached_through_a_round_of_input_is_never_kept(fake: FakeServer) -> None:
    ask: JsonDict = {
        "resultType": "input_required",
        "inputRequests": {"q": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}},
    }
    fake.override("resources/read", lambda params: read("answered") if "inputResponses" in params else ask)
    with fake.client(handler=Answers()) as client:
        assert client.read_resource("file:///a")["contents"][0]["text"] == "answered"
        assert client.read_resource("file:///a")["contents"][0]["text"] == "answered"
        assert len(fake.requests_seen("resources/read")) == 4  # two rounds each time: nothing kept
        pending = client.read_resource("file:///a", defer_input=True)
        assert isinstance(pending, mis.PendingCall)
        resumed = client.resume(pending, {"q": {"action": "accept", "content": {"answer": "yes"}}})
        assert isinstance(resumed, dict) and resumed["contents"][0]["text"] == "answered"
        client.read_resource("file:///a", defer_input=True)
        assert len(fake.requests_seen("resources/read")) == 7  # the resumed one was not kept either


def test_the_hints_of_an_older_era_count_only_with_a_default_ttl() -> None:
    for option, asked in ((True, 2), (Cache(default_ttl=30), 1)):
        with FakeServer(era="legacy") as server:
            server.add_resource("file:///a", "text")
            server.override("tools/list", lambda params: {"tools": [TOOL], "ttlMs": 60000, "cacheScope": "public"})
            with server.client(cache=option) as client:
                client.list_tools()
                client.list_tools()
                assert len(server.requests_seen("tools/list")) == asked


def test_without_the_cache_every_call_asks(fake: FakeServer) -> None:
    fake.override("tools/list", lambda params: listing())
    with fake.client(cache=False) as client:
        client.list_tools()
        client.list_tools()
        assert len(fake.requests_seen("tools/list")) == 2


def test_a_closed_client_raises_rather_than_serve_what_it_kept(fake: FakeServer) -> None:
    fake.override("tools/list", lambda params: listing())
    client = fake.client()
    with client:
        client.list_tools()
    with pytest.raises(mis.ClientError) as err:
        client.list_tools()
    assert err.value.kind == "closed"


class Broken:
    """A store that always fails, with a secret in its error."""

    def get(self, key: str) -> Optional[str]:
        raise ConnectionError("redis://user:hunter2@cache:6379 unreachable")

    def set(self, key: str, value: str, ttl: float) -> None:
        raise ConnectionError("redis://user:hunter2@cache:6379 unreachable")

    def delete(self, key: str) -> None:
        raise ConnectionError("redis://user:hunter2@cache:6379 unreachable")


def test_a_failing_store_is_an_empty_one_warned_of_once_without_its_secrets(fake: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    fake.override("tools/list", lambda params: listing())
    caplog.set_level(logging.WARNING, logger="mcp_input_sync")
    with fake.client(cache=Broken()) as client:
        for _ in range(3):
            assert client.list_tools() == [TOOL]
    assert len(fake.requests_seen("tools/list")) == 3
    warned = [r.getMessage() for r in caplog.records if "cache store" in r.getMessage()]
    assert len(warned) == 1 and "hunter2" not in warned[0] and "ConnectionError" in warned[0]


# ============================================================================ who may see what


def test_a_private_result_is_never_served_to_another_user_a_public_one_is() -> None:
    store = MemoryCache()
    seen: dict[str, int] = {}

    def server_for(user: str) -> FakeServer:
        server = FakeServer(era="modern")
        server.override("tools/list", lambda params: listing(scope="public"))
        server.override("resources/read", lambda params: read(f"{user}'s data"))
        return server

    # the fake's transports have no identity beyond themselves: make one per user, as a transport does
    identities = {"alice": ("server", "alice"), "bob": ("server", "bob")}
    for user in ("alice", "bob", "alice"):
        with server_for(user) as server:
            server.transport.cache_identity = lambda user=user: identities[user]  # type: ignore[method-assign,misc]
            with server.client(cache=store) as client:
                assert client.read_resource("file:///a")["contents"][0]["text"] == f"{user}'s data"
                client.list_tools()
                seen[user] = seen.get(user, 0) + len(server.requests_seen("resources/read"))
                if user == "bob":
                    assert server.requests_seen("tools/list") == []  # alice's public listing served bob
    # alice's second client found her own private read; bob's never saw hers
    assert seen == {"alice": 1, "bob": 1}


def test_transports_name_their_authorization_context() -> None:
    def ident(**settings: Any) -> tuple[str, str]:
        return HttpTransport("https://user:pw@mcp.example/mcp?x=1#frag", **settings).cache_identity()

    server, anonymous = ident()
    assert server.startswith("https://mcp.example/mcp?x=1") and "pw" not in server and "frag" not in server
    assert ident(headers={"Authorization": "Bearer a"})[1] != ident(headers={"Authorization": "Bearer b"})[1]
    assert ident(headers={"Authorization": "Bearer a"}) == ident(headers={"authorization": "Bearer a"})
    assert ident()[1] == anonymous  # the same settings, the same context
    import requests

    basic = requests.auth.HTTPBasicAuth("u", "p")
    assert ident(auth=basic)[1] != ident(auth=basic)[1]  # a requests auth names no one: kept to its transport
    from mcp_input_sync.oauth import OAuth

    alice, bob = OAuth(account="alice"), OAuth(account="bob")
    assert ident(auth=alice)[1] == ident(auth=OAuth(account="alice"))[1] != ident(auth=bob)[1]
    assert ident(auth=OAuth())[1] != ident(auth=OAuth())[1]  # the process's own logins: no account to share by
    one = StdioTransport(["server"], env={"TOKEN": "a"})
    assert one.cache_identity() == StdioTransport(["server"], env={"TOKEN": "a"}).cache_identity()
    assert one.cache_identity()[1] != StdioTransport(["server"], env={"TOKEN": "b"}).cache_identity()[1]
    assert one.cache_identity()[0] != StdioTransport(["server", "--other"], env={"TOKEN": "a"}).cache_identity()[0]


def test_a_store_outside_the_process_gets_hashed_keys_only(fake: FakeServer) -> None:
    class Recording(MemoryCache):
        keys: list[str] = []

        def set(self, key: str, value: str, ttl: float) -> None:
            self.keys.append(key)
            super().set(key, value, ttl)

    fake.override("tools/list", lambda params: listing())
    store = Recording()
    fake.transport.cache_identity = lambda: ("https://mcp.example/mcp", '["Bearer secret-token"]')  # type: ignore[method-assign]
    # a subclass of the memory store is the application's: treated as outside
    with fake.client(cache=store) as client:
        client.list_tools()
        client.list_tools()
    assert len(fake.requests_seen("tools/list")) == 1
    assert store.keys and all("secret" not in key and "mcp.example" not in key for key in store.keys)


# ============================================================================ real peers


@pytest.fixture(params=["stdio", "http"])
def cache_peer(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Makes clients of the SDK's server with cache hints, each as a user: over stdio a server each, the user in
    its environment; over HTTP one server for all, the user in an Authorization header (the server checks none)."""
    if request.param == "stdio":
        yield lambda user="anyone", **options: mis.connect_stdio(CACHE_PEER, env={"MCP_USER": user}, protocol="modern", **options)
        return
    with http_peer("sdk_cache_server.py") as url:
        yield lambda user="anyone", **options: mis.connect_http(url, headers={"Authorization": f"Bearer {user}"}, protocol="modern", **options)


def text_of(result: JsonDict) -> str:
    value: str = result["content"][0]["text"] if "content" in result else result["contents"][0]["text"]
    return value


def test_the_sdk_server_hints_are_followed_and_its_notifications_drop_them(cache_peer: Any) -> None:
    heard = Heard()
    with cache_peer() as client:
        client.subscribe(heard)  # the 2026-07-28 listen is open while someone hears
        client.subscribe_resource("file:///counter.txt")  # hearing the tools' list_changed below tells the listen is up
        names = [t["name"] for t in client.list_tools()]
        assert text_of(client.read_resource("file:///counter.txt")) == "read 1"
        assert text_of(client.read_resource("file:///counter.txt")) == "read 1"
        assert text_of(client.call_tool("reads")) == "1"  # the second read never reached the server
        client.list_prompts()
        client.list_prompts()
        text_of(client.call_tool("add_tool", {"name": "late"}))
        heard.wait("notifications/tools/list_changed")
        assert [t["name"] for t in client.list_tools()] == names + ["late"]
        client.call_tool("touch", {"uri": "file:///counter.txt"})
        heard.wait("notifications/resources/updated")
        assert text_of(client.read_resource("file:///counter.txt")) == "read 2"
        assert text_of(client.read_resource("file:///counter.txt", cache_mode="refresh")) == "read 3"
        assert text_of(client.read_resource("file:///counter.txt", cache_mode="bypass")) == "read 4"
        assert text_of(client.read_resource("file:///counter.txt")) == "read 3"


def test_two_users_share_a_public_listing_but_never_a_private_read(cache_peer: Any) -> None:
    store = MemoryCache()  # shared by both clients, as a RedisCache is by many workers
    with cache_peer("alice", cache=store) as alice, cache_peer("bob", cache=store) as bob, cache_peer("alice", cache=store) as again:
        alice.list_tools()
        alice_read = text_of(alice.read_resource("file:///counter.txt"))
        assert alice.stats["cache_hits"] == 0
        bob.list_tools()  # tools/list is "public": alice's listing serves bob
        assert bob.stats["cache_hits"] == 1
        bob.read_resource("file:///counter.txt")  # the read is "private": bob's goes to the server
        assert bob.stats["cache_hits"] == 1
        assert text_of(again.read_resource("file:///counter.txt")) == alice_read  # alice's own, from the cache
        assert again.stats["cache_hits"] == 1


def test_a_reconnect_drops_the_listings_a_restarted_server_may_have_changed() -> None:
    with mis.connect_stdio(CACHE_PEER, protocol="modern", reconnect=True) as client:
        client.list_tools()
        client.list_tools()
        text_of(client.read_resource("file:///counter.txt"))
        assert client.stats["cache_hits"] == 1
        with pytest.raises(mis.ClientError) as err:
            client.call_tool("crash")
        assert err.value.kind == "transport"
        client.list_tools()  # connects again, and asks the new server
        assert client.stats["cache_hits"] == 1
        assert text_of(client.read_resource("file:///counter.txt")) == "read 1"  # a kept read lives out its ttlMs
        assert client.stats["cache_hits"] == 2


def test_server_everything_list_changed_drops_a_listing_kept_by_default_ttl() -> None:
    heard = Heard()
    command = [str(NODE22), str(EVERYTHING), "stdio"]
    with mis.connect_stdio(command, cache=Cache(default_ttl=600), discover_timeout=2) as client:
        client.subscribe(heard)
        before = {r["uri"] for r in client.list_resources()}
        assert {r["uri"] for r in client.list_resources()} == before  # kept
        made = client.call_tool("gzip-file-as-resource", {"name": "cached.txt.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"})
        link = next(block for block in made["content"] if block.get("type") == "resource_link")
        heard.wait("notifications/resources/list_changed")
        after = {r["uri"] for r in client.list_resources()}
        assert link["uri"] in after and link["uri"] not in before
