"""DPoP (RFC 9449), the MCP extension ``io.modelcontextprotocol/auth/dpop``: the pure decisions.

A DPoP proof is a JWT the client signs for one HTTP request with a key
pair of its own: its header carries ``typ`` ``dpop+jwt``, the algorithm
and the public key (a JWK); its claims the request's method (``htm``) and
URL without query or fragment (``htu``), when it was made (``iat``), a
fresh ``jti``, the hash of the access token it goes with (``ath``, at the
resource only) and the server's nonce when one was asked for. Tokens the
authorization server bound to the key come back with ``token_type``
``DPoP`` and are sent as ``Authorization: DPoP <token>``.

Here: the claims and header of a proof, the ``htu`` of a URL, ``ath``, the
checks of a ``DPoP-Nonce`` header and of a ``use_dpop_nonce`` answer, and
the RFC 7638 thumbprint of a public key. Nothing here signs, reads a clock
or does I/O.

Sources: RFC 9449 sections 4.2, 5, 7.1, 8 and 9; RFC 7638 section 3; the
DPoP extension (SEP-1932), which adopts RFC 9449 unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

from .oauth import OAuthRefused

__all__ = [
    "ALGORITHM",
    "NONCE_ERROR",
    "ath",
    "htu",
    "jwk_thumbprint",
    "nonce_in",
    "proof_claims",
    "proof_header",
    "wants_nonce",
]

#: The one algorithm proofs are signed with here: ES256, which the extension says clients SHOULD support.
ALGORITHM = "ES256"
#: The error a server answers when it wants a proof with its nonce (RFC 9449 sections 8 and 9).
NONCE_ERROR = "use_dpop_nonce"
#: RFC 9449 section 8.1: a nonce is 1*NQCHAR (printable ASCII but the double quote and backslash).
_NONCE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,512}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def htu(url: str) -> str:
    """A request's URL as a proof names it: without query and fragment (RFC 9449 section 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def ath(access_token: str) -> str:
    """The ``ath`` claim: base64url of the SHA-256 of the access token's ASCII bytes."""
    return _b64(hashlib.sha256(access_token.encode("ascii")).digest())


def proof_header(jwk: Mapping[str, str]) -> dict[str, object]:
    """The header fields of a proof beside ``alg``: its type and the public key."""
    return {"typ": "dpop+jwt", "jwk": dict(jwk)}


def proof_claims(
    method: str, url: str, now: float, jti: str, access_token: Optional[str] = None, nonce: Optional[str] = None
) -> dict[str, object]:
    """The claims of a proof for one request; ``access_token`` adds ``ath`` (at the resource), ``nonce`` the server's."""
    claims: dict[str, object] = {"jti": jti, "htm": method.upper(), "htu": htu(url), "iat": int(now)}
    if access_token is not None:
        claims["ath"] = ath(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    return claims


def nonce_in(headers: Mapping[str, str]) -> Optional[str]:
    """The ``DPoP-Nonce`` header of an answer, when it has a well-formed one (else None)."""
    for name, value in headers.items():
        if name.lower() == "dpop-nonce" and isinstance(value, str) and _NONCE.fullmatch(value.strip()):
            return value.strip()
    return None


def wants_nonce(status: int, document: object, error: Optional[str]) -> bool:
    """Whether an answer asks for a proof with the server's nonce.

    The authorization server answers 400 with ``{"error": "use_dpop_nonce"}``
    (section 8); the resource 401 with a ``DPoP`` challenge whose ``error``
    is ``use_dpop_nonce`` (section 9): pass the challenge's error as ``error``.
    """
    if status == 400 and isinstance(document, Mapping):
        return document.get("error") == NONCE_ERROR
    return status == 401 and error == NONCE_ERROR


def jwk_thumbprint(jwk: Mapping[str, str]) -> str:
    """The RFC 7638 SHA-256 thumbprint of an EC public key (its ``crv``, ``kty``, ``x``, ``y`` in that order)."""
    try:
        members = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    except KeyError:
        raise OAuthRefused("dpop", "The DPoP key is not an EC public key.") from None
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode("utf-8")).digest())
