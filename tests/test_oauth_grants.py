"""Machine identity: the client_credentials, jwt-bearer and token-exchange grants (docs/oauth.md#machine-identity).

The pure requests first (what goes in each form and header), then the keys,
then whole grants against :class:`tests.oauth_peer.OAuthPeer`'s
authorization server and its identity provider on 127.0.0.1. The official
conformance runner's extension rows run in tests/test_conformance.py.
"""

from __future__ import annotations

import base64
import logging
import sys
import threading
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qsl

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync._protocol.oauth import OAuthRefused
from mcp_input_sync._protocol.oauth_metadata import AuthServerMetadata
from mcp_input_sync._protocol.oauth_flow import ClientAuth
from mcp_input_sync._protocol.oauth_grants import (
    check_assertion_auth,
    check_grant,
    client_credentials_request,
    jwt_bearer_request,
    parse_exchange_response,
    secret_auth,
    token_exchange_request,
)
from mcp_input_sync.oauth import ClientCredentials, EnterpriseManaged, MemoryStore, OAuth, WorkloadIdentity
from mcp_input_sync.oauth._jwt import SigningKey

from .oauth_peer import OAuthPeer

WAIT = 10.0
JAG = "urn:ietf:params:oauth:token-type:id-jag"


def metadata(**fields: Any) -> AuthServerMetadata:
    return AuthServerMetadata("https://as.example", "https://as.example/authorize", "https://as.example/token", **fields)


def form(request: Any) -> dict[str, str]:
    return dict(parse_qsl(request.body))


def pem(key: Any) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


EC_KEY = ec.generate_private_key(ec.SECP256R1())
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)

# ---------------------------------------------------------------------------- the requests


def test_a_secret_goes_in_a_basic_header_unless_the_server_lists_only_post() -> None:
    basic = client_credentials_request(metadata(), secret_auth(metadata(), "app", "s3cr:et"), "https://mcp.example/mcp", ["read"])
    assert form(basic) == {"grant_type": "client_credentials", "resource": "https://mcp.example/mcp", "scope": "read", "client_id": "app"}
    (header,) = [value for name, value in basic.headers if name == "Authorization"]
    assert base64.b64decode(header[6:]) == b"app:s3cr%3Aet"  # RFC 6749 section 2.3.1: form-encoded first
    post_only = metadata(token_endpoint_auth_methods_supported=("client_secret_post",))
    post = client_credentials_request(post_only, secret_auth(post_only, "app", "s3cret"), None, None)
    assert form(post) == {"grant_type": "client_credentials", "client_id": "app", "client_secret": "s3cret"}
    assert all(name != "Authorization" for name, _ in post.headers)
    with pytest.raises(OAuthRefused) as refused:
        secret_auth(metadata(token_endpoint_auth_methods_supported=("private_key_jwt",)), "app", "s3cret")
    assert refused.value.check == "client" and "s3cret" not in refused.value.message


def test_a_client_assertion_replaces_the_client_id_and_a_grant_the_server_does_not_list_is_refused() -> None:
    request = client_credentials_request(metadata(), ClientAuth("private_key_jwt", "app", "a.b.c"), None, None)
    assert form(request) == {
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": "a.b.c",
    }
    with pytest.raises(OAuthRefused) as refused:
        check_grant(metadata(grant_types_supported=("authorization_code",)), "client_credentials")
    assert refused.value.check == "grant"
    check_grant(metadata(), "client_credentials")  # no list: allowed
    with pytest.raises(OAuthRefused, match="RS256"):
        check_assertion_auth(metadata(token_endpoint_auth_signing_alg_values_supported=("ES256",)), "RS256")
    with pytest.raises(OAuthRefused, match="private_key_jwt"):
        check_assertion_auth(metadata(token_endpoint_auth_methods_supported=("client_secret_basic",)), "ES256")


def test_the_jwt_bearer_grant_sends_the_assertion_as_it_is_and_no_client_unless_asked() -> None:
    request = jwt_bearer_request(metadata(), "h.p.s", "https://mcp.example/mcp", None, None)
    assert form(request) == {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "h.p.s", "resource": "https://mcp.example/mcp"}
    with pytest.raises(OAuthRefused):
        jwt_bearer_request(metadata(), "not one token", None, None, None)


def test_the_token_exchange_asks_for_an_id_jag_for_the_issuer_and_the_resource() -> None:
    request = token_exchange_request(
        "https://idp.example/token", "id.tok.en", "urn:ietf:params:oauth:token-type:id_token", "https://as.example",
        "https://mcp.example/mcp", None, ClientAuth("client_secret_post", "idp-app", "idp-secret"),
    )
    assert request.url == "https://idp.example/token"
    assert form(request) == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": JAG,
        "subject_token": "id.tok.en",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": "https://as.example",
        "resource": "https://mcp.example/mcp",
        "client_id": "idp-app",
        "client_secret": "idp-secret",
    }
    assert parse_exchange_response({"access_token": "j.a.g", "issued_token_type": JAG}) == "j.a.g"
    for answer in ({"access_token": "j.a.g"}, {"issued_token_type": JAG}, [], {"access_token": "j a g", "issued_token_type": JAG}):
        with pytest.raises(OAuthRefused) as refused:
            parse_exchange_response(answer)
        assert refused.value.check == "exchange"


# ---------------------------------------------------------------------------- keys


def test_a_key_signs_with_its_own_algorithm_and_a_wrong_one_is_refused_when_made(tmp_path: Path) -> None:
    assert SigningKey(pem(EC_KEY)).algorithm == "ES256"
    path = tmp_path / "key.pem"
    path.write_text(pem(RSA_KEY))
    rsa_key = SigningKey(path)
    assert rsa_key.algorithm == "RS256" and repr(rsa_key) == "SigningKey(algorithm='RS256')"
    claims = jwt.decode(rsa_key.sign({"sub": "x"}), RSA_KEY.public_key(), algorithms=["RS256"])
    assert claims == {"sub": "x"}
    cases = [
        (pem(EC_KEY), "RS256", "signs with ES256"),
        (pem(ec.generate_private_key(ec.SECP384R1())), None, "P-256"),
        (pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)), None, "2048"),
        ("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", None, "not an unencrypted PEM"),
        (str(tmp_path / "missing.pem"), None, "cannot read"),
        (pem(EC_KEY), "HS256", "one of"),
    ]
    for source, algorithm, why in cases:
        with pytest.raises(ValueError, match=why):
            SigningKey(source, algorithm)


def test_without_pyjwt_a_configuration_that_signs_fails_when_made_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)
    with pytest.raises(ValueError, match=r"mcp_input_sync\[jwt\]"):
        ClientCredentials("app", private_key=pem(EC_KEY), issuer="https://as.example")
    ClientCredentials("app", secret="s", issuer="https://as.example")  # a secret signs nothing


@pytest.mark.parametrize(
    "kwargs, why",
    [
        ({}, "exactly one"),
        ({"secret": "s", "private_key": pem(EC_KEY), "issuer": "https://as"}, "exactly one"),
        ({"secret": "s"}, "issuer"),
        ({"secret": "s", "issuer": "https://as", "algorithm": "ES256"}, "algorithm"),
        ({"secret": "s", "issuer": "https://as", "method": "private_key_jwt"}, "method must be"),
        ({"private_key": pem(EC_KEY), "issuer": "https://as", "method": "client_secret_post"}, "method= goes with a secret"),
        ({"private_key": pem(EC_KEY)}, "issuer="),
        ({"secret": "s", "issuer": ""}, "issuer must be"),
    ],
)
def test_credentials_that_cannot_work_fail_when_made(kwargs: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        ClientCredentials("app", **kwargs)


def test_no_repr_shows_a_secret_a_key_or_an_assertion() -> None:
    shown = repr(OAuth(grant=ClientCredentials("app", secret="s3cret-value", issuer="https://as.example")))
    shown += repr(ClientCredentials("app", private_key=pem(EC_KEY), issuer="https://as.example"))
    shown += repr(WorkloadIdentity("eyJhbGciOi.assertion-value.sig", issuer="https://as.example"))
    shown += repr(EnterpriseManaged(identity_assertion="id-token-value", idp_token_endpoint="https://idp.example/token", client_id="app", secret="s3cret-value", issuer="https://as.example"))
    for secret in ("s3cret-value", "PRIVATE KEY", "assertion-value", "id-token-value"):
        assert secret not in shown
    assert "ES256" in shown


# ---------------------------------------------------------------------------- against an authorization server


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    server.machine_secrets = {"worker": "w-s3cret"}
    server.machine_key = EC_KEY.public_key()
    server.metadata = {"token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}
    yield server
    server.close()


def connect(peer: OAuthPeer, auth: OAuth) -> mis.Client:
    return mis.connect_http(peer.url, auth=auth, protocol="legacy")


def test_a_worker_calls_as_itself_with_its_secret_and_the_secret_is_kept_out_of_the_store(peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    caplog.set_level(logging.DEBUG)
    with connect(peer, OAuth(grant=ClientCredentials("worker", secret="w-s3cret", issuer=peer.origin), store=store)) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp"
    (sent,) = peer.machine_forms
    assert sent["grant_type"] == "client_credentials" and sent["basic"].startswith("Basic ") and "client_secret" not in sent
    assert sent["resource"] == peer.url and sent["scope"] == "mcp"  # the PRM's scopes, as for a login
    records = repr(store.__dict__)
    assert "w-s3cret" not in records and "w-s3cret" not in caplog.text
    assert "refresh_token': 'rt-" not in records  # a grant keeps no refresh token: it asks again


def test_a_private_key_signs_a_fresh_assertion_for_the_issuer_each_time(peer: OAuthPeer) -> None:
    peer.metadata["token_endpoint_auth_signing_alg_values_supported"] = ["ES256"]
    peer.expires_in = 120
    auth = OAuth(grant=ClientCredentials("worker", private_key=pem(EC_KEY), issuer=peer.origin), refresh_margin=60)
    with freeze_time("2026-12-03 12:00:00") as frozen, connect(peer, auth) as client:
        client.call_tool("whoami")
        frozen.tick(90)  # within the margin: asked again before the next request
        client.call_tool("whoami")
    first, second = (form_["client_assertion"] for form_ in peer.machine_forms)
    claims = [jwt.decode(token, EC_KEY.public_key(), algorithms=["ES256"], audience=peer.origin, options={"verify_exp": False}) for token in (first, second)]
    assert all(c["iss"] == c["sub"] == "worker" and c["aud"] == peer.origin and c["exp"] - c["iat"] == 300 for c in claims)
    assert claims[0]["jti"] != claims[1]["jti"]
    assert "client_id" not in peer.machine_forms[0]


def test_an_algorithm_the_server_does_not_list_fails_before_any_token_request(peer: OAuthPeer) -> None:
    peer.metadata["token_endpoint_auth_signing_alg_values_supported"] = ["RS256"]
    with pytest.raises(mis.ClientError) as failed:
        connect(peer, OAuth(grant=ClientCredentials("worker", private_key=pem(EC_KEY), issuer=peer.origin)))
    assert failed.value.kind == "auth" and failed.value.check == "client" and "ES256" in str(failed.value)
    assert peer.counts["machine"] == 0


def test_threads_that_meet_the_401_at_once_ask_for_one_token(peer: OAuthPeer) -> None:
    auth = OAuth(grant=ClientCredentials("worker", secret="w-s3cret", issuer=peer.origin))
    with connect(peer, auth) as client:
        peer.token_gate = threading.Event()
        results: list[Any] = []
        threads = [threading.Thread(target=lambda: results.append(client.call_tool("whoami"))) for _ in range(4)]
        for thread in threads:
            thread.start()
        peer.token_gate.set()
        for thread in threads:
            thread.join(WAIT)
    assert len(results) == 4 and peer.counts["machine"] == 1


def test_a_refused_workload_assertion_is_never_sent_again_and_no_other_grant_is_tried(peer: OAuthPeer) -> None:
    auth = OAuth(grant=WorkloadIdentity("eyJ.refused.sig", issuer=peer.origin))
    for _ in range(2):
        with pytest.raises(mis.ClientError) as failed:
            connect(peer, auth)
        assert failed.value.kind == "auth"
    assert peer.counts["machine"] == 1 and peer.counts["register"] == peer.counts["authorize"] == 0
    assert failed.value.check == "grant"


def test_a_callable_fetches_a_fresh_workload_assertion_each_time(peer: OAuthPeer) -> None:
    peer.good_assertions = {"eyJ.one.sig", "eyJ.two.sig"}
    handed = iter(["eyJ.one.sig", "eyJ.two.sig"])
    auth = OAuth(grant=WorkloadIdentity(lambda: next(handed), issuer=peer.origin))
    with connect(peer, auth) as client:
        client.call_tool("whoami")
        peer.revoke_all()
        client.call_tool("whoami")  # the 401 asks again, with the next assertion
    assert [f["assertion"] for f in peer.machine_forms] == ["eyJ.one.sig", "eyJ.two.sig"]
    assert all(f["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" and "client_id" not in f for f in peer.machine_forms)


def test_enterprise_managed_authorization_exchanges_the_id_token_then_presents_the_id_jag(peer: OAuthPeer) -> None:
    peer.good_id_tokens = {"idtok"}
    grant = EnterpriseManaged(
        identity_assertion="idtok", idp_token_endpoint=peer.origin + "/idp/token", client_id="worker", secret="w-s3cret",
        issuer=peer.origin, idp_client_id="idp-app",
    )
    with connect(peer, OAuth(grant=grant)) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "mcp"
    exchange, bearer = peer.machine_forms
    assert exchange["audience"] == peer.origin and exchange["resource"] == peer.url and exchange["client_id"] == "idp-app"
    assert bearer["assertion"] == "jag-idtok" and bearer["basic"].startswith("Basic ")


def test_each_leg_of_enterprise_managed_authorization_names_itself_when_it_fails(peer: OAuthPeer) -> None:
    def grant(secret: str) -> OAuth:
        return OAuth(grant=EnterpriseManaged(
            identity_assertion="idtok", idp_token_endpoint=peer.origin + "/idp/token", client_id="worker", secret=secret, issuer=peer.origin,
        ))

    with pytest.raises(mis.ClientError) as failed:
        connect(peer, grant("w-s3cret"))  # the identity provider does not know the token
    assert failed.value.check == "exchange" and "invalid_grant" in str(failed.value)
    peer.good_id_tokens = {"idtok"}
    with pytest.raises(mis.ClientError) as failed:
        connect(peer, grant("wrong"))  # the authorization server does not know the client
    assert failed.value.check == "token" and "ID-JAG" in str(failed.value) and "wrong" not in str(failed.value)


def test_every_grant_that_sends_a_reusable_credential_needs_the_issuer_named() -> None:
    # A server's metadata could name any authorization server: a workload assertion, an identity assertion or a
    # client assertion sent there could be replayed at the real one. So no grant goes out without the host's issuer.
    made = [
        lambda: WorkloadIdentity("eyJ.platform.token"),
        lambda: WorkloadIdentity(lambda: "eyJ.platform.token", client_id="app"),
        lambda: ClientCredentials("app", private_key=pem(EC_KEY)),
        lambda: EnterpriseManaged(identity_assertion="idtok", idp_token_endpoint="https://idp.example/token", client_id="app", secret="s"),
        lambda: EnterpriseManaged(identity_assertion="idtok", idp_token_endpoint="https://idp.example/token", client_id="app", private_key=pem(EC_KEY)),
    ]
    for make in made:
        with pytest.raises(ValueError, match=r"needs issuer= \(the authorization server it belongs to\)"):
            make()


@pytest.mark.parametrize("kind", ["secret", "key", "workload", "enterprise"])
def test_a_grant_bound_to_an_issuer_is_never_presented_to_another(peer: OAuthPeer, kind: str) -> None:
    peer.good_id_tokens = {"idtok"}
    peer.metadata["token_endpoint_auth_signing_alg_values_supported"] = ["ES256"]
    elsewhere = "https://as.elsewhere.example"
    grants = {
        "secret": lambda: ClientCredentials("worker", secret="w-s3cret", issuer=elsewhere),
        "key": lambda: ClientCredentials("worker", private_key=pem(EC_KEY), issuer=elsewhere),
        "workload": lambda: WorkloadIdentity("eyJ.platform.token", issuer=elsewhere),
        "enterprise": lambda: EnterpriseManaged(
            identity_assertion="idtok", idp_token_endpoint=peer.origin + "/idp/token", client_id="worker", secret="w-s3cret", issuer=elsewhere,
        ),
    }
    with pytest.raises(mis.ClientError) as failed:
        connect(peer, OAuth(grant=grants[kind]()))
    assert failed.value.check == "issuer" and "not the one these credentials belong to" in str(failed.value)
    assert peer.counts["machine"] == 0 and peer.machine_forms == []  # no token request and no exchange reached anyone


def test_a_grant_has_no_login_to_begin(peer: OAuthPeer) -> None:
    auth = OAuth(grant=WorkloadIdentity("eyJ.a.b", issuer=peer.origin))
    with pytest.raises(mis.ClientError) as failed:
        auth.begin(peer.url, "https://app.example/callback")
    assert failed.value.check == "grant"


def test_processes_sharing_a_store_ask_for_one_token(peer: OAuthPeer, tmp_path: Path) -> None:
    from mcp_input_sync.oauth import FileStore

    from .oauth_peer import race_renewals

    # three OAuth objects on one file store stand for three processes: only the store's lock keeps them apart
    providers = [OAuth(grant=ClientCredentials("worker", secret="w-s3cret", issuer=peer.origin), store=FileStore(tmp_path)) for _ in range(3)]
    assert race_renewals(peer, providers, None) == [None, None, None]
    assert peer.counts["machine"] == 1
    assert len({provider.authorization(peer.url) for provider in providers}) == 1
