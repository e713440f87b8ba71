"""A scripted MCP endpoint on 127.0.0.1 for HTTP edge cases (auth, lost sessions, SSE resumption, headers).

The test gives a function ``answer(request) -> Reply``; every request the
server saw is kept in ``requests`` (method, headers, decoded JSON body, path).
Threads are named ``tiny-http-*``; ``close()`` stops the server (bounded).
With ``tls`` (a server-side ``ssl.SSLContext``) it serves HTTPS: each
connection's handshake runs on that connection's own thread, bounded by
``HANDSHAKE_TIMEOUT``, and a client that refuses the certificate only ends
its own connection.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Optional, Union

JsonDict = dict[str, Any]

HANDSHAKE_TIMEOUT = 10.0  # seconds for one TLS handshake


@dataclass
class Seen:
    verb: str
    headers: dict[str, str]
    body: Any
    #: the request's target (path and query), as sent
    path: str = ""


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: A JSON value (sent as application/json), raw bytes, or an iterator of SSE text chunks.
    body: Union[None, bytes, JsonDict, list[Any], Iterator[str]] = None


def sse(*events: str) -> Iterator[str]:
    """SSE chunks from event texts (each gets its blank line)."""
    for event in events:
        yield event + "\n\n"


def rpc(request_id: Any, result: Any) -> JsonDict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that counts the connections it accepted."""

    connections = 0

    def get_request(self) -> tuple[socket.socket, Any]:
        self.connections += 1  # the accept loop's own thread: no lock needed
        return super().get_request()


class _TLSServer(_Server):
    """A threading HTTP server whose accepted connections speak TLS."""

    tls: ssl.SSLContext

    def get_request(self) -> tuple[socket.socket, Any]:
        self.connections += 1
        sock, address = self.socket.accept()
        sock.settimeout(HANDSHAKE_TIMEOUT)
        # The handshake waits for the connection's own thread (finish_request), so a
        # slow or refusing client never holds up the accept loop.
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return  # e.g. the client does not trust the certificate: its connection ends here
        request.settimeout(None)
        super().finish_request(request, client_address)


class TinyServer:
    def __init__(self, answer: Callable[[Seen], Reply], *, tls: Optional[ssl.SSLContext] = None) -> None:
        self.answer = answer
        self.requests: list[Seen] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class names it
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                seen = Seen(self.command, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw) if raw else None, self.path)
                with outer.lock:
                    outer.requests.append(seen)
                reply = outer.answer(seen)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                body = reply.body
                if body is None:
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if isinstance(body, (dict, list)):
                    data = json.dumps(body).encode()
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for chunk in body:
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()

            do_POST = do_GET = do_DELETE = _serve

        self.server: _Server
        if tls is None:
            self.server = _Server(("127.0.0.1", 0), Handler)
        else:
            self.server = _TLSServer(("127.0.0.1", 0), Handler)
            self.server.tls = tls
        self.server.daemon_threads = True
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="tiny-http-server", daemon=True)
        self.thread.start()

    @property
    def connections(self) -> int:
        """How many connections the server accepted."""
        return self.server.connections

    def posts(self, method: Optional[str] = None) -> list[Seen]:
        with self.lock:
            return [r for r in self.requests if r.verb == "POST" and (method is None or (isinstance(r.body, dict) and r.body.get("method") == method))]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
