"""What the HTTP transport needs of an OAuth provider, and the headers it has a provider make.

``mcp_input_sync.oauth.OAuth`` is one; the transports never import ``oauth``
(docs/architecture.md#import-rules): they see a provider through these
protocols.
"""

from __future__ import annotations

from typing import Mapping, Optional, Protocol, runtime_checkable

__all__ = ["BearerProvider", "DPoPProvider", "add_authorization", "is_bearer_provider"]


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
