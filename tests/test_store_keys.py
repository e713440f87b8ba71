"""Token-store keys (issue 31, area 5): records of different kinds, accounts and servers never share a key.

An account id is a web app's user id, which a user may choose. Before,
an account named ``issuer`` owned the key of the app-wide record of every
authorization server whose issuer was a server URL that account used
(``issuer\\n<issuer>``): its logout erased the app's registrations there and
other users' logins in progress failed. The stores hash the key they are
given (FileStore's file names, RedisStore's keys), so a key that differs
is a record that differs in each of them; the Redis case is in
test_oauth_redis.py.

Also the upgrade: a record an earlier version kept under ``<account>\\n<url>``
is still read, moved on its next save, and forgotten by a logout. Every
server here is tests/oauth_peer.py on 127.0.0.1.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.oauth import FileStore, Headless, MemoryStore, OAuth, TokenStore
from mcp_input_sync.oauth.stores import issuer_key, record_key
from mcp_input_sync.web.logins import pending_key

from .oauth_peer import OAuthPeer


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TokenStore:
    return MemoryStore() if request.param == "memory" else FileStore(tmp_path / "tokens")


def whoami(auth: OAuth, peer: OAuthPeer) -> Any:
    with mis.connect_http(peer.url, handler=mis.InputHandler(), auth=auth, protocol="legacy", timeout=10) as client:
        return client.call_tool("whoami", {})


# ---------------------------------------------------------------------------- the keys themselves


def test_no_key_of_one_kind_spells_a_key_of_another_or_of_other_parts() -> None:
    # what an account, a user or a server name may hold, and URLs and issuers a server may name
    ids = ["", "issuer", "pending-login", "record", "alice", "alice\nhttps://as.example", "a\nb", "[", '["record", "a"', "issuer\nx"]
    urls = ["https://as.example", "https://mcp.example/mcp", "https://as.example\nx", "b\nhttps://as.example", "[x", '"]']
    made: dict[str, tuple[str, ...]] = {}
    cases: list[tuple[str, ...]] = [("record", url, account) for url, account in itertools.product(urls, ids)]
    cases += [("issuer", url) for url in urls] + [("pending", user, name) for user, name in itertools.product(ids, ids + urls)]
    for case in cases:
        kind, *parts = case
        key = record_key(*parts) if kind == "record" else issuer_key(*parts) if kind == "issuer" else pending_key(*parts)
        assert made.setdefault(key, case) == case, f"{case!r} and {made[key]!r} share the key {key!r}"


def test_the_process_s_own_record_keeps_its_key_across_the_upgrade() -> None:
    # the command line's FileStore, and docs/oauth.md's store.load(url): the server's URL, as every version had it
    assert record_key("https://mcp.example/mcp") == "https://mcp.example/mcp"
    assert record_key("https://mcp.example/mcp", "alice") != "alice\nhttps://mcp.example/mcp"


# ---------------------------------------------------------------------------- the attack, through the flow


def test_an_account_named_issuer_cannot_erase_the_apps_registration(peer: OAuthPeer, store: TokenStore) -> None:
    alice = OAuth(store=store, account="alice")
    pending = alice.begin(peer.url, "http://127.0.0.1:9/callback")  # registers dynamically, kept per issuer
    registration = store.load(issuer_key(peer.origin))
    assert registration is not None and "web" in registration
    intruder = OAuth(store=store, account="issuer")
    assert intruder.tokens(peer.origin) is None  # the issuer's record is not read as this account's tokens
    assert intruder.logout(peer.origin) is False
    assert store.load(issuer_key(peer.origin)) == registration
    location = alice.fetcher.redirect_location(pending["url"])  # OAuthPeer's /authorize grants at once
    assert location is not None
    alice.finish(pending, location)
    assert alice.tokens(peer.url) is not None and peer.counts["register"] == 1
    alice.close()
    intruder.close()


def test_accounts_named_like_other_keys_keep_their_own_records(peer: OAuthPeer, store: TokenStore) -> None:
    tokens = {}
    for account in ("issuer", "pending-login", "", "alice"):
        auth = OAuth(consent=Headless(), store=store, account=account)
        whoami(auth, peer)
        tokens[account] = auth.tokens(peer.url)
        auth.close()
    assert len({t.access_token for t in tokens.values() if t is not None}) == 4
    assert peer.counts["register"] == 1 and peer.counts["authorize"] == 4  # one registration for the app, a login each
    assert OAuth(store=store, account="issuer").logout(peer.url) is True
    assert OAuth(store=store, account="alice").tokens(peer.url) == tokens["alice"] and store.load(issuer_key(peer.origin)) is not None


# ---------------------------------------------------------------------------- the upgrade


def moved_to_the_old_key(store: TokenStore, server_url: str, account: str) -> str:
    """Put ``account``'s record where a version before the fix kept it: ``<account>\\n<url>``."""
    new, old = record_key(server_url, account), f"{account}\n{server_url}"
    assert new != old
    record = store.load(new)
    assert record is not None
    store.save(old, record)
    store.delete(new)
    return old


def test_a_record_an_earlier_version_kept_is_used_then_moved(peer: OAuthPeer, store: TokenStore) -> None:
    whoami(OAuth(consent=Headless(), store=store, account="alice"), peer)
    old = moved_to_the_old_key(store, peer.url, "alice")
    upgraded = OAuth(consent=None, store=store, account="alice")  # no way to log in: it must not need one
    assert whoami(upgraded, peer) is not None and peer.counts["authorize"] == 1
    with peer.lock:
        peer.access.clear()  # the server forgets the access token: the next call refreshes, and the save moves the record
    assert whoami(upgraded, peer) is not None and peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1
    assert store.load(old) is None and store.load(record_key(peer.url, "alice")) is not None


def test_a_logout_forgets_a_record_an_earlier_version_kept(peer: OAuthPeer, store: TokenStore) -> None:
    whoami(OAuth(consent=Headless(), store=store, account="alice"), peer)
    old = moved_to_the_old_key(store, peer.url, "alice")
    upgraded = OAuth(consent=None, store=store, account="alice")
    assert upgraded.tokens(peer.url) is not None
    assert upgraded.logout(peer.url) is True
    assert store.load(old) is None and OAuth(store=store, account="alice").tokens(peer.url) is None
