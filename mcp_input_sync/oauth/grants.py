"""Machine identity: the grants a worker or a backend uses to call a protected server as itself.

Pass one as ``OAuth(grant=...)``: the client then never asks a person to
log in. It discovers the server's authorization server as for a login
(protected resource metadata, then the server's metadata), asks the token
endpoint with the grant, and keeps the tokens in the ``OAuth``'s store
under the same lock, so a token is requested once across threads and
processes. No refresh token is kept: a token near its expiry is requested
afresh with the same grant. A grant never falls back to another, and one
the authorization server cannot take (a grant type or signing algorithm it
does not list) fails before any token request, naming what is missing.

* :class:`ClientCredentials`: the ``client_credentials`` grant, with a
  client secret or a private key (extension
  ``io.modelcontextprotocol/oauth-client-credentials``).
* :class:`WorkloadIdentity`: a jwt-bearer grant with an assertion the
  platform issues to the workload (workload identity federation).
* :class:`EnterpriseManaged`: an identity assertion exchanged at the
  enterprise's identity provider for an ID-JAG, then the jwt-bearer grant
  (enterprise-managed authorization).

A secret, key or assertion never appears in a repr, a log line, an error
or a store's record. See docs/oauth.md#machine-identity.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Callable, Optional, Sequence, Union

from .._protocol.oauth import OAuthRefused, is_loopback_url
from .._protocol.oauth_flow import ClientAuth, Tokens
from .._protocol.oauth_grants import (
    GRANT_CLIENT_CREDENTIALS,
    GRANT_JWT_BEARER,
    SUBJECT_TOKEN_TYPES,
    check_assertion_auth,
    check_grant,
    client_assertion_claims,
    client_credentials_request,
    jwt_bearer_request,
    parse_exchange_response,
    secret_auth,
    token_exchange_request,
)
from . import flow
from ._fetch import Fetcher
from ._jwt import KeySource, SigningKey

__all__ = ["ClientCredentials", "EnterpriseManaged", "Grant", "WorkloadIdentity"]

log = logging.getLogger("mcp_input_sync")

#: An assertion the host gives as it is, or a callable that fetches a fresh one each time.
AssertionSource = Union[str, Callable[[], str]]

_METHODS = ("client_secret_basic", "client_secret_post")


class Grant:
    """The base of a machine grant: :meth:`obtain` asks the token endpoint for tokens."""

    #: Names the grant in errors and logs.
    kind = "grant"
    #: The client id the tokens are kept under ("" when the grant names none).
    client_id = ""
    #: The issuer the grant's credentials belong to; the library's grants require it. None (a grant of
    #: the host's own that sends no reusable credential): whichever authorization server the server names.
    issuer: Optional[str] = None

    def obtain(self, fetcher: Fetcher, discovery: flow.Discovery, scopes: Optional[Sequence[str]]) -> Tokens:
        """Tokens for ``discovery.resource`` from ``discovery.metadata``'s token endpoint (raises ``OAuthRefused``)."""
        raise NotImplementedError

    def _check_issuer(self, discovery: flow.Discovery) -> None:
        if self.issuer is not None and discovery.metadata.issuer != self.issuer:
            raise OAuthRefused("issuer", "The server's authorization server is not the one these credentials belong to.")


def _kept(tokens: Tokens) -> Tokens:
    """A grant's tokens without a refresh token: the grant itself asks again."""
    return Tokens(tokens.access_token, tokens.token_type, tokens.expires_at, None, tokens.scopes)


def _client_auth(client_id: str, secret: Optional[str], key: Optional[SigningKey], method: Optional[str], discovery: flow.Discovery) -> ClientAuth:
    """The client's authentication at ``discovery``'s token endpoint: its secret, or a fresh assertion signed with its key."""
    metadata = discovery.metadata
    if key is None:
        assert secret is not None
        return secret_auth(metadata, client_id, secret, method)
    check_assertion_auth(metadata, key.algorithm)
    claims = client_assertion_claims(client_id, metadata.issuer, time.time(), secrets.token_urlsafe(16))
    return ClientAuth("private_key_jwt", client_id, key.sign(claims))


def _named_issuer(issuer: Optional[str], what: str) -> str:
    """The issuer a credential belongs to, which the host must name: a server could name any authorization server in its metadata."""
    if issuer is None:
        raise ValueError(
            f"{what} needs issuer= (the authorization server it belongs to): it is only ever sent there, and a server could name any "
            "authorization server in its metadata"
        )
    return _non_empty(issuer, "issuer")


def _credentials(secret: Optional[str], private_key: Optional[KeySource], algorithm: Optional[str], method: Optional[str], issuer: Optional[str]) -> Optional[SigningKey]:
    """Check a client's credentials as given (one of a secret or a key); the key, made."""
    if (secret is None) == (private_key is None):
        raise ValueError("give exactly one of secret= and private_key=")
    _named_issuer(issuer, "a client secret" if secret is not None else "a private key (its signed assertion)")
    if secret is not None:
        if not isinstance(secret, str) or not secret:
            raise ValueError("secret must be a non-empty string")
        if algorithm is not None:
            raise ValueError("algorithm= goes with private_key=, not with a secret")
        if method is not None and method not in _METHODS:
            raise ValueError(f"method must be one of {', '.join(_METHODS)}, not {method!r}")
        return None
    if method is not None:
        raise ValueError("method= goes with a secret; a private key signs a client assertion (private_key_jwt)")
    assert private_key is not None
    return SigningKey(private_key, algorithm)


def _non_empty(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


class ClientCredentials(Grant):
    """The ``client_credentials`` grant: the client calls as itself, with a secret or a private key.

    Args:
        client_id: the client id registered at the authorization server.
        secret: the client secret. It goes in a Basic header
            (``client_secret_basic``), or in the form (``client_secret_post``)
            where the server lists only that, or as ``method`` says.
        private_key: instead of a secret, a private key (PEM text or the
            path of a PEM file) that signs a fresh client assertion for each
            token request (``private_key_jwt``, RFC 7523): ``iss`` and
            ``sub`` the client id, ``aud`` the authorization server's issuer,
            a fresh ``jti``, and five minutes to live. Needs the ``jwt``
            extra.
        algorithm: ``"ES256"`` (an EC P-256 key) or ``"RS256"`` (RSA);
            None: the key's own.
        method: ``"client_secret_basic"`` or ``"client_secret_post"`` to
            choose how the secret goes.
        issuer: the issuer of the authorization server the credentials
            belong to (required): the secret, or the assertion the key
            signs, goes to that authorization server and no other.

    Raises:
        ValueError: at construction, for credentials that cannot work (both
            or neither of secret and key, a key of the wrong kind, an
            algorithm that does not fit it, signing without the ``jwt`` extra,
            no ``issuer``).
    """

    kind = "client_credentials"

    def __init__(
        self,
        client_id: str,
        *,
        secret: Optional[str] = None,
        private_key: Optional[KeySource] = None,
        algorithm: Optional[str] = None,
        method: Optional[str] = None,
        issuer: Optional[str] = None,
    ) -> None:
        self.client_id = _non_empty(client_id, "client_id")
        self._key = _credentials(secret, private_key, algorithm, method, issuer)
        self._secret = secret
        self.method = method
        self.issuer = issuer

    def __repr__(self) -> str:
        how = f"private_key=<{self._key.algorithm} key>" if self._key is not None else "secret='***'"
        return f"ClientCredentials(client_id={self.client_id!r}, {how}, issuer={self.issuer!r})"

    def obtain(self, fetcher: Fetcher, discovery: flow.Discovery, scopes: Optional[Sequence[str]]) -> Tokens:
        self._check_issuer(discovery)
        check_grant(discovery.metadata, GRANT_CLIENT_CREDENTIALS)
        auth = _client_auth(self.client_id, self._secret, self._key, self.method, discovery)
        request = client_credentials_request(discovery.metadata, auth, discovery.resource, scopes)
        return _kept(flow.token_call(fetcher, request, time.time(), None))


class _Assertion:
    """A host's assertion: as it is, or fetched afresh by its callable each time it is needed."""

    def __init__(self, source: AssertionSource, what: str) -> None:
        if not (isinstance(source, str) and source) and not callable(source):
            raise ValueError(f"{what} must be a non-empty string or a callable that returns one")
        self.source = source
        self.what = what
        #: A fixed assertion the server refused: it is never sent again.
        self.refused = False

    def get(self) -> str:
        source = self.source
        if isinstance(source, str):
            if self.refused:
                raise OAuthRefused("grant", f"The authorization server refused this {self.what} before; it is not sent again.")
            return source
        try:
            value = source()
        except Exception as exc:  # noqa: BLE001 - the host's callable may raise anything
            log.debug("mcp_input_sync: fetching the %s failed (%s)", self.what, type(exc).__name__)  # the caller's error says so too
            raise OAuthRefused("assertion", f"Fetching the {self.what} failed ({type(exc).__name__}).") from None
        if not isinstance(value, str) or not value:
            raise OAuthRefused("assertion", f"The {self.what} callable returned no assertion.")
        return value


class WorkloadIdentity(Grant):
    """A jwt-bearer grant (RFC 7523) with an assertion the workload's platform issued (workload identity federation).

    Args:
        assertion: the signed JWT as it is, or a callable that returns a fresh
            one each time a token is needed (read a platform token file, ask
            a metadata endpoint). It is sent unchanged; nothing is signed here.
        client_id: sent beside the assertion when the authorization server
            wants one (usually none: the assertion identifies the workload).
        issuer: the issuer of the authorization server the assertion is for
            (required): the assertion is a bearer credential, sent to that
            authorization server and no other.

    A token request the authorization server refuses is not sent again: a
    fixed assertion that was refused is never sent again (the call fails
    with ``check="grant"``), and no other grant is tried.
    """

    kind = "jwt-bearer"

    def __init__(self, assertion: AssertionSource, *, client_id: Optional[str] = None, issuer: Optional[str] = None) -> None:
        self._assertion = _Assertion(assertion, "workload assertion")
        self.client_id = "" if client_id is None else _non_empty(client_id, "client_id")
        self.issuer = _named_issuer(issuer, "a workload assertion")
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"WorkloadIdentity(client_id={self.client_id or None!r}, issuer={self.issuer!r})"

    def obtain(self, fetcher: Fetcher, discovery: flow.Discovery, scopes: Optional[Sequence[str]]) -> Tokens:
        self._check_issuer(discovery)
        check_grant(discovery.metadata, GRANT_JWT_BEARER)
        with self._lock:
            assertion = self._assertion.get()
        auth = ClientAuth("none", self.client_id) if self.client_id else None
        request = jwt_bearer_request(discovery.metadata, assertion, discovery.resource, scopes, auth)
        try:
            return _kept(flow.token_call(fetcher, request, time.time(), None))
        except flow.TokenRefused:
            self._assertion.refused = True
            raise


class EnterpriseManaged(Grant):
    """Enterprise-managed authorization: the user's identity assertion, exchanged for an ID-JAG, then a jwt-bearer grant.

    Leg one is an RFC 8693 token exchange at the identity provider's token
    endpoint: ``subject_token`` the identity assertion, ``audience`` the
    authorization server's issuer, ``resource`` the MCP server; the answer
    is an ID-JAG. Leg two sends the ID-JAG as the assertion of a jwt-bearer
    grant to the authorization server the server's protected resource
    metadata names, the client authenticated with its own credentials there.
    A failure names its leg: ``check="exchange"`` for the identity
    provider, ``check="token"`` for the authorization server.

    Args:
        identity_assertion: the user's ID token (or SAML assertion) from the
            enterprise's single sign-on, or a callable returning a fresh one.
        idp_token_endpoint: the identity provider's token endpoint (https,
            or http to a loopback address).
        client_id: this client's id at the authorization server.
        secret: its secret there (``issuer`` required), or ``private_key``
            (and ``algorithm``) to sign a client assertion instead.
        issuer: the authorization server's issuer (required): the ID-JAG is
            asked for that audience and sent there, and the client's own
            credentials go nowhere else.
        idp_client_id, idp_client_secret: this client at the identity
            provider (the secret goes in the form).
        subject_token_type: ``"id_token"`` (default) or ``"saml2"``.
    """

    kind = "enterprise-managed"

    def __init__(
        self,
        *,
        identity_assertion: AssertionSource,
        idp_token_endpoint: str,
        client_id: str,
        secret: Optional[str] = None,
        private_key: Optional[KeySource] = None,
        algorithm: Optional[str] = None,
        issuer: Optional[str] = None,
        idp_client_id: Optional[str] = None,
        idp_client_secret: Optional[str] = None,
        subject_token_type: str = "id_token",
    ) -> None:
        self._assertion = _Assertion(identity_assertion, "identity assertion")
        endpoint = _non_empty(idp_token_endpoint, "idp_token_endpoint")
        if not (endpoint.startswith("https://") or (endpoint.startswith("http://") and is_loopback_url(endpoint))):
            raise ValueError("idp_token_endpoint must be an https URL (or http to a loopback address)")
        self.idp_token_endpoint = endpoint
        self.client_id = _non_empty(client_id, "client_id")
        _named_issuer(issuer, "enterprise-managed authorization (an ID-JAG for it, then the client's credentials)")
        self._key = _credentials(secret, private_key, algorithm, None, issuer)
        self._secret = secret
        self.issuer = issuer
        if subject_token_type not in SUBJECT_TOKEN_TYPES:
            raise ValueError(f"subject_token_type must be one of {', '.join(SUBJECT_TOKEN_TYPES)}")
        self.subject_token_type = SUBJECT_TOKEN_TYPES[subject_token_type]
        if idp_client_secret is not None and idp_client_id is None:
            raise ValueError("idp_client_secret needs idp_client_id")
        self.idp_client_id = idp_client_id
        self._idp_secret = idp_client_secret

    def __repr__(self) -> str:
        return f"EnterpriseManaged(client_id={self.client_id!r}, idp_token_endpoint={self.idp_token_endpoint!r}, issuer={self.issuer!r})"

    def obtain(self, fetcher: Fetcher, discovery: flow.Discovery, scopes: Optional[Sequence[str]]) -> Tokens:
        self._check_issuer(discovery)
        metadata = discovery.metadata
        check_grant(metadata, GRANT_JWT_BEARER)
        auth = _client_auth(self.client_id, self._secret, self._key, None, discovery)  # fails early, before leg one
        id_jag = self._exchange(fetcher, discovery, scopes)
        request = jwt_bearer_request(metadata, id_jag, discovery.resource, scopes, auth)
        try:
            return _kept(flow.token_call(fetcher, request, time.time(), None))
        except flow.TokenRefused as exc:
            raise flow.TokenRefused(f"The authorization server refused the ID-JAG: {exc.error or 'no reason given'}.", exc.error) from None

    def _exchange(self, fetcher: Fetcher, discovery: flow.Discovery, scopes: Optional[Sequence[str]]) -> str:
        """Leg one: the identity assertion for an ID-JAG at the identity provider."""
        idp_auth: Optional[ClientAuth] = None
        if self.idp_client_id is not None:
            idp_auth = ClientAuth("client_secret_post" if self._idp_secret else "none", self.idp_client_id, self._idp_secret)
        request = token_exchange_request(
            self.idp_token_endpoint, self._assertion.get(), self.subject_token_type, discovery.metadata.issuer, discovery.resource, scopes, idp_auth
        )
        answer = fetcher.post_form(request, dpop=False)  # the identity provider gets no proof: the ID-JAG is not a token of ours
        if answer.status != 200:
            error = answer.document.get("error") if isinstance(answer.document, dict) else None
            reason = error if isinstance(error, str) and error.isidentifier() and len(error) <= 40 else f"HTTP {answer.status}"
            raise OAuthRefused("exchange", f"The identity provider refused the token exchange: {reason}.")
        return parse_exchange_response(answer.document)
