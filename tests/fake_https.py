"""A legacy-era ``FakeServer`` served as a Streamable HTTP endpoint over TLS on 127.0.0.1.

The certificate is issued for ``127.0.0.1`` (and any other ``names``) by a
throwaway certificate authority made with ``trustme`` (a test extra); the
CA's certificate is written to ``ca_path``, for a client to trust. Nothing
else trusts it, so a client that does not name it refuses the server, as TLS
verification should. With ``client_ca`` the server asks every client for a
certificate issued by that CA and refuses a connection without one
(``ssl.CERT_REQUIRED``, mutual TLS).

Each POST of a request gets the fake's answer: as ``application/json`` when
the answer is the first thing the fake sends, else as an SSE stream that
carries, in order, every notification and server request the fake sends
while the request is open, then the answer. A POST of a notification or of
an answer gets 202. GET gets 405 (no stream for unrelated messages), DELETE
200. Every wait is bounded by ``timeout`` real seconds; ``close()`` stops the
HTTP server, the fake and the transport the bridge reads the fake from.
"""

from __future__ import annotations

import json
import queue
import ssl
import threading
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import trustme

from mcp_input_sync.testing import FakeServer

from .tiny_http import Reply, Seen, TinyServer

JsonDict = dict[str, Any]


def _key(request_id: Any) -> str:
    """A key for a JSON-RPC id (1 and "1" stay apart)."""
    return json.dumps([type(request_id).__name__, request_id], sort_keys=True)


def _is_answer(message: JsonDict) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


class FakeOverHttps:
    """``fake`` (era ``"legacy"``) at ``url`` over HTTPS; trust ``ca_path`` to reach it."""

    def __init__(
        self, fake: FakeServer, ca_dir: Path, *, timeout: float = 20.0, names: Sequence[str] = (), client_ca: Optional[trustme.CA] = None
    ) -> None:
        if fake.era != "legacy":
            raise ValueError("the HTTPS bridge serves a legacy-era fake (handshake, SSE answers)")
        self.fake = fake
        self.timeout = timeout
        authority = trustme.CA()
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        authority.issue_cert("127.0.0.1", *names).configure_cert(tls)
        if client_ca is not None:
            client_ca.configure_trust(tls)
            tls.verify_mode = ssl.CERT_REQUIRED
        #: The PEM certificate of the CA that issued the server's certificate.
        self.ca_path: Path = ca_dir / "test-ca.pem"
        authority.cert_pem.write_to_path(str(self.ca_path))
        #: Messages the fake sent while no request was open (dropped: there is no GET stream).
        self.unrouted: list[JsonDict] = []
        self._lock = threading.Lock()
        self._open: dict[str, "queue.SimpleQueue[JsonDict]"] = {}  # by request id, oldest first
        fake.transport.start(self._from_fake, lambda exc: None)
        self.server = TinyServer(self._answer, tls=tls)
        self.url: str = self.server.url

    @property
    def requests(self) -> list[Seen]:
        """Every HTTP request the server saw (verb, lower-cased headers, JSON body)."""
        with self.server.lock:
            return list(self.server.requests)

    def _from_fake(self, data: bytes) -> None:
        message: JsonDict = json.loads(data)
        with self._lock:
            if _is_answer(message):
                box = self._open.get(_key(message.get("id")))
            else:  # a notification or server request goes on the newest open request's stream
                box = next(reversed(self._open.values()), None)
            if box is None:
                self.unrouted.append(message)
                return
        box.put(message)

    def _answer(self, seen: Seen) -> Reply:
        if seen.verb == "GET":
            return Reply(405)
        if seen.verb == "DELETE":
            return Reply(200)
        message = seen.body
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            self.fake.transport.send(json.dumps(message).encode())
            return Reply(202)
        key = _key(message["id"])
        box: "queue.SimpleQueue[JsonDict]" = queue.SimpleQueue()
        with self._lock:
            self._open[key] = box
        self.fake.transport.send(json.dumps(message).encode())
        first = self._next(box)
        if first is None or _is_answer(first):
            self._forget(key)
            return Reply(504) if first is None else Reply(200, body=first)
        return Reply(200, body=self._stream(key, box, first))

    def _next(self, box: "queue.SimpleQueue[JsonDict]") -> Optional[JsonDict]:
        try:
            return box.get(timeout=self.timeout)
        except queue.Empty:
            return None

    def _stream(self, key: str, box: "queue.SimpleQueue[JsonDict]", first: JsonDict) -> Iterator[str]:
        message: Optional[JsonDict] = first
        try:
            while message is not None:
                yield f"data: {json.dumps(message)}\n\n"
                if _is_answer(message):
                    return
                message = self._next(box)
        finally:
            self._forget(key)

    def _forget(self, key: str) -> None:
        with self._lock:
            self._open.pop(key, None)

    def close(self) -> None:
        """Stop the HTTP server, then the fake and the bridge's side of it (bounded)."""
        self.server.close()
        self.fake.close()
        self.fake.transport.close(2.0)

    def __enter__(self) -> "FakeOverHttps":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
