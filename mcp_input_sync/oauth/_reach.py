"""Where the authorization flow may send a request: the client's defence against server-side request forgery.

A protected MCP server names URLs the client then fetches or posts to (its
resource metadata, its authorization server, that server's endpoints). A
hostile server could name the cloud metadata address, a port of the
client's own machine or a host of its private network. The MCP security
best practices (server-side request forgery during authorization
discovery) and OWASP's SSRF guidance ask a client to refuse those. The
rules here:

* **https everywhere**, except plain http to a loopback host (``localhost``,
  ``127.0.0.0/8``, ``::1``) when the MCP server itself is on such a host;
* **no address more local than the MCP server's own.** Each address is
  ranked: public, private (RFC 1918, unique local, site-local, shared, ...),
  link-local (``169.254.0.0/16``, ``fe80::/10``), loopback (with the
  unspecified address). A URL the flow fetches may lead only to addresses
  ranked no higher than the server's: a public server's metadata to public
  addresses only, a server on a private network's to public or private
  ones, a loopback server's to any. Multicast and reserved addresses are
  never reached. An IPv6 address that carries an IPv4 one (IPv4-mapped,
  6to4, Teredo) is ranked as the IPv4 address it carries.
* **checked where the connection is made.** The host's name is resolved,
  every address it resolves to is checked, and the connection goes to a
  checked address (the TLS certificate is still checked against the name),
  so a name that resolves differently the second time (DNS rebinding) gains
  nothing. A session of the host's own (``OAuth(session=...)``) or a proxy
  gets the check of the name before the request only.

The MCP server's own rank comes from its URL: an IP address is ranked as
above, ``localhost`` is loopback, and a name is ranked by what it resolves
to, but never above private (a name that resolves to the client's own
machine or a link-local address counts as private). ``OAuth(private_networks=True)``
lifts the address and http rules, for development and for an
authorization server on a private network behind a public MCP server.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import threading
from typing import Any, Callable, Iterator, Optional, Sequence, Union
from urllib.parse import urlsplit

from .._protocol.oauth import OAuthRefused
from ..transports._abortable import AbortableAdapter, _HTTPConnection, _HTTPPool, _HTTPSConnection, _HTTPSPool

__all__ = ["FETCH_FAILED", "GLOBAL", "LINK_LOCAL", "LOOPBACK", "NEVER", "PRIVATE", "Reach", "guarded_session", "rank", "reach_for", "reaching"]

log = logging.getLogger("mcp_input_sync.oauth")

IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

GLOBAL, PRIVATE, LINK_LOCAL, LOOPBACK = 0, 1, 2, 3
#: Multicast, reserved and broadcast addresses: never reached.
NEVER = 9
_NAMES = {GLOBAL: "public", PRIVATE: "private", LINK_LOCAL: "link-local", LOOPBACK: "loopback", NEVER: "unusable"}
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
#: The one message of every failure to fetch or post during the flow (details go to the DEBUG log).
FETCH_FAILED = "An authorization exchange failed: a metadata document or an endpoint could not be reached, or did not answer usably."

#: How a host's name becomes addresses (a seam for tests): ``(host, port) -> addresses``.
Resolver = Callable[[str, int], Sequence[str]]


def _system_resolve(host: str, port: int) -> list[str]:
    found = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    return [str(info[4][0]) for info in found]


resolve: Resolver = _system_resolve


def rank(address: str) -> int:
    """The rank of an address (as a resolver returns it): :data:`GLOBAL` ... :data:`LOOPBACK`, or :data:`NEVER`.

    An IPv6 address that carries an IPv4 one the packets go to is ranked as
    that IPv4 address: IPv4-mapped (``::ffff:0:0/96``), 6to4 (``2002::/16``)
    and Teredo (``2001::/32``, the more local of its server and client).
    Python's ``is_global`` calls 6to4 public whatever it carries, so
    ``2002:7f00:1::`` (127.0.0.1) would pass for a public address.
    """
    ip: IP = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return _rank_ip(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            return _rank_ip(ip.sixtofour)
        if ip.teredo is not None:
            return max(_rank_ip(carried) for carried in ip.teredo)  # NEVER ranks highest: one unusable half is enough
    return _rank_ip(ip)


def _rank_ip(ip: IP) -> int:
    if ip.is_loopback or ip.is_unspecified or (isinstance(ip, ipaddress.IPv4Address) and ip in _THIS_NETWORK):
        return LOOPBACK
    if ip.is_multicast or ip.is_reserved:
        return NEVER
    if ip.is_link_local:
        return LINK_LOCAL
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return PRIVATE  # fec0::/10: deprecated (RFC 3879) but still routed on some networks; is_global calls it public
    return GLOBAL if ip.is_global else PRIVATE


def _literal(host: str) -> Optional[IP]:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _is_loopback_name(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    literal = _literal(host)
    return literal is not None and rank(str(literal)) == LOOPBACK


class Reach:
    """What one MCP server's authorization flow may reach: its rank, and whether plain http to loopback is allowed.

    ``refused`` is set when a connection was refused for its address, so the
    fetcher can name the check (the message stays the one of every failure).
    """

    __slots__ = ("level", "http_loopback", "refused")

    def __init__(self, level: int, http_loopback: bool) -> None:
        self.level = level
        self.http_loopback = http_loopback
        self.refused = False

    def __repr__(self) -> str:
        return f"Reach(level={_NAMES[self.level]!r}, http_loopback={self.http_loopback})"

    def allows(self, address: str) -> bool:
        """Whether a connection may go to ``address``."""
        try:
            found = rank(address)
        except ValueError:
            return False
        return found != NEVER and found <= self.level

    def check_url(self, url: str) -> None:
        """Refuse (check ``"address"``) a URL whose scheme or host this flow may not reach, resolving a name to see.

        This runs before the request; the connection itself is checked again
        (:func:`guarded_session`).
        """
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        if parts.scheme.lower() != "https" and not (parts.scheme.lower() == "http" and self.http_loopback and _is_loopback_name(host)):
            self._refuse("a URL that is not https", url)
        if _is_loopback_name(host) and self.level < LOOPBACK:
            self._refuse("a loopback host", url)
        literal = _literal(host)
        if literal is not None:
            if not self.allows(str(literal)):
                self._refuse(f"a {_NAMES[rank(str(literal))]} address", url)
            return
        try:
            addresses = resolve(host, parts.port or (443 if parts.scheme.lower() == "https" else 80))
        except (OSError, UnicodeError):
            return  # the request fails on its own, with the same message
        self.check_addresses(addresses, url)

    def check_addresses(self, addresses: Sequence[str], where: str) -> None:
        """Refuse unless every address is one this flow may reach (one bad address is enough: it may be the one used)."""
        for address in addresses:
            if not self.allows(address):
                try:
                    kind = _NAMES[rank(address)]
                except ValueError:
                    kind = "unusable"
                self._refuse(f"a {kind} address", where)

    def _refuse(self, what: str, url: str) -> None:
        self.refused = True
        parts = urlsplit(url)
        log.debug("oauth: refused to reach %s at %s://%s (the MCP server is %s)", what, parts.scheme, parts.netloc, _NAMES[self.level])
        raise OAuthRefused("address", FETCH_FAILED)


def server_rank(server_url: str) -> int:
    """The rank of the MCP server at ``server_url`` (see the module docstring); :data:`GLOBAL` when unknown."""
    try:
        parts = urlsplit(server_url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port or 443
    except ValueError:
        return GLOBAL
    if _is_loopback_name(host):
        return LOOPBACK
    literal = _literal(host)
    if literal is not None:
        found = rank(str(literal))
        return GLOBAL if found == NEVER else found
    try:
        ranks = [rank(address) for address in resolve(host, port)]
    except (OSError, UnicodeError, ValueError):
        return GLOBAL
    if not ranks or NEVER in ranks:
        return GLOBAL
    return min(min(ranks), PRIVATE)


def reach_for(server_url: str, *, private_networks: bool = False) -> Reach:
    """The :class:`Reach` of the authorization flow of the MCP server at ``server_url``."""
    if private_networks:
        return Reach(LOOPBACK, http_loopback=True)
    level = server_rank(server_url)
    return Reach(level, http_loopback=level == LOOPBACK)


# ---------------------------------------------------------------------------- the check where the connection is made

_local = threading.local()


@contextlib.contextmanager
def reaching(reach: Optional[Reach]) -> Iterator[None]:
    """Check every connection made in this block (on this thread) against ``reach`` (None: no check)."""
    outer: Optional[Reach] = getattr(_local, "reach", None)
    _local.reach = reach
    try:
        yield
    finally:
        _local.reach = outer


class _Checked:
    """A connection that, while a :class:`Reach` is in force, resolves its host itself and connects to a checked address."""

    _dns_host: str
    port: int

    def _new_conn(self) -> socket.socket:
        reach: Optional[Reach] = getattr(_local, "reach", None)
        tunnel = getattr(self, "_tunnel_host", None)
        if reach is None or tunnel:
            return super()._new_conn()  # type: ignore[misc, no-any-return]
        name = self._dns_host
        try:
            addresses = list(dict.fromkeys(resolve(name, self.port)))
        except (OSError, UnicodeError):
            addresses = []
        if not addresses:
            return super()._new_conn()  # type: ignore[misc, no-any-return]  # fails as it would have
        reach.check_addresses(addresses, f"https://{name}:{self.port}")
        error: Optional[BaseException] = None
        try:
            for address in addresses:
                self._dns_host = address  # connect to this checked address; TLS still checks the name
                try:
                    return super()._new_conn()  # type: ignore[misc, no-any-return]
                except Exception as exc:  # noqa: BLE001 - try the next address, as create_connection does
                    error = exc
        finally:
            self._dns_host = name
        assert error is not None
        raise error


class _CheckedHTTPConnection(_Checked, _HTTPConnection):
    pass


class _CheckedHTTPSConnection(_Checked, _HTTPSConnection):
    pass


class _CheckedHTTPPool(_HTTPPool):  # a connection back in the pool is off its request's abort handles
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(_HTTPSPool):
    ConnectionCls = _CheckedHTTPSConnection


class _CheckedAdapter(AbortableAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedHTTPPool, "https": _CheckedHTTPSPool}


def guarded_session() -> Any:
    """A ``requests.Session`` whose requests can be aborted and whose connections are checked against the :class:`Reach` in force."""
    import requests

    session = requests.Session()
    session.mount("http://", _CheckedAdapter())
    session.mount("https://", _CheckedAdapter())
    return session
