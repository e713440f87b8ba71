"""OAuth 2.1 as the MCP authorization specification defines it: the refusal, challenges, scopes and URLs.

Nothing here does I/O: no network, no clock, no files. The functions read a
``WWW-Authenticate`` header and its scopes, and check URLs; the discovery
documents (the URLs a client tries and in which order, the checks of what
the network layer fetched) are in :mod:`.oauth_metadata`. The flow itself (PKCE,
state, the authorization URL, the token requests, the token record) is in
:mod:`.oauth_flow`.

Contract:

* Every public function either returns its result or raises
  :class:`OAuthRefused`, whatever the input; nothing else escapes.
  ``OAuthRefused.check`` names the rule that refused (``"challenge"``,
  ``"url"``, ``"resource"``, ``"issuer"``, ``"metadata"``, ``"endpoint"``,
  ``"scope"``, ...), so a caller can branch without reading the message.
* Messages are short fixed sentences. They never quote a token, a secret,
  a code, or text taken from a server's document or header.
* Sizes are bounded before any work: a header of :data:`MAX_HEADER`
  characters, URLs of :data:`MAX_URL`, scope lists of :data:`MAX_SCOPES`.

Sources: MCP 2025-11-25, basic/authorization; MCP 2026-07-28,
basic/authorization (the overview); MCP draft,
basic/authorization/authorization-server-discovery;
RFC 6750 section 3, RFC 7235 section 2.1, RFC 8414 sections 3 and 5,
RFC 9728 sections 3 and 5.1.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Optional
from urllib.parse import SplitResult, urlsplit

from .record import Record

__all__ = [
    "MAX_HEADER",
    "MAX_SCOPES",
    "MAX_URL",
    "BearerChallenge",
    "Challenge",
    "OAuthRefused",
    "bearer_challenge",
    "check_secure",
    "host_is_loopback",
    "is_loopback_url",
    "origin_key",
    "origin_of_parts",
    "parse_scope",
    "parse_www_authenticate",
    "scope_list",
    "split_http_url",
]

#: The longest ``WWW-Authenticate`` value read (all challenges together).
MAX_HEADER = 8192
#: The longest URL accepted anywhere in discovery.
MAX_URL = 2048
#: The most scopes in one scope list, and the longest scope token.
MAX_SCOPES = 64
MAX_SCOPE_TOKEN = 256
#: The most challenges, and parameters per challenge, read from one header.
MAX_CHALLENGES = 16
MAX_PARAMS = 32
#: The longest ``error_description`` kept from a challenge (longer is cut).
MAX_DESCRIPTION = 512
#: The most entries read from a list in a metadata document.
MAX_LIST = 64

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


class OAuthRefused(ValueError):
    """A piece of authorization input was refused; ``check`` names the rule.

    The message is a fixed sentence that never quotes the refused input.
    """

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check
        self.message = message

    def __repr__(self) -> str:
        return f"OAuthRefused(check={self.check!r}, message={self.message!r})"


# ---------------------------------------------------------------------------- challenges

#: RFC 7230 tchar.
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
#: RFC 7235 token68 characters (without the trailing ``=`` padding).
_T68 = frozenset("-._~+/0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_BAD_HEADER_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: RFC 6749 section 3.3 scope-token characters.
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
#: An OAuth error code as RFC 6749 section 5.2 allows it, bounded.
_ERROR_CODE = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}")


class Challenge(Record):
    """One challenge of a ``WWW-Authenticate`` header.

    ``scheme`` is lowercased; ``params`` keeps each parameter in header order
    with its name lowercased and its value unquoted; ``token68`` is set for a
    challenge of the ``Scheme token68`` form.
    """

    __slots__ = ("scheme", "params", "token68")

    def __init__(self, scheme: str, params: tuple[tuple[str, str], ...] = (), token68: Optional[str] = None) -> None:
        self.scheme = scheme
        self.params = params
        self.token68 = token68


class BearerChallenge(Record):
    """What a ``Bearer`` challenge tells a client (RFC 6750 section 3, RFC 9728 section 5.1).

    ``scope`` is ``None`` when the challenge has no ``scope`` parameter and a
    (possibly empty) tuple of scope tokens when it has one. ``error`` is the
    error code (``"invalid_token"``, ``"insufficient_scope"``, ...).
    ``error_description`` is the server's text, cut to
    :data:`MAX_DESCRIPTION`; show it only as untrusted text.
    """

    __slots__ = ("resource_metadata", "scope", "error", "error_description", "realm", "scheme")

    def __init__(
        self,
        resource_metadata: Optional[str] = None,
        scope: Optional[tuple[str, ...]] = None,
        error: Optional[str] = None,
        error_description: Optional[str] = None,
        realm: Optional[str] = None,
        scheme: str = "bearer",
    ) -> None:
        self.resource_metadata = resource_metadata
        self.scope = scope
        self.error = error
        self.error_description = error_description
        self.realm = realm
        #: ``"bearer"``, or ``"dpop"`` for a ``DPoP`` challenge (RFC 9449 section 7.1), which reads the same.
        self.scheme = scheme

    @property
    def insufficient_scope(self) -> bool:
        """True for ``error="insufficient_scope"``, the step-up signal of a 403."""
        return self.error == "insufficient_scope"


def _refuse_challenge(why: str) -> OAuthRefused:
    return OAuthRefused("challenge", f"The WWW-Authenticate header cannot be read: {why}.")


def _skip_ows(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


def _read_token(text: str, pos: int) -> tuple[str, int]:
    start = pos
    while pos < len(text) and text[pos] in _TCHAR:
        pos += 1
    return text[start:pos], pos


def _read_bare(text: str, pos: int) -> tuple[str, int]:
    """Read an unquoted value: up to a comma or white space (tolerating a bare URL)."""
    start = pos
    while pos < len(text) and text[pos] not in ", \t":
        if text[pos] == '"':
            raise _refuse_challenge("a quote stands inside an unquoted value")
        pos += 1
    return text[start:pos], pos


def _read_quoted(text: str, pos: int) -> tuple[str, int]:
    """Read a quoted-string starting at ``text[pos] == '"'``; return its value and the next position."""
    out: list[str] = []
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            if pos + 1 >= len(text):
                break
            out.append(text[pos + 1])
            pos += 2
            continue
        if char == '"':
            return "".join(out), pos + 1
        out.append(char)
        pos += 1
    raise _refuse_challenge("a quoted value is not closed")


def _token68_at(text: str, pos: int) -> Optional[tuple[str, int]]:
    """A token68 at ``pos`` that ends its challenge (end of text or a comma follows), else None."""
    end = pos
    while end < len(text) and text[end] in _T68:
        end += 1
    if end == pos:
        return None
    while end < len(text) and text[end] == "=":
        end += 1
    after = _skip_ows(text, end)
    if after < len(text) and text[after] != ",":
        return None
    return text[pos:end], after


def parse_www_authenticate(header: object) -> tuple[Challenge, ...]:
    """Read every challenge of a ``WWW-Authenticate`` value (RFC 7235 section 4.1).

    Several header lines joined with commas read the same as one line. Scheme
    and parameter names are case-insensitive (returned lowercased); values
    may be tokens or quoted strings (backslash escapes undone); a missing
    comma between two parameters is tolerated. Raises :class:`OAuthRefused`
    (check ``"challenge"``) for a value that is not a string, is longer than
    :data:`MAX_HEADER`, holds control characters, has an unclosed quote, a
    parameter without a value, or words that are neither a scheme, a
    parameter nor a token68.
    """
    if not isinstance(header, str):
        raise _refuse_challenge("it is not text")
    if len(header) > MAX_HEADER:
        raise _refuse_challenge("it is too long")
    if _BAD_HEADER_CHAR.search(header):
        raise _refuse_challenge("it holds control characters")
    text = header
    challenges: list[Challenge] = []
    current: Optional[tuple[str, list[tuple[str, str]]]] = None
    token68: Optional[str] = None
    fresh = False  # the last thing read was a scheme, with no comma since
    pos = 0
    while True:
        pos = _skip_ows(text, pos)
        while pos < len(text) and text[pos] == ",":
            fresh = False
            pos = _skip_ows(text, pos + 1)
        if pos >= len(text):
            break
        if current is not None and _is_param_start(text, pos):
            name, end = _read_token(text, pos)
            value_at = _skip_ows(text, _skip_ows(text, end) + 1)
            if text[value_at] == '"':
                value, pos = _read_quoted(text, value_at)
            else:
                value, pos = _read_bare(text, value_at)
            if len(current[1]) >= MAX_PARAMS:
                raise _refuse_challenge("a challenge has too many parameters")
            current[1].append((name.lower(), value))
            fresh = False
            continue
        if fresh and current is not None and token68 is None and not current[1]:
            found = _token68_at(text, pos)
            if found is not None:
                token68, pos = found
                fresh = False
                continue
        name, end = _read_token(text, pos)
        if not name:
            raise _refuse_challenge("it holds a character that starts no scheme or parameter")
        if fresh:
            raise _refuse_challenge("two words follow each other without a comma")
        if current is not None:
            challenges.append(Challenge(current[0], tuple(current[1]), token68))
        if len(challenges) >= MAX_CHALLENGES:
            raise _refuse_challenge("it has too many challenges")
        current, token68, fresh, pos = (name.lower(), []), None, True, end
    if current is not None:
        challenges.append(Challenge(current[0], tuple(current[1]), token68))
    if not challenges:
        raise _refuse_challenge("it is empty")
    return tuple(challenges)


def _is_param_start(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` reads ``name = value`` (a parameter, not a token68)."""
    name, end = _read_token(text, pos)
    if not name:
        return False
    after = _skip_ows(text, end)
    if after >= len(text) or text[after] != "=":
        return False
    value_at = _skip_ows(text, after + 1)
    return value_at < len(text) and text[value_at] not in ",="


def parse_scope(value: object, *, check: str = "scope") -> tuple[str, ...]:
    """Split a space-separated scope string into its tokens (RFC 6749 section 3.3).

    Repeated tokens are kept once, in first-seen order. Raises
    :class:`OAuthRefused` for a non-string, a token with characters outside
    the scope-token set, a token longer than 256 characters or more than
    :data:`MAX_SCOPES` tokens.
    """
    if not isinstance(value, str):
        raise OAuthRefused(check, "A scope value is not text.")
    if len(value) > MAX_SCOPES * (MAX_SCOPE_TOKEN + 1):
        raise OAuthRefused(check, "A scope value is too long.")
    return scope_list(value.split(" "), check)


def scope_list(parts: object, check: str = "scope") -> tuple[str, ...]:
    """Check a list of scope tokens (as JSON gives ``scopes_supported``); keep each once, in order.

    Empty strings are skipped. Raises :class:`OAuthRefused` (``check``) for a
    non-list, a non-string entry, a token outside the scope-token set or over
    256 characters, or more than :data:`MAX_SCOPES` tokens.
    """
    seen: dict[str, None] = {}
    if not isinstance(parts, (list, tuple)):
        raise OAuthRefused(check, "A scope list is not a list.")
    for part in parts:
        if not isinstance(part, str):
            raise OAuthRefused(check, "A scope is not text.")
        if part == "":
            continue
        if len(part) > MAX_SCOPE_TOKEN or not _SCOPE_TOKEN.fullmatch(part):
            raise OAuthRefused(check, "A scope holds characters a scope cannot hold.")
        seen[part] = None
        if len(seen) > MAX_SCOPES:
            raise OAuthRefused(check, "A scope list has too many scopes.")
    return tuple(seen)


def bearer_challenge(header: object) -> Optional[BearerChallenge]:
    """The ``Bearer`` (or ``DPoP``) challenge of a ``WWW-Authenticate`` value, or None when it has none.

    The first DPoP challenge counts, else the first Bearer one (``scheme``
    says which): a server that offers DPoP says so whatever it lists first,
    and a DPoP challenge reads as a Bearer one. A parameter given twice in it, a
    ``scope`` that is not a scope list, an ``error`` that is not an OAuth
    error code, or a ``resource_metadata`` that is not an absolute http(s)
    URL is refused (:class:`OAuthRefused`, check ``"challenge"``); a bare
    ``Bearer`` is a challenge with every field None.
    """
    challenges = [c for c in parse_www_authenticate(header) if c.scheme in ("bearer", "dpop")]
    for challenge in sorted(challenges, key=lambda c: c.scheme != "dpop")[:1]:  # stable: the first of each scheme
        fields: dict[str, str] = {}
        for name, value in challenge.params:
            if name in fields:
                raise _refuse_challenge("the Bearer challenge repeats a parameter")
            fields[name] = value
        metadata = fields.get("resource_metadata")
        if metadata is not None:
            split_http_url(metadata, "challenge")
        scope = fields.get("scope")
        error = fields.get("error")
        if error is not None and not _ERROR_CODE.fullmatch(error):
            raise _refuse_challenge("the error code holds characters an error code cannot hold")
        description = fields.get("error_description")
        return BearerChallenge(
            resource_metadata=metadata,
            scope=None if scope is None else parse_scope(scope, check="challenge"),
            error=error,
            error_description=None if description is None else description[:MAX_DESCRIPTION],
            realm=fields.get("realm"),
            scheme=challenge.scheme,
        )
    return None


# ---------------------------------------------------------------------------- URLs

_URL_BAD = re.compile(r"[\x00-\x20\x7f-\x9f\\]")
#: Anything but printable ASCII (bidi, zero-width and other invisible characters among it).
_URL_NOT_PRINTABLE = re.compile(r"[^\x21-\x7e]")


def split_http_url(url: object, check: str, *, what: str = "A URL", printable: bool = True) -> SplitResult:
    """Parse an absolute http(s) URL with a host, no userinfo and no fragment.

    A URL a server sent (``printable``) must be printable ASCII, so that the
    URL shown to a person is the URL opened; the user's own server URL may
    hold other characters (an internationalised name).
    """
    if not isinstance(url, str):
        raise OAuthRefused(check, f"{what} is not text.")
    if len(url) > MAX_URL:
        raise OAuthRefused(check, f"{what} is too long.")
    if _URL_BAD.search(url) or (printable and _URL_NOT_PRINTABLE.search(url)):
        raise OAuthRefused(check, f"{what} holds spaces, controls, backslashes or characters other than printable ASCII.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise OAuthRefused(check, f"{what} cannot be parsed.") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise OAuthRefused(check, f"{what} is not an http or https URL.")
    if not parts.hostname or "@" in parts.netloc:
        raise OAuthRefused(check, f"{what} has no host, or has user information.")
    if port == 0:
        raise OAuthRefused(check, f"{what} has port 0.")
    if parts.fragment or url.endswith("#"):
        raise OAuthRefused(check, f"{what} has a fragment.")
    return parts


def origin_of_parts(parts: SplitResult) -> str:
    return f"{parts.scheme.lower()}://{parts.netloc}"


def origin_key(parts: SplitResult) -> tuple[str, str, int]:
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").lower(), port


def host_is_loopback(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: object) -> bool:
    """Whether ``url`` is an http(s) URL whose host is loopback (``localhost``, 127.0.0.0/8, ``::1``).

    Never raises: anything that is not such a URL is simply not loopback.
    """
    try:
        parts = split_http_url(url, "url", printable=False)
    except OAuthRefused:
        return False
    return host_is_loopback(parts.hostname or "")


def check_secure(parts: SplitResult, check: str, what: str, *, allow_http: bool) -> None:
    if parts.scheme.lower() == "http" and not (allow_http and host_is_loopback(parts.hostname or "")):
        raise OAuthRefused(check, f"{what} uses http for a host that is not loopback.")
