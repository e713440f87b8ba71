"""Bounded HTTP for the authorization flow: metadata, registration and token requests.

Every exchange with a protected resource's metadata or an authorization
server goes through :class:`Fetcher`, which holds these lines:

* a whole exchange is bounded in time (``timeout`` real seconds from the
  first byte sent to the last read; a server that answers one byte at a time
  is cut off), and bodies are bounded in size (:data:`MAX_DOCUMENT`);
* redirects are followed only within the origin of the URL asked (at most
  :data:`MAX_REDIRECTS`); a redirect to another origin is refused, so the
  request's headers and body never reach another origin;
* a fetcher bound to an MCP server (:meth:`Fetcher.toward`) reaches only
  what :mod:`._reach` allows for that server: https (http to loopback for a
  loopback server), and no address more local than the server's own,
  checked before the request and again where each connection is made;
* no exchange carries an MCP access token, and nothing read is logged (the
  authorization URL a headless consent fetches is kept out of ``urllib3``'s
  DEBUG log as well);
* every failure is an :class:`~mcp_input_sync._protocol.oauth.OAuthRefused`
  with one fixed message, :data:`~._reach.FETCH_FAILED`, whatever went wrong
  (an address refused, a closed port, a timeout, a redirect, a document too
  large or not JSON); its check (``"address"``, ``"network"``,
  ``"redirect"``, ``"size"`` or ``"json"``) says which, and the DEBUG log
  the details. Never a ``requests`` exception, nor a ``urllib3`` one that
  ``requests`` lets through (``LocationParseError`` for a host such as
  ``a..b``, refused before any name is looked up: ``"network"``);
* a token request with DPoP carries a fresh proof at each hop, a
  followed redirect's naming that hop's method and URL: a proof is never
  sent twice.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Union
from urllib.parse import urljoin, urlsplit

from .._protocol.oauth import OAuthRefused
from .._protocol.dpop import wants_nonce
from .._protocol.oauth_flow import TokenRequest
from .._runtime import thread_name
from ..transports._abortable import Abort, abortable
from .._protocol.urls import origin_of
from ._reach import FETCH_FAILED, Reach, guarded_session, reach_for, reaching

if TYPE_CHECKING:
    from ._dpop import DPoPSession
    import requests

#: The largest metadata, registration or token document read, in bytes.
MAX_DOCUMENT = 256 * 1024
#: The most same-origin redirects followed for one request.
MAX_REDIRECTS = 3


log = logging.getLogger("mcp_input_sync.oauth")


def fetch_refused(check: str, why: str) -> OAuthRefused:
    """The one refusal of a failed exchange: the check names what failed, the DEBUG log says how, the message is always the same."""
    log.debug("oauth: an exchange failed (%s): %s", check, why)
    return OAuthRefused(check, FETCH_FAILED)


def _absolute(base: str, location: str) -> str:
    """A redirect's target as an absolute http(s) URL; a refusal for one that is not (a bad port, say)."""
    try:
        url = urljoin(base, location)
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise fetch_refused("redirect", "a redirect to an unusable address") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fetch_refused("redirect", "a redirect to an unusable address")
    return url


def new_session() -> "requests.Session":
    """A ``requests.Session`` to share between many ``OAuth(session=...)``.

    Its requests can be cut off at ``timeout``, and its connections are
    checked against the addresses the flow may reach (docs/oauth.md). A
    session of your own works too, but an exchange on it is bounded by
    ``requests``' per-read timeout only, and its addresses are checked
    before each request only.
    """
    session: "requests.Session" = guarded_session()
    return session


class _QuietQuery(logging.Filter):
    """Cut the query off the URLs ``urllib3`` logs at DEBUG while a thread fetches an authorization URL (its ``state``)."""

    local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(self.local, "quiet", False) and isinstance(record.args, tuple):
            record.args = tuple(arg.split("?", 1)[0] + "?..." if isinstance(arg, str) and "?" in arg else arg for arg in record.args)
        return True


_QUIET = _QuietQuery()
logging.getLogger("urllib3.connectionpool").addFilter(_QUIET)


@contextlib.contextmanager
def _quiet_query() -> Iterator[None]:
    _QuietQuery.local.quiet = True
    try:
        yield
    finally:
        _QuietQuery.local.quiet = False


class Answer:
    """An HTTP answer: ``status``, ``headers``, and ``document`` (the JSON body, or None when it had none)."""

    __slots__ = ("status", "headers", "document")

    def __init__(self, status: int, headers: dict[str, str], document: Any) -> None:
        self.status = status
        self.headers = headers
        self.document = document

    def __repr__(self) -> str:  # the document may hold tokens
        return f"Answer(status={self.status})"


class Fetcher:
    """The one door of the authorization flow to HTTP (see the module docstring).

    ``private_networks`` lifts the address and http rules of :mod:`._reach`
    for the fetchers :meth:`toward` makes (``OAuth(private_networks=True)``).
    ``proxies`` go with every request, as ``requests`` takes them: they win
    over the environment's (``HTTP(S)_PROXY``) for the schemes they name.
    """

    def __init__(
        self, *, verify: Union[bool, str] = True, timeout: float = 30.0, session: Optional["requests.Session"] = None,
        private_networks: bool = False, proxies: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None:
        if proxies is not None and not (
            isinstance(proxies, Mapping) and all(isinstance(key, str) and (url is None or isinstance(url, str)) for key, url in proxies.items())
        ):
            raise TypeError("proxies must be a mapping of scheme to proxy URL (or None), as requests takes it")
        self.timeout = float(timeout)
        self._owned = session is None
        #: The connection pool (to share with another fetcher; it stays this one's to close).
        self.session = session if session is not None else new_session()
        self._verify: Any = None if verify is True else verify
        self._proxies: dict[str, Optional[str]] = dict(proxies or {})
        self.private_networks = private_networks
        #: What this fetcher may reach (None: anything; the MCP server's own URL is probed so).
        self.reach: Optional[Reach] = None
        #: Token requests carry a DPoP proof signed with this session's key (None: no DPoP).
        self.dpop: Optional["DPoPSession"] = None

    def toward(self, server_url: str) -> "Fetcher":
        """A fetcher on the same connections that reaches only what the authorization flow of ``server_url`` may."""
        bound = copy.copy(self)
        bound._owned = False
        bound.reach = reach_for(server_url, private_networks=self.private_networks)
        return bound

    def close(self) -> None:
        """Close the pooled connections (of a session this fetcher made; a given one is its owner's to close)."""
        if self._owned:
            self.session.close()

    def get_json(self, url: str) -> Answer:
        """GET ``url`` asking for JSON."""
        return self.exchange("GET", url, headers={"Accept": "application/json"})

    def post_json(self, url: str, body: Any, headers: Optional[dict[str, str]] = None) -> Answer:
        """POST ``body`` as JSON (a registration request)."""
        sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        return self.exchange("POST", url, headers=sent, data=json.dumps(body).encode("utf-8"))

    def with_dpop(self, session: Optional["DPoPSession"]) -> "Fetcher":
        """A fetcher on the same connections whose token requests carry DPoP proofs of ``session`` (None: none)."""
        bound = copy.copy(self)
        bound._owned = False
        bound.dpop = session
        return bound

    def post_form(self, request: TokenRequest, *, dpop: bool = True) -> Answer:
        """POST a token request (its body is already form-encoded, its headers carry the client's authentication).

        With a DPoP session (and ``dpop``), the request carries a fresh proof;
        an answer asking for the server's nonce (400 ``use_dpop_nonce`` with a
        ``DPoP-Nonce``) is retried once with a new proof that carries it.
        """
        headers, body = dict(request.headers), request.body.encode("ascii")
        session = self.dpop if dpop else None
        if session is None:
            return self.exchange("POST", request.url, headers=headers, data=body)
        answer = self.exchange("POST", request.url, headers=headers, data=body, dpop=session)
        fresh = session.remember(request.url, answer.headers)
        if fresh and wants_nonce(answer.status, answer.document, None):
            answer = self.exchange("POST", request.url, headers=headers, data=body, dpop=session)
            session.remember(request.url, answer.headers)
        return answer

    def probe(self, url: str, data: bytes, headers: dict[str, str]) -> Answer:
        """POST ``data`` and keep only the status and headers: the body is never read (a stream may never end)."""
        import requests
        from urllib3.exceptions import HTTPError

        handle = Abort()
        timer = self._timer(handle)
        try:
            self._check(url)
            with abortable(handle), reaching(self.reach):
                response = self.session.post(
                    url, data=data, headers=headers, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify, proxies=self._routes()
                )
            response.close()
            return Answer(response.status_code, dict(response.headers), None)
        except (requests.RequestException, HTTPError) as exc:  # urllib3's: a host it cannot parse (a..b)
            raise self._failure(handle, exc) from None
        finally:
            timer.cancel()

    def redirect_location(self, url: str) -> Optional[str]:
        """GET ``url`` without following a redirect; the absolute ``Location`` of a 3xx answer, else None.

        This is how a headless consent reads the authorization response. The
        URL's query (``state``, the PKCE challenge) stays out of ``urllib3``'s log.
        """
        import requests
        from urllib3.exceptions import HTTPError

        handle = Abort()
        timer = self._timer(handle)
        try:
            self._check(url)
            with abortable(handle), reaching(self.reach), _quiet_query():
                response = self.session.get(url, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify, proxies=self._routes())
            try:
                location = response.headers.get("Location")
                if response.status_code in (301, 302, 303, 307, 308) and location:
                    return _absolute(url, location)
                return None
            finally:
                response.close()
        except (requests.RequestException, HTTPError) as exc:  # urllib3's: a host it cannot parse (a..b)
            raise self._failure(handle, exc) from None
        finally:
            timer.cancel()

    # ------------------------------------------------------------------ inside

    def _check(self, url: str) -> None:
        if self.reach is not None:
            self.reach.check_url(url)

    def _routes(self) -> Any:
        """A new dict of the proxies for one request (``requests`` adds the environment's to the dict it is given)."""
        return dict(self._proxies)

    def _timeouts(self) -> tuple[float, float]:
        return (min(10.0, self.timeout), self.timeout)

    def _timer(self, handle: Abort) -> threading.Timer:
        timer = threading.Timer(self.timeout, handle.fire)
        timer.name = thread_name("oauth-timer")
        timer.daemon = True
        timer.start()
        return timer

    def _failure(self, handle: Abort, exc: BaseException) -> OAuthRefused:
        if handle.fired:
            return fetch_refused("network", f"cut off after {self.timeout:g} seconds")
        return fetch_refused("network", type(exc).__name__)

    def exchange(
        self, verb: str, url: str, *, headers: dict[str, str], data: Optional[bytes] = None, dpop: Optional["DPoPSession"] = None
    ) -> Answer:
        """One request, redirects within the origin followed, the body read within the bounds.

        With ``dpop``, each hop carries a fresh proof for its own method and
        URL (a followed redirect's too): the same proof never goes twice.
        """
        import requests
        from urllib3.exceptions import HTTPError

        handle = Abort()
        timer = self._timer(handle)
        origin = origin_of(url)
        try:
            with abortable(handle), reaching(self.reach):
                for _ in range(MAX_REDIRECTS + 1):
                    self._check(url)
                    if dpop is not None:
                        headers = {**headers, "DPoP": dpop.proof(verb, url)}
                    response = self.session.request(
                        verb, url, headers=headers, data=data, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify,
                        proxies=self._routes(),
                    )
                    try:
                        location = response.headers.get("Location")
                        if response.status_code in (301, 302, 303, 307, 308) and location:
                            url = _absolute(url, location)
                            if origin_of(url) != origin:
                                raise fetch_refused("redirect", "a redirect to another origin")
                            if response.status_code in (301, 302, 303):
                                verb, data = "GET", None
                            continue
                        return Answer(response.status_code, dict(response.headers), self._document(response))
                    finally:
                        response.close()
                raise fetch_refused("redirect", "too many redirects")
        except (requests.RequestException, HTTPError) as exc:  # urllib3's: a host it cannot parse (a..b)
            raise self._failure(handle, exc) from None
        finally:
            timer.cancel()

    @staticmethod
    def _document(response: "requests.Response") -> Any:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_DOCUMENT:
            raise fetch_refused("size", "a document over the size bound")
        parts: list[bytes] = []
        size = 0
        for chunk in response.iter_content(chunk_size=65536):
            size += len(chunk)
            if size > MAX_DOCUMENT:
                raise fetch_refused("size", "a document over the size bound")
            parts.append(chunk)
        body = b"".join(parts)
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if not body.strip() or not (kind == "application/json" or kind.endswith("+json") or body.lstrip()[:1] in (b"{", b"[")):
            return None
        try:
            return json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError):
            if response.status_code >= 400:
                return None
            raise fetch_refused("json", "a document that is not JSON") from None
