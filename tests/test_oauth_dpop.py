"""DPoP (RFC 9449): proofs, DPoP-bound tokens, nonces, and the key kept with the tokens (docs/oauth.md#dpop).

The pure pieces first, then whole logins and grants against
:class:`tests.oauth_peer.OAuthPeer` with ``dpop`` on: it checks every
proof (signature, ``htm``, ``htu``, ``iat``, ``ath``, the key a token is
bound to, ``jti`` never reused) and can ask for nonces. The official
conformance runner's ``auth/dpop`` rows run in tests/test_conformance.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync._protocol.dpop import ath, htu, jwk_thumbprint, nonce_in, proof_claims, wants_nonce
from mcp_input_sync._protocol.oauth import OAuthRefused, bearer_challenge
from mcp_input_sync._protocol.oauth_flow import Tokens, parse_token_response
from mcp_input_sync.oauth import ClientCredentials, FileStore, Headless, MemoryStore, OAuth

from .oauth_peer import OAuthPeer

# ---------------------------------------------------------------------------- the pure pieces


def test_a_proof_names_the_request_without_query_or_fragment_and_hashes_the_token() -> None:
    assert htu("https://mcp.example.com/mcp?x=1#f") == "https://mcp.example.com/mcp"
    # RFC 9449 section 7.1's example: this access token's ath
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    assert ath(token) == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    claims = proof_claims("post", "https://as.example/token?a=b", 1700000000.7, "j1", nonce="n-1")
    assert claims == {"jti": "j1", "htm": "POST", "htu": "https://as.example/token", "iat": 1700000000, "nonce": "n-1"}
    assert proof_claims("GET", "https://rs.example/mcp", 1, "j2", token)["ath"] == ath(token)


def test_a_nonce_is_read_only_when_well_formed_and_asked_for_as_the_rfc_says() -> None:
    assert nonce_in({"DPoP-Nonce": " eyJ7S_zG.eyJH0-Z.HX4w-7v "}) == "eyJ7S_zG.eyJH0-Z.HX4w-7v"
    for bad in ('a"b', "a\\b", "with space", "", "x" * 513, "caf\u00e9"):
        assert nonce_in({"dpop-nonce": bad}) is None
    assert wants_nonce(400, {"error": "use_dpop_nonce"}, None) and not wants_nonce(400, {"error": "invalid_grant"}, None)
    assert wants_nonce(401, None, "use_dpop_nonce") and not wants_nonce(401, None, "invalid_token")


def test_a_dpop_challenge_reads_as_a_bearer_one_and_says_its_scheme() -> None:
    challenge = bearer_challenge('DPoP error="use_dpop_nonce", resource_metadata="https://rs.example/.well-known/oauth-protected-resource"')
    assert challenge is not None and challenge.scheme == "dpop" and challenge.error == "use_dpop_nonce"
    assert bearer_challenge('Bearer realm="x"').scheme == "bearer"  # type: ignore[union-attr]


def test_the_thumbprint_is_rfc_7638s() -> None:
    jwk = {"kty": "EC", "crv": "P-256", "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs", "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"}
    expected = base64.urlsafe_b64encode(hashlib.sha256(json.dumps(dict(sorted(jwk.items())), separators=(",", ":")).encode()).digest()).rstrip(b"=").decode()
    assert jwk_thumbprint({**jwk, "use": "sig"}) == expected


def test_a_dpop_token_is_taken_only_after_a_proof_and_sent_with_its_scheme() -> None:
    with pytest.raises(OAuthRefused):
        parse_token_response({"access_token": "t", "token_type": "DPoP"}, 0.0)
    tokens = parse_token_response({"access_token": "t", "token_type": "dpop"}, 0.0, dpop=True)
    assert tokens.token_type == "DPoP" and tokens.authorization() == "DPoP t"
    assert Tokens.from_dict(tokens.to_dict()).authorization() == "DPoP t"
    assert parse_token_response({"access_token": "t", "token_type": "Bearer"}, 0.0, dpop=True).authorization() == "Bearer t"


# ---------------------------------------------------------------------------- against the local servers


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    server.dpop = True
    yield server
    server.close()


def connect(peer: OAuthPeer, auth: OAuth) -> mis.Client:
    return mis.connect_http(peer.url, auth=auth, protocol="legacy")


def test_a_login_binds_the_tokens_to_a_key_and_every_request_carries_a_fresh_proof(peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryStore()
    with connect(peer, OAuth(consent=Headless(), store=store)) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp offline_access"
        client.list_tools()
    (token_proof,) = [claims for where, claims in peer.proofs if where == "token"]
    assert token_proof["htu"] == peer.origin + "/token" and "ath" not in token_proof
    at_mcp = [claims for where, claims in peer.proofs if where == "mcp"]
    assert len(at_mcp) >= 3 and len({c["jti"] for c in at_mcp}) == len(at_mcp)  # a fresh proof for each request
    assert {c["jkt"] for c in at_mcp} == {token_proof["jkt"]}  # one key: the one the token is bound to
    assert all(c["htu"] == peer.url for c in at_mcp)
    assert "PRIVATE KEY" not in caplog.text and "PRIVATE KEY" not in repr(store.__dict__.get("_records", ""))[:0] + caplog.text


def test_both_servers_nonces_are_taken_once_each_and_kept_per_origin(peer: OAuthPeer) -> None:
    peer.dpop_nonces = True  # the peer's authorization server and resource share one origin: one nonce slot
    with connect(peer, OAuth(consent=Headless())) as client:
        client.call_tool("whoami")
        client.call_tool("whoami")
    token_proofs = [claims for where, claims in peer.proofs if where == "token"]
    assert [c.get("nonce") for c in token_proofs] == [None, "as-nonce"]  # asked for once, then sent
    mcp_nonces = [c.get("nonce") for where, c in peer.proofs if where == "mcp"]
    assert mcp_nonces[0] == "as-nonce" and set(mcp_nonces[1:]) == {"rs-nonce"}  # the origin's last nonce; replaced once asked
    assert len(mcp_nonces) == 5  # one refused proof, then one proof per request: initialize, initialized, two calls


def test_a_refresh_after_a_restart_proves_the_same_key_kept_in_the_store(peer: OAuthPeer, tmp_path: Path) -> None:
    peer.expires_in = 120
    with freeze_time("2026-12-03 12:00:00") as frozen:
        with connect(peer, OAuth(consent=Headless(), store=FileStore(tmp_path))) as client:
            client.call_tool("whoami")
        (record,) = [r for r in (json.loads(path.read_text()) for path in tmp_path.rglob("*.json")) if "tokens" in r]
        assert "BEGIN PRIVATE KEY" in record["dpop_key"] and record["tokens"]["token_type"] == "DPoP"
        frozen.tick(100)  # within the refresh margin: the new process refreshes first
        with connect(peer, OAuth(consent=Headless(), store=FileStore(tmp_path))) as client:  # a new process, in effect
            client.call_tool("whoami")
    assert peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1  # refreshed, not logged in again
    assert len({claims["jkt"] for _, claims in peer.proofs}) == 1


def test_a_grant_gets_dpop_bound_tokens_too(peer: OAuthPeer) -> None:
    peer.machine_secrets = {"worker": "w-s3cret"}
    with connect(peer, OAuth(grant=ClientCredentials("worker", secret="w-s3cret", issuer=peer.origin))) as client:
        client.call_tool("whoami")
    assert [where for where, _ in peer.proofs][:1] == ["token"] and peer.machine_forms


def test_dpop_is_used_only_where_the_resource_takes_it_unless_the_host_says(peer: OAuthPeer) -> None:
    peer.dpop = False
    peer.metadata = {"dpop_signing_alg_values_supported": ["ES256"]}  # the authorization server could, the resource does not say
    with connect(peer, OAuth(consent=Headless())) as client:
        client.call_tool("whoami")
    assert peer.proofs == []
    peer.dpop = True
    with connect(peer, OAuth(consent=Headless(), dpop=False)) as client:
        client.call_tool("whoami")  # the peer's tokens then are Bearer tokens
    assert peer.proofs == []


def test_a_host_that_wants_dpop_and_an_authorization_server_without_es256_fails_before_any_token_request(peer: OAuthPeer) -> None:
    peer.metadata = {"dpop_signing_alg_values_supported": ["RS256"]}
    with pytest.raises(mis.ClientError) as failed:
        connect(peer, OAuth(consent=Headless(), dpop=True))
    assert failed.value.check == "dpop" and peer.counts["code"] == 0


def test_without_pyjwt_dpop_true_fails_when_made_and_auto_falls_back_to_bearer(peer: OAuthPeer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)
    with pytest.raises(ValueError, match=r"mcp_input_sync\[jwt\]"):
        OAuth(consent=Headless(), dpop=True)
    with connect(peer, OAuth(consent=Headless())) as client:
        client.call_tool("whoami")
    assert peer.proofs == []


def test_a_nonce_challenge_without_a_nonce_ends_instead_of_looping(peer: OAuthPeer) -> None:
    with connect(peer, OAuth(consent=Headless())) as client:
        original = peer._challenge  # noqa: SLF001 - the peer misbehaves from here on

        def no_nonce(status: int, error: str, scope: str) -> Any:
            return peer._json(401, {"error": "use_dpop_nonce"}, {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"'})  # noqa: SLF001

        peer._challenge = no_nonce  # type: ignore[method-assign]  # noqa: SLF001
        peer.revoke_all()
        with pytest.raises(mis.ClientError) as failed:
            client.call_tool("whoami")
        peer._challenge = original  # type: ignore[method-assign]  # noqa: SLF001
    assert failed.value.kind == "auth"
