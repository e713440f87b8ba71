"""The OAuth 2.1 authorization code flow of MCP: the pure decisions.

PKCE (RFC 7636, S256 only), ``state``, the RFC 9207 ``iss`` check of the
authorization response, scope selection and step-up, the authorization URL,
the token request bodies (RFC 8707 ``resource`` in both), the token endpoint
client authentication, and the :class:`Tokens` record. Discovery is in
:mod:`.oauth`. Nothing here does I/O or reads a clock: the caller passes
``now`` where time matters.

The same contract as :mod:`.oauth`: :class:`~.oauth.OAuthRefused` or a
result, fixed messages that never quote a token, secret, code, verifier or
server text, and bounded sizes. No repr in this module shows a secret.

Sources: MCP 2025-11-25, basic/authorization; MCP 2026-07-28,
basic/authorization (the overview, with the RFC 9207 table);
RFC 6749 sections 2.3.1, 4.1 and
6, RFC 7636 section 4, RFC 8707 section 2, RFC 9207 section 2.4.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Optional
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from .oauth import MAX_URL, OAuthRefused, parse_scope, scope_list
from .oauth_metadata import AuthServerMetadata
from .record import Record

__all__ = [
    "AuthorizationRequest",
    "ClientAuth",
    "Pkce",
    "TokenRequest",
    "Tokens",
    "authorization_code_request",
    "authorization_url",
    "check_authorization_response",
    "check_iss",
    "check_pkce_support",
    "choose_client_auth",
    "form_request",
    "code_challenge",
    "new_pkce",
    "new_state",
    "parse_redirect_query",
    "parse_token_response",
    "refresh_request",
    "select_scopes",
    "step_up_scopes",
]

#: RFC 7636 section 4.1: the verifier's characters and length.
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
#: The longest redirect query, parameter value and token read.
MAX_QUERY = 8192
MAX_VALUE = 4096
MAX_TOKEN = 16384
#: The longest lifetime a token response may claim (ten years, in seconds).
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600
OFFLINE_ACCESS = "offline_access"


def _redacted(value: Optional[str]) -> str:
    return "None" if value is None else "'***'"


def _scopes_arg(value: object, check: str = "scope") -> Optional[list[object]]:
    """A scope argument as a list (None stays None); anything but a list or tuple is refused."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    raise OAuthRefused(check, "Scopes must be given as a list.")


def _finite_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _need(value: object, kind: type, check: str, what: str) -> None:
    if not isinstance(value, kind):
        raise OAuthRefused(check, f"{what} is not the record it should be.")


# ---------------------------------------------------------------------------- PKCE and state


class Pkce(Record):
    """A PKCE pair: the secret ``verifier`` and its S256 ``challenge``. The repr hides the verifier."""

    __slots__ = ("verifier", "challenge")

    def __init__(self, verifier: str, challenge: str) -> None:
        self.verifier = verifier
        self.challenge = challenge

    def __repr__(self) -> str:
        return f"Pkce(verifier='***', challenge={self.challenge!r})"


def code_challenge(verifier: object) -> str:
    """The S256 challenge of ``verifier``: base64url of its SHA-256, without padding (RFC 7636 section 4.2).

    Raises :class:`OAuthRefused` (check ``"pkce"``) unless the verifier is 43
    to 128 characters of ``A-Z a-z 0-9 - . _ ~``.
    """
    if not isinstance(verifier, str) or not _VERIFIER.fullmatch(verifier):
        raise OAuthRefused("pkce", "A PKCE verifier must be 43 to 128 unreserved characters.")
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def new_pkce() -> Pkce:
    """A fresh PKCE pair: a 64-character verifier from 48 random bytes, and its challenge."""
    verifier = secrets.token_urlsafe(48)
    return Pkce(verifier, code_challenge(verifier))


def new_state() -> str:
    """A fresh ``state`` value: 32 random bytes, base64url (43 characters)."""
    return secrets.token_urlsafe(32)


def check_pkce_support(metadata: AuthServerMetadata, *, absent_is_refusal: bool = True) -> None:
    """Refuse an authorization server that does not offer PKCE with S256.

    A listed ``code_challenge_methods_supported`` without ``"S256"`` is always
    refused. When the field is absent from a discovered document the
    2025-11-25 revision says the server does not support PKCE and the client
    MUST refuse; that is the default here (``absent_is_refusal=False`` lets a
    caller accept it for an older revision). The 2025-03-26 defaults
    (``metadata.discovered`` False), which no server sent, are never refused:
    the client sends S256 to them anyway. Raises :class:`OAuthRefused`
    (check ``"pkce"``).
    """
    _need(metadata, AuthServerMetadata, "metadata", "The authorization server metadata")
    methods = metadata.code_challenge_methods_supported
    if methods is None:
        if metadata.discovered and absent_is_refusal:
            raise OAuthRefused("pkce", "The authorization server does not say it supports PKCE.")
        return
    if "S256" not in methods:
        raise OAuthRefused("pkce", "The authorization server does not support PKCE with S256.")


# ---------------------------------------------------------------------------- scopes


def select_scopes(
    challenge_scope: Optional[Sequence[str]],
    prm_scopes: Optional[Sequence[str]],
    as_scopes: Optional[Sequence[str]] = None,
    *,
    want_refresh: bool = True,
) -> Optional[tuple[str, ...]]:
    """The scopes of a first authorization; None means send no ``scope`` parameter.

    The challenge's scope when it had one, else the PRM's
    ``scopes_supported``, else none. ``offline_access`` is added when
    ``want_refresh`` is set, the authorization server lists it in its
    ``scopes_supported``, and some other scope is being asked for (a request
    that asked for nothing keeps asking for nothing, so the server's default
    scopes are not replaced by ``offline_access`` alone).
    """
    challenged, supported, offered = _scopes_arg(challenge_scope), _scopes_arg(prm_scopes), _scopes_arg(as_scopes)
    chosen = challenged if challenged is not None else supported
    if chosen is None:
        return None
    scopes = scope_list(chosen, "scope")
    if not scopes:
        return None
    if want_refresh and offered is not None and OFFLINE_ACCESS in offered and OFFLINE_ACCESS not in scopes:
        scopes = scope_list([*scopes, OFFLINE_ACCESS], "scope")
    return scopes


def step_up_scopes(held: Optional[Sequence[str]], challenged: Optional[Sequence[str]]) -> tuple[str, ...]:
    """The scopes to ask for after a 403 ``insufficient_scope``: the held ones, then the challenged ones.

    Order is kept (held first), repeats are dropped. Raises
    :class:`OAuthRefused` (check ``"scope"``) when the union is not a valid
    scope list of at most 64 scopes.
    """
    return scope_list([*(_scopes_arg(held) or ()), *(_scopes_arg(challenged) or ())], "scope")


# ---------------------------------------------------------------------------- the authorization request


class AuthorizationRequest(Record):
    """What :func:`authorization_url` built: the URL to send the user to, and what to keep for the response.

    Keep the whole record with the pending authorization: ``issuer`` is the
    recorded issuer of RFC 9207, ``pkce`` holds the verifier. The repr hides
    the verifier and the state.
    """

    __slots__ = ("url", "state", "pkce", "issuer", "redirect_uri", "resource", "scopes")

    def __init__(
        self, url: str, state: str, pkce: Pkce, issuer: str, redirect_uri: str, resource: str, scopes: Optional[tuple[str, ...]]
    ) -> None:
        self.url = url
        self.state = state
        self.pkce = pkce
        self.issuer = issuer
        self.redirect_uri = redirect_uri
        self.resource = resource
        self.scopes = scopes

    def to_dict(self) -> dict[str, object]:
        """The record as JSON-ready data, to keep between beginning and finishing (e.g. in a web session).

        It holds the PKCE verifier and the state: store it where only this
        user's next request can read it.
        """
        return {
            "url": self.url, "state": self.state, "verifier": self.pkce.verifier, "issuer": self.issuer,
            "redirect_uri": self.redirect_uri, "resource": self.resource, "scopes": None if self.scopes is None else list(self.scopes),
        }

    @classmethod
    def from_dict(cls, data: object) -> AuthorizationRequest:
        """Rebuild a record from :meth:`to_dict`'s data; the challenge is recomputed from the verifier.

        Raises :class:`OAuthRefused` (check ``"pending"``) for data that is not such a record.
        """
        if not isinstance(data, Mapping):
            raise OAuthRefused("pending", "The pending authorization is not a record.")
        try:
            verifier = data.get("verifier")
            pkce = Pkce(str(verifier), code_challenge(verifier))
            keys = ("url", "state", "issuer", "redirect_uri", "resource")
            fields = [_value(data.get(key), "pending", "A field of the pending authorization") for key in keys]
            scopes = _scopes_arg(data.get("scopes"))
            chosen = None if scopes is None else scope_list(scopes, "pending")
        except OAuthRefused:
            raise OAuthRefused("pending", "The pending authorization is not a record.") from None
        url, state, issuer, redirect_uri, resource = fields
        return cls(url, state, pkce, issuer, redirect_uri, resource, chosen)

    def __repr__(self) -> str:
        return (
            f"AuthorizationRequest(url=<{len(self.url)} chars>, state='***', pkce={self.pkce!r}, issuer={self.issuer!r}, "
            f"redirect_uri={self.redirect_uri!r}, resource={self.resource!r}, scopes={self.scopes!r})"
        )


def _value(value: object, check: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE:
        raise OAuthRefused(check, f"{what} must be non-empty text of at most {MAX_VALUE} characters.")
    return value


def authorization_url(
    metadata: AuthServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    resource: str,
    scopes: Optional[Sequence[str]] = None,
    pkce: Optional[Pkce] = None,
    state: Optional[str] = None,
) -> AuthorizationRequest:
    """Build the authorization request URL (OAuth 2.1 section 4.1.1, RFC 8707, RFC 7636).

    The query carries ``response_type=code``, ``client_id``, ``redirect_uri``,
    ``code_challenge``, ``code_challenge_method=S256``, ``state``,
    ``resource`` (the PRM's value, unchanged before encoding) and ``scope``
    when there are scopes. An existing query of the endpoint is kept. Fresh
    PKCE and state are made unless given. Raises :class:`OAuthRefused`.
    """
    check_pkce_support(metadata)
    if pkce is not None:
        _need(pkce, Pkce, "pkce", "The PKCE pair")
    pkce = pkce if pkce is not None else new_pkce()
    state = state if state is not None else new_state()
    fields = [
        ("response_type", "code"),
        ("client_id", _value(client_id, "client", "The client id")),
        ("redirect_uri", _value(redirect_uri, "redirect", "The redirect URI")),
        ("code_challenge", pkce.challenge),
        ("code_challenge_method", "S256"),
        ("state", _value(state, "state", "The state")),
        ("resource", _value(resource, "resource", "The resource")),
    ]
    given = _scopes_arg(scopes)
    chosen = None if given is None else scope_list(given, "scope") or None
    if chosen:
        fields.append(("scope", " ".join(chosen)))
    endpoint = metadata.authorization_endpoint
    query = urlencode(fields, quote_via=quote)
    url = endpoint + ("&" if urlsplit(endpoint).query else "?") + query
    if len(url) > MAX_URL * 4:
        raise OAuthRefused("url", "The authorization URL would be too long.")
    return AuthorizationRequest(url, state, pkce, metadata.issuer, redirect_uri, resource, chosen)


def parse_redirect_query(query: object) -> dict[str, str]:
    """The parameters of the redirect's query string (``code``, ``state``, ``iss``, ``error``, ...).

    A leading ``?`` is dropped. Raises :class:`OAuthRefused` (check
    ``"response"``) for a non-string, a query over 8192 characters, a
    parameter given twice, or one that does not decode.
    """
    if not isinstance(query, str) or len(query) > MAX_QUERY:
        raise OAuthRefused("response", "The authorization response is not a short query string.")
    try:
        pairs = parse_qsl(query[1:] if query.startswith("?") else query, keep_blank_values=True, errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise OAuthRefused("response", "The authorization response does not decode.") from None
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            raise OAuthRefused("response", "The authorization response repeats a parameter.")
        out[name] = value
    return out


def check_iss(iss: Optional[str], issuer: str, iss_supported: Optional[bool]) -> None:
    """The RFC 9207 section 2.4 check, as the MCP specification's table has it.

    ``iss`` present: it must equal the recorded ``issuer`` by simple string
    comparison (no case folding, port, slash or percent normalisation),
    whatever the metadata says. ``iss`` absent: refused when the metadata's
    ``authorization_response_iss_parameter_supported`` is true, accepted when
    it is false or absent. Raises :class:`OAuthRefused` (check ``"iss"``).
    """
    if iss is None:
        if iss_supported is True:
            raise OAuthRefused("iss", "The authorization response lacks the issuer its server promised.")
        return
    if not isinstance(iss, str) or iss != issuer:
        raise OAuthRefused("iss", "The authorization response names another issuer than the one asked.")


def check_authorization_response(params: Mapping[str, str], pending: AuthorizationRequest, iss_supported: Optional[bool]) -> str:
    """Check the redirect's parameters against the pending request; return the authorization code.

    In order: the ``iss`` check (:func:`check_iss`, before anything else in
    the response is looked at, error responses included), ``state`` equal to
    the pending one (constant-time), then an ``error`` (refused, check
    ``"authorization"``, naming the OAuth error code only when it is a plain
    code), then a ``code`` of at most 4096 characters. Raises
    :class:`OAuthRefused`.
    """
    if not isinstance(params, Mapping):
        raise OAuthRefused("response", "The authorization response is not a set of parameters.")
    _need(pending, AuthorizationRequest, "state", "The pending authorization")
    check_iss(params.get("iss"), pending.issuer, iss_supported)
    state = params.get("state")
    if not isinstance(state, str) or not hmac.compare_digest(state.encode("utf-8", "replace"), pending.state.encode("utf-8", "replace")):
        raise OAuthRefused("state", "The authorization response does not carry the state of this request.")
    error = params.get("error")
    if error is not None:
        if isinstance(error, str) and re.fullmatch(r"[a-z_]{1,40}", error):
            raise OAuthRefused("authorization", f"The authorization server refused: {error}.")
        raise OAuthRefused("authorization", "The authorization server refused.")
    code = params.get("code")
    if not isinstance(code, str) or not code or len(code) > MAX_VALUE:
        raise OAuthRefused("response", "The authorization response carries no usable code.")
    return code


# ---------------------------------------------------------------------------- client authentication and token requests


class ClientAuth(Record):
    """How the client authenticates at the token endpoint.

    ``method`` is ``"client_secret_basic"``, ``"client_secret_post"``,
    ``"private_key_jwt"`` or ``"none"``; ``secret`` is the client secret of
    the two secret methods, or the signed client assertion of
    ``"private_key_jwt"`` (RFC 7523 section 2.2), None for ``"none"``. The
    repr hides it.
    """

    __slots__ = ("method", "client_id", "secret")

    def __init__(self, method: str, client_id: str, secret: Optional[str] = None) -> None:
        self.method = method
        self.client_id = client_id
        self.secret = secret

    def __repr__(self) -> str:
        return f"ClientAuth(method={self.method!r}, client_id={self.client_id!r}, secret={_redacted(self.secret)})"


#: RFC 7523 section 2.2: the ``client_assertion_type`` of a JWT client assertion.
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


def choose_client_auth(
    metadata: AuthServerMetadata, client_id: str, client_secret: Optional[str] = None, registered_method: Optional[str] = None
) -> ClientAuth:
    """Choose the token endpoint authentication from the server's list and the registration.

    A method the registration names (``token_endpoint_auth_method``) wins
    when it is one of the three this client speaks and, for the two secret
    methods, a secret is held. Otherwise: no secret means ``none``; with a
    secret, ``client_secret_basic`` when the server lists it or lists
    nothing (RFC 8414's default), else ``client_secret_post`` when listed,
    else ``none`` when listed. Raises :class:`OAuthRefused` (check
    ``"client"``) when no method fits.
    """
    _need(metadata, AuthServerMetadata, "metadata", "The authorization server metadata")
    client_id = _value(client_id, "client", "The client id")
    if client_secret is not None:
        client_secret = _value(client_secret, "client", "The client secret")
    offered = metadata.token_endpoint_auth_methods_supported
    if registered_method in _AUTH_METHODS and (registered_method == "none" or client_secret is not None):
        assert registered_method is not None
        return ClientAuth(registered_method, client_id, None if registered_method == "none" else client_secret)
    if client_secret is None:
        return ClientAuth("none", client_id)
    listed = offered if offered is not None else ("client_secret_basic",)
    for method in _AUTH_METHODS:
        if method in listed:
            return ClientAuth(method, client_id, None if method == "none" else client_secret)
    raise OAuthRefused("client", "The authorization server offers no token endpoint authentication this client speaks.")


class TokenRequest(Record):
    """A token request to POST: the form ``body`` (application/x-www-form-urlencoded) and ``headers``.

    The repr shows neither, as both may hold a code, verifier, refresh token or secret.
    """

    __slots__ = ("url", "body", "headers")

    def __init__(self, url: str, body: str, headers: tuple[tuple[str, str], ...]) -> None:
        self.url = url
        self.body = body
        self.headers = headers

    def __repr__(self) -> str:
        names = tuple(name for name, _ in self.headers)
        return f"TokenRequest(url={self.url!r}, body=<{len(self.body)} chars>, headers={names!r})"


def _token_request(metadata: AuthServerMetadata, fields: list[tuple[str, str]], auth: ClientAuth) -> TokenRequest:
    _need(metadata, AuthServerMetadata, "metadata", "The authorization server metadata")
    return form_request(metadata.token_endpoint, fields, auth)


def form_request(url: str, fields: list[tuple[str, str]], auth: Optional[ClientAuth]) -> TokenRequest:
    """A token request to ``url``: ``fields`` as a form, and the client authenticated as ``auth`` says (None: not at all)."""
    headers: list[tuple[str, str]] = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ]
    if auth is None:
        return TokenRequest(url, urlencode(fields, quote_via=quote), tuple(headers))
    _need(auth, ClientAuth, "client", "The client authentication")
    if auth.method == "private_key_jwt":
        # the assertion's sub names the client (RFC 7521 section 4.2): no client_id beside it
        fields += [("client_assertion_type", CLIENT_ASSERTION_TYPE), ("client_assertion", auth.secret or "")]
        return TokenRequest(url, urlencode(fields, quote_via=quote), tuple(headers))
    # The body names the client in every other method (RFC 6749 section 3.2.1 allows it; the MCP
    # SDK's authorization server requires it even beside Basic); the secret goes one way only.
    fields.append(("client_id", auth.client_id))
    if auth.method == "client_secret_basic":
        # RFC 6749 section 2.3.1: id and secret are form-encoded before Basic
        pair = f"{quote(auth.client_id, safe='')}:{quote(auth.secret or '', safe='')}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")))
    elif auth.method == "client_secret_post":
        fields.append(("client_secret", auth.secret or ""))
    return TokenRequest(url, urlencode(fields, quote_via=quote), tuple(headers))


def authorization_code_request(metadata: AuthServerMetadata, pending: AuthorizationRequest, code: str, auth: ClientAuth) -> TokenRequest:
    """The ``authorization_code`` grant request: code, redirect URI, verifier and the same ``resource``."""
    _need(pending, AuthorizationRequest, "state", "The pending authorization")
    fields = [
        ("grant_type", "authorization_code"),
        ("code", _value(code, "response", "The authorization code")),
        ("redirect_uri", pending.redirect_uri),
        ("code_verifier", pending.pkce.verifier),
        ("resource", pending.resource),
    ]
    return _token_request(metadata, fields, auth)


def refresh_request(
    metadata: AuthServerMetadata, refresh_token: str, resource: str, auth: ClientAuth, scopes: Optional[Sequence[str]] = None
) -> TokenRequest:
    """The ``refresh_token`` grant request with ``resource`` (and ``scope`` only when given)."""
    fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", _value(refresh_token, "token", "The refresh token")),
        ("resource", _value(resource, "resource", "The resource")),
    ]
    given = _scopes_arg(scopes)
    chosen = None if given is None else scope_list(given, "scope")
    if chosen:
        fields.append(("scope", " ".join(chosen)))
    return _token_request(metadata, fields, auth)


# ---------------------------------------------------------------------------- tokens


class Tokens(Record):
    """Tokens from a token response, with the absolute expiry computed from the ``now`` given.

    ``expires_at`` is seconds on the caller's clock (None: the server gave no
    lifetime); ``scopes`` is None when the response named none;
    ``token_type`` is ``"Bearer"``, or ``"DPoP"`` for a token bound to the
    client's DPoP key (RFC 9449 section 5). The repr shows neither token.
    """

    __slots__ = ("access_token", "token_type", "expires_at", "refresh_token", "scopes")

    def __init__(
        self,
        access_token: str,
        token_type: str = "Bearer",
        expires_at: Optional[float] = None,
        refresh_token: Optional[str] = None,
        scopes: Optional[tuple[str, ...]] = None,
    ) -> None:
        self.access_token = access_token
        self.token_type = token_type
        self.expires_at = expires_at
        self.refresh_token = refresh_token
        self.scopes = scopes

    def __repr__(self) -> str:
        return (
            f"Tokens(access_token='***', token_type={self.token_type!r}, expires_at={self.expires_at!r}, "
            f"refresh_token={_redacted(self.refresh_token)}, scopes={self.scopes!r})"
        )

    def to_dict(self) -> dict[str, object]:
        """The tokens as JSON-ready data for a token store (absolute expiry included)."""
        return {
            "access_token": self.access_token, "token_type": self.token_type, "expires_at": self.expires_at,
            "refresh_token": self.refresh_token, "scopes": None if self.scopes is None else list(self.scopes),
        }

    @classmethod
    def from_dict(cls, data: object) -> Tokens:
        """Rebuild tokens from :meth:`to_dict`'s data (as a store gives it back).

        Raises :class:`OAuthRefused` (check ``"token"``) for data that is not such a record.
        """
        if not isinstance(data, Mapping):
            raise OAuthRefused("token", "The stored tokens are not a record.")
        access, refresh, expires_at = data.get("access_token"), data.get("refresh_token"), data.get("expires_at")
        if not isinstance(access, str) or not access or len(access) > MAX_TOKEN:
            raise OAuthRefused("token", "The stored tokens hold no usable access token.")
        if refresh is not None and (not isinstance(refresh, str) or not refresh or len(refresh) > MAX_TOKEN):
            raise OAuthRefused("token", "The stored refresh token is not usable.")
        if expires_at is not None and not _finite_number(expires_at):
            raise OAuthRefused("token", "The stored expiry is not a time.")
        token_type = data.get("token_type", "Bearer")
        if token_type not in ("Bearer", "DPoP"):
            raise OAuthRefused("token", "The stored tokens are neither Bearer nor DPoP tokens.")
        scopes = _scopes_arg(data.get("scopes"), "token")
        expiry = None if expires_at is None else float(expires_at)
        return cls(access, token_type, expiry, refresh, None if scopes is None else scope_list(scopes, "token"))

    def expired(self, now: float, margin: float = 60.0) -> bool:
        """Whether the access token is expired at ``now``, or will be within ``margin`` seconds."""
        return self.expires_at is not None and now + margin >= self.expires_at

    def authorization(self) -> str:
        """The ``Authorization`` header value: ``Bearer <access token>``, or ``DPoP <access token>`` (RFC 9449 section 7.1)."""
        return ("DPoP " if self.token_type == "DPoP" else "Bearer ") + self.access_token


def parse_token_response(document: object, now: float, previous: Optional[Tokens] = None, *, dpop: bool = False) -> Tokens:
    """Check a token endpoint's JSON answer and build :class:`Tokens` (RFC 6749 sections 5.1 and 6).

    ``access_token`` is required; ``token_type`` must be Bearer (any case),
    or DPoP when the request carried a proof (``dpop``);
    ``expires_in`` a non-negative number of seconds, capped at ten years;
    ``scope`` a scope list. A refresh answer without a new refresh token
    keeps ``previous``'s (refresh tokens may or may not rotate). Raises
    :class:`OAuthRefused` (check ``"token"``).
    """
    if not isinstance(document, Mapping):
        raise OAuthRefused("token", "The token response is not a JSON object.")
    if not isinstance(now, (int, float)) or isinstance(now, bool) or not math.isfinite(now):
        raise OAuthRefused("token", "The time given is not a finite number.")
    access = document.get("access_token")
    if not isinstance(access, str) or not access or len(access) > MAX_TOKEN or not access.isascii() or not access.isprintable():
        raise OAuthRefused("token", "The token response carries no usable access token.")
    token_type = document.get("token_type", "Bearer")
    kind = token_type.lower() if isinstance(token_type, str) else None
    if kind != "bearer" and not (dpop and kind == "dpop"):
        raise OAuthRefused("token", "The token response is not for a Bearer token." if not dpop else "The token response is for neither a Bearer nor a DPoP token.")
    expires_in = document.get("expires_in")
    expires_at: Optional[float] = None
    if expires_in is not None:
        if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)) or not math.isfinite(expires_in) or expires_in < 0:
            raise OAuthRefused("token", "The token response's lifetime is not a number of seconds.")
        expires_at = float(now) + min(float(expires_in), float(MAX_EXPIRES_IN))
    refresh = document.get("refresh_token")
    if refresh is not None and (not isinstance(refresh, str) or not refresh or len(refresh) > MAX_TOKEN):
        raise OAuthRefused("token", "The token response's refresh token is not usable.")
    if refresh is None and isinstance(previous, Tokens):
        refresh = previous.refresh_token
    scope = document.get("scope")
    scopes = None if scope is None else parse_scope(scope, check="token")
    return Tokens(access, "DPoP" if kind == "dpop" else "Bearer", expires_at, refresh, scopes)
