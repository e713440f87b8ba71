"""A forwarding HTTP proxy on 127.0.0.1 for tests: ``CONNECT`` tunnels for https, absolute-URI requests for http.

Everything that passes through is recorded in ``passed`` (one :class:`Passed`
per tunnel or forwarded request), so a test can say which requests the proxy
carried. ``hosts`` maps names only the proxy can resolve (``mcp.proxied.test``)
to addresses: a client given such a URL reaches the server through the proxy
or not at all (the proxy tells the server the address in ``Host``: the official
SDK's servers refuse a name they do not know). The proxy reaches loopback
addresses and those names only.

With ``credentials`` (user, password) a request without the matching
``Proxy-Authorization: Basic`` header gets 407, as a company proxy would.

A forwarded request goes to the server on a connection of its own, its
response is relayed as it arrives (an event stream too) and ends the
client's connection (``Connection: close``). A tunnel relays bytes both ways
until either side closes. Threads are named ``forward-proxy-*``; ``close()``
shuts every connection, then joins them, each wait bounded.
"""

from __future__ import annotations

import base64
import http.client
import json
import select
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Optional
from urllib.parse import urlsplit, urlunsplit

#: Headers that concern one hop only: never passed on.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailers", "transfer-encoding", "upgrade"})
#: Seconds one connection to a server may take to open; a join at close may take.
WAIT = 10.0


@dataclass
class Passed:
    """One tunnel (``kind="CONNECT"``, ``target`` ``host:port``) or forwarded request (``kind="forward"``, ``target`` the URL)."""

    kind: str
    verb: str
    target: str
    #: The ``Proxy-Authorization`` header the client sent (None: none).
    authorization: Optional[str]
    #: A forwarded JSON-RPC message's ``method`` (None for an answer, a GET or a tunnel).
    method: Optional[str] = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: "ForwardProxy"

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address), name="forward-proxy-conn", daemon=True)
        self.owner.track(thread=thread)
        thread.start()


class ForwardProxy:
    """The proxy at ``url`` (``http://127.0.0.1:PORT``); :meth:`url_with` gives it with credentials in it."""

    def __init__(self, *, hosts: Optional[Mapping[str, str]] = None, credentials: Optional[tuple[str, str]] = None, port: int = 0) -> None:
        self.hosts = {name.lower(): address for name, address in (hosts or {}).items()}
        self.credentials = credentials
        self.passed: list[Passed] = []
        self.lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class names it
                pass

            def do_CONNECT(self) -> None:  # noqa: N802 - the base class names it
                outer._tunnel(self)

            def _forward(self) -> None:
                outer._forward(self)

            do_GET = do_POST = do_DELETE = _forward  # noqa: N815

        self.server = _Server(("127.0.0.1", port), Handler)  # port: a proxy closed before, at its address again
        self.server.owner = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="forward-proxy-server", daemon=True)
        self.thread.start()

    def url_with(self, user: str, password: str) -> str:
        """The proxy's URL with ``user:password@`` in it, as ``proxies=`` takes it."""
        return self.url.replace("://", f"://{user}:{password}@", 1)

    def carried(self, kind: Optional[str] = None) -> list[Passed]:
        """What passed through so far (of one ``kind``, ``"CONNECT"`` or ``"forward"``)."""
        with self.lock:
            return [p for p in self.passed if kind is None or p.kind == kind]

    def track(self, *, sock: Optional[socket.socket] = None, thread: Optional[threading.Thread] = None) -> None:
        with self.lock:
            if sock is not None:
                self._sockets.append(sock)
            if thread is not None:
                self._threads.append(thread)
        if sock is not None and self._closing.is_set():
            _shut(sock)

    # ------------------------------------------------------------------ inside

    def _address(self, host: str) -> Optional[str]:
        """Where a target host is reached: a mapped name's address, a loopback address as it is; else None (refused)."""
        host = host.strip("[]").lower()
        if host in self.hosts:
            return self.hosts[host]
        return host if host in ("127.0.0.1", "localhost", "::1") else None

    def _allowed(self, handler: BaseHTTPRequestHandler) -> bool:
        """True when the request carries the proxy's credentials (or none are asked); else a 407 was sent."""
        if self.credentials is None:
            return True
        expected = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
        if handler.headers.get("Proxy-Authorization") == expected:
            return True
        handler.send_response(407)
        handler.send_header("Proxy-Authenticate", 'Basic realm="test proxy"')
        handler.send_header("Content-Length", "0")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        return False

    def _record(self, handler: BaseHTTPRequestHandler, kind: str, target: str, method: Optional[str] = None) -> None:
        with self.lock:
            self.passed.append(Passed(kind, handler.command, target, handler.headers.get("Proxy-Authorization"), method))

    def _connect(self, host: str, port: int) -> Optional[socket.socket]:
        address = self._address(host)
        if address is None:
            return None
        try:
            upstream = socket.create_connection((address, port), timeout=WAIT)
        except OSError:
            return None
        upstream.settimeout(None)
        self.track(sock=upstream)
        return upstream

    def _tunnel(self, handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        self.track(sock=handler.connection)
        host, _, port = handler.path.rpartition(":")
        if not self._allowed(handler):
            return
        self._record(handler, "CONNECT", handler.path)
        upstream = self._connect(host, int(port)) if port.isdigit() else None
        if upstream is None:
            handler.send_error(502)
            return
        handler.send_response_only(200, "Connection established")
        handler.end_headers()
        handler.wfile.flush()
        try:
            _relay(handler.connection, upstream, self._closing)
        finally:
            upstream.close()

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        self.track(sock=handler.connection)
        parts = urlsplit(handler.path)
        if parts.scheme != "http" or not parts.hostname:
            handler.send_error(400, "an absolute http URL is expected")
            return
        if not self._allowed(handler):
            return
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self._record(handler, "forward", handler.path, _method(body))
        upstream = self._connect(parts.hostname, parts.port or 80)
        if upstream is None:
            handler.send_error(502)
            return
        connection = http.client.HTTPConnection(parts.hostname, parts.port or 80)
        connection.sock = upstream
        try:
            headers = {name: value for name, value in handler.headers.items() if name.lower() not in HOP_BY_HOP}
            if parts.hostname.lower() in self.hosts:  # a server that checks Host (the SDK's DNS-rebinding guard) knows the address only
                headers = {name: value for name, value in headers.items() if name.lower() != "host"}
                headers["Host"] = f"{self.hosts[parts.hostname.lower()]}:{parts.port or 80}"
            connection.request(handler.command, urlunsplit(("", "", parts.path or "/", parts.query, "")), body=body or None, headers=headers)
            response = connection.getresponse()
            handler.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP:
                    handler.send_header(name, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                handler.wfile.write(chunk)
                handler.wfile.flush()
        except OSError:
            pass  # either side went away: this request ends here
        finally:
            connection.close()

    def close(self) -> None:
        """Stop accepting, shut every connection (waking every relay), and join the threads (bounded); once."""
        if self._closing.is_set():
            return
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            _shut(sock)
        self.thread.join(WAIT)
        for thread in threads:
            thread.join(WAIT)

    def __enter__(self) -> "ForwardProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _method(body: bytes) -> Optional[str]:
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def _relay(one: socket.socket, other: socket.socket, closing: threading.Event) -> None:
    """Copy bytes both ways until either side closes, or the proxy does (which shuts both)."""
    peers = {one: other, other: one}
    while not closing.is_set():
        readable, _, _ = select.select(list(peers), [], [], WAIT)
        for sock in readable:
            try:
                data = sock.recv(65536)
                if not data:
                    return
                peers[sock].sendall(data)
            except OSError:
                return
