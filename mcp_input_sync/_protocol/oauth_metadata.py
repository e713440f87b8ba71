"""OAuth discovery documents as the MCP authorization specification defines them: the pure decisions.

The URLs a client tries for protected resource metadata (RFC 9728) and
authorization server metadata (RFC 8414, OpenID Connect Discovery), in
which order; the checks of what the network layer fetched; and the
2025-03-26 fallbacks. The same contract as :mod:`.oauth`: a result or
:class:`~.oauth.OAuthRefused`, fixed messages, bounded sizes, no I/O.

Sources: MCP 2025-11-25 and 2026-07-28, basic/authorization; RFC 8414
sections 3 and 5, RFC 9728 sections 3 and 5.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional
from urllib.parse import SplitResult, urlsplit

from .oauth import (
    MAX_LIST,
    MAX_SCOPE_TOKEN,
    MAX_URL,
    OAUTH_WELL_KNOWN,
    OIDC_WELL_KNOWN,
    PRM_WELL_KNOWN,
    OAuthRefused,
    check_secure,
    host_is_loopback,
    origin_key,
    origin_of_parts,
    scope_list,
    split_http_url,
)
from .record import Record

__all__ = [
    "AuthServerMetadata",
    "ProtectedResource",
    "as_metadata_urls",
    "check_as_metadata",
    "check_prm",
    "check_prm_resource",
    "legacy_authorization_base",
    "legacy_default_metadata",
    "prm_urls",
]


# ---------------------------------------------------------------------------- protected resource metadata


def prm_urls(server_url: str, resource_metadata: Optional[str] = None) -> tuple[str, ...]:
    """The protected resource metadata URLs to try, in order, and no more (RFC 9728 sections 3.1, 5.1).

    With a ``resource_metadata`` URL from the challenge, that URL alone.
    Otherwise the path-based well-known URL (``/.well-known/oauth-protected-resource``
    inserted between the host and the server URL's path and query), then
    the root one; a server at its origin's root has the root one only.
    Raises :class:`OAuthRefused` (check ``"url"``) for a server URL that is
    not an absolute http(s) URL, or (check ``"challenge"``) for a bad
    ``resource_metadata``.
    """
    if resource_metadata is not None:
        split_http_url(resource_metadata, "challenge", what="The resource_metadata URL")
        return (resource_metadata,)
    parts = split_http_url(server_url, "url", what="The server URL", printable=False)
    root = origin_of_parts(parts) + PRM_WELL_KNOWN
    tail = "" if parts.path in ("", "/") else parts.path
    if parts.query:
        tail += "?" + parts.query
    if not tail:
        return (root,)
    return (root + tail, root)


def check_prm_resource(resource: object, server_url: str) -> str:
    """Check the PRM's ``resource`` against the server's URL; return it unchanged.

    The resource must be the server's URL or a parent of it: the same origin
    (scheme and host compared case-insensitively, default ports filled in)
    and a path that is the server's path or a prefix of it ending at a
    ``/`` boundary (``/mcp`` is a parent of ``/mcp/x``, not of ``/mcpx``). A
    resource with a query must match the server URL's path and query exactly.
    The returned string is what the authorization and token requests send,
    byte for byte. Raises :class:`OAuthRefused` (check ``"resource"``).
    """
    res = split_http_url(resource, "resource", what="The protected resource")
    server = split_http_url(server_url, "url", what="The server URL", printable=False)
    if origin_key(res) != origin_key(server):
        raise OAuthRefused("resource", "The protected resource names another origin than the server's.")
    if res.query:
        if (res.path, res.query) != (server.path, server.query):
            raise OAuthRefused("resource", "The protected resource is not the server's URL.")
        return str(resource)
    base = res.path.rstrip("/")
    path = server.path
    if base and path != base and not path.startswith(base + "/"):
        raise OAuthRefused("resource", "The protected resource is not the server's URL or a parent of it.")
    return str(resource)


class ProtectedResource(Record):
    """A checked protected resource metadata document (RFC 9728 section 2).

    ``resource`` is the document's value unchanged; ``authorization_servers``
    are the issuers it names, in its order (at least one);
    ``scopes_supported`` is None when the document has none. ``dpop`` is
    True when the resource takes DPoP-bound tokens: it lists
    ``dpop_signing_alg_values_supported`` or sets
    ``dpop_bound_access_tokens_required`` (RFC 9728 section 2).
    """

    __slots__ = ("resource", "authorization_servers", "scopes_supported", "dpop")

    def __init__(
        self, resource: str, authorization_servers: tuple[str, ...], scopes_supported: Optional[tuple[str, ...]], dpop: bool = False
    ) -> None:
        self.resource = resource
        self.authorization_servers = authorization_servers
        self.scopes_supported = scopes_supported
        self.dpop = dpop


def check_prm(document: object, server_url: str) -> ProtectedResource:
    """Check a fetched protected resource metadata document for ``server_url``.

    The document must be a JSON object whose ``resource`` passes
    :func:`check_prm_resource` and whose ``authorization_servers`` is a
    non-empty list of http(s) URLs (at most :data:`MAX_LIST`). Raises
    :class:`OAuthRefused` (check ``"metadata"``, or ``"resource"``).
    """
    if not isinstance(document, Mapping):
        raise OAuthRefused("metadata", "The protected resource metadata is not a JSON object.")
    resource = check_prm_resource(document.get("resource"), server_url)
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not servers or len(servers) > MAX_LIST:
        raise OAuthRefused("metadata", "The protected resource metadata lists no authorization server.")
    for issuer in servers:
        split_http_url(issuer, "metadata", what="An authorization server")
    scopes = document.get("scopes_supported")
    dpop = _names(document, "dpop_signing_alg_values_supported") is not None or document.get("dpop_bound_access_tokens_required") is True
    return ProtectedResource(resource, tuple(servers), None if scopes is None else scope_list(scopes, "metadata"), dpop)


# ---------------------------------------------------------------------------- authorization server metadata


def _check_issuer(issuer: object) -> SplitResult:
    parts = split_http_url(issuer, "issuer", what="The issuer")
    if parts.query or str(issuer).endswith("?"):
        raise OAuthRefused("issuer", "The issuer has a query.")
    check_secure(parts, "issuer", "The issuer", allow_http=True)
    return parts


def as_metadata_urls(issuer: str) -> tuple[str, ...]:
    """The authorization server metadata URLs to try for ``issuer``, in the specification's order.

    For an issuer with a path (``https://as.example/tenant1``): RFC 8414 with
    path insertion, OpenID Connect discovery with path insertion, then
    OpenID Connect discovery appended to the path. Without a path: RFC 8414,
    then OpenID Connect discovery. A single trailing ``/`` of the path is
    dropped before building. Raises :class:`OAuthRefused` (check
    ``"issuer"``) for an issuer that is not an absolute http(s) URL without
    query and fragment, or uses http for a host that is not loopback.
    """
    parts = _check_issuer(issuer)
    origin = origin_of_parts(parts)
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    if not path:
        return (origin + OAUTH_WELL_KNOWN, origin + OIDC_WELL_KNOWN)
    return (origin + OAUTH_WELL_KNOWN + path, origin + OIDC_WELL_KNOWN + path, origin + path + OIDC_WELL_KNOWN)


class AuthServerMetadata(Record):
    """Checked authorization server metadata (RFC 8414 section 2, with RFC 9207's flag).

    ``discovered`` is False for :func:`legacy_default_metadata`'s defaults,
    which no server sent. List fields are None when the document lacks them
    (their RFC defaults are the caller's to apply).
    """

    __slots__ = (
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "scopes_supported",
        "code_challenge_methods_supported",
        "token_endpoint_auth_methods_supported",
        "grant_types_supported",
        "token_endpoint_auth_signing_alg_values_supported",
        "dpop_signing_alg_values_supported",
        "authorization_response_iss_parameter_supported",
        "client_id_metadata_document_supported",
        "discovered",
    )

    def __init__(
        self,
        issuer: str,
        authorization_endpoint: str,
        token_endpoint: str,
        registration_endpoint: Optional[str] = None,
        scopes_supported: Optional[tuple[str, ...]] = None,
        code_challenge_methods_supported: Optional[tuple[str, ...]] = None,
        token_endpoint_auth_methods_supported: Optional[tuple[str, ...]] = None,
        grant_types_supported: Optional[tuple[str, ...]] = None,
        token_endpoint_auth_signing_alg_values_supported: Optional[tuple[str, ...]] = None,
        dpop_signing_alg_values_supported: Optional[tuple[str, ...]] = None,
        authorization_response_iss_parameter_supported: Optional[bool] = None,
        client_id_metadata_document_supported: Optional[bool] = None,
        discovered: bool = True,
    ) -> None:
        self.issuer = issuer
        self.authorization_endpoint = authorization_endpoint
        self.token_endpoint = token_endpoint
        self.registration_endpoint = registration_endpoint
        self.scopes_supported = scopes_supported
        self.code_challenge_methods_supported = code_challenge_methods_supported
        self.token_endpoint_auth_methods_supported = token_endpoint_auth_methods_supported
        self.grant_types_supported = grant_types_supported
        self.token_endpoint_auth_signing_alg_values_supported = token_endpoint_auth_signing_alg_values_supported
        self.dpop_signing_alg_values_supported = dpop_signing_alg_values_supported
        self.authorization_response_iss_parameter_supported = authorization_response_iss_parameter_supported
        self.client_id_metadata_document_supported = client_id_metadata_document_supported
        self.discovered = discovered


def _names(document: Mapping[object, object], key: str) -> Optional[tuple[str, ...]]:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise OAuthRefused("metadata", "A list in the authorization server metadata is not a short list.")
    if not all(isinstance(item, str) and 0 < len(item) <= MAX_SCOPE_TOKEN for item in value):
        raise OAuthRefused("metadata", "A list in the authorization server metadata holds something other than names.")
    return tuple(dict.fromkeys(value))


def _flag(document: Mapping[object, object], key: str) -> Optional[bool]:
    value = document.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise OAuthRefused("metadata", "A flag in the authorization server metadata is not true or false.")


def _endpoint(document: Mapping[object, object], key: str, issuer_parts: SplitResult, *, required: bool) -> Optional[str]:
    value = document.get(key)
    if value is None and not required:
        return None
    if value is None:
        raise OAuthRefused("metadata", "The authorization server metadata lacks a required endpoint.")
    parts = split_http_url(value, "endpoint", what="An endpoint in the authorization server metadata")
    issuer_local = host_is_loopback(issuer_parts.hostname or "")
    check_secure(parts, "endpoint", "An endpoint in the authorization server metadata", allow_http=issuer_local)
    return str(value)


def check_as_metadata(document: object, issuer: str) -> AuthServerMetadata:
    """Check authorization server metadata fetched for ``issuer`` (RFC 8414 section 3.3).

    The document's ``issuer`` must equal ``issuer`` as a plain string (no
    normalisation), else none of it may be used. ``authorization_endpoint``
    and ``token_endpoint`` are required; every endpoint must be an absolute
    https URL, or http when both the issuer and the endpoint are loopback.
    Raises :class:`OAuthRefused` (check ``"issuer"``, ``"metadata"`` or
    ``"endpoint"``).
    """
    issuer_parts = _check_issuer(issuer)
    if not isinstance(document, Mapping):
        raise OAuthRefused("metadata", "The authorization server metadata is not a JSON object.")
    if document.get("issuer") != issuer:
        raise OAuthRefused("issuer", "The authorization server metadata names another issuer than the one asked.")
    authorization = _endpoint(document, "authorization_endpoint", issuer_parts, required=True)
    token = _endpoint(document, "token_endpoint", issuer_parts, required=True)
    assert authorization is not None and token is not None
    scopes = document.get("scopes_supported")
    return AuthServerMetadata(
        issuer=issuer,
        authorization_endpoint=authorization,
        token_endpoint=token,
        registration_endpoint=_endpoint(document, "registration_endpoint", issuer_parts, required=False),
        scopes_supported=None if scopes is None else scope_list(scopes, "metadata"),
        code_challenge_methods_supported=_names(document, "code_challenge_methods_supported"),
        token_endpoint_auth_methods_supported=_names(document, "token_endpoint_auth_methods_supported"),
        grant_types_supported=_names(document, "grant_types_supported"),
        token_endpoint_auth_signing_alg_values_supported=_names(document, "token_endpoint_auth_signing_alg_values_supported"),
        dpop_signing_alg_values_supported=_names(document, "dpop_signing_alg_values_supported"),
        authorization_response_iss_parameter_supported=_flag(document, "authorization_response_iss_parameter_supported"),
        client_id_metadata_document_supported=_flag(document, "client_id_metadata_document_supported"),
    )


# ---------------------------------------------------------------------------- 2025-03-26 fallbacks


def legacy_authorization_base(server_url: str) -> str:
    """The 2025-03-26 authorization base URL: the server URL with its path discarded.

    In that revision there is no protected resource metadata and the MCP
    server's origin is the authorization server. Raises :class:`OAuthRefused`
    (check ``"url"``).
    """
    parts = split_http_url(server_url, "url", what="The server URL", printable=False)
    check_secure(parts, "url", "The server URL", allow_http=True)
    return origin_of_parts(parts)


def legacy_default_metadata(server_url: str) -> AuthServerMetadata:
    """The 2025-03-26 defaults when the server offers no metadata: ``/authorize``, ``/token``, ``/register``.

    The endpoints hang off :func:`legacy_authorization_base`; the record's
    ``discovered`` is False and its lists are None.
    """
    base = legacy_authorization_base(server_url)
    return AuthServerMetadata(
        issuer=base,
        authorization_endpoint=base + "/authorize",
        token_endpoint=base + "/token",
        registration_endpoint=base + "/register",
        discovered=False,
    )
