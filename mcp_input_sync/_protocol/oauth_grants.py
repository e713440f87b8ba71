"""The machine-to-machine grants of MCP's authorization extensions: the pure decisions.

* **Client credentials** (extension ``io.modelcontextprotocol/oauth-client-credentials``,
  SEP-1046): ``grant_type=client_credentials``, the client authenticated
  with its secret (``client_secret_basic``, or ``client_secret_post`` where
  the server lists only that) or with a signed JWT client assertion
  (``private_key_jwt``, RFC 7523 section 2.2) whose ``iss`` and ``sub`` are
  the client id and whose ``aud`` is the authorization server's issuer.
* **A jwt-bearer authorization grant** (RFC 7523 section 2.1): an assertion
  the host supplies, as it is (workload identity federation), or the ID-JAG
  of enterprise-managed authorization's second leg.
* **The token exchange** at an identity provider (RFC 8693): an identity
  assertion traded for an ID-JAG (``urn:ietf:params:oauth:token-type:id-jag``)
  for one authorization server (``audience``, its issuer) and one MCP server
  (``resource``): enterprise-managed authorization's first leg.

The same contract as :mod:`.oauth` and :mod:`.oauth_flow`: a result or an
:class:`~.oauth.OAuthRefused` whose ``check`` names the rule, fixed messages
that never quote a secret, key, assertion or token, no I/O, no clock (the
caller passes ``now``), no signing (the caller signs the claims given here).

Sources: the MCP authorization extensions (oauth-client-credentials,
enterprise-managed-authorization, workload identity federation drafts);
RFC 7521 section 4.2, RFC 7523 sections 2.1-3, RFC 8693 sections 2.1-2.2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from .oauth import OAuthRefused, scope_list
from .oauth_metadata import AuthServerMetadata
from .oauth_flow import MAX_TOKEN, ClientAuth, TokenRequest, form_request

__all__ = [
    "GRANT_CLIENT_CREDENTIALS",
    "GRANT_JWT_BEARER",
    "GRANT_TOKEN_EXCHANGE",
    "SIGNING_ALGORITHMS",
    "SUBJECT_TOKEN_TYPES",
    "TOKEN_TYPE_ID_JAG",
    "check_assertion_auth",
    "check_grant",
    "client_assertion_claims",
    "client_credentials_request",
    "jwt_bearer_request",
    "parse_exchange_response",
    "secret_auth",
    "token_exchange_request",
]

GRANT_CLIENT_CREDENTIALS = "client_credentials"
GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
#: The identity assertions an identity provider takes in a token exchange, by the host's short name.
SUBJECT_TOKEN_TYPES = {
    "id_token": "urn:ietf:params:oauth:token-type:id_token",
    "saml2": "urn:ietf:params:oauth:token-type:saml2",
}
#: The algorithms a client assertion is signed with here (the extension recommends ES256).
SIGNING_ALGORITHMS = ("ES256", "RS256")
#: How long a client assertion is good for, in seconds.
ASSERTION_LIFETIME = 300

_GRANT_NAMES = {GRANT_CLIENT_CREDENTIALS: "client_credentials", GRANT_JWT_BEARER: "jwt-bearer", GRANT_TOKEN_EXCHANGE: "token-exchange"}


def check_grant(metadata: AuthServerMetadata, grant_type: str) -> None:
    """Refuse (check ``"grant"``) a grant the server's ``grant_types_supported`` lists without (an absent list allows it)."""
    listed = metadata.grant_types_supported
    if listed is not None and grant_type not in listed:
        raise OAuthRefused("grant", f"The authorization server does not list the {_GRANT_NAMES.get(grant_type, 'requested')} grant.")


def secret_auth(metadata: AuthServerMetadata, client_id: str, secret: str, method: Optional[str] = None) -> ClientAuth:
    """The secret's way to the token endpoint: ``method`` when the host chose one, else Basic unless only post is listed.

    Raises :class:`OAuthRefused` (check ``"client"``) when the server lists
    neither method, or not the one the host chose.
    """
    offered = metadata.token_endpoint_auth_methods_supported
    if method is not None:
        if offered is not None and method not in offered:
            raise OAuthRefused("client", f"The authorization server does not take {method}.")
        return ClientAuth(method, client_id, secret)
    if offered is None or "client_secret_basic" in offered:
        return ClientAuth("client_secret_basic", client_id, secret)
    if "client_secret_post" in offered:
        return ClientAuth("client_secret_post", client_id, secret)
    raise OAuthRefused("client", "The authorization server takes neither client_secret_basic nor client_secret_post.")


def check_assertion_auth(metadata: AuthServerMetadata, algorithm: str) -> None:
    """Refuse (check ``"client"``) a ``private_key_jwt`` the server does not list, or an algorithm it does not take."""
    offered = metadata.token_endpoint_auth_methods_supported
    if offered is not None and "private_key_jwt" not in offered:
        raise OAuthRefused("client", "The authorization server does not take private_key_jwt.")
    algorithms = metadata.token_endpoint_auth_signing_alg_values_supported
    if algorithms is not None and algorithm not in algorithms:
        raise OAuthRefused("client", f"The authorization server does not take client assertions signed with {algorithm}.")


def client_assertion_claims(client_id: str, audience: str, now: float, jti: str, lifetime: int = ASSERTION_LIFETIME) -> dict[str, object]:
    """The claims of a client assertion (RFC 7523 section 3): ``iss`` = ``sub`` = the client, ``aud`` the issuer.

    The client-credentials extension leaves ``aud`` unsaid; its runner and
    RFC 7523bis want the authorization server's issuer identifier (not the
    token endpoint, as the extension's overview page draws it).
    """
    issued = int(now)
    return {"iss": client_id, "sub": client_id, "aud": audience, "iat": issued, "exp": issued + lifetime, "jti": jti}


def _scoped(fields: list[tuple[str, str]], resource: Optional[str], scopes: Optional[Sequence[str]]) -> list[tuple[str, str]]:
    if resource is not None:
        fields.append(("resource", resource))
    chosen = scope_list(list(scopes), "scope") if scopes else ()
    if chosen:
        fields.append(("scope", " ".join(chosen)))
    return fields


def client_credentials_request(
    metadata: AuthServerMetadata, auth: ClientAuth, resource: Optional[str], scopes: Optional[Sequence[str]]
) -> TokenRequest:
    """The ``client_credentials`` grant at ``metadata``'s token endpoint, with ``resource`` (RFC 8707) and the scopes."""
    return form_request(metadata.token_endpoint, _scoped([("grant_type", GRANT_CLIENT_CREDENTIALS)], resource, scopes), auth)


def jwt_bearer_request(
    metadata: AuthServerMetadata, assertion: str, resource: Optional[str], scopes: Optional[Sequence[str]], auth: Optional[ClientAuth]
) -> TokenRequest:
    """The jwt-bearer authorization grant (RFC 7523 section 2.1): ``assertion`` as it is; ``auth`` None sends no client."""
    _assertion(assertion, "assertion", "The assertion")
    fields = [("grant_type", GRANT_JWT_BEARER), ("assertion", assertion)]
    return form_request(metadata.token_endpoint, _scoped(fields, resource, scopes), auth)


def token_exchange_request(
    token_endpoint: str,
    subject_token: str,
    subject_token_type: str,
    audience: str,
    resource: str,
    scopes: Optional[Sequence[str]],
    auth: Optional[ClientAuth],
) -> TokenRequest:
    """RFC 8693 at the identity provider: ``subject_token`` for an ID-JAG for ``audience`` (the issuer) and ``resource``."""
    _assertion(subject_token, "exchange", "The identity assertion")
    if subject_token_type not in SUBJECT_TOKEN_TYPES.values():
        raise OAuthRefused("exchange", "The identity assertion's type is neither an ID token nor a SAML 2 assertion.")
    fields = [
        ("grant_type", GRANT_TOKEN_EXCHANGE),
        ("requested_token_type", TOKEN_TYPE_ID_JAG),
        ("subject_token", subject_token),
        ("subject_token_type", subject_token_type),
        ("audience", audience),
    ]
    return form_request(token_endpoint, _scoped(fields, resource, scopes), auth)


def parse_exchange_response(document: object) -> str:
    """The ID-JAG out of a token exchange's answer (RFC 8693 section 2.2.1); raises (check ``"exchange"``)."""
    if not isinstance(document, Mapping):
        raise OAuthRefused("exchange", "The identity provider's answer is not a JSON object.")
    if document.get("issued_token_type") != TOKEN_TYPE_ID_JAG:
        raise OAuthRefused("exchange", "The identity provider issued something other than an ID-JAG.")
    return _assertion(document.get("access_token"), "exchange", "The identity provider's ID-JAG")


def _assertion(value: object, check: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TOKEN or not value.isascii() or not value.isprintable() or " " in value:
        raise OAuthRefused(check, f"{what} is not a usable token.")
    return value
