"""A request sent again after a redirect carries a DPoP proof of its own (issue #31, docs/oauth.md#dpop).

A 307 or 308 within the server's origin is followed (docs/http.md), and an
authorization server's redirect within its origin too (docs/oauth.md). The
proof sent with the first request named that request's URL and its ``jti``
may be used once: the request that follows the redirect gets a fresh proof
(a new ``jti``; at the token endpoint, the URL it goes to). Before, the
same proof went again, a replay the server refused, so a DPoP-bound call
through such a redirect always failed.

Against :class:`tests.oauth_peer.OAuthPeer` (127.0.0.1), which checks every
proof and keeps each one's claims in ``proofs``.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.oauth import ClientCredentials, OAuth

from .oauth_peer import OAuthPeer

Route = tuple[int, dict[str, str], bytes]


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    server.dpop = True
    server.machine_secrets = {"svc": "s3cret"}
    yield server
    server.close()


def connect(peer: OAuthPeer) -> mis.Client:
    auth = OAuth(grant=ClientCredentials("svc", secret="s3cret", issuer=peer.origin), dpop=True)
    return mis.connect_http(peer.url, auth=auth, protocol="legacy", timeout=10)


def jtis_at(peer: OAuthPeer, where: str) -> list[str]:
    return [claims["jti"] for place, claims in peer.proofs if place == where]


def test_a_call_the_server_redirects_once_goes_again_with_a_fresh_proof(peer: OAuthPeer) -> None:
    original = peer._mcp  # noqa: SLF001 - the peer redirects the next authorised request, once

    def once(verb: str, headers: dict[str, str], raw: bytes) -> Route:
        answer = original(verb, headers, raw)
        if answer[0] == 307:
            peer.mcp_redirect = None
        return answer

    with connect(peer) as client:
        peer._mcp = once  # type: ignore[method-assign]  # noqa: SLF001
        peer.mcp_redirect = peer.url + "?hop=2"  # the same path: the proof names the same htu
        peer.proofs.clear()
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp"
        assert peer.mcp_redirect is None  # it was redirected
    at_mcp = [claims for where, claims in peer.proofs if where == "mcp"]
    sent = Counter(claims["jti"] for claims in at_mcp)
    assert [jti for jti, n in sent.items() if n > 1] == []  # no proof went twice
    assert all(claims["htu"] == peer.url for claims in at_mcp)
    assert [path for _, path, _ in peer.seen].count("/token") == 1  # and no new token was needed


def test_a_redirect_loop_ends_as_a_refused_redirect_and_never_replays_a_proof(peer: OAuthPeer) -> None:
    with connect(peer) as client:
        peer.mcp_redirect = peer.url  # every authorised request: a 307 to itself
        peer.proofs.clear()
        with pytest.raises(mis.ClientError) as failed:
            client.call_tool("whoami")
        peer.mcp_redirect = None
    assert (failed.value.kind, failed.value.check) == ("transport", "redirect")
    at_mcp = jtis_at(peer, "mcp")
    assert len(at_mcp) == 4 and len(set(at_mcp)) == 4  # the first request and three redirects, each its own proof


def test_a_token_request_redirected_within_its_origin_gets_a_proof_for_each_url(peer: OAuthPeer) -> None:
    # the token endpoint the metadata names answers a 307 to the real one
    peer.metadata = {"token_endpoint": peer.origin + "/token-moved"}
    original = peer.route

    def route(verb: str, path: str, query: str, headers: dict[str, str], raw: bytes) -> Route:
        if path == "/token-moved":
            peer._proof(headers, "token-moved", peer.origin + path)  # noqa: SLF001 - kept when it names this URL
            return 307, {"Location": "/token"}, b""
        return original(verb, path, query, headers, raw)

    peer.route = route  # type: ignore[method-assign]
    with connect(peer) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp"
    moved, token = ([c for where, c in peer.proofs if where == place] for place in ("token-moved", "token"))
    assert len(moved) == 1 and len(token) == 1  # each hop's proof named that hop's URL
    assert moved[0]["jti"] != token[0]["jti"] and moved[0]["jkt"] == token[0]["jkt"]


def test_a_call_redirected_to_another_path_sends_a_proof_naming_that_path(peer: OAuthPeer) -> None:
    # the server at /mcp sends the request on to /mcp-next (a 307 within its origin); a proof names the URL it goes with
    original_mcp, original_route = peer._mcp, peer.route  # noqa: SLF001
    moved: list[dict[str, object]] = []

    def once(verb: str, headers: dict[str, str], raw: bytes) -> Route:
        answer = original_mcp(verb, headers, raw)
        if answer[0] == 307:
            peer.mcp_redirect = None
        return answer

    def route(verb: str, path: str, query: str, headers: dict[str, str], raw: bytes) -> Route:
        if path == "/mcp-next":
            claims = peer._proof(headers, "mcp-next", peer.origin + path)  # noqa: SLF001 - None unless htu is this URL
            moved.append({} if claims is None else claims)
            return original_route(verb, "/mcp", query, headers, raw)
        return original_route(verb, path, query, headers, raw)

    with connect(peer) as client:
        peer._mcp = once  # type: ignore[method-assign]  # noqa: SLF001
        peer.route = route  # type: ignore[method-assign]
        peer.mcp_redirect = peer.origin + "/mcp-next"
        peer.proofs.clear()
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp"
    assert len(moved) == 1 and moved[0].get("htu") == peer.origin + "/mcp-next"
    assert moved[0]["jti"] not in jtis_at(peer, "mcp")
