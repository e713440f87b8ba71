"""One HTTP request through ``requests``, with what does not change worked out once.

``Session.request`` redoes, for every request, work whose answer does not
change between two requests to one URL: it parses the URL, reads the
environment for proxies and CA bundles (``os.environ`` twice, the proxy
bypass list) and looks for credentials in ``~/.netrc`` (stat calls). On a
fast local server that was half of a call's CPU. Here that work is done the
first time a URL is used (:class:`Route`), and the request is prepared with
``PreparedRequest``'s own steps and sent through the mounted adapter, as
``Session.send`` would:

- the headers: the session's, then the request's, through
  ``prepare_headers`` (which refuses a value with a line break);
- the body and its ``Content-Length`` (``prepare_body``);
- the session's auth object (or ``~/.netrc``'s, or the URL's user
  information) applied to each request (``prepare_auth``), so auth that
  signs the body works;
- the session's cookies (``prepare_cookies``), and a response's
  ``Set-Cookie`` stored back in the session's jar;
- the session's response hooks, and those an auth object registers;
- the adapter mounted for the URL, looked up each time.

Redirects are never followed here; the caller reads ``Location`` itself.
What is read once per URL: ``Session.params``, ``proxies``, ``verify``,
``cert``, ``trust_env``, the environment and ``~/.netrc``; change them
before the first request. The transport's own ``verify``, ``cert`` and
``proxies`` go with each request, as arguments of ``Session.request``
would: they win over the session's, and ``proxies`` over the
environment's (:func:`route_settings` checks them). A session whose class
overrides ``request``, ``send``, ``prepare_request``,
``merge_environment_settings`` or ``get_adapter``
(``requests_oauthlib.OAuth2Session`` overrides ``request``, say) goes
through ``Session.request`` as it is.

:class:`Endpoint` sends every request of one MCP endpoint this way and
follows a redirect only when it is a 307 or 308 within the endpoint's
origin (:class:`RedirectRefused` otherwise), so the caller's headers and a
request's body never reach another origin.

Also the session the transport makes (:func:`pooled_session`: ``pool_size``
connections kept for reuse, never a wait for one, never urllib3's "Connection
pool is full" warning) and the reading of a response body as it arrives
(:func:`chunks`). Imported only by the HTTP transport (it imports ``requests``).
"""

from __future__ import annotations

import functools
import os
import queue
import re
import ssl
import time
from datetime import timedelta
from typing import Any, Callable, Iterator, Mapping, Optional, Union
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
from requests.cookies import extract_cookies_to_jar
from requests.hooks import dispatch_hook
from requests.structures import CaseInsensitiveDict
from requests.utils import get_auth_from_url, get_netrc_auth, select_proxy

from .. import reflect
from .._protocol.advice import say
from .._protocol.limits import LimitExceeded
from .._protocol.urls import origin_of
from ._abortable import AbortableAdapter
from .base import TransportClosed

_OWN = ("request", "send", "prepare_request", "merge_environment_settings", "get_adapter")
#: The most redirects followed for one request (each a 307 or 308 within the server's origin).
MAX_REDIRECTS = 3
#: The redirects that keep the method and the body; the only ones followed.
_KEEPING = (307, 308)
#: The statuses that redirect (with a ``Location``).
_REDIRECTS = (301, 302, 303, 307, 308)


#: Connections kept for reuse by default: docs/web.md has every request thread share one client; 64 leaves
#: 32 threads room for a stream each, the POSTs answering server requests beside them, and the GET stream.
POOL_SIZE = 64
#: The largest ``pool_size``: urllib3 fills a pool's queue with that many empty places when it makes the pool.
MAX_POOL_SIZE = 1024


class _Idle(queue.LifoQueue[Any]):
    """A pool's idle connections; one given back to a full pool is closed here, without urllib3's warning.

    Past ``pool_size`` threads that is how the pool is meant to work, not a
    fault for the host's log (urllib3 logs "Connection pool is full,
    discarding connection" for each one).
    """

    def put(self, item: Any, block: bool = True, timeout: Optional[float] = None) -> None:
        try:
            super().put(item, block, timeout)
        except queue.Full:
            if item is not None:
                item.close()


@functools.lru_cache(maxsize=None)
def _quiet(pool_class: type) -> type:
    """``pool_class`` keeping its idle connections in an :class:`_Idle`."""
    return type(pool_class.__name__, (pool_class,), {"QueueCls": _Idle})


def _hush(manager: Any) -> None:
    manager.pool_classes_by_scheme = {scheme: _quiet(cls) for scheme, cls in manager.pool_classes_by_scheme.items()}


class PooledAdapter(AbortableAdapter):
    """The transport's adapter: its pools (a proxy's too) close what they cannot keep without a warning."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _hush(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        made = proxy not in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **kwargs)
        if made:
            _hush(manager)
        return manager


def pooled_session(pool_size: int) -> requests.Session:
    """The transport's session: abortable requests (``_abortable``), ``pool_size`` connections kept per host.

    ``pool_block`` stays off: a thread never waits for a connection. An
    event stream may hold its connection for minutes, and the POST that
    answers a server request on that stream needs one of its own: made to
    wait, it would wait behind the very stream that waits for it. And the
    wait would have no bound: ``requests`` gives urllib3 no pool timeout,
    and a call's deadline shuts sockets, not a wait for one. A thread past
    ``pool_size`` opens one more connection, closed when given back.

    Raises:
        TypeError: ``pool_size`` is not an int (a bool is not); ValueError: it is not from 1 to :data:`MAX_POOL_SIZE`.
    """
    if type(pool_size) is not int:
        raise TypeError(f"pool_size must be an int, not {type(pool_size).__name__}")
    if not 1 <= pool_size <= MAX_POOL_SIZE:
        raise ValueError(f"pool_size must be from 1 to {MAX_POOL_SIZE}, not {pool_size}")
    session = requests.Session()
    for prefix in ("http://", "https://"):
        session.mount(prefix, PooledAdapter(pool_maxsize=pool_size))
    return session


class RedirectRefused(TransportClosed):
    """The server redirected a request somewhere the transport does not follow (``check`` is ``"redirect"``)."""

    check = "redirect"


def is_plain(session: requests.Session) -> bool:
    """True when ``session`` sends as ``requests.Session`` does (none of its steps overridden)."""
    cls = type(session)
    return all(getattr(cls, name) is getattr(requests.Session, name) for name in _OWN)


#: A client certificate as ``requests`` takes it: the path of a PEM file holding the certificate and its key, or
#: the paths of the certificate and of the key.
Cert = Optional[Union[str, tuple[str, str]]]
#: Proxies as ``requests`` takes them: scheme (or ``scheme://host``, or ``all``) -> proxy URL, None for none.
Proxies = Optional[dict[str, Optional[str]]]
#: A key of ``proxies``, as ``requests`` looks them up (``select_proxy``), or ``no_proxy``.
_PROXY_KEY = re.compile(r"(?:https?|all)(?:://[^\s/@]+)?|no_proxy")


def route_settings(cert: Any, proxies: Any, *, files: bool = False) -> tuple[Cert, Proxies]:
    """``cert`` and ``proxies`` checked, in the forms ``requests`` takes (a path object becomes its string).

    ``cert``: None, a path (``str`` or ``os.PathLike``), or a pair of paths
    (certificate, key). ``proxies``: None or a mapping whose keys are
    ``"http"``, ``"https"``, ``"all"`` (each may name a host:
    ``"https://mcp.example.com"``) or ``"no_proxy"``, and whose values are
    proxy URLs (``"http://user:password@proxy:3128"``) or None (no proxy
    for those requests, whatever the environment says). A message never
    shows a proxy's URL: it may hold a password. With ``files``, each file
    ``cert`` names must exist (``connect_http`` says so before anything is
    sent; a transport made again to reconnect is not refused for it).

    Raises:
        TypeError: a value of the wrong type; ValueError: an empty path (or,
        with ``files``, a missing file), a key ``requests`` would never look
        up, or a proxy URL that cannot be parsed.
    """
    if cert is not None:
        pair = isinstance(cert, (tuple, list)) and len(cert) == 2
        parts = list(cert) if pair else [cert]
        if not all(isinstance(part, (str, os.PathLike)) for part in parts):
            raise TypeError("cert must be a path (a PEM file with the certificate and its key) or a (certificate, key) pair of paths")
        paths = [os.fspath(part) for part in parts]
        if not all(isinstance(path, str) and path for path in paths):
            raise ValueError("cert must name files: a path is empty")
        missing = [path for path in paths if files and not os.path.isfile(path)]
        if missing:
            raise ValueError(f"cert names a file that does not exist: {reflect.text(missing[0], 300)!r}")
        cert = (paths[0], paths[1]) if pair else paths[0]
    if proxies is None:
        return cert, None
    if not isinstance(proxies, Mapping):
        raise TypeError(f"proxies must be a mapping of scheme to proxy URL, as requests takes it, not {type(proxies).__name__}")
    checked: dict[str, Optional[str]] = {}
    for key, value in proxies.items():
        if not isinstance(key, str) or not _PROXY_KEY.fullmatch(key):
            shown = repr(reflect.text(key, 100)) if isinstance(key, str) and "@" not in key else "a key"  # a URL's password stays out
            raise ValueError(f"proxies: {shown} is not a key requests looks up (http, https, all, each may add ://host; or no_proxy)")
        if value is not None and not isinstance(value, str):
            raise TypeError(f"proxies[{key!r}] must be a proxy URL (a string) or None, not {type(value).__name__}")
        if value is not None and key != "no_proxy":
            try:
                split = urlsplit(value if "://" in value else "http://" + value)
                split.port  # noqa: B018 - raises ValueError for a port out of range
                host = split.hostname
            except ValueError:
                host = None
            if not host:
                raise ValueError(f"proxies[{key!r}] is not a proxy URL such as http://proxy.example.com:3128 (its value is not shown)")
        checked[key] = value
    return cert, checked


def _copy(proxies: Proxies) -> dict[str, Any]:
    """A new dict of ``proxies`` for ``requests``, which adds the environment's proxies to the dict it is given."""
    return dict(proxies or {})


class Route:
    """What one URL's requests share: the prepared URL, the environment's settings, the credentials found."""

    __slots__ = ("url", "settings", "found_auth")

    def __init__(self, session: requests.Session, url: str, verify: Any, cert: Cert = None, proxies: Proxies = None) -> None:
        probe = requests.PreparedRequest()
        probe.prepare_url(url, session.params)
        assert probe.url is not None
        #: The URL as ``prepare_url`` writes it (IDNA host, quoted path, the session's params).
        self.url: str = probe.url
        #: ``proxies``, ``stream``, ``verify``, ``cert`` as ``Session.request`` would pass them (a copy of
        #: ``proxies``: the environment's are added to the dict given).
        self.settings: dict[str, Any] = dict(session.merge_environment_settings(self.url, _copy(proxies), True, verify, cert))
        #: Credentials from ``~/.netrc`` (when the session trusts the environment), else the URL's.
        netrc = get_netrc_auth(url) if session.trust_env else None
        from_url = get_auth_from_url(self.url)
        self.found_auth: Any = netrc or (from_url if any(from_url) else None)


def proxy_for(session: requests.Session, url: str, verify: Any, proxies: Proxies = None) -> Optional[str]:
    """The origin of the proxy that carries requests to ``url`` (never its credentials), or None.

    ``proxies`` (the transport's own), then the environment's
    (``HTTP(S)_PROXY``, ``NO_PROXY``) when the session trusts it, then the
    session's ``proxies``, as ``Session.request`` merges them. A proxied
    request goes through ``urllib3``'s own pools, whose connections an
    :class:`~mcp_input_sync.transports._abortable.Abort` cannot reach.
    """
    merged = session.merge_environment_settings(url, _copy(proxies), True, verify, None).get("proxies") or {}
    proxy = select_proxy(url, merged)
    if not proxy:
        return None
    try:
        return origin_of(proxy if "://" in proxy else "http://" + proxy)
    except ValueError:  # a port out of range: requests will say so when it sends
        return "a proxy"


def send(session: requests.Session, route: Route, verb: str, headers: Mapping[str, str], data: Optional[bytes], timeouts: tuple[float, float]) -> requests.Response:
    """Send one request as ``Session.request(..., stream=True, allow_redirects=False)`` would."""
    prepared = requests.PreparedRequest()
    prepared.prepare_method(verb)
    prepared.url = route.url
    # a plain dict: where the session and the request name a header in other cases, both reach
    # prepare_headers in this order and the request's wins, as with merge_setting; a None value
    # (a header removed) takes merge_setting's own case-insensitive way
    merged: dict[str, Any] = dict(session.headers)
    merged.update(headers)
    if None in merged.values():
        exact = CaseInsensitiveDict(session.headers)
        exact.update(headers)
        merged = {name: value for name, value in exact.items() if value is not None}
    prepared.prepare_headers(merged)
    cookies = session.cookies
    if len(cookies):
        prepared.prepare_cookies(cookies)
    prepared.prepare_body(data, None)
    auth = session.auth or route.found_auth
    if auth:
        prepared.prepare_auth(auth)
    if session.hooks.get("response"):
        prepared.prepare_hooks(session.hooks)
    kwargs = dict(route.settings, timeout=timeouts, stream=True)
    adapter = session.get_adapter(route.url)
    began = time.perf_counter()
    response = adapter.send(prepared, **kwargs)
    response.elapsed = timedelta(seconds=time.perf_counter() - began)
    if prepared.hooks["response"]:
        response = dispatch_hook("response", prepared.hooks, response, **kwargs)  # type: ignore[no-untyped-call]
    if "set-cookie" in response.headers or "set-cookie2" in response.headers:
        extract_cookies_to_jar(cookies, prepared, response.raw)  # type: ignore[no-untyped-call]
    return response


class Endpoint:
    """Every request to one MCP endpoint: through :func:`send` when the session is plain, redirects
    followed only within the endpoint's origin."""

    def __init__(self, session: requests.Session, url: str, origin: str, verify: Any, cert: Cert = None, proxies: Proxies = None) -> None:
        self.session = session
        self.url = url
        self.origin = origin
        self.verify = verify
        #: The client certificate and the proxies given to the transport (:func:`route_settings`), sent with each request.
        self.cert = cert
        self.proxies = proxies
        #: The session sends as requests.Session does: requests go out through :func:`send`.
        self.plain = is_plain(session)
        #: URL -> what its requests share, worked out on first use.
        self.routes: dict[str, Route] = {}
        #: The origin of the proxy that carries the requests (:func:`proxy_for`), as the environment says now; None: none.
        self.proxy = proxy_for(session, url, verify, proxies)
        named = select_proxy(url, _copy(proxies)) is not None
        #: What an error says of the proxy, when one carries the requests: where it was named.
        self.via = "" if self.proxy is None else f" through the proxy {self.proxy} " + (
            "(the proxies option)" if named else "(HTTP_PROXY or HTTPS_PROXY; NO_PROXY names hosts reached directly)")

    def unreachable(self, shown_url: str, exc: BaseException) -> str:
        """Why a request did not reach the server: the proxy it went through (never its credentials), the
        innermost cause, and for a TLS handshake that failed otherwise than on the server's certificate, the
        client certificate's part in it."""
        from ._abortable import why_unreachable

        causes: list[BaseException] = []
        inner: Optional[BaseException] = exc
        while inner is not None and all(inner is not seen for seen in causes):
            causes.append(inner)
            reason = getattr(inner, "reason", None)
            inner = reason if isinstance(reason, BaseException) else next((a for a in inner.args if isinstance(a, BaseException)), None)
        hint = ""
        if any(isinstance(c, ssl.SSLError) for c in causes) and not any(isinstance(c, ssl.SSLCertVerificationError) for c in causes):
            hint = ("; the TLS handshake failed: a server that asks for a client certificate (mutual TLS) ends it so when the client "
                    "has none (cert=)") if self.cert is None else ("; the TLS handshake failed: the server may have refused the "
                    "client certificate (cert=), or its files may not hold a usable certificate and key")
        return f"cannot reach {shown_url}{self.via}: {reflect.text(why_unreachable(exc), 300)}{hint}"

    def request(
        self, verb: str, headers: Mapping[str, str], data: Optional[bytes], timeouts: tuple[float, float],
        again: Optional[Callable[[str], Mapping[str, str]]] = None,
    ) -> requests.Response:
        """Send one request to the endpoint (``stream=True``), following only redirects that keep it as it is.

        ``requests`` would follow any redirect, and with it send the caller's
        headers (only ``Authorization`` is dropped) and, on a 307 or 308, the
        body to wherever the server points. Here a redirect is followed only
        when it is a 307 or 308 within the server's origin (the request goes
        to this origin with the new path, whatever else the ``Location``
        says), at most :data:`MAX_REDIRECTS` times; any other redirect is
        refused with :class:`RedirectRefused`, naming the origins only.

        ``again(url)`` makes the headers of the request sent again to a
        followed redirect's ``url``: headers that hold something made for one
        request (a DPoP proof names its URL and is never sent twice) must be
        made anew for each. None: ``headers`` go again as they are.
        """
        held: list[str] = []

        def hold_location(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
            # Even told not to follow, requests parses a Location and prepares the request it
            # names (and may raise on a malformed one): take it away before requests sees it.
            if response.status_code in _REDIRECTS and "Location" in response.headers:
                held.append(response.headers.pop("Location"))
            return response

        url = self.url
        session = self.session
        for _ in range(MAX_REDIRECTS + 1):
            held.clear()
            if self.plain:  # the same request, without the per-request work that gives the same answer
                route = self.routes.get(url)
                if route is None:
                    route = self.routes[url] = Route(session, url, self.verify, self.cert, self.proxies)
                response = hold_location(send(session, route, verb, headers, data, timeouts))
            else:
                # a request's hooks replace the session's: the session's go first, as on the other path
                hooks = [*session.hooks.get("response", ()), hold_location]
                response = session.request(
                    verb, url, data=data, headers=headers, timeout=timeouts, stream=True, verify=self.verify, cert=self.cert,
                    proxies=_copy(self.proxies), allow_redirects=False, hooks={"response": hooks},
                )
            if not held:
                return response
            response.close()
            url = self._redirect_target(url, held[0], response.status_code)
            if again is not None:
                headers = again(url)
        raise RedirectRefused(f"the server at {self.origin} redirected a request more than {MAX_REDIRECTS} times")

    def _redirect_target(self, url: str, location: str, status: int) -> str:
        """The URL a redirect is followed to (on this origin), or :class:`RedirectRefused`."""
        try:
            parts = urlsplit(urljoin(url, location))
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError:
            parts = None
        if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise RedirectRefused(f"the server at {self.origin} redirected a request to an unusable address")
        target = origin_of(urlunsplit(parts))
        if target != self.origin:
            shown = reflect.text(target, 300)
            raise RedirectRefused(f"the server at {self.origin} redirected a request to another origin ({shown}); not followed")
        if status not in _KEEPING:
            raise RedirectRefused(f"the server at {self.origin} answered HTTP {status}; only a 307 or 308 within its origin is followed")
        own = urlsplit(self.url)
        return urlunsplit((own.scheme, own.netloc, parts.path or "/", parts.query, ""))


def chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's bytes as they arrive.

    ``iter_content`` on a body that ends at connection close (no chunked
    encoding, no Content-Length) waits for the close; ``read1`` returns what
    has arrived, so a server request on such a stream is seen at once.
    """
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if getattr(raw, "chunked", True) or read1 is None or response.headers.get("Content-Length"):
        yield from response.iter_content(chunk_size=None)
        return
    while True:
        chunk = read1(65536, decode_content=True)
        if not chunk:
            return
        yield chunk


def read_body(response: "requests.Response", limit: int) -> bytes:
    """The whole body of ``response``, but never more than ``limit`` bytes of it (``limits["message_bytes"]``).

    Raises:
        LimitExceeded: the body (or its declared Content-Length) is larger.
    """
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise LimitExceeded("message_bytes", f"an HTTP body of {declared} bytes is over {say('limit_name', 'message_bytes', limit='message_bytes')}={limit}")
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=65536):
        size += len(chunk)
        if size > limit:
            raise LimitExceeded("message_bytes", f"an HTTP body is over {say('limit_name', 'message_bytes', limit='message_bytes')}={limit}")
        parts.append(chunk)
    return b"".join(parts)
