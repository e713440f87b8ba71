"""One client's DPoP key at one server, and the nonces its servers asked for, by origin (RFC 9449).

A :class:`DPoPSession` signs a fresh proof for each request: a new ``jti``,
``iat`` now, the request's method and URL, ``ath`` with an access token,
and the nonce the request's origin asked for last (an authorization server
and a resource each have their own). The key lives in the token store
beside the tokens bound to it (``OAuth`` keeps it there); the nonces live
in memory.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Mapping, Optional
from urllib.parse import urlsplit

from .._protocol.dpop import jwk_thumbprint, nonce_in, proof_claims, proof_header
from ._jwt import DPoPKey

__all__ = ["DPoPSession"]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class DPoPSession:
    """Signs proofs with one key; remembers each origin's last nonce (thread-safe)."""

    def __init__(self, key: DPoPKey) -> None:
        self.key = key
        self.thumbprint = jwk_thumbprint(key.jwk)
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DPoPSession(jkt={self.thumbprint!r})"

    def proof(self, method: str, url: str, access_token: Optional[str] = None) -> str:
        """A fresh proof for one request to ``url`` (with ``ath`` when ``access_token`` is given)."""
        with self._lock:
            nonce = self._nonces.get(_origin(url))
        claims = proof_claims(method, url, time.time(), secrets.token_urlsafe(16), access_token, nonce)
        return self.key.sign(claims, proof_header(self.key.jwk))

    def nonce_for(self, url: str) -> Optional[str]:
        with self._lock:
            return self._nonces.get(_origin(url))

    def remember(self, url: str, headers: Mapping[str, str]) -> bool:
        """Keep the ``DPoP-Nonce`` an answer from ``url`` gave; True when it gave a new one."""
        nonce = nonce_in(headers)
        if nonce is None:
            return False
        origin = _origin(url)
        with self._lock:
            known = self._nonces.get(origin)
            self._nonces[origin] = nonce
        return nonce != known
