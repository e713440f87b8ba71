"""The pure OAuth core (_protocol/oauth.py and oauth_flow.py): table-driven, no network, no clock."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Optional
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_input_sync._protocol import oauth as o
from mcp_input_sync._protocol import oauth_metadata as m
from mcp_input_sync._protocol import oauth_flow as f
from mcp_input_sync._protocol.oauth import OAuthRefused

ISSUER = "https://auth.example.com"
SERVER = "https://mcp.example.com/mcp"


def metadata(**fields: Any) -> m.AuthServerMetadata:
    doc: dict[str, Any] = {
        "issuer": ISSUER,
        "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token",
        "code_challenge_methods_supported": ["S256"],
    }
    doc.update(fields)
    doc = {k: v for k, v in doc.items() if v is not None}
    return m.check_as_metadata(doc, doc.get("issuer", ISSUER) if "issuer" in fields else ISSUER)


def refused(check: str, fn: Any, *args: Any, **kwargs: Any) -> OAuthRefused:
    with pytest.raises(OAuthRefused) as info:
        fn(*args, **kwargs)
    assert info.value.check == check, info.value
    return info.value


# ---------------------------------------------------------------------------- WWW-Authenticate


@pytest.mark.parametrize(
    "header, expected",
    [
        ('Bearer resource_metadata="https://m.example/.well-known/oauth-protected-resource"',
         o.BearerChallenge(resource_metadata="https://m.example/.well-known/oauth-protected-resource")),
        ('Bearer resource_metadata="https://m.example/prm",\n scope="files:read"'.replace("\n", ""),
         o.BearerChallenge(resource_metadata="https://m.example/prm", scope=("files:read",))),
        ('bearer error="insufficient_scope", scope="files:write a", resource_metadata="https://m/x", error_description="need write"',
         o.BearerChallenge("https://m/x", ("files:write", "a"), "insufficient_scope", "need write")),
        ("BEARER error=invalid_token, scope=read", o.BearerChallenge(scope=("read",), error="invalid_token")),
        ("Bearer", o.BearerChallenge()),
        ('Bearer realm="example"', o.BearerChallenge(realm="example")),
        ('Bearer realm="a" scope="b"', o.BearerChallenge(scope=("b",), realm="a")),
        ('Basic realm="x", Bearer scope="s"', o.BearerChallenge(scope=("s",))),
        ('Negotiate abc==, Bearer scope="s"', o.BearerChallenge(scope=("s",))),
        ('Bearer scope="", realm="r"', o.BearerChallenge(scope=(), realm="r")),
        ('Bearer realm="a \\"quoted\\" , comma"', o.BearerChallenge(realm='a "quoted" , comma')),
        ('Bearer  scope = "x y x" ,, realm=r', o.BearerChallenge(scope=("x", "y"), realm="r")),
        ('Bearer scope="a", Bearer scope="b"', o.BearerChallenge(scope=("a",))),
        ("Bearer resource_metadata=https://m.example/prm, scope=a", o.BearerChallenge(resource_metadata="https://m.example/prm", scope=("a",))),
        ("Basic realm=x", None),
        ("DPoP algs=ES256", o.BearerChallenge(scheme="dpop")),  # RFC 9449 section 7.1: read as a Bearer one is
        ("Basic realm=x, DPoP error=use_dpop_nonce", o.BearerChallenge(error="use_dpop_nonce", scheme="dpop")),
        ('Bearer scope="a", DPoP scope="b"', o.BearerChallenge(scope=("b",), scheme="dpop")),  # a server offering DPoP says so
    ],
)
def test_bearer_challenges_are_read_tolerantly(header: str, expected: Optional[o.BearerChallenge]) -> None:
    assert o.bearer_challenge(header) == expected


def test_several_challenges_keep_their_order_and_params() -> None:
    got = o.parse_www_authenticate('Negotiate abc=, Basic realm="x", Bearer scope="s", error=invalid_token')
    assert [c.scheme for c in got] == ["negotiate", "basic", "bearer"]
    assert got[0].token68 == "abc="
    assert got[2].params == (("scope", "s"), ("error", "invalid_token"))


def test_insufficient_scope_flag() -> None:
    challenge = o.bearer_challenge('Bearer error="insufficient_scope", scope="w"')
    assert challenge is not None and challenge.insufficient_scope
    plain = o.bearer_challenge("Bearer scope=w")
    assert plain is not None and not plain.insufficient_scope


def test_a_long_error_description_is_cut() -> None:
    challenge = o.bearer_challenge('Bearer error_description="' + "x" * 2000 + '"')
    assert challenge is not None and challenge.error_description == "x" * o.MAX_DESCRIPTION


@pytest.mark.parametrize(
    "header",
    [
        "",
        "   ,  , ",
        '"',
        'Bearer realm="x',
        "Bearer a b",
        "=x",
        "Bearer realm=x\x00",
        "Bearer realm=x\r\nSet-Cookie: a=b",
        "Bearer " + "a=b, " * 40,
        ", ".join(["Basic"] * 20),
        "Bearer " + "x" * (o.MAX_HEADER + 1),
        'Bearer scope="a", scope="b"',
        'Bearer resource_metadata="ftp://m/x"',
        'Bearer resource_metadata="/relative"',
        'Bearer resource_metadata="https://user@m/x"',
        'Bearer scope="a\\"b"',
        'Bearer error="bad\\"code"',
        "Bearer scope=" + "s" * 300,
        'Bearer scope="' + " ".join(f"s{i}" for i in range(70)) + '"',
        "Bearer (",
        'Bearer scope=a"b',
    ],
)
def test_garbage_challenges_are_refused_with_a_typed_error(header: str) -> None:
    refused("challenge", o.bearer_challenge, header)


@pytest.mark.parametrize("value", [None, 3, b"Bearer", ["Bearer"]])
def test_a_header_that_is_not_text_is_refused(value: object) -> None:
    refused("challenge", o.parse_www_authenticate, value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_reads_or_is_refused(header: str) -> None:
    try:
        o.bearer_challenge(header)
    except OAuthRefused as error:
        assert error.check == "challenge"


def test_a_refusal_never_quotes_the_header() -> None:
    error = refused("challenge", o.bearer_challenge, 'Bearer scope="secret-thing", scope="x"')
    assert "secret-thing" not in str(error)


# ---------------------------------------------------------------------------- protected resource metadata


@pytest.mark.parametrize(
    "server, challenge_url, expected",
    [
        ("https://m.example/mcp", None,
         ("https://m.example/.well-known/oauth-protected-resource/mcp", "https://m.example/.well-known/oauth-protected-resource")),
        ("https://m.example/a/b/", None,
         ("https://m.example/.well-known/oauth-protected-resource/a/b/", "https://m.example/.well-known/oauth-protected-resource")),
        ("https://m.example", None, ("https://m.example/.well-known/oauth-protected-resource",)),
        ("https://m.example/", None, ("https://m.example/.well-known/oauth-protected-resource",)),
        ("HTTPS://M.example:8443/mcp", None,
         ("https://M.example:8443/.well-known/oauth-protected-resource/mcp", "https://M.example:8443/.well-known/oauth-protected-resource")),
        ("https://m.example/mcp?tenant=1", None,
         ("https://m.example/.well-known/oauth-protected-resource/mcp?tenant=1", "https://m.example/.well-known/oauth-protected-resource")),
        ("http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/custom/prm", ("http://127.0.0.1:3000/custom/prm",)),
        ("https://m.example/mcp", "https://other.example/prm", ("https://other.example/prm",)),
    ],
)
def test_prm_urls_come_in_the_specified_order_and_no_more(server: str, challenge_url: Optional[str], expected: tuple[str, ...]) -> None:
    assert m.prm_urls(server, challenge_url) == expected


@pytest.mark.parametrize("server", ["mcp.example.com", "ftp://m/x", "https://m/x#frag", "https:///x", "https://a@m/x", "https://m:99999/x", "https://m/ x", 7])
def test_prm_urls_refuse_a_bad_server_url(server: Any) -> None:
    refused("url", m.prm_urls, server)


def test_prm_urls_refuse_a_bad_challenge_url() -> None:
    refused("challenge", m.prm_urls, SERVER, "javascript:alert(1)")


@pytest.mark.parametrize(
    "resource, server",
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mcp/", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/a", "https://mcp.example.com/a/b/mcp"),
        ("HTTPS://MCP.example.com/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"),
        ("http://localhost:3000/mcp", "http://localhost:3000/mcp"),
        ("https://mcp.example.com/mcp?t=1", "https://mcp.example.com/mcp?t=1"),
    ],
)
def test_the_prm_resource_may_be_the_server_or_a_parent(resource: str, server: str) -> None:
    assert m.check_prm_resource(resource, server) == resource  # unchanged, byte for byte


@pytest.mark.parametrize(
    "resource, server",
    [
        ("https://evil.example.com/mcp", "https://mcp.example.com/mcp"),
        ("http://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com:8443/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mc", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mcpx", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mcp/deeper", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/other", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mcp?t=2", "https://mcp.example.com/mcp?t=1"),
        ("https://mcp.example.com.evil.com/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/mcp#x", "https://mcp.example.com/mcp"),
        ("mcp.example.com", "https://mcp.example.com/mcp"),
        (None, "https://mcp.example.com/mcp"),
        (["https://mcp.example.com/mcp"], "https://mcp.example.com/mcp"),
        ("https://mcp.example.com/" + "a" * 3000, "https://mcp.example.com/mcp"),
    ],
)
def test_any_other_prm_resource_is_refused(resource: object, server: str) -> None:
    refused("resource", m.check_prm_resource, resource, server)


def test_a_prm_document_is_checked_whole() -> None:
    doc = {"resource": SERVER, "authorization_servers": [ISSUER], "scopes_supported": ["a", "b"]}
    assert m.check_prm(doc, SERVER) == m.ProtectedResource(SERVER, (ISSUER,), ("a", "b"))
    assert m.check_prm({"resource": SERVER, "authorization_servers": [ISSUER]}, SERVER).scopes_supported is None


@pytest.mark.parametrize(
    "doc, check",
    [
        ([], "metadata"),
        ({"authorization_servers": [ISSUER]}, "resource"),
        ({"resource": "https://evil.example/mcp", "authorization_servers": [ISSUER]}, "resource"),
        ({"resource": SERVER}, "metadata"),
        ({"resource": SERVER, "authorization_servers": []}, "metadata"),
        ({"resource": SERVER, "authorization_servers": "https://a"}, "metadata"),
        ({"resource": SERVER, "authorization_servers": [3]}, "metadata"),
        ({"resource": SERVER, "authorization_servers": [ISSUER] * 65}, "metadata"),
        ({"resource": SERVER, "authorization_servers": [ISSUER], "scopes_supported": "a b"}, "metadata"),
        ({"resource": SERVER, "authorization_servers": [ISSUER], "scopes_supported": ["a b"]}, "metadata"),
    ],
)
def test_a_bad_prm_document_is_refused(doc: object, check: str) -> None:
    refused(check, m.check_prm, doc, SERVER)


# ---------------------------------------------------------------------------- authorization server metadata


@pytest.mark.parametrize(
    "issuer, expected",
    [
        ("https://auth.example.com/tenant1", (
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        )),
        ("https://auth.example.com/tenant1/", (
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        )),
        ("https://auth.example.com", (
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        )),
        ("https://auth.example.com/", (
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        )),
        ("http://localhost:9000/a/b", (
            "http://localhost:9000/.well-known/oauth-authorization-server/a/b",
            "http://localhost:9000/.well-known/openid-configuration/a/b",
            "http://localhost:9000/a/b/.well-known/openid-configuration",
        )),
    ],
)
def test_as_metadata_urls_follow_the_specification_order(issuer: str, expected: tuple[str, ...]) -> None:
    assert m.as_metadata_urls(issuer) == expected


@pytest.mark.parametrize("issuer", ["http://auth.example.com", "https://auth.example.com?x=1", "https://auth.example.com#f", "auth.example.com", "", None])
def test_as_metadata_urls_refuse_a_bad_issuer(issuer: Any) -> None:
    refused("issuer", m.as_metadata_urls, issuer)


def test_metadata_is_read_into_a_record() -> None:
    got = metadata(
        registration_endpoint=ISSUER + "/register",
        scopes_supported=["a", "offline_access"],
        token_endpoint_auth_methods_supported=["client_secret_post", "none"],
        grant_types_supported=["authorization_code", "refresh_token"],
        authorization_response_iss_parameter_supported=True,
        client_id_metadata_document_supported=False,
    )
    assert got.issuer == ISSUER and got.token_endpoint == ISSUER + "/token" and got.discovered
    assert got.scopes_supported == ("a", "offline_access")
    assert got.token_endpoint_auth_methods_supported == ("client_secret_post", "none")
    assert got.authorization_response_iss_parameter_supported is True
    assert got.client_id_metadata_document_supported is False


@pytest.mark.parametrize(
    "document_issuer",
    [ISSUER + "/", "https://AUTH.example.com", "https://auth.example.com:443", "https://evil.example.com", None, 1],
)
def test_the_metadata_issuer_must_be_the_same_string(document_issuer: object) -> None:
    doc = {"issuer": document_issuer, "authorization_endpoint": ISSUER + "/a", "token_endpoint": ISSUER + "/t"}
    refused("issuer", m.check_as_metadata, doc, ISSUER)


@pytest.mark.parametrize(
    "issuer, endpoint, ok",
    [
        ("https://auth.example.com", "https://auth.example.com/authorize", True),
        ("https://auth.example.com", "https://login.other.example/authorize", True),
        ("https://auth.example.com", "http://auth.example.com/authorize", False),
        ("https://auth.example.com", "http://127.0.0.1/authorize", False),
        ("http://localhost:9000", "http://localhost:9000/authorize", True),
        ("http://127.0.0.1:9000", "http://[::1]:9000/authorize", True),
        ("http://localhost:9000", "http://auth.example.com/authorize", False),
        ("https://auth.example.com", "javascript:alert(1)", False),
        ("https://auth.example.com", "/authorize", False),
    ],
)
def test_http_endpoints_only_for_a_loopback_issuer(issuer: str, endpoint: str, ok: bool) -> None:
    doc = {"issuer": issuer, "authorization_endpoint": endpoint, "token_endpoint": endpoint}
    if ok:
        assert m.check_as_metadata(doc, issuer).authorization_endpoint == endpoint
    else:
        refused("endpoint", m.check_as_metadata, doc, issuer)


@pytest.mark.parametrize(
    "changes",
    [
        {"authorization_endpoint": None},
        {"token_endpoint": None},
        {"scopes_supported": "a b"},
        {"code_challenge_methods_supported": "S256"},
        {"token_endpoint_auth_methods_supported": [None]},
        {"grant_types_supported": ["x"] * 65},
        {"authorization_response_iss_parameter_supported": "true"},
        {"client_id_metadata_document_supported": 1},
    ],
)
def test_malformed_metadata_is_refused(changes: dict[str, Any]) -> None:
    refused("metadata", metadata, **changes)


def test_metadata_that_is_not_an_object_is_refused() -> None:
    refused("metadata", m.check_as_metadata, ["issuer"], ISSUER)


@pytest.mark.parametrize(
    "server, base",
    [
        ("https://mcp.example.com/v1/mcp", "https://mcp.example.com"),
        ("http://localhost:3000/mcp", "http://localhost:3000"),
        ("https://mcp.example.com:8443", "https://mcp.example.com:8443"),
    ],
)
def test_the_2025_03_26_fallbacks(server: str, base: str) -> None:
    assert m.legacy_authorization_base(server) == base
    defaults = m.legacy_default_metadata(server)
    assert (defaults.issuer, defaults.authorization_endpoint, defaults.token_endpoint, defaults.registration_endpoint) == (
        base, base + "/authorize", base + "/token", base + "/register")
    assert not defaults.discovered


def test_the_2025_03_26_fallback_refuses_plain_http_off_loopback() -> None:
    refused("url", m.legacy_authorization_base, "http://mcp.example.com/mcp")


@pytest.mark.parametrize(
    "url, loopback",
    [("http://localhost:1/x", True), ("http://127.0.0.5/", True), ("http://[::1]/", True), ("https://a.localhost/", True),
     ("https://example.com/", False), ("http://10.0.0.1/", False), ("not a url", False), (None, False)],
)
def test_loopback_urls(url: object, loopback: bool) -> None:
    assert o.is_loopback_url(url) is loopback


# ---------------------------------------------------------------------------- PKCE and state


def test_the_rfc_7636_example_challenge() -> None:
    # RFC 7636 appendix B
    assert f.code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_fresh_pkce_pairs_are_valid_and_differ() -> None:
    first, second = f.new_pkce(), f.new_pkce()
    assert first.verifier != second.verifier
    for pair in (first, second):
        assert re.fullmatch(r"[A-Za-z0-9\-._~]{43,128}", pair.verifier)
        digest = hashlib.sha256(pair.verifier.encode()).digest()
        assert pair.challenge == base64.urlsafe_b64encode(digest).decode().rstrip("=")
        assert "=" not in pair.challenge and len(pair.challenge) == 43


@pytest.mark.parametrize("verifier", ["a" * 42, "a" * 129, "a" * 42 + "!", "a" * 42 + "é", "", None, 5, "a" * 42 + " "])
def test_a_bad_verifier_is_refused(verifier: Any) -> None:
    refused("pkce", f.code_challenge, verifier)


@pytest.mark.parametrize("length", [43, 128])
def test_verifier_lengths_at_the_bounds(length: int) -> None:
    assert len(f.code_challenge("~" * length)) == 43


def test_state_is_fresh_and_unguessable_sized() -> None:
    states = {f.new_state() for _ in range(20)}
    assert len(states) == 20 and all(len(s) >= 43 for s in states)


@pytest.mark.parametrize(
    "methods, discovered, absent_is_refusal, ok",
    [
        (["S256"], True, True, True),
        (["plain", "S256"], True, True, True),
        ([], True, True, False),
        (["plain"], True, True, False),
        (["s256"], True, True, False),
        (None, True, True, False),
        (None, True, False, True),
        (None, False, True, True),
    ],
)
def test_pkce_support(methods: Optional[list[str]], discovered: bool, absent_is_refusal: bool, ok: bool) -> None:
    meta = metadata(code_challenge_methods_supported=methods)
    if not discovered:
        meta = m.legacy_default_metadata(SERVER)
    if ok:
        f.check_pkce_support(meta, absent_is_refusal=absent_is_refusal)
    else:
        refused("pkce", f.check_pkce_support, meta, absent_is_refusal=absent_is_refusal)


# ---------------------------------------------------------------------------- iss (RFC 9207), every row of the table


@pytest.mark.parametrize(
    "supported, iss, ok",
    [
        (True, ISSUER, True),  # true, present, equal: compare, proceed
        (True, "https://evil.example.com", False),  # true, present, different
        (True, None, False),  # true, absent: reject
        (False, ISSUER, True),  # false, present, equal
        (False, "https://evil.example.com", False),  # false, present, different: still compared
        (None, ISSUER, True),  # absent, present, equal
        (None, "https://evil.example.com", False),  # absent, present, different
        (False, None, True),  # false, absent: proceed
        (None, None, True),  # absent, absent: proceed
    ],
)
def test_iss_table(supported: Optional[bool], iss: Optional[str], ok: bool) -> None:
    if ok:
        f.check_iss(iss, ISSUER, supported)
    else:
        refused("iss", f.check_iss, iss, ISSUER, supported)


@pytest.mark.parametrize(
    "iss",
    [ISSUER + "/", "https://AUTH.example.com", "HTTPS://auth.example.com", "https://auth.example.com:443", "https://auth.%65xample.com", ""],
)
def test_iss_is_compared_without_normalisation(iss: str) -> None:
    refused("iss", f.check_iss, iss, ISSUER, None)


def pending(**kwargs: Any) -> f.AuthorizationRequest:
    return f.authorization_url(metadata(), client_id="cid", redirect_uri="http://127.0.0.1:5000/cb", resource=SERVER, **kwargs)


def test_an_authorization_response_yields_its_code() -> None:
    request = pending()
    params = f.parse_redirect_query(f"?code=abc&state={request.state}&iss={ISSUER}")
    assert f.check_authorization_response(params, request, True) == "abc"


@pytest.mark.parametrize(
    "params, supported, check",
    [
        ({"code": "abc", "state": "WRONG"}, None, "state"),
        ({"code": "abc"}, None, "state"),
        ({"code": "abc", "state": "S", "iss": "https://evil"}, None, "iss"),
        ({"code": "abc", "state": "S"}, True, "iss"),
        ({"error": "access_denied", "state": "S"}, None, "authorization"),
        ({"error": "<script>", "state": "S"}, None, "authorization"),
        ({"error": "access_denied", "state": "S", "iss": "https://evil"}, None, "iss"),  # iss before the error is read
        ({"state": "S"}, None, "response"),
        ({"state": "S", "code": ""}, None, "response"),
        ({"state": "S", "code": "x" * 5000}, None, "response"),
    ],
)
def test_bad_authorization_responses(params: dict[str, str], supported: Optional[bool], check: str) -> None:
    request = pending(state="S")
    error = refused(check, f.check_authorization_response, params, request, supported)
    assert "<script>" not in str(error) and "evil" not in str(error)


def test_an_error_code_is_named_but_nothing_else() -> None:
    error = refused("authorization", f.check_authorization_response,
                    {"error": "access_denied", "error_description": "go away", "state": "S"}, pending(state="S"), None)
    assert "access_denied" in str(error) and "go away" not in str(error)


@pytest.mark.parametrize("query", ["code=a&code=b", "state=%FF", 5, "x=" + "a" * 9000])
def test_bad_redirect_queries_are_refused(query: Any) -> None:
    refused("response", f.parse_redirect_query, query)


# ---------------------------------------------------------------------------- scopes


@pytest.mark.parametrize(
    "challenge, prm, as_scopes, want_refresh, expected",
    [
        (("files:read",), ("a", "b"), None, True, ("files:read",)),
        (None, ("a", "b"), None, True, ("a", "b")),
        (None, None, None, True, None),
        ((), ("a",), None, True, None),  # an empty challenge scope is the challenge's answer: ask for nothing
        (None, (), None, True, None),
        (("a",), None, ("a", "offline_access"), True, ("a", "offline_access")),
        (("a",), None, ("a", "offline_access"), False, ("a",)),
        (("a",), None, ("a",), True, ("a",)),
        (None, None, ("offline_access",), True, None),
        (("a", "offline_access"), None, ("offline_access",), True, ("a", "offline_access")),
        (("a", "a", "b"), None, None, True, ("a", "b")),
    ],
)
def test_scope_selection(challenge: Any, prm: Any, as_scopes: Any, want_refresh: bool, expected: Any) -> None:
    assert f.select_scopes(challenge, prm, as_scopes, want_refresh=want_refresh) == expected


@pytest.mark.parametrize(
    "held, challenged, expected",
    [
        (("read",), ("write",), ("read", "write")),
        (("read", "write"), ("write",), ("read", "write")),
        (None, ("write",), ("write",)),
        (("read",), None, ("read",)),
        (("b", "a"), ("c", "a"), ("b", "a", "c")),
    ],
)
def test_step_up_is_the_union(held: Any, challenged: Any, expected: tuple[str, ...]) -> None:
    assert f.step_up_scopes(held, challenged) == expected


def test_step_up_refuses_an_overlong_union() -> None:
    refused("scope", f.step_up_scopes, [f"a{i}" for i in range(40)], [f"b{i}" for i in range(40)])


@pytest.mark.parametrize("value", ["a\"b", "a\\b", "é", "a\tb"])
def test_scope_tokens_refuse_odd_characters(value: str) -> None:
    refused("scope", o.parse_scope, value)


# ---------------------------------------------------------------------------- the authorization URL


def test_the_authorization_url_carries_every_parameter() -> None:
    pkce = f.Pkce("v" * 43, f.code_challenge("v" * 43))
    resource = "https://mcp.example.com/mcp"
    request = f.authorization_url(metadata(), client_id="https://app.example/client.json", redirect_uri="http://127.0.0.1:5000/cb",
                                  resource=resource, scopes=("a", "b c"[:1]), pkce=pkce, state="st")
    parts = urlsplit(request.url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == ISSUER + "/authorize"
    query = dict(parse_qsl(parts.query))
    assert query == {
        "response_type": "code", "client_id": "https://app.example/client.json", "redirect_uri": "http://127.0.0.1:5000/cb",
        "code_challenge": pkce.challenge, "code_challenge_method": "S256", "state": "st", "resource": resource, "scope": "a b",
    }
    assert "%20" in parts.query and "+" not in parts.query
    assert request.issuer == ISSUER and request.pkce is pkce and request.scopes == ("a", "b")


def test_the_resource_is_sent_byte_for_byte() -> None:
    resource = "https://MCP.example.com/mcp/"
    request = pending()
    request = f.authorization_url(metadata(), client_id="c", redirect_uri="http://127.0.0.1/cb", resource=resource)
    raw = dict(pair.split("=", 1) for pair in urlsplit(request.url).query.split("&"))
    assert unquote(raw["resource"]) == resource


def test_no_scope_parameter_without_scopes() -> None:
    assert "scope" not in parse_qs(urlsplit(pending(scopes=None).url).query)
    assert "scope" not in parse_qs(urlsplit(pending(scopes=()).url).query)


def test_an_endpoint_query_is_kept() -> None:
    meta = metadata(authorization_endpoint=ISSUER + "/authorize?tenant=1")
    request = f.authorization_url(meta, client_id="c", redirect_uri="http://127.0.0.1/cb", resource=SERVER)
    assert parse_qs(urlsplit(request.url).query)["tenant"] == ["1"]


def test_the_authorization_url_refuses_a_server_without_s256() -> None:
    refused("pkce", f.authorization_url, metadata(code_challenge_methods_supported=["plain"]), client_id="c",
            redirect_uri="http://127.0.0.1/cb", resource=SERVER)


@pytest.mark.parametrize("field", ["client_id", "redirect_uri", "resource"])
def test_the_authorization_url_refuses_empty_parts(field: str) -> None:
    kwargs: dict[str, Any] = {"client_id": "c", "redirect_uri": "http://127.0.0.1/cb", "resource": SERVER}
    kwargs[field] = ""
    with pytest.raises(OAuthRefused):
        f.authorization_url(metadata(), **kwargs)


# ---------------------------------------------------------------------------- client authentication and token requests


@pytest.mark.parametrize(
    "offered, secret, registered, expected",
    [
        (["client_secret_basic"], "s", None, "client_secret_basic"),
        (["client_secret_post"], "s", None, "client_secret_post"),
        (["none"], None, None, "none"),
        (["client_secret_post", "client_secret_basic"], "s", None, "client_secret_basic"),
        (None, "s", None, "client_secret_basic"),
        (None, None, None, "none"),
        (["client_secret_basic"], "s", "client_secret_post", "client_secret_post"),
        (["client_secret_basic"], "s", "none", "none"),
        (["client_secret_basic"], None, "client_secret_basic", "none"),
        (["none"], "s", None, "none"),
        (["client_secret_basic"], "s", "private_key_jwt", "client_secret_basic"),
    ],
)
def test_client_auth_choice(offered: Any, secret: Optional[str], registered: Optional[str], expected: str) -> None:
    auth = f.choose_client_auth(metadata(token_endpoint_auth_methods_supported=offered), "cid", secret, registered)
    assert auth.method == expected
    assert auth.secret == (None if expected == "none" else secret)


def test_client_auth_refuses_when_nothing_fits() -> None:
    refused("client", f.choose_client_auth, metadata(token_endpoint_auth_methods_supported=["private_key_jwt"]), "cid", "s")


def test_basic_auth_form_encodes_id_and_secret() -> None:
    request = pending(state="S")
    auth = f.ClientAuth("client_secret_basic", "id:with space", "sec/ret+=:")
    token = f.authorization_code_request(metadata(), request, "the-code", auth)
    header = dict(token.headers)["Authorization"]
    assert header.startswith("Basic ")
    decoded = base64.b64decode(header[6:]).decode()
    assert decoded == "id%3Awith%20space:sec%2Fret%2B%3D%3A"
    assert [unquote(p) for p in decoded.split(":")] == ["id:with space", "sec/ret+=:"]
    body = dict(parse_qsl(token.body))
    # the id also rides in the body (the MCP SDK's server needs it there); the secret in Basic only
    assert body["client_id"] == "id:with space" and "client_secret" not in body


def test_the_authorization_code_request() -> None:
    request = pending(state="S")
    token = f.authorization_code_request(metadata(), request, "the-code", f.ClientAuth("client_secret_post", "cid", "sec"))
    assert token.url == ISSUER + "/token"
    assert dict(parse_qsl(token.body)) == {
        "grant_type": "authorization_code", "code": "the-code", "redirect_uri": "http://127.0.0.1:5000/cb",
        "code_verifier": request.pkce.verifier, "resource": SERVER, "client_id": "cid", "client_secret": "sec",
    }
    assert dict(token.headers)["Content-Type"] == "application/x-www-form-urlencoded"


def test_the_refresh_request() -> None:
    token = f.refresh_request(metadata(), "rt", SERVER, f.ClientAuth("none", "cid"), scopes=("a", "b"))
    assert dict(parse_qsl(token.body)) == {"grant_type": "refresh_token", "refresh_token": "rt", "resource": SERVER, "client_id": "cid", "scope": "a b"}
    plain = f.refresh_request(metadata(), "rt", SERVER, f.ClientAuth("none", "cid"))
    assert "scope" not in dict(parse_qsl(plain.body)) and "Authorization" not in dict(plain.headers)


# ---------------------------------------------------------------------------- tokens


def test_token_responses_compute_expiry_from_now() -> None:
    tokens = f.parse_token_response({"access_token": "AT", "token_type": "bearer", "expires_in": 3600, "refresh_token": "RT", "scope": "a b"}, 1000.0)
    assert tokens == f.Tokens("AT", "Bearer", 4600.0, "RT", ("a", "b"))
    assert not tokens.expired(4000.0) and tokens.expired(4541.0) and tokens.expired(4600.0, margin=0)
    assert tokens.authorization() == "Bearer AT"
    forever = f.parse_token_response({"access_token": "AT", "token_type": "Bearer"}, 5.0)
    assert forever.expires_at is None and not forever.expired(1e12) and forever.scopes is None


def test_a_refresh_without_a_new_refresh_token_keeps_the_old_one() -> None:
    old = f.Tokens("AT", refresh_token="RT1")
    assert f.parse_token_response({"access_token": "AT2", "token_type": "Bearer"}, 0.0, old).refresh_token == "RT1"
    assert f.parse_token_response({"access_token": "AT2", "token_type": "Bearer", "refresh_token": "RT2"}, 0.0, old).refresh_token == "RT2"


def test_a_huge_lifetime_is_capped() -> None:
    tokens = f.parse_token_response({"access_token": "AT", "token_type": "Bearer", "expires_in": 10**30}, 0.0)
    assert tokens.expires_at == float(f.MAX_EXPIRES_IN)


@pytest.mark.parametrize(
    "doc, now",
    [
        ([], 0.0),
        ({}, 0.0),
        ({"access_token": ""}, 0.0),
        ({"access_token": 5}, 0.0),
        ({"access_token": "a\nb"}, 0.0),
        ({"access_token": "x" * 20000}, 0.0),
        ({"access_token": "AT", "token_type": "mac"}, 0.0),
        ({"access_token": "AT", "expires_in": -1}, 0.0),
        ({"access_token": "AT", "expires_in": "3600"}, 0.0),
        ({"access_token": "AT", "expires_in": True}, 0.0),
        ({"access_token": "AT", "expires_in": float("nan")}, 0.0),
        ({"access_token": "AT", "refresh_token": 3}, 0.0),
        ({"access_token": "AT", "scope": ["a"]}, 0.0),
        ({"access_token": "AT"}, float("inf")),
    ],
)
def test_bad_token_responses_are_refused(doc: object, now: float) -> None:
    refused("token", f.parse_token_response, doc, now)


SECRETS = ("ACCESS-SECRET", "REFRESH-SECRET", "CLIENT-SECRET", "VERIFIER-SECRET-" + "v" * 30, "STATE-SECRET", "CODE-SECRET")


def test_no_repr_shows_a_token_secret_code_or_verifier() -> None:
    access, refresh, secret, verifier, state, code = SECRETS
    pkce = f.Pkce(verifier, f.code_challenge(verifier))
    request = f.authorization_url(metadata(), client_id="cid", redirect_uri="http://127.0.0.1/cb", resource=SERVER, pkce=pkce, state=state)
    auth = f.ClientAuth("client_secret_post", "cid", secret)
    objects = [
        f.Tokens(access, "Bearer", 1.0, refresh, ("a",)),
        pkce,
        request,
        auth,
        f.ClientAuth("client_secret_basic", "cid", secret),
        f.authorization_code_request(metadata(), request, code, auth),
        f.refresh_request(metadata(), refresh, SERVER, auth),
        f.authorization_code_request(metadata(), request, code, f.ClientAuth("client_secret_basic", "cid", secret)),
    ]
    for thing in objects:
        text = repr(thing) + str(thing)
        for value in SECRETS:
            assert value not in text, (type(thing).__name__, value)
            assert base64.b64encode(value.encode()).decode()[:12] not in text


def test_refusals_never_quote_secrets() -> None:
    messages = []
    for call in (
        lambda: f.check_authorization_response({"state": "STATE-SECRET-X", "code": "CODE-SECRET"}, pending(state="S"), None),
        lambda: f.parse_token_response({"access_token": "ACCESS-SECRET", "token_type": "mac"}, 0.0),
        lambda: f.code_challenge("VERIFIER-SECRET!"),
    ):
        with pytest.raises(OAuthRefused) as info:
            call()
        messages.append(str(info.value) + repr(info.value))
    assert not any(value in message for message in messages for value in ("STATE-SECRET", "CODE-SECRET", "ACCESS-SECRET", "VERIFIER-SECRET"))


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
                    lambda c: st.lists(c, max_size=5) | st.dictionaries(st.sampled_from(
                        ["issuer", "authorization_endpoint", "token_endpoint", "scopes_supported", "access_token", "expires_in",
                         "resource", "authorization_servers", "code_challenge_methods_supported", "token_type", "refresh_token"]), c, max_size=8),
                    max_leaves=15))
def test_hostile_documents_are_read_or_refused_never_crash(document: Any) -> None:
    for call in (
        lambda: m.check_as_metadata(document, ISSUER),
        lambda: m.check_prm(document, SERVER),
        lambda: f.parse_token_response(document, 0.0),
    ):
        try:
            call()
        except OAuthRefused:
            pass


JUNK: tuple[Any, ...] = (None, 5, 1.5, True, b"x", "", "x", "https://evil.example/", [], ["a", 3], {}, {"a": 1}, object())


def public_calls() -> list[tuple[str, Any, tuple[Any, ...]]]:
    """Each public function with good arguments, so one argument at a time can be made junk."""
    meta = metadata()
    request = pending(state="S")
    auth = f.ClientAuth("none", "cid")
    return [
        ("parse_www_authenticate", o.parse_www_authenticate, ("Bearer",)),
        ("bearer_challenge", o.bearer_challenge, ("Bearer",)),
        ("parse_scope", o.parse_scope, ("a b",)),
        ("scope_list", o.scope_list, (["a"],)),
        ("prm_urls", m.prm_urls, (SERVER, None)),
        ("check_prm_resource", m.check_prm_resource, (SERVER, SERVER)),
        ("check_prm", m.check_prm, ({"resource": SERVER, "authorization_servers": [ISSUER]}, SERVER)),
        ("as_metadata_urls", m.as_metadata_urls, (ISSUER,)),
        ("check_as_metadata", m.check_as_metadata, ({"issuer": ISSUER, "authorization_endpoint": ISSUER, "token_endpoint": ISSUER}, ISSUER)),
        ("legacy_authorization_base", m.legacy_authorization_base, (SERVER,)),
        ("legacy_default_metadata", m.legacy_default_metadata, (SERVER,)),
        ("code_challenge", f.code_challenge, ("v" * 43,)),
        ("check_pkce_support", f.check_pkce_support, (meta,)),
        ("select_scopes", f.select_scopes, (("a",), ("b",), ("c",))),
        ("step_up_scopes", f.step_up_scopes, (("a",), ("b",))),
        ("parse_redirect_query", f.parse_redirect_query, ("code=a",)),
        ("check_iss", f.check_iss, (ISSUER, ISSUER, True)),
        ("check_authorization_response", f.check_authorization_response, ({"code": "c", "state": "S"}, request, None)),
        ("choose_client_auth", f.choose_client_auth, (meta, "cid", None, None)),
        ("authorization_code_request", f.authorization_code_request, (meta, request, "code", auth)),
        ("refresh_request", f.refresh_request, (meta, "rt", SERVER, auth, None)),
        ("parse_token_response", f.parse_token_response, ({"access_token": "AT"}, 0.0, None)),
    ]


@pytest.mark.parametrize("name, fn, args", public_calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_function_answers_junk_with_a_refusal_only(name: str, fn: Any, args: tuple[Any, ...]) -> None:
    fn(*args)  # the good arguments work
    for index in range(len(args)):
        for junk in JUNK:
            try:
                fn(*args[:index], junk, *args[index + 1:])
            except OAuthRefused:
                pass


def test_authorization_url_answers_junk_with_a_refusal_only() -> None:
    good: dict[str, Any] = {"client_id": "c", "redirect_uri": "http://127.0.0.1/cb", "resource": SERVER, "scopes": None, "pkce": None, "state": None}
    for key in good:
        for junk in JUNK:
            try:
                f.authorization_url(metadata(), **{**good, key: junk})
            except OAuthRefused:
                pass
    for junk in JUNK:
        with pytest.raises(OAuthRefused):
            f.authorization_url(junk, **good)


def test_a_pending_authorization_survives_a_round_trip_through_json() -> None:
    import json

    request = pending(scopes=("a", "b"))
    again = f.AuthorizationRequest.from_dict(json.loads(json.dumps(request.to_dict())))
    assert again == request and again.pkce.challenge == request.pkce.challenge
    none_scopes = pending()
    assert f.AuthorizationRequest.from_dict(none_scopes.to_dict()) == none_scopes


@pytest.mark.parametrize(
    "change",
    [{"verifier": "short"}, {"verifier": None}, {"state": ""}, {"issuer": 5}, {"scopes": "a b"}, {"scopes": ["a b"]}, {"resource": None}],
)
def test_a_broken_pending_record_is_refused(change: dict[str, Any]) -> None:
    data = {**pending().to_dict(), **change}
    refused("pending", f.AuthorizationRequest.from_dict, data)
    refused("pending", f.AuthorizationRequest.from_dict, [data])


def test_tokens_survive_a_round_trip_through_json() -> None:
    import json

    for tokens in (f.Tokens("AT", "Bearer", 12.5, "RT", ("a",)), f.Tokens("AT")):
        assert f.Tokens.from_dict(json.loads(json.dumps(tokens.to_dict()))) == tokens


@pytest.mark.parametrize(
    "data",
    [[], {}, {"access_token": ""}, {"access_token": "AT", "refresh_token": 1}, {"access_token": "AT", "expires_at": "soon"},
     {"access_token": "AT", "expires_at": float("inf")}, {"access_token": "AT", "token_type": "mac"}, {"access_token": "AT", "scopes": "a"}],
)
def test_broken_stored_tokens_are_refused(data: Any) -> None:
    refused("token", f.Tokens.from_dict, data)
