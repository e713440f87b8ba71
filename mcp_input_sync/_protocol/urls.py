"""Checks on the URL of a URL-mode elicitation request (docs/safety.md#url-elicitation).

Contract:

* :func:`check_elicitation_url` either returns :class:`UrlFacts` or raises
  :class:`UrlRefused`; it never raises anything else, whatever the input
  (the caller answers a refusal with JSON-RPC -32602 and the exception's
  message). The client never fetches or opens the URL, so nothing here does
  any I/O: no DNS, no network, no filesystem, no clock.
* Refusal messages are short, fixed sentences. They never contain the URL or
  any other text taken from the request.
* The work is linear in the length of the URL; the host is bounded before any
  IDNA processing, so a 100 KB URL is handled in well under a millisecond
  plus one pass over its characters.

Accepted URLs are absolute ``https`` URLs (scheme case-insensitive) of the
form ``https://host[:port][/path][?query][#fragment]`` where:

* the whole URL holds no backslash and no character that is a control or
  invisible format character or whitespace: Unicode categories ``Cc``
  (C0/C1 controls), ``Cf`` (format characters: bidi controls such as U+202E,
  zero-width joiners and spaces, soft hyphen, BOM; refused because they change
  how the URL is displayed without being visible), ``Cs`` (lone surrogates,
  which JSON can smuggle in), ``Zs``/``Zl``/``Zp`` and anything
  ``str.isspace`` calls whitespace;
* the authority has no userinfo (no ``@`` at all);
* the port, when given, is 1 to 5 ASCII digits with a value in 1..65535 (an
  empty port after ``:`` is refused);
* the host is non-empty and is one of:

  - a bracketed IPv6 literal (no zone id): ``UrlFacts.host`` is its
    compressed lowercase form *without* brackets (``"::1"``), always in hex
    groups as a WHATWG URL parser writes it, so an IPv4-mapped address reads
    ``"::ffff:102:304"`` on every Python version (3.13's ``ipaddress`` would
    write ``"::ffff:1.2.3.4"``);
  - a dotted-quad IPv4 address in strict decimal form (no leading zeros):
    ``UrlFacts.host`` is the address. A host whose last label looks like a
    number (all digits, or ``0x`` hex) but is not such a quad (``127.1``,
    ``0x7f.0.0.1``, ``010.0.0.1``) is refused, because browsers would read it
    as a different IPv4 address than the text suggests;
  - a DNS name of LDH labels (letters, digits, inner hyphens; 1..63
    characters per label, 253 in all; no underscore, no empty label). ASCII
    names are lowercased; labels starting with ``xn--`` must be valid
    canonical Punycode (decoded and re-encoded with the ``idna`` package).
    Names with non-ASCII characters are converted with
    ``idna.encode(host, uts46=True)`` and the result is checked like an ASCII
    name; a Unicode spelling of an IP address (fullwidth digits) is refused.

  A trailing dot (``example.com.``) is refused: it names the same DNS host
  but a different web origin, so neither answer for ``origin_mismatch`` would
  be right, and no genuine server needs it. Percent-escapes and any other
  character outside the forms above are refused in the host.

``UrlFacts.url`` is the URL exactly as received (not normalised);
``UrlFacts.host`` is the lowercase ASCII (A-label) host without port;
``UrlFacts.port`` is the explicit port or 443; ``UrlFacts.idn`` is true when
a label of the A-label host starts with ``xn--`` or the URL spelled the host
with non-ASCII characters (IP literals: always false);
``UrlFacts.origin_mismatch`` is false only when the server origin is known,
parses (see :func:`parse_origin`) and equals ``("https", host, port)``.

The ``idna`` package is imported lazily, only for hosts that need it
(non-ASCII, or an ``xn--`` label): importing it costs about 6 ms (plus about
3 ms for its UTS 46 table on first use), a tenth of the library's own import
time, and most URLs are plain ASCII.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

from .record import Record

__all__ = ["UrlFacts", "UrlRefused", "check_elicitation_url", "has_forbidden_char", "parse_origin"]

#: A URI scheme followed by its colon (RFC 3986 section 3.1).
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
#: The authority: everything after ``//`` up to the path, query or fragment.
_AUTHORITY_RE = re.compile(r"[^/?#]*")
#: ASCII characters refused anywhere: C0 controls, space and DEL.
_ASCII_FORBIDDEN_RE = re.compile(r"[\x00-\x20\x7f]")
_PORT_RE = re.compile(r"[0-9]{1,5}")
#: One lowercase LDH label of 1..63 characters, no leading or trailing hyphen.
_LDH_LABEL_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
#: A label that a WHATWG URL parser would read as a number (IPv4 part).
_NUMERIC_LABEL_RE = re.compile(r"[0-9]+|0x[0-9a-f]*")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})

#: Longest DNS name in characters (without a trailing dot).
_MAX_HOST = 253
#: Longest host text handed to IDNA processing (a U-label host is shorter
#: than its A-label form, but UTS 46 drops some ignorable marks).
_MAX_RAW_HOST = 1024

_DEFAULT_PORTS = {"https": 443, "http": 80}


class UrlFacts(Record):
    """What the handler's context learns about an accepted elicitation URL.

    Attributes:
        url: the URL exactly as the server sent it.
        host: lowercase ASCII host without port: A-label DNS name, dotted-quad
            IPv4, or compressed IPv6 without brackets.
        port: the explicit port, else 443.
        idn: true when a host label starts with ``xn--`` or the URL gave the
            host in Unicode; false for IP literals.
        origin_mismatch: true unless the server's origin is known and equals
            ``("https", host, port)``.
        server_origin: the server's origin the URL was compared with
            (``scheme://host[:port]``), or None when it has none: a stdio
            server is a local program, so a mismatch then says nothing
            about the link (the displays word it so).
    """

    __slots__ = ("url", "host", "port", "idn", "origin_mismatch", "server_origin")

    def __init__(self, url: str, host: str, port: int, idn: bool, origin_mismatch: bool, server_origin: str | None = None) -> None:
        self.url = url
        self.host = host
        self.port = port
        self.idn = idn
        self.origin_mismatch = origin_mismatch
        self.server_origin = server_origin


class UrlRefused(ValueError):
    """The URL is not acceptable; the message is a short generic reason.

    The message is safe to send on the wire (JSON-RPC -32602): it never
    contains the URL or other request text.
    """

    def __init__(self, reason: str) -> None:
        """Create the refusal.

        Args:
            reason: a fixed, human-readable sentence.
        """
        super().__init__(reason)
        self.reason = reason


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (the port only when not the scheme's default).

    Raises:
        ValueError: the URL's port is out of range.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"https": 443, "http": 80}.get(parts.scheme.lower())
    port = parts.port
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None and port != default else "")


def check_elicitation_url(url: object, server_origin: str | None) -> UrlFacts:
    """Check a URL-mode elicitation URL and describe it.

    Args:
        url: the ``url`` param of the request (any JSON value).
        server_origin: the server's origin as reported by the HTTP transport
            or the server's ``elicitation.origin`` capability, or None when
            unknown.

    Returns:
        The facts the handler's context carries.

    Raises:
        UrlRefused: the URL is not an acceptable absolute https URL; the
            message is a short generic reason.
    """
    if not isinstance(url, str):
        raise UrlRefused("elicitation URL must be a string")
    if "\\" in url:
        raise UrlRefused("elicitation URL must not contain a backslash")
    if has_forbidden_char(url):
        raise UrlRefused("elicitation URL must not contain control or whitespace characters")
    match = _SCHEME_RE.match(url)
    if match is None:
        raise UrlRefused("elicitation URL must be an absolute https URL")
    if match.group()[:-1].lower() != "https":
        raise UrlRefused("elicitation URL must use the https scheme")
    host, explicit_port, idn = _parse_authority(url, match.end())
    port = 443 if explicit_port is None else explicit_port
    origin = parse_origin(server_origin) if server_origin is not None else None
    mismatch = origin is None or origin != ("https", host, port)
    return UrlFacts(url=url, host=host, port=port, idn=idn, origin_mismatch=mismatch, server_origin=_shown_origin(origin))


def _shown_origin(origin: tuple[str, str, int] | None) -> str | None:
    """A parsed origin as ``scheme://host[:port]`` (IPv6 in brackets, the scheme's default port left out)."""
    if origin is None:
        return None
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + ("" if port == _DEFAULT_PORTS.get(scheme) else f":{port}")


def parse_origin(origin: str) -> tuple[str, str, int] | None:
    """Parse a server origin into (scheme, host, port), or None when unusable.

    Accepts ``http`` and ``https`` origins (scheme case-insensitive) with the
    same host and port rules as :func:`check_elicitation_url`. A path, query
    or fragment after the authority is ignored, so an endpoint URL such as
    ``https://example.com/mcp`` gives the origin of its site. Anything else
    (other schemes, userinfo, control characters, a bad host or port, a
    value that is not a string) gives None.

    Args:
        origin: the origin text, e.g. ``"https://example.com"``.

    Returns:
        ``(scheme, host, port)`` with a lowercase scheme, the A-label host
        (IPv6 without brackets) and the port (default 443 for https, 80 for
        http), or None.
    """
    if not isinstance(origin, str) or "\\" in origin or has_forbidden_char(origin):
        return None
    match = _SCHEME_RE.match(origin)
    if match is None:
        return None
    scheme = match.group()[:-1].lower()
    default_port = _DEFAULT_PORTS.get(scheme)
    if default_port is None:
        return None
    try:
        host, port, _idn = _parse_authority(origin, match.end())
    except UrlRefused:
        return None
    return (scheme, host, default_port if port is None else port)


def has_forbidden_char(text: str) -> bool:
    """True when text holds a control, format, surrogate or whitespace character."""
    if text.isascii():
        return _ASCII_FORBIDDEN_RE.search(text) is not None
    # Each distinct character once: bounded by the alphabet, not the length.
    for char in set(text):
        if char.isspace() or unicodedata.category(char) in _REFUSED_CATEGORIES:
            return True
    return False


def _parse_authority(url: str, start: int) -> tuple[str, int | None, bool]:
    """Parse ``//authority`` at ``url[start:]``.

    Args:
        url: the whole URL, already free of forbidden characters.
        start: the index just after the scheme's colon.

    Returns:
        (normalised host, explicit port or None, idn).

    Raises:
        UrlRefused: no ``//``, no host, userinfo, or a bad host or port.
    """
    if not url.startswith("//", start):
        raise UrlRefused("elicitation URL must be an absolute https URL")
    match = _AUTHORITY_RE.match(url, start + 2)
    authority = match.group() if match is not None else ""
    if not authority:
        raise UrlRefused("elicitation URL has no host")
    if "@" in authority:
        raise UrlRefused("elicitation URL must not contain userinfo")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise UrlRefused("elicitation URL has an invalid host")
        host_text, after = authority[1:close], authority[close + 1 :]
        if after and not after.startswith(":"):
            raise UrlRefused("elicitation URL has an invalid host")
        port_text = after[1:] if after else None
        return _ipv6_host(host_text), _parse_port(port_text), False
    host_text, colon, port_text = authority.partition(":")
    port = _parse_port(port_text if colon else None)
    host, idn = _dns_or_ipv4_host(host_text)
    return host, port, idn


def _parse_port(text: str | None) -> int | None:
    """The port number, None when absent; refuses anything outside 1..65535."""
    if text is None:
        return None
    if _PORT_RE.fullmatch(text) is None:
        raise UrlRefused("elicitation URL has an invalid port")
    port = int(text)
    if not 1 <= port <= 65535:
        raise UrlRefused("elicitation URL has an invalid port")
    return port


def _ipv6_host(text: str) -> str:
    """The compressed form of a bracketed IPv6 literal (brackets removed), in hex groups only."""
    if not text or not text.isascii() or "%" in text:
        raise UrlRefused("elicitation URL has an invalid host")
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        raise UrlRefused("elicitation URL has an invalid host") from None
    if address.ipv4_mapped is not None:
        # Python 3.13 writes these in dotted form; earlier versions and WHATWG URL parsers in hex.
        low = int(address) & 0xFFFFFFFF
        return f"::ffff:{low >> 16:x}:{low & 0xFFFF:x}"
    return address.compressed


def _dns_or_ipv4_host(text: str) -> tuple[str, bool]:
    """Normalise a non-bracketed host to (lowercase ASCII host, idn)."""
    if not text:
        raise UrlRefused("elicitation URL has no host")
    if len(text) > _MAX_RAW_HOST:
        raise UrlRefused("elicitation URL has an invalid host")
    if text.isascii():
        host = text.lower()
        ipv4 = _ipv4_or_none(host)
        if ipv4 is not None:
            return ipv4, False
        _check_ldh(host)
        idn = False
        for label in host.split("."):
            if label.startswith("xn--"):
                _check_a_label(label)
                idn = True
        return host, idn
    host = _idna_encode(text)
    if _ipv4_or_none(host) is not None:
        # A Unicode spelling of an IP address (e.g. fullwidth digits).
        raise UrlRefused("elicitation URL has an invalid host")
    _check_ldh(host)
    return host, True


def _ipv4_or_none(host: str) -> str | None:
    """The address when host is numeric IPv4; None when it is a name.

    Raises:
        UrlRefused: the last label looks like a number but the host is not a
            strict dotted quad.
    """
    last = host.rpartition(".")[2]
    if _NUMERIC_LABEL_RE.fullmatch(last) is None:
        return None
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        raise UrlRefused("elicitation URL has an invalid host") from None


def _check_ldh(host: str) -> None:
    """Refuse a lowercase ASCII host that is not a valid LDH DNS name."""
    if len(host) > _MAX_HOST:
        raise UrlRefused("elicitation URL has an invalid host")
    for label in host.split("."):
        if _LDH_LABEL_RE.fullmatch(label) is None:
            raise UrlRefused("elicitation URL has an invalid host")


def _check_a_label(label: str) -> None:
    """Refuse an ``xn--`` label that is not valid, canonical Punycode."""
    import idna  # lazy: only hosts with A-labels or Unicode need it

    try:
        canonical = idna.encode(idna.decode(label))
    except (UnicodeError, ValueError):
        raise UrlRefused("elicitation URL has an invalid host") from None
    if canonical != label.encode("ascii"):
        raise UrlRefused("elicitation URL has an invalid host")


def _idna_encode(text: str) -> str:
    """The lowercase A-label form of a host given with non-ASCII characters."""
    import idna  # lazy: only hosts with A-labels or Unicode need it

    try:
        encoded = idna.encode(text, uts46=True)
    except (UnicodeError, ValueError):
        raise UrlRefused("elicitation URL has an invalid host") from None
    try:
        return encoded.decode("ascii").lower()
    except UnicodeError:
        raise UrlRefused("elicitation URL has an invalid host") from None
