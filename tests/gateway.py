"""A busy gateway on 127.0.0.1: forwards to a real MCP server, or answers 429/503 itself.

``Gateway(upstream, verdict)`` listens on a port of its own; for each request
``verdict(seen)`` returns None (forward it to ``upstream`` and stream the
answer back, event streams included) or ``(status, headers)`` to answer
with instead, the upstream never seeing the request. Every request is kept
in ``seen`` (verb, JSON-RPC method, tool name, what was answered), unless
``keep=False`` (benchmarks/soak.py, whose requests would fill memory). Threads
are named ``gateway-*``; ``close()`` stops it within a bound.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

import requests

#: Headers not passed on (hop by hop, or recomputed).
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer", "upgrade"}


@dataclass
class Seen:
    verb: str
    method: Optional[str]
    tool: Optional[str]
    #: The status the gateway answered itself, or None when it forwarded the request.
    answered: Optional[int] = None


Verdict = Callable[[Seen], Optional[tuple[int, dict[str, str]]]]


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a client closing, a call cancelled) is no error to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Gateway:
    def __init__(self, upstream: str, verdict: Verdict, *, keep: bool = True) -> None:
        """``keep`` False: ``seen`` stays empty (a soak's millions of requests would fill memory)."""
        self.upstream = upstream
        self.verdict = verdict
        self.keep = keep
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._http = requests.Session()
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class names it
                pass

            def do_POST(self) -> None:
                gateway._serve(self, "POST")

            def do_GET(self) -> None:
                gateway._serve(self, "GET")

            def do_DELETE(self) -> None:
                gateway._serve(self, "DELETE")

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="gateway-accept", daemon=True)
        self._thread.start()

    def calls(self, tool: Optional[str] = None) -> list[Seen]:
        """The ``tools/call`` requests seen (of ``tool``), the forwarded ones and the refused ones."""
        with self._lock:
            return [s for s in self.seen if s.method == "tools/call" and (tool is None or s.tool == tool)]

    def _serve(self, handler: BaseHTTPRequestHandler, verb: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        try:
            message = json.loads(body) if body else {}
        except ValueError:
            message = {}
        params = message.get("params") if isinstance(message, dict) else None
        tool = params.get("name") if isinstance(params, dict) and message.get("method") == "tools/call" else None
        seen = Seen(verb, message.get("method") if isinstance(message, dict) else None, tool)
        if self.keep:
            with self._lock:
                self.seen.append(seen)
        own = self.verdict(seen)
        if own is not None:
            seen.answered, headers = own
            handler.send_response(own[0])
            for name, value in {**headers, "Content-Length": "0"}.items():
                handler.send_header(name, value)
            handler.end_headers()
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP}
        try:
            upstream = self._http.request(verb, self.upstream, data=body or None, headers=headers, stream=True, timeout=(5, 60))
        except requests.RequestException:
            handler.send_response(502)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        with upstream:
            handler.send_response(upstream.status_code)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP:
                    handler.send_header(name, value)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            try:
                for chunk in upstream.raw.stream(4096, decode_content=False):
                    if chunk:
                        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
            except (OSError, requests.RequestException):
                handler.close_connection = True

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
        self._http.close()
