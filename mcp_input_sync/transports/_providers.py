"""What the HTTP transport needs of an OAuth provider, the headers it has a provider make, and how it names its
server and its user to a shared response cache and to OpenTelemetry.

``mcp_input_sync.oauth.OAuth`` is one; the transports never import ``oauth``
(docs/architecture.md#import-rules): they see a provider through these
protocols.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["BearerProvider", "DPoPProvider", "add_authorization", "cache_identity", "is_bearer_provider", "trace_attributes"]


@runtime_checkable
class BearerProvider(Protocol):
    """What the transport needs of an OAuth provider (``mcp_input_sync.oauth.OAuth`` is one).

    ``authorization(url)`` gives the ``Authorization`` header of a request
    (or None); ``challenged(url, status, headers, sent)`` is told of a 401 or
    403 answer to a request that carried ``sent`` and returns when a retry is
    worthwhile, or raises :class:`OAuthRefused` when it is not.
    """

    def authorization(self, server_url: str) -> Optional[str]: ...

    def challenged(self, server_url: str, status: int, headers: Mapping[str, str], sent: Optional[str]) -> None: ...


@runtime_checkable
class DPoPProvider(Protocol):
    """A provider whose tokens may be DPoP-bound (RFC 9449): ``dpop_proof(url, method, authorization, target)``
    gives the ``DPoP`` header of each request whose ``Authorization`` it made (None for a Bearer token);
    ``target`` is the URL the request goes to when a redirect took it elsewhere than ``url``."""

    def dpop_proof(self, server_url: str, method: str, authorization: str, target: Optional[str] = None) -> Optional[str]: ...


def is_bearer_provider(auth: object) -> bool:
    """Whether ``auth`` is an OAuth provider (else it is a ``requests`` auth)."""
    return isinstance(auth, BearerProvider)


def add_authorization(headers: dict[str, str], provider: BearerProvider, url: str, method: str, target: Optional[str] = None) -> None:
    """Put the provider's ``Authorization`` (and, for a DPoP-bound token, a fresh ``DPoP`` proof) in ``headers``.

    ``url`` is the server's (the token is its); ``target`` the URL a followed redirect goes to, which the proof names.
    """
    value = provider.authorization(url)
    if value is None:
        return
    headers["Authorization"] = value
    if isinstance(provider, DPoPProvider):
        proof = provider.dpop_proof(url, method, value, target)
        if proof is not None:
            headers["DPoP"] = proof


def cache_identity(url: str, settings: Mapping[str, Any], bearer: Optional[BearerProvider], nonce: str) -> tuple[str, str]:
    """An HTTP transport's server and authorization context, for a shared response cache.

    The server is the URL without its user name and password, which join the
    context with the static headers, the client certificate and the OAuth
    provider's account (``cache_principal(url)``). A ``requests`` auth, a
    provider without an account or a session of the caller's cannot be told
    apart from another user's: ``nonce`` (the transport's own) then keeps its
    results to itself.
    """
    parts = urlsplit(url)
    server = urlunsplit((parts.scheme, parts.hostname or "", parts.path, parts.query, "")) + f"|{parts.port or ''}"
    who: list[Any] = [parts.username, parts.password, sorted((str(k).lower(), str(v)) for k, v in (settings.get("headers") or {}).items())]
    who.append(repr(settings.get("cert")))
    if bearer is not None:
        principal = getattr(bearer, "cache_principal", None)
        named = principal(url) if callable(principal) else None
        who.append(named if isinstance(named, str) else nonce)
    if (settings.get("auth") is not None and bearer is None) or settings.get("session") is not None:
        who.append(nonce)
    return server, json.dumps(who, ensure_ascii=True)


def trace_attributes(url: str, session_id: Optional[str]) -> dict[str, Any]:
    """An HTTP transport's span attributes: TCP, HTTP, the server's host and port, the session once named."""
    parts = urlsplit(url)
    found: dict[str, Any] = {"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1"}
    found["server.address"] = parts.hostname or ""
    found["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
    if session_id is not None:
        found["mcp.session.id"] = session_id
    return found
