"""The authorization flow over the network: discovery, registration, the code exchange, refresh.

Each step fetches through :class:`~._fetch.Fetcher` and decides with the
pure core (:mod:`mcp_input_sync._protocol.oauth`, ``oauth_metadata`` and ``oauth_flow``); this
module joins them in the specification's order and keeps the results as
JSON-ready records for a token store. It holds no lock and no state between
calls: :class:`~mcp_input_sync.oauth.OAuth` does.

Every failure is an :class:`~mcp_input_sync._protocol.oauth.OAuthRefused`
whose ``check`` names the step.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from .._protocol.oauth import BearerChallenge, OAuthRefused
from .._protocol.oauth_metadata import (
    AuthServerMetadata,
    as_metadata_urls,
    check_as_metadata,
    check_prm,
    legacy_authorization_base,
    legacy_default_metadata,
    prm_urls,
)
from .._protocol.oauth_flow import (
    AuthorizationRequest,
    ClientAuth,
    Tokens,
    authorization_code_request,
    authorization_url,
    check_authorization_response,
    choose_client_auth,
    parse_redirect_query,
    parse_token_response,
    refresh_request,
    select_scopes,
)
from .._protocol.record import Record
from ._fetch import Fetcher, fetch_refused

__all__ = ["Client", "Discovery", "Settings", "TokenRefused", "discover", "exchange_code", "refresh", "register", "start_authorization", "token_call"]

_METADATA_FIELDS = AuthServerMetadata.__slots__


class Settings(Record):
    """How this client presents itself: the host's choices that every step reads."""

    __slots__ = ("client_name", "client_id", "client_secret", "client_issuer", "client_metadata_url", "scopes")

    def __init__(
        self,
        client_name: str,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        client_issuer: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        scopes: Optional[tuple[str, ...]] = None,
    ) -> None:
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_issuer = client_issuer
        self.client_metadata_url = client_metadata_url
        self.scopes = scopes

    def __repr__(self) -> str:
        secret = "None" if self.client_secret is None else "'***'"
        return f"Settings(client_name={self.client_name!r}, client_id={self.client_id!r}, client_secret={secret})"


# ---------------------------------------------------------------------------- discovery


class Discovery(Record):
    """What discovery found for one server: the resource to name, the server's metadata, the PRM's scopes.

    ``legacy`` is True when the server published no protected resource
    metadata and the 2025-03-26 rules applied (its origin is the
    authorization server).
    """

    __slots__ = ("resource", "metadata", "prm_scopes", "legacy", "dpop")

    def __init__(
        self, resource: str, metadata: AuthServerMetadata, prm_scopes: Optional[tuple[str, ...]], legacy: bool, dpop: bool = False
    ) -> None:
        self.resource = resource
        self.metadata = metadata
        self.prm_scopes = prm_scopes
        self.legacy = legacy
        #: The resource takes DPoP-bound tokens: its metadata says so, or it challenged with the DPoP scheme.
        self.dpop = dpop


def _document(fetcher: Fetcher, url: str) -> Any:
    """The JSON object at ``url``, or None when the server says it has none there (a 4xx).

    A 5xx, or a 200 that is not a JSON object, is a refusal: a server that
    is down is not a server without metadata (that would send the user to
    the 2025-03-26 defaults). Its message is the one of every failed
    exchange: it does not say which status came back.
    """
    answer = fetcher.get_json(url)
    if 400 <= answer.status < 500:
        return None
    if answer.status != 200:
        raise fetch_refused("metadata", f"a metadata URL answered HTTP {answer.status}")
    if not isinstance(answer.document, dict):
        raise fetch_refused("metadata", "a metadata document that is not a JSON object")
    return answer.document


def fetch_metadata(fetcher: Fetcher, issuer: str) -> Optional[AuthServerMetadata]:
    """The checked metadata of ``issuer`` from the first of its well-known URLs that has a document."""
    for url in as_metadata_urls(issuer):
        document = _document(fetcher, url)
        if document is not None:
            return check_as_metadata(document, issuer)
    return None


def discover(fetcher: Fetcher, server_url: str, challenge: Optional[BearerChallenge]) -> Discovery:
    """Protected resource metadata, then the authorization server's metadata, in the specification's order.

    The PRM comes from the challenge's ``resource_metadata``, else the
    path-based well-known URL, else the root one. Its ``resource`` must be
    the server's URL or a parent of it; its first authorization server is
    used. Without a PRM the 2025-03-26 rules apply: the server's origin is
    the authorization server, and without metadata there the default
    endpoints ``/authorize``, ``/token`` and ``/register`` are used.
    """
    prm = None
    named = challenge.resource_metadata if challenge is not None else None
    for url in prm_urls(server_url, named):
        document = _document(fetcher, url)
        if document is not None:
            prm = check_prm(document, server_url)
            break
    if prm is None and named is not None:
        raise fetch_refused("metadata", "the resource_metadata URL the server names answered 4xx")
    if prm is not None:
        issuer = prm.authorization_servers[0]
        metadata = fetch_metadata(fetcher, issuer)
        if metadata is None:
            raise OAuthRefused("metadata", "The authorization server publishes no metadata.")
        dpop = prm.dpop or (challenge is not None and challenge.scheme == "dpop")
        return Discovery(prm.resource, metadata, prm.scopes_supported, legacy=False, dpop=dpop)
    base = legacy_authorization_base(server_url)
    metadata = fetch_metadata(fetcher, base)
    dpop = challenge is not None and challenge.scheme == "dpop"
    return Discovery(server_url, metadata or legacy_default_metadata(server_url), None, legacy=True, dpop=dpop)


def metadata_to_dict(metadata: AuthServerMetadata) -> dict[str, Any]:
    """The metadata as JSON-ready data (lists as lists), to keep in a store."""
    out: dict[str, Any] = {}
    for name in _METADATA_FIELDS:
        value = getattr(metadata, name)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def metadata_from_dict(data: Any) -> AuthServerMetadata:
    """Metadata back from :func:`metadata_to_dict`; checked again as if it had just been fetched."""
    if not isinstance(data, dict) or not isinstance(data.get("issuer"), str):
        raise OAuthRefused("store", "The stored authorization server metadata is not a record.")
    discovered = data.get("discovered", True)
    document = {key: value for key, value in data.items() if key != "discovered"}
    checked = check_as_metadata(document, data["issuer"])
    if discovered is False:
        checked.discovered = False
    return checked


# ---------------------------------------------------------------------------- registration


class Client(Record):
    """The client's identity at one authorization server (``issuer``): its id, secret and token endpoint method.

    ``source`` says where it came from: ``"preregistered"`` (the host gave
    it), ``"metadata-document"`` (a Client ID Metadata Document URL) or
    ``"dynamic"`` (RFC 7591). The repr hides the secret.
    """

    __slots__ = ("issuer", "client_id", "client_secret", "method", "redirect_uris", "source")

    def __init__(
        self, issuer: str, client_id: str, client_secret: Optional[str], method: Optional[str], redirect_uris: tuple[str, ...], source: str
    ) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self.client_secret = client_secret
        self.method = method
        self.redirect_uris = redirect_uris
        self.source = source

    def __repr__(self) -> str:
        secret = "None" if self.client_secret is None else "'***'"
        return f"Client(issuer={self.issuer!r}, client_id={self.client_id!r}, client_secret={secret}, source={self.source!r})"

    def auth(self, metadata: AuthServerMetadata) -> ClientAuth:
        """How this client authenticates at ``metadata``'s token endpoint."""
        return choose_client_auth(metadata, self.client_id, self.client_secret, self.method)

    def to_dict(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer, "client_id": self.client_id, "client_secret": self.client_secret, "method": self.method,
            "redirect_uris": list(self.redirect_uris), "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Optional["Client"]:
        """A stored client, or None when the data is not one (it is then registered again)."""
        if not isinstance(data, dict):
            return None
        issuer, client_id, secret, method = data.get("issuer"), data.get("client_id"), data.get("client_secret"), data.get("method")
        uris, source = data.get("redirect_uris"), data.get("source")
        if not (isinstance(issuer, str) and isinstance(client_id, str) and client_id and isinstance(source, str)):
            return None
        if not (secret is None or isinstance(secret, str)) or not (method is None or isinstance(method, str)):
            return None
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            return None
        return cls(issuer, client_id, secret, method, tuple(uris), source)


def _registration_method(metadata: AuthServerMetadata) -> str:
    offered = metadata.token_endpoint_auth_methods_supported
    if offered is None or "none" in offered:
        return "none"
    for method in ("client_secret_basic", "client_secret_post"):
        if method in offered:
            return method
    return "none"


def register(
    fetcher: Fetcher, settings: Settings, metadata: AuthServerMetadata, redirect_uri: str, application_type: str, stored: Optional[Client]
) -> Client:
    """The client's identity at ``metadata.issuer``, in the specification's priority.

    1. The host's pre-registered ``client_id`` (with its secret), unless the
       host bound it to another issuer.
    2. The host's Client ID Metadata Document URL, when the server supports those.
    3. A client this app registered dynamically at this issuer before, for ``redirect_uri``.
    4. Dynamic client registration (RFC 7591) at the server's registration endpoint.
    5. Else a refusal that says what to configure.

    A client is only ever presented to the issuer it belongs to.
    """
    issuer = metadata.issuer
    if settings.client_id is not None and settings.client_issuer in (None, issuer):
        return Client(issuer, settings.client_id, settings.client_secret, None, (redirect_uri,), "preregistered")
    if settings.client_metadata_url is not None and metadata.client_id_metadata_document_supported:
        return Client(issuer, settings.client_metadata_url, None, "none", (redirect_uri,), "metadata-document")
    if stored is not None and stored.issuer == issuer and stored.source == "dynamic" and redirect_uri in stored.redirect_uris:
        return stored
    if metadata.registration_endpoint is None:
        raise OAuthRefused(
            "registration",
            "The authorization server offers no registration: give the client a client_id registered there "
            "(OAuth(client_id=...)) or a client metadata document URL (OAuth(client_metadata_url=...)).",
        )
    method = _registration_method(metadata)
    body = {
        "client_name": settings.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": application_type,
    }
    if settings.scopes:
        body["scope"] = " ".join(settings.scopes)
    answer = fetcher.post_json(metadata.registration_endpoint, body)
    document = answer.document
    if answer.status not in (200, 201) or not isinstance(document, dict):
        raise OAuthRefused("registration", "The authorization server refused to register this client.")
    client_id, secret = document.get("client_id"), document.get("client_secret")
    if not isinstance(client_id, str) or not client_id or len(client_id) > 4096:
        raise OAuthRefused("registration", "The registration answer carries no usable client_id.")
    if secret is not None and (not isinstance(secret, str) or not secret or len(secret) > 4096):
        raise OAuthRefused("registration", "The registration answer carries an unusable client_secret.")
    granted = document.get("token_endpoint_auth_method")
    return Client(issuer, client_id, secret, granted if isinstance(granted, str) else method, (redirect_uri,), "dynamic")


# ---------------------------------------------------------------------------- authorization and tokens


def start_authorization(
    discovery: Discovery, client: Client, redirect_uri: str, settings: Settings,
    challenge_scope: Optional[Sequence[str]], scopes: Optional[Sequence[str]] = None,
) -> AuthorizationRequest:
    """The authorization request: the scopes chosen as :func:`choose_scopes` says, fresh PKCE and state."""
    chosen = choose_scopes(discovery, settings, challenge_scope, scopes)
    return authorization_url(
        discovery.metadata, client_id=client.client_id, redirect_uri=redirect_uri, resource=discovery.resource, scopes=chosen,
    )


def choose_scopes(
    discovery: Discovery, settings: Settings, challenge_scope: Optional[Sequence[str]], scopes: Optional[Sequence[str]] = None
) -> Optional[tuple[str, ...]]:
    """The scopes to ask for: ``scopes`` when given (a step-up); else the host's; else the challenge's
    scope, the PRM's ``scopes_supported``, or none (None: no ``scope`` parameter), as the specification says."""
    if scopes is None:
        scopes = settings.scopes
    if scopes is None:
        return select_scopes(challenge_scope, discovery.prm_scopes, discovery.metadata.scopes_supported)
    return tuple(scopes)


_ERROR_CODE = re.compile(r"[a-z_]{1,40}")


class TokenRefused(OAuthRefused):
    """The token endpoint refused (check ``"token"``); ``error`` is its OAuth error code, when it gave a plain one."""

    def __init__(self, message: str, error: Optional[str]) -> None:
        super().__init__("token", message)
        self.error = error


def token_call(fetcher: Fetcher, request: Any, now: float, previous: Optional[Tokens]) -> Tokens:
    """POST a token request (with a DPoP proof when ``fetcher`` has a DPoP key) and check the tokens that come back."""
    answer = fetcher.post_form(request)
    document = answer.document
    if answer.status != 200:
        error = document.get("error") if isinstance(document, dict) else None
        if isinstance(error, str) and _ERROR_CODE.fullmatch(error):
            raise TokenRefused(f"The token endpoint refused: {error}.", error)
        refusal = fetch_refused("network" if answer.status >= 500 else "token", f"the token endpoint answered HTTP {answer.status}")
        if answer.status >= 500:
            raise refusal
        raise TokenRefused(refusal.message, None)
    return parse_token_response(document, now, previous, dpop=fetcher.dpop is not None)


def exchange_code(
    fetcher: Fetcher, metadata: AuthServerMetadata, client: Client, pending: AuthorizationRequest, query: str, now: float
) -> Tokens:
    """Check the redirect's query (``iss``, ``state``, ``error``, ``code``) and trade the code for tokens."""
    params = parse_redirect_query(query)
    code = check_authorization_response(params, pending, metadata.authorization_response_iss_parameter_supported)
    return token_call(fetcher, authorization_code_request(metadata, pending, code, client.auth(metadata)), now, None)


def refresh(fetcher: Fetcher, metadata: AuthServerMetadata, client: Client, tokens: Tokens, resource: str, now: float) -> Tokens:
    """A refresh grant with the same ``resource``; the old refresh token is kept when no new one comes."""
    if tokens.refresh_token is None:
        raise OAuthRefused("refresh", "No refresh token is held.")
    request = refresh_request(metadata, tokens.refresh_token, resource, client.auth(metadata))
    fresh = token_call(fetcher, request, now, tokens)
    if fresh.scopes is None and tokens.scopes is not None:
        fresh = Tokens(fresh.access_token, fresh.token_type, fresh.expires_at, fresh.refresh_token, tokens.scopes)
    return fresh
