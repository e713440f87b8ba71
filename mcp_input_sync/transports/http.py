"""Streamable HTTP transport on ``requests``.

The wire rules are MCP 2025-11-25 basic/transports (legacy) and MCP
2026-07-28 basic/transports/streamable-http (modern); what this transport
does for the client is docs/http.md#what-the-transport-does.

One ``requests.Session`` per client (TLS verification on by default) keeps ``pool_size`` connections for
reuse and never makes a thread wait for one (``_send.pooled_session``). Every outgoing message is one
POST with both Accept types. A POST's answer is either 202 (nothing), one JSON message, or an SSE stream
read on a named thread (``mcp-input-sync-sse-<n>``); every message read is handed to the client together
with the id of the request whose POST stream carried it, so server requests are tied to that call.
Messages are thus delivered from several threads at once (each POST's, each SSE stream's and the GET
stream's), in order within one stream. The transport keeps the session (``Mcp-Session-Id``) and the
version the handshake told it (:meth:`HttpTransport.set_protocol`), opens the legacy GET stream for
messages tied to no call, re-initialises a session the server forgot (404) once, resumes a 2025-11-25
stream after a graceful close (GET with ``Last-Event-ID`` after ``retry:``), and sends the modern
headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``). Every header comes
from the :class:`Outgoing` the client sends with the message: the transport never decodes what it sends.
``requests`` errors (and the ``urllib3`` ones it lets through: ``LocationParseError`` for a host such as
``a..b``) are mapped at one place, ``_post``, to :class:`TransportClosed` (or
:class:`TransportAuthError` for 401 and 403). Every request (POST, GET, DELETE) goes through
``_send.Endpoint.request``, which follows a redirect only when it is a 307 or 308 within the server's
origin, so the caller's headers and a request's body never reach another origin
(``_send.RedirectRefused``); the request sent again carries headers made anew (a DPoP proof of its own).
A request the client gives up on has its response stream closed, in either era
(:meth:`HttpTransport.cancel_request`).

``requests`` is imported only when an HTTP transport is built.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional
from urllib.parse import urlsplit, urlunsplit

from .. import _clock, reflect
from .._protocol.advice import say
from .._protocol.eras import MODERN
from .._protocol.headers import header_value
from .._protocol.jsonrpc import RequestId, decode
from .._protocol.limits import DEFAULT_LIMITS, LimitExceeded
from .._protocol.oauth import OAuthRefused
from .._protocol.retry import Retry, retry_after
from .._protocol.sse import SSEDecoder, SSEEventTooLarge, SSELimitError
from .._protocol.urls import origin_of
from .._runtime import RealBudget
from .._runtime.workers import HandlerPool
from ._providers import BearerProvider, add_authorization, cache_identity, is_bearer_provider, trace_attributes
from .base import (
    ANSWER, NEW_SESSION, SESSION_READY, UNREACHABLE, Decoded, HttpStatusError, OnClose, OnLost, OnMessage, OnRetry, Outgoing, Setup, Track,
    Transport, TransportAuthError, TransportClosed,
)

if TYPE_CHECKING:
    import requests

    from ._abortable import Stream

log = logging.getLogger("mcp_input_sync")

ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
#: What the transport says of its own ``notifications/initialized`` after a re-initialisation.
_INITIALIZED = Outgoing("notifications/initialized", step=SESSION_READY)

Auth = Callable[["requests.PreparedRequest"], "requests.PreparedRequest"]


#: The most times one request is sent again after a 401 or 403 that an OAuth provider answered.
MAX_AUTH_ATTEMPTS = 3
#: The thread pools of a transport take every request and stream: their count is the callers' business.
_UNBOUNDED = 1 << 30


class HttpTransport(Transport):
    """Streamable HTTP to one MCP endpoint.

    With ``request_threads`` (the default, and what the client uses) a
    message the client says is bounded (``Outgoing.bounded``) is: posted on the
    caller's thread and aborted there at ``Outgoing.deadline`` when the
    client offers a deadline sweep (``Setup.track``) and the transport made
    its own session, else posted on a thread of its own. Either way a
    failure reaches the ``on_lost`` of :meth:`configure`. Without
    ``request_threads`` every message is posted on the caller's thread,
    unbounded, and a failure is raised from :meth:`send`.
    """

    #: Server requests are tied to the call whose POST stream carried them.
    ties_by_stream = True
    #: Each answer is a POST: the client's handler pool starts a worker per request at once.
    slow_answers = True
    #: ``Outgoing.header_args`` go as ``Mcp-Param-<name>`` headers on a 2026-07-28 request.
    mirrors_tool_headers = True
    #: A request is posted on the caller's thread, aborted at its deadline (:meth:`_post_here`).
    needs_deadlines = True

    def __init__(
        self,
        url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        auth: Optional[Any] = None,
        verify: Any = True,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        session: Optional["requests.Session"] = None,
        request_threads: bool = True,
        pool_size: int = 64,
        cert: Any = None,
        proxies: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        from ._send import Endpoint, pooled_session, route_settings

        cert, checked = route_settings(cert, proxies)  # a client certificate, and proxies that win over HTTP(S)_PROXY
        #: What :meth:`fresh` builds again from (the caller's session, if any, is reused).
        self._settings: dict[str, Any] = dict(
            headers=headers, auth=auth, verify=verify, connect_timeout=connect_timeout, read_timeout=read_timeout,
            session=session, request_threads=request_threads, pool_size=pool_size, cert=cert, proxies=checked,
        )
        self.url = url
        #: What the client remembers the endpoint's era by, this process (docs/reference.md#era-detection).
        self.era_key = url
        #: The URL as errors name it: no user name, password, query or fragment.
        self.shown_url = reflect.text(urlunsplit((parts.scheme, origin_of(url).split("://", 1)[1], parts.path, "", "")), 300)
        #: The server's origin (``scheme://host[:port]``), for URL elicitation checks.
        self.origin = origin_of(url)
        self.default_server_id = self.origin
        # pool_size sizes the session the transport makes; a session of the caller's keeps its own adapters
        self._session = pooled_session(pool_size) if session is None else session
        #: The transport made its session, whose requests can be aborted: a request may be posted
        #: on the caller's thread (:meth:`_post_here`); a session of the caller's is posted on a thread.
        self._own_session = session is None
        self._session.verify = verify
        #: An explicit verify (a CA bundle path, or False) goes with each request, so that
        #: REQUESTS_CA_BUNDLE, which requests would otherwise let win, cannot override it.
        self._verify: Any = None if verify is True else verify
        #: Every request goes out through it: what a URL's requests share, redirects (_send.py).
        self._endpoint = Endpoint(self._session, url, self.origin, self._verify, cert, checked)
        #: No proxy carries the requests (HTTP(S)_PROXY): their connections are the transport's to abort.
        self._direct = self._own_session and self._endpoint.proxy is None
        #: An OAuth provider, which sets the Authorization header of every request itself.
        self._bearer: Optional[BearerProvider] = auth if is_bearer_provider(auth) else None
        if auth is not None and self._bearer is None:
            self._session.auth = auth
        self._headers = dict(headers or {})
        self._timeouts = (connect_timeout, read_timeout)
        self._on_message: Optional[OnMessage] = None
        self._on_close: Optional[OnClose] = None
        #: Bound each message the client says is bounded (see :meth:`send`).
        self.request_threads = request_threads
        #: Told by :meth:`configure`: called for a request whose response can no longer come.
        self._on_lost: Optional[OnLost] = None
        #: Told by :meth:`configure`: the client's deadline sweep (None: every request is posted on a thread).
        self._track: Optional[Track] = None
        #: Told by :meth:`configure`: what is sent again after a failure (None: nothing).
        self._retry: Optional[Retry] = None
        self._on_retry: Optional[OnRetry] = None
        #: Set by :meth:`close`: a retry waiting out its delay stops at once.
        self._stopped = threading.Event()
        self.session_id: Optional[str] = None
        #: The version the handshake told (:meth:`set_protocol`), sent as ``MCP-Protocol-Version``.
        self.protocol_version: Optional[str] = None
        #: True once the handshake decided the 2026-07-28 era.
        self._modern = False
        self._streams: dict[int, Stream] = {}
        #: The requests being posted: (abort handle, request id) by key (see :meth:`send`).
        self._posts: dict[int, tuple[Any, Optional[RequestId]]] = {}
        #: Requests the client gave up on (:meth:`cancel_request`) whose POST is still out: a
        #: response stream that comes for one is closed at once. Emptied as their POSTs end.
        self._given_up: set[RequestId] = set()
        # Threads are kept for the next request or stream once theirs ends: starting one costs
        # about as much CPU as a request to a local server (docs/performance.md). Each pool
        # grows to the most requests, or streams, open at once, and ends at close.
        self._posters = HandlerPool(_UNBOUNDED, "http")
        self._readers = HandlerPool(_UNBOUNDED, "sse")
        self._stream_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closing = False
        self._closed_event = threading.Event()
        #: The handshake's ``initialize``, sent again when the server forgets the session.
        self._initialize: Optional[tuple[bytes, Outgoing]] = None
        self._initialized_sent = False
        self._get_stream: Optional[Stream] = None
        #: Largest JSON body or SSE event data, and longest SSE line, in bytes.
        self.max_message = DEFAULT_LIMITS["message_bytes"]
        self.max_sse_line = DEFAULT_LIMITS["sse_line_bytes"]

    def configure(self, setup: Setup) -> None:
        """Take the client's ``limits`` (``message_bytes``, ``sse_line_bytes``) and its ``on_lost``."""
        self.max_message = setup.limits["message_bytes"]
        self.max_sse_line = setup.limits["sse_line_bytes"]
        self._on_lost = setup.on_lost
        self._track = setup.track
        self._retry, self._on_retry = setup.retry, setup.on_retry

    # ------------------------------------------------------------------ contract

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._on_message = on_message
        self._on_close = on_close

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        """POST one message; its headers come from ``info``, and so does how it is posted.

        A message not ``info.bounded`` (the handshake's requests, notifications,
        answers) is posted on the caller's thread, a failure raised here. With
        ``request_threads`` a bounded one cannot be held by a server that sends
        its status line or body one byte at a time: posted on the caller's
        thread and aborted at ``info.deadline`` (:meth:`_post_here`), or, with
        no deadline, no sweep, a session of the caller's or a proxy, on a named
        thread (``mcp-input-sync-http-<n>``). What goes wrong reaches ``on_lost``.
        """
        if self._closing:
            raise TransportClosed("HTTP transport is closed")
        if self.request_threads and info.bounded:
            if info.deadline is not None and self._track is not None and self._direct:
                self._post_here(data, info, info.deadline, self._track)
            else:
                self._post_later(data, info)
            return
        self._exchange(data, info)

    def _lost(self, request_id: Any, error: BaseException) -> None:
        lost = self._on_lost
        if lost is not None:
            lost(request_id, error)
        else:  # a transport used without a client
            log.debug("mcp_input_sync: the response to %r will not come: %s", request_id, error)

    def _post_here(self, data: bytes, info: Outgoing, deadline: float, track: Track) -> None:
        """Post a request on the caller's thread, who would only wait for it (docs/performance.md#http).

        That saves two thread switches a call. The client's deadline sweep
        shuts the request's own connection once ``deadline`` passed (a
        connect ends there too); then the caller raises its own timeout. An
        event stream goes on on a reader thread; other failures reach
        ``on_lost``. A token refresh, and a lost session's new handshake (on a
        thread of its own), are out of the deadline's reach.
        """
        from ._abortable import Abort

        key = next(self._stream_ids)
        handle = Abort(deadline)
        with self._lock:
            if self._closing:
                raise TransportClosed("HTTP transport is closed")
            self._posts[key] = (handle, info.request_id)
        guard = track(deadline, Abort.fire, handle)
        try:
            self._exchange(data, info, handle)
        except Exception as exc:  # noqa: BLE001 - every failure ends this request alone
            if not self._closing and not handle.fired and _clock.monotonic() < deadline:
                self._lost(info.request_id, exc)
        finally:
            guard.cancel()
            handle.release()
            self._posted(key, info.request_id)

    def _post_later(self, data: bytes, info: Outgoing, work: Optional[Callable[[bytes, Outgoing], None]] = None) -> None:
        from ._abortable import Abort, abortable

        key = next(self._stream_ids)
        handle = Abort()

        def run() -> None:
            try:
                with abortable(handle):
                    (work or self._exchange)(data, info)
            except Exception as exc:  # noqa: BLE001 - every failure ends this request alone
                if not self._closing:
                    self._lost(info.request_id, exc)
            finally:
                self._posted(key, info.request_id)

        with self._lock:
            if self._closing:
                raise TransportClosed("HTTP transport is closed")
            self._posts[key] = (handle, info.request_id)
            self._posters.start(run, "POST")

    def _posted(self, key: int, request_id: Optional[RequestId]) -> None:
        """A POST ended: forget it, and that its request was given up once no other POST carries it."""
        with self._lock:
            self._posts.pop(key, None)
            if request_id in self._given_up and all(other != request_id for _, other in self._posts.values()):
                self._given_up.discard(request_id)

    def _exchange(self, data: bytes, info: Outgoing, handle: Any = None) -> None:
        step = info.step
        if step == NEW_SESSION:
            self._initialize = (data, info)
            self.session_id = None
        response = self._post(data, info, handle)
        if response.status_code == 404 and self.session_id is not None and step != NEW_SESSION:
            response.close()
            if handle is not None:  # a new session must not be cut by this call's deadline
                self._post_later(data, info, self._resend)
            else:
                self._resend(data, info)
            return
        self._handle(response, info, handle)
        if step == SESSION_READY:
            self._initialized_sent = True
            self._open_get_stream()

    #: A server restarted behind the same URL is met again on the next call (the ``reconnect`` option).
    reconnects_by_default = True

    def fresh(self) -> "HttpTransport":
        """The same URL, headers, auth, TLS settings and pool, with no session yet (the ``reconnect`` option)."""
        return HttpTransport(self.url, **self._settings)

    def trace_attributes(self) -> dict[str, Any]:
        """TCP, HTTP, the server's host and port, and the session once the server named one."""
        return trace_attributes(self.url, self.session_id)

    def cache_identity(self) -> tuple[str, str]:
        """The URL, and what authorizes this client (headers, certificate, OAuth account), for a shared cache."""
        return cache_identity(self.url, self._settings, self._bearer, super().cache_identity()[0])

    def set_protocol(self, era: str, version: str) -> None:
        """The handshake's decision: the version header to send, and whether streams are modern."""
        self.protocol_version = version
        self._modern = era == MODERN

    def cancel_request(self, request_id: RequestId) -> bool:
        """The client gave up on a request: close its response stream, now or as soon as it opens.

        Closing it ends the stream's reader thread and gives up its
        connection, however long the server would keep it open (a legacy
        server may feed it SSE comments for ever). A stream being resumed
        is not resumed. A server request that came on the stream and is
        still being answered gets its answer all the same: each answer is a
        POST of its own.

        Returns True in the 2026-07-28 era, where closing the stream is the
        cancellation; False in the legacy era, where the client then sends
        ``notifications/cancelled`` as well.
        """
        with self._lock:  # marked under the lock that registers streams: none slips through (_read_stream)
            streams = [s for s in self._streams.values() if s.request_id == request_id]
            for stream in streams:
                stream.closed = True
            if any(other == request_id for _, other in self._posts.values()):
                self._given_up.add(request_id)  # its response has not come yet: closed as it opens
        for stream in streams:
            stream.abort()
        return self._modern

    def close(self, timeout: float) -> None:
        """Close every stream, end the session (DELETE), and join the reader threads."""
        if self._closing:
            return
        budget = RealBudget(timeout)
        with self._lock:
            self._closing = True  # under the lock: no reader starts after this
            self._stopped.set()
            streams = list(self._streams.values())
            posts = [handle for handle, _ in self._posts.values()]
        self._closed_event.set()
        for handle in posts:
            handle.fire()
        for stream in streams:
            stream.abort()
        self._readers.shutdown(budget)
        with self._lock:  # bodies that began to be read after the first sweep
            late = list(self._streams.values())
        for stream in late:
            stream.abort()
        self._posters.shutdown(budget)
        if self.session_id is not None:
            try:
                timeouts = (min(2.0, self._timeouts[0]), max(0.1, min(2.0, budget.left)))
                self._endpoint.request("DELETE", self._base_headers("DELETE"), None, timeouts, partial(self._base_headers, "DELETE")).close()
            except Exception:  # noqa: BLE001 - a failed DELETE only leaves the session to expire
                log.debug("mcp_input_sync: DELETE of the HTTP session failed", exc_info=True)
        self._session.close()

    # ------------------------------------------------------------------ POST

    def _base_headers(self, method: str = "POST", target: Optional[str] = None) -> dict[str, str]:
        """The headers of every request; ``target``: the URL a followed redirect goes to (a DPoP proof names it)."""
        headers = dict(self._headers)
        if self._bearer is not None:
            add_authorization(headers, self._bearer, self.url, method, target)
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    def _headers_for(self, info: Outgoing, target: Optional[str] = None) -> dict[str, str]:
        headers = self._base_headers("POST", target)
        headers["Accept"] = ACCEPT
        headers["Content-Type"] = "application/json"
        if info.version is not None:  # modern: the header repeats the body's version
            headers[VERSION_HEADER] = info.version
            headers.pop(SESSION_HEADER, None)  # a 2026-07-28 request beside a handshake session belongs to none
            if info.method is not None:
                headers["Mcp-Method"] = info.method
                if info.name is not None:
                    headers["Mcp-Name"] = header_value(info.name)
                for header, text in info.header_args:
                    headers[f"Mcp-Param-{header}"] = header_value(text)
        return headers

    def _resend(self, data: bytes, info: Outgoing) -> None:
        """The server forgot the session: start a new one at once and re-send once."""
        self._reinitialise()
        response = self._post(data, info)
        if response.status_code == 404:
            raise TransportClosed("the server lost the session again after it was re-initialised")
        self._handle(response, info)

    def _post(self, data: bytes, info: Outgoing, handle: Any = None) -> "requests.Response":
        """:meth:`_post_once`, sent again as far as the ``retry`` policy allows (``_retrying.py``)."""
        if self._retry is None:
            return self._post_once(data, info, handle)
        from ._retrying import post_with_retry

        return post_with_retry(partial(self._post_once, data, info, handle), info, handle, self._retry, self._stopped, self._given_up, self.shown_url, self._on_retry)

    def _post_once(self, data: bytes, info: Outgoing, handle: Any = None) -> "requests.Response":
        """The one place ``requests`` errors become transport errors; ``handle`` can abort the POST alone.

        ``urllib3`` errors that ``requests`` lets through (``LocationParseError``
        for a host it cannot parse, such as ``a..b``) are failures to reach too,
        as is the ``OSError`` of a ``cert`` or ``verify`` file ``requests`` cannot find.
        """
        from urllib3.exceptions import HTTPError

        from ._abortable import abortable, never_connected

        sent: list[dict[str, str]] = []  # the headers of each request sent for this attempt

        def again(url: str) -> dict[str, str]:
            # a followed redirect goes with headers of its own, for its URL: a DPoP proof is never sent twice
            sent.append(self._headers_for(info, url))
            return sent[-1]

        for attempt in range(MAX_AUTH_ATTEMPTS + 1):
            sent[:] = [self._headers_for(info)]  # an OAuth refresh here is out of the handle's reach
            try:
                with abortable(handle):
                    response = self._endpoint.request(
                        "POST", sent[0], data, self._timeouts if handle is None else handle.bound(self._timeouts), again
                    )
            except TransportClosed:
                raise  # a redirect refused (_send.RedirectRefused): an OSError as well, but no failure to reach
            except (OSError, HTTPError) as exc:  # requests' errors are OSErrors, as is a cert or CA file it cannot find
                closed = TransportClosed(self._endpoint.unreachable(self.shown_url, exc))  # the proxy named: a stale HTTP(S)_PROXY is common
                if never_connected(exc):  # the request never left: safe to send again (docs/http.md#reconnect-and-retry)
                    closed.check = UNREACHABLE
                raise closed from exc
            if response.status_code not in (401, 403):
                break
            response.close()
            status, answer_headers = response.status_code, response.headers
            if self._bearer is None:
                raise TransportAuthError(status, answer_headers)
            if attempt == MAX_AUTH_ATTEMPTS:
                raise TransportAuthError(
                    status, answer_headers, f"HTTP {status}: the server still refused after {MAX_AUTH_ATTEMPTS} authorization attempts", "attempts"
                )
            try:
                self._bearer.challenged(self.url, status, answer_headers, sent[-1].get("Authorization"))
            except OAuthRefused as exc:
                raise TransportAuthError(status, answer_headers, f"HTTP {status}: authorization failed: {exc.message}", exc.check) from None
        if response.status_code >= 500:
            response.close()
            raise HttpStatusError(response.status_code, self.shown_url, retry_after=retry_after(response.headers.get("Retry-After"), time.time()))
        session = response.headers.get(SESSION_HEADER)
        if session is not None and info.step == NEW_SESSION:
            self.session_id = session
        return response

    def _handle(self, response: "requests.Response", info: Outgoing, handle: Any = None) -> None:
        request_id = info.request_id
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if response.status_code == 202 or request_id is None:
            if response.headers.get("Content-Length") == "0":
                # an empty body read to its end gives the connection back to the pool; closed
                # unread, it is dropped, and the next POST (the next answer) opens a new one
                try:
                    response.raw.read()
                except Exception:  # noqa: BLE001 - a broken connection is simply not reused
                    pass
            response.close()
            return
        if kind == "text/event-stream":
            self._read_stream(response, request_id, handle=handle)
            return
        from ._abortable import Stream

        reading = Stream(response, request_id)
        key = next(self._stream_ids)
        with self._lock:
            if self._closing:
                response.close()
                raise TransportClosed("HTTP transport is closed")
            if request_id in self._given_up:  # the caller went: nobody reads the answer
                response.close()
                return
            self._streams[key] = reading
        from ._send import read_body

        try:
            body = read_body(response, self.max_message)
        except LimitExceeded as exc:
            self._lost(request_id, exc)
            return
        except Exception as exc:  # noqa: BLE001 - requests raises several kinds here
            from ._abortable import why_unreachable

            raise TransportClosed(f"the body of an answer from {self.shown_url} could not be read: {reflect.text(why_unreachable(exc), 300)}") from exc
        finally:
            with self._lock:
                self._streams.pop(key, None)
            response.close()
        delivered = False
        if kind == "application/json" and body:
            try:
                answer = decode(body)
            except ValueError:  # bad JSON, bad UTF-8, or nested too deeply to decode
                answer = None
            if isinstance(answer, dict) and ("result" in answer or "error" in answer):
                self._deliver(Decoded.of(body, answer), request_id)
                delivered = True
        if not delivered:
            # a status without a JSON-RPC body, or a body that is not one: a transport failure of that request
            raise HttpStatusError(response.status_code, self.shown_url)

    def _deliver(self, data: bytes, related: Any) -> None:
        callback = self._on_message
        if callback is not None and not self._closing:
            callback(data, related)

    # ------------------------------------------------------------------ SSE

    def _read_stream(
        self, response: "requests.Response", request_id: Any, resumed: int = 0, handle: Any = None, previous: Optional[Stream] = None
    ) -> None:
        """Read an event stream on a reader thread; ``previous``: the stream this one resumes."""
        if handle is not None and not handle.release():  # the stream is its reader's from here on
            response.close()  # cut at its deadline already: the caller raises its own timeout
            return
        from ._abortable import Stream

        stream = Stream(response, request_id)
        key = next(self._stream_ids)
        with self._lock:
            # a POST that raced close(): no new reader; nor for a request the client gave up on
            # (cancel_request), while its POST was out or the stream it resumes was being resumed
            if self._closing or request_id in self._given_up or (previous is not None and previous.closed):
                response.close()
                return
            self._streams[key] = stream
            self._readers.start(lambda: self._pump(stream, key, resumed), "SSE")

    def _pump(self, stream: Stream, key: int, resumed: int) -> None:
        decoder = SSEDecoder(emit_empty=False, max_line=self.max_sse_line, max_event=self.max_message)
        answered = False
        error: Optional[BaseException] = None

        def deliver(events: Any) -> bool:
            done = False
            for event in events:
                if event.event != "message" or not event.data:
                    continue
                data = event.data.encode("utf-8")
                try:
                    message = decode(data)
                except ValueError:  # the client's reader says why
                    self._deliver(data, stream.request_id)
                    continue
                if isinstance(message, dict) and "method" not in message and message.get("id") == stream.request_id and stream.request_id is not None:
                    done = True
                self._deliver(Decoded.of(data, message), stream.request_id)
            return done

        try:
            from ._send import chunks

            for chunk in chunks(stream.response):
                if deliver(decoder.feed(chunk)):
                    answered = True
        except SSELimitError as exc:
            answered = deliver(exc.events) or answered
            limit = "message_bytes" if isinstance(exc, SSEEventTooLarge) else "sse_line_bytes"
            error = LimitExceeded(limit, f"{exc} ({say('limit_name', limit, limit=limit)})")
            log.debug("mcp_input_sync: an event stream from %s broke a limit and was closed: %s", self.origin, error)  # the client says it once
        except Exception as exc:  # noqa: BLE001 - a broken stream may raise anything from requests
            error = exc
        finally:
            try:
                stream.response.close()
            except Exception:  # noqa: BLE001
                pass
        try:
            self._ended(stream, decoder, error, answered, resumed)
        finally:
            # registered until here, so that cancel_request finds a stream while it waits to be resumed
            with self._lock:
                self._streams.pop(key, None)

    def _ended(self, stream: Stream, decoder: SSEDecoder, error: Optional[BaseException], answered: bool, resumed: int) -> None:
        """A stream ended: the request is answered, given up, resumed (2025-11-25), or lost."""
        if stream.closed or self._closing or answered:
            return
        if stream.request_id is None:
            return  # the GET stream ended; untied messages simply stop
        # The stream ended before the response: resume (2025-11-25) or give the request up.
        last_id = decoder.last_event_id
        if last_id and resumed < 3 and not isinstance(error, LimitExceeded) and not self._modern:
            pause = (decoder.retry if decoder.retry is not None else 1000) / 1000.0
            if self._closed_event.wait(min(pause, 10.0)) or stream.closed:
                return  # close(), or the client gave the request up, while waiting to reconnect
            if self._resume(stream, last_id, resumed + 1):
                return
        self._lost(stream.request_id, error or TransportClosed("the response stream ended before the response"))

    def _resume(self, previous: Stream, last_event_id: str, attempt: int) -> bool:
        from urllib3.exceptions import HTTPError

        try:
            response = self._endpoint.request("GET", self._stream_headers(last_event_id), None, self._timeouts, partial(self._stream_headers, last_event_id))
        except (OSError, HTTPError, TransportClosed) as exc:  # requests' errors are OSErrors
            log.debug("mcp_input_sync: the response stream was not resumed: %s", exc)
            return False
        if response.status_code != 200:
            response.close()
            return False
        self._read_stream(response, previous.request_id, attempt, previous=previous)
        return True

    def _stream_headers(self, last_event_id: Optional[str] = None, target: Optional[str] = None) -> dict[str, str]:
        """The headers of a GET that opens an event stream (or resumes one after ``last_event_id``)."""
        headers = self._base_headers("GET", target)
        headers["Accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def _open_get_stream(self) -> None:
        """Legacy: the GET stream for server messages tied to no call (405 is fine)."""
        from urllib3.exceptions import HTTPError

        if self._modern or self._closing:
            return
        try:
            response = self._endpoint.request("GET", self._stream_headers(), None, self._timeouts, partial(self._stream_headers, None))
        except (OSError, HTTPError, TransportClosed) as exc:  # requests' errors are OSErrors
            refused = isinstance(exc, TransportClosed) and exc.check == "redirect"  # a redirect refused (_send.RedirectRefused)
            (log.warning if refused else log.debug)("mcp_input_sync: GET stream not opened: %s", exc)
            return
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if response.status_code != 200 or kind != "text/event-stream":
            response.close()
            return
        self._read_stream(response, None)

    def _reinitialise(self) -> None:
        """A 404 on a request carrying the session id: send the handshake's ``initialize`` again, without it."""
        init = self._initialize
        if init is None:
            raise TransportClosed("the server lost the session")
        self.session_id = None
        response = self._post(*init)
        response.close()
        if response.status_code != 200:
            raise TransportClosed(f"re-initialising the session failed: HTTP {response.status_code}")
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        self._post(note, _INITIALIZED).close()
        log.warning("mcp_input_sync: HTTP session of %s was lost; a new one was started", self.origin)
        self._open_get_stream()
