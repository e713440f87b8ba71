"""Bounded HTTP for the authorization flow: metadata, registration and token requests.

Every exchange with a protected resource's metadata or an authorization
server goes through :class:`Fetcher`, which holds these lines:

* a whole exchange is bounded in time (``timeout`` real seconds from the
  first byte sent to the last read; a server that answers one byte at a time
  is cut off), and bodies are bounded in size (:data:`MAX_DOCUMENT`);
* redirects are followed only within the origin of the URL asked (at most
  :data:`MAX_REDIRECTS`); a redirect to another origin is refused;
* no exchange carries an MCP access token, and nothing read is logged;
* every failure is an :class:`~mcp_input_sync._protocol.oauth.OAuthRefused`
  with a fixed message (check ``"network"``, ``"redirect"``, ``"size"`` or
  ``"json"``), never a ``requests`` exception.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Optional, Union
from urllib.parse import urljoin, urlsplit

from .._protocol.oauth import OAuthRefused
from .._protocol.oauth_flow import TokenRequest
from .._runtime import thread_name
from ..transports._abortable import Abort, abortable, abortable_session
from ..transports.http import origin_of

if TYPE_CHECKING:
    import requests

#: The largest metadata, registration or token document read, in bytes.
MAX_DOCUMENT = 256 * 1024
#: The most same-origin redirects followed for one request.
MAX_REDIRECTS = 3


def _absolute(base: str, location: str) -> str:
    """A redirect's target as an absolute http(s) URL; a refusal for one that is not (a bad port, say)."""
    try:
        url = urljoin(base, location)
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise OAuthRefused("redirect", "An authorization exchange was redirected to an unusable address.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuthRefused("redirect", "An authorization exchange was redirected to an unusable address.")
    return url


def new_session() -> "requests.Session":
    """A ``requests.Session`` to share between many ``OAuth(session=...)``: its requests can be cut off at ``timeout``.

    A session of your own works too, but an exchange on it is bounded by
    ``requests``' per-read timeout only, not as a whole.
    """
    return abortable_session()


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
    """The one door of the authorization flow to HTTP (see the module docstring)."""

    def __init__(self, *, verify: Union[bool, str] = True, timeout: float = 30.0, session: Optional["requests.Session"] = None) -> None:
        self.timeout = float(timeout)
        self._owned = session is None
        #: The connection pool (to share with another fetcher; it stays this one's to close).
        self.session = session if session is not None else abortable_session()
        self._verify: Any = None if verify is True else verify

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

    def post_form(self, request: TokenRequest) -> Answer:
        """POST a token request (its body is already form-encoded, its headers carry the client's authentication)."""
        return self.exchange("POST", request.url, headers=dict(request.headers), data=request.body.encode("ascii"))

    def probe(self, url: str, data: bytes, headers: dict[str, str]) -> Answer:
        """POST ``data`` and keep only the status and headers: the body is never read (a stream may never end)."""
        import requests

        handle = Abort()
        timer = self._timer(handle)
        try:
            with abortable(handle):
                response = self.session.post(url, data=data, headers=headers, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify)
            response.close()
            return Answer(response.status_code, dict(response.headers), None)
        except requests.RequestException:
            raise self._failure(handle) from None
        finally:
            timer.cancel()

    def redirect_location(self, url: str) -> Optional[str]:
        """GET ``url`` without following a redirect; the absolute ``Location`` of a 3xx answer, else None.

        This is how a headless consent reads the authorization response.
        """
        import requests

        handle = Abort()
        timer = self._timer(handle)
        try:
            with abortable(handle):
                response = self.session.get(url, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify)
            try:
                location = response.headers.get("Location")
                if response.status_code in (301, 302, 303, 307, 308) and location:
                    return _absolute(url, location)
                return None
            finally:
                response.close()
        except requests.RequestException:
            raise self._failure(handle) from None
        finally:
            timer.cancel()

    # ------------------------------------------------------------------ inside

    def _timeouts(self) -> tuple[float, float]:
        return (min(10.0, self.timeout), self.timeout)

    def _timer(self, handle: Abort) -> threading.Timer:
        timer = threading.Timer(self.timeout, handle.fire)
        timer.name = thread_name("oauth-timer")
        timer.daemon = True
        timer.start()
        return timer

    def _failure(self, handle: Abort) -> OAuthRefused:
        if handle.fired:
            return OAuthRefused("network", f"The authorization exchange took longer than {self.timeout:g} seconds.")
        return OAuthRefused("network", "The authorization exchange failed on the network.")

    def exchange(self, verb: str, url: str, *, headers: dict[str, str], data: Optional[bytes] = None) -> Answer:
        """One request, redirects within the origin followed, the body read within the bounds."""
        import requests

        handle = Abort()
        timer = self._timer(handle)
        origin = origin_of(url)
        try:
            with abortable(handle):
                for _ in range(MAX_REDIRECTS + 1):
                    response = self.session.request(
                        verb, url, headers=headers, data=data, allow_redirects=False, timeout=self._timeouts(), stream=True, verify=self._verify
                    )
                    try:
                        location = response.headers.get("Location")
                        if response.status_code in (301, 302, 303, 307, 308) and location:
                            url = _absolute(url, location)
                            if origin_of(url) != origin:
                                raise OAuthRefused("redirect", "An authorization exchange was redirected to another origin.")
                            if response.status_code in (301, 302, 303):
                                verb, data = "GET", None
                            continue
                        return Answer(response.status_code, dict(response.headers), self._document(response))
                    finally:
                        response.close()
                raise OAuthRefused("redirect", "An authorization exchange was redirected too many times.")
        except requests.RequestException:
            raise self._failure(handle) from None
        finally:
            timer.cancel()

    @staticmethod
    def _document(response: "requests.Response") -> Any:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_DOCUMENT:
            raise OAuthRefused("size", "An authorization document is too large.")
        parts: list[bytes] = []
        size = 0
        for chunk in response.iter_content(chunk_size=65536):
            size += len(chunk)
            if size > MAX_DOCUMENT:
                raise OAuthRefused("size", "An authorization document is too large.")
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
            raise OAuthRefused("json", "An authorization document is not valid JSON.") from None
