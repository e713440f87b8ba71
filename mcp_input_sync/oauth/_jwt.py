"""Signing JWTs with PyJWT, the optional ``jwt`` extra: a private key and its algorithm.

PyJWT (with its ``crypto`` extra, which brings ``cryptography``) is imported
only here, and only when a key is made: importing :mod:`mcp_input_sync.oauth`
never needs it, and a configuration that needs signing fails when it is
built, naming the extra, rather than at its first token request.

Only asymmetric keys sign: an EC key on P-256 (ES256, the extensions'
recommendation) or an RSA key of 2048 bits or more (RS256). A key of
another kind, or an algorithm that does not fit the key, is refused when
the key is made. No message or repr here shows a key, a path's contents or
a signed token.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

from .._protocol.oauth_grants import SIGNING_ALGORITHMS

__all__ = ["EXTRA", "DPoPKey", "SigningKey", "signing_modules"]

#: What to install for signing.
EXTRA = "pip install 'mcp_input_sync[jwt]'"

KeySource = Union[str, bytes, "os.PathLike[str]"]


def signing_modules() -> tuple[Any, Any, Any, Any]:
    """``jwt``, and cryptography's ``serialization``, ``ec`` and ``rsa`` modules; ValueError naming the extra without them."""
    try:
        import jwt
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
    except ImportError:
        raise ValueError(f"signing a JWT needs PyJWT with its crypto extra: {EXTRA}") from None
    return jwt, serialization, ec, rsa


def _pem(source: KeySource) -> bytes:
    """The PEM text of a key given as PEM text (str or bytes) or as the path of a PEM file."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, str) and source.lstrip().startswith("-----BEGIN"):
        return source.encode("ascii", "replace")
    try:
        with open(os.fspath(source), "rb") as fh:
            return fh.read(1 << 20)
    except (OSError, TypeError, ValueError) as exc:
        what = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ValueError(f"cannot read the private key file: {what}") from None


class SigningKey:
    """A private key that signs JWTs with one algorithm (``ES256`` or ``RS256``).

    Args:
        private_key: the key as PEM text (PKCS#8 or the traditional
            format, unencrypted), or the path of a file holding it.
        algorithm: ``"ES256"`` or ``"RS256"``; None takes the key's own
            (ES256 for an EC P-256 key, RS256 for an RSA key).

    Raises:
        ValueError: PyJWT is missing (the message names the extra), the key
            cannot be read, is of another kind, or does not fit ``algorithm``.
    """

    __slots__ = ("_key", "algorithm")

    def __init__(self, private_key: KeySource, algorithm: Optional[str] = None) -> None:
        _, serialization, ec, rsa = signing_modules()
        if algorithm is not None and algorithm not in SIGNING_ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(SIGNING_ALGORITHMS)}, not {algorithm!r}")
        data = _pem(private_key)
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ValueError("the private key is not an unencrypted PEM private key") from None
        if isinstance(key, ec.EllipticCurvePrivateKey):
            if key.curve.name != "secp256r1":
                raise ValueError(f"an EC key must be on P-256 to sign with ES256, not on {key.curve.name}")
            own = "ES256"
        elif isinstance(key, rsa.RSAPrivateKey):
            if key.key_size < 2048:
                raise ValueError(f"an RSA key must have at least 2048 bits, not {key.key_size}")
            own = "RS256"
        else:
            raise ValueError("only EC P-256 (ES256) and RSA (RS256) private keys can sign")
        if algorithm is not None and algorithm != own:
            raise ValueError(f"a {'EC' if own == 'ES256' else 'RSA'} key signs with {own}, not {algorithm}")
        self._key = key
        self.algorithm = own

    def __repr__(self) -> str:
        return f"SigningKey(algorithm={self.algorithm!r})"

    def sign(self, claims: Mapping[str, object], headers: Optional[Mapping[str, object]] = None) -> str:
        """The compact JWT of ``claims``, signed (``headers`` added to the ``alg`` and ``typ`` PyJWT sets)."""
        jwt = signing_modules()[0]
        token: str = jwt.encode(dict(claims), self._key, algorithm=self.algorithm, headers=dict(headers) if headers else None)
        return token


class DPoPKey:
    """The EC P-256 key pair a client proves its possession of with DPoP (RFC 9449); ES256.

    :meth:`generate` makes a new one; :meth:`from_pem` reads one kept in a
    token store beside the tokens bound to it, so they work after a restart.

    Raises:
        ValueError: PyJWT is missing (the message names the extra), or the
            PEM is not an EC P-256 private key.
    """

    __slots__ = ("_key", "jwk")

    def __init__(self, key: Any) -> None:
        self._key = key
        numbers = key.public_key().public_numbers()
        #: The public key as a JWK (RFC 7518 section 6.2.1): what goes in every proof's header.
        self.jwk = {"kty": "EC", "crv": "P-256", "x": _coordinate(numbers.x), "y": _coordinate(numbers.y)}

    @classmethod
    def generate(cls) -> "DPoPKey":
        _, _, ec, _ = signing_modules()
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: str) -> "DPoPKey":
        _, serialization, ec, _ = signing_modules()
        try:
            key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
        except (ValueError, TypeError, UnicodeEncodeError):
            raise ValueError("the stored DPoP key is not a PEM private key") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
            raise ValueError("the stored DPoP key is not an EC P-256 key")
        return cls(key)

    def to_pem(self) -> str:
        """The private key as unencrypted PKCS#8 PEM, for the token store (which keeps tokens as secret)."""
        _, serialization, _, _ = signing_modules()
        pem: bytes = self._key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        return pem.decode("ascii")

    def sign(self, claims: Mapping[str, object], headers: Mapping[str, object]) -> str:
        jwt = signing_modules()[0]
        token: str = jwt.encode(dict(claims), self._key, algorithm="ES256", headers=dict(headers))
        return token

    def __repr__(self) -> str:
        return "DPoPKey(ES256)"


def _coordinate(value: int) -> str:
    """A P-256 coordinate as base64url of its 32 big-endian bytes, unpadded."""
    import base64

    return base64.urlsafe_b64encode(value.to_bytes(32, "big")).decode("ascii").rstrip("=")
