"""A faulty legacy (2025-11-25) Streamable HTTP endpoint on 127.0.0.1, on raw sockets.

``http.server`` cannot cut a response in the middle of an event, reset a
connection or dribble a status line, so this server writes HTTP/1.1 by hand.
Every response carries ``Connection: close``; SSE bodies are chunked (as
uvicorn sends them) unless a fault says otherwise; each connection runs on
a thread named ``faulty-http-*``.

``server/discover`` is refused (400, -32601: legacy), ``initialize`` is
answered with a session, GET is 405, DELETE 200, notifications and the
client's answers are 202 (answers are kept in ``answers``, notifications in
``notes``). ``tools/call`` picks a fault by tool name (``FAULTS``); the
arguments may carry ``text``. Slow faults write one byte a second until the
client goes away or :meth:`close` is called.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any, Callable, Optional

JsonDict = dict[str, Any]
FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}


def answer_of(request_id: Any, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}).encode()


class FaultyHttp:
    def __init__(self) -> None:
        self.stop = threading.Event()
        #: set by a test to end every slow (one byte a second) answer now, keeping the server up
        self.cut = threading.Event()
        #: set by a test when the fault may go on (``sse_ask_then_cut`` waits for it, bounded)
        self.gate = threading.Event()
        #: ``sse_ask_close_delimited``: did the client answer while the stream was open?
        self.asked_in_time: Optional[bool] = None
        self.lock = threading.Lock()
        #: (method or None, id) of every POST body
        self.posts: list[tuple[Optional[str], Any]] = []
        #: the client's answers to this server's requests
        self.answers: list[JsonDict] = []
        #: the client's notifications (method, params)
        self.notes: list[tuple[str, Any]] = []
        self.got_post = threading.Condition(self.lock)
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/mcp"
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._accept = threading.Thread(target=self._serve, name="faulty-http-accept", daemon=True)
        self._accept.start()

    # ------------------------------------------------------------------ plumbing

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self._conns.append(conn)
            thread = threading.Thread(target=self._handle, args=(conn,), name="faulty-http-conn", daemon=True)
            with self.lock:
                self._threads.append(thread)
            thread.start()

    def close(self) -> None:
        self.stop.set()
        self._accept.join(5)
        try:
            self._sock.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(5)

    def wait_for(self, predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
        with self.lock:
            return self.got_post.wait_for(predicate, seconds)

    def _read_request(self, conn: socket.socket) -> Optional[tuple[str, dict[str, str], bytes]]:
        conn.settimeout(10.0)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        verb = lines[0].split(" ")[0]
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            rest += chunk
        return verb, headers, rest[:length]

    @staticmethod
    def _head(status: str, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers.items()] + ["Connection: close", "", ""]
        return "\r\n".join(lines).encode("latin-1")

    def _reply(self, conn: socket.socket, status: str, body: bytes = b"", kind: str = "application/json", extra: Optional[dict[str, str]] = None) -> None:
        headers = {"Content-Type": kind, "Content-Length": str(len(body)), **(extra or {})}
        conn.sendall(self._head(status, headers) + body)

    def _sse_head(self, conn: socket.socket, chunked: bool = True) -> None:
        """SSE headers; ``chunked``: Transfer-Encoding chunked (as uvicorn sends), else the body ends at close."""
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if chunked:
            headers["Transfer-Encoding"] = "chunked"
        conn.sendall(self._head("200 OK", headers))

    @staticmethod
    def _chunk(data: bytes, chunked: bool = True) -> bytes:
        return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data

    def _dribble(self, conn: socket.socket, data: bytes, chunked: bool = False) -> None:
        """One byte a second (one chunk each when ``chunked``), until done, the client leaves or the server stops."""
        for i in range(len(data)):
            if self.stop.is_set() or self.cut.wait(0 if i == 0 else 1.0):
                return
            try:
                conn.sendall(self._chunk(data[i : i + 1], chunked))
            except OSError:
                return

    @staticmethod
    def _reset(conn: socket.socket) -> None:
        """Close with a TCP RST (SO_LINGER 0)."""
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _handle(self, conn: socket.socket) -> None:
        try:
            request = self._read_request(conn)
            if request is None:
                return
            verb, _, body = request
            if verb == "GET":
                self._reply(conn, "405 Method Not Allowed")
                return
            if verb == "DELETE":
                self._reply(conn, "200 OK")
                return
            message = json.loads(body)
            method = message.get("method") if isinstance(message, dict) else None
            with self.lock:
                self.posts.append((method, message.get("id") if isinstance(message, dict) else None))
                if method is None:
                    self.answers.append(message)
                elif "id" not in message:
                    self.notes.append((method, message.get("params")))
                self.got_post.notify_all()
            if method == "server/discover":
                self._reply(conn, "400 Bad Request", json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}).encode())
            elif method == "initialize":
                result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "faulty", "version": "1"}}
                self._reply(conn, "200 OK", json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode(), extra={"Mcp-Session-Id": "s1"})
            elif method is None or "id" not in message:
                self._reply(conn, "202 Accepted")
            elif method == "tools/call":
                params = message.get("params") or {}
                fault = FAULTS.get(str(params.get("name")), FAULTS["ok"])
                fault(self, conn, message["id"], params.get("arguments") or {})
            else:
                self._reply(conn, "200 OK", json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode())
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------- the faults


def ok(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    server._reply(conn, "200 OK", answer_of(rid, str(args.get("text", "ok"))))


def sse_ok(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    server._sse_head(conn)
    conn.sendall(server._chunk(b"event: message\ndata: " + answer_of(rid, str(args.get("text", "ok"))) + b"\n\n") + b"0\r\n\r\n")


def sse_cut(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """A chunked SSE answer cut in the middle of its event (FIN, no last chunk)."""
    server._sse_head(conn)
    data = answer_of(rid, "never whole")
    conn.sendall(server._chunk(b"event: message\ndata: " + data[: len(data) // 2]))


def sse_cut_close_delimited(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """The same on a body that ends at close (no chunked encoding)."""
    server._sse_head(conn, chunked=False)
    data = answer_of(rid, "never whole")
    conn.sendall(b"event: message\ndata: " + data[: len(data) // 2])


def sse_reset(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """A chunked SSE answer cut in the middle of its event by a connection reset (RST)."""
    sse_cut(server, conn, rid, args)
    server._reset(conn)


def sse_cut_after_id(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """A priming event with an id, then the answer cut mid-event: the client may try to resume (GET is 405)."""
    server._sse_head(conn)
    data = answer_of(rid, "never whole")
    conn.sendall(server._chunk(b"id: ev-1\ndata:\n\nretry: 10\n\nevent: message\ndata: " + data[: len(data) // 2]))


def json_cut(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """A JSON body shorter than its Content-Length, then FIN."""
    data = answer_of(rid, "never whole")
    conn.sendall(server._head("200 OK", {"Content-Type": "application/json", "Content-Length": str(len(data))}) + data[: len(data) // 2])


def json_deep(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """A JSON body nested deeper than the JSON decoder can go."""
    server._reply(conn, "200 OK", b"[" * 100_000 + b"]" * 100_000)


def http500(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    server._reply(conn, "500 Internal Server Error", b"<html>oops</html>", kind="text/html")


def http500_jsonrpc(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "boom"}}).encode()
    server._reply(conn, "500 Internal Server Error", body)


def http502_empty(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    server._reply(conn, "502 Bad Gateway")


def slow_json(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """Headers at once, then the JSON body one byte a second."""
    data = answer_of(rid, "slow " * 20)
    conn.sendall(server._head("200 OK", {"Content-Type": "application/json", "Content-Length": str(len(data))}))
    server._dribble(conn, data)


def slow_sse(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """SSE headers at once, then the answer event one byte a second (one chunk each)."""
    server._sse_head(conn)
    server._dribble(conn, b"event: message\ndata: " + answer_of(rid, "slow " * 20) + b"\n\n", chunked=True)


def slow_headers(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """The status line and headers one byte a second."""
    data = answer_of(rid, "slow")
    server._dribble(conn, server._head("200 OK", {"Content-Type": "application/json", "Content-Length": str(len(data))}) + data)


def sse_events(server: FaultyHttp, conn: socket.socket, events: list[bytes]) -> None:
    server._sse_head(conn)
    conn.sendall(b"".join(server._chunk(e + b"\n\n") for e in events) + b"0\r\n\r\n")


def sse_garbage(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """Junk events, answers to unknown ids, then the answer, then duplicates of it."""
    sse_events(server, conn, [
        b"data: this is not json",
        b"data: [1, 2]",
        b"data: \xff\xfe",
        b"event: other\ndata: " + answer_of(rid, "wrong event type"),
        b"data: " + answer_of(rid + 1, "forged: the next id"),
        b"data: " + answer_of("nobody", "forged"),
        b"data: " + answer_of(None, "forged"),
        b": a comment",
        b"data: " + answer_of(rid, str(args.get("text", "real"))),
        b"data: " + answer_of(rid, "duplicate"),
        b'data: {"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode() + b', "error": {"code": -1, "message": "duplicate"}}',
    ])


def sse_deep(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """One event nested deeper than the JSON decoder can go, then the answer."""
    sse_events(server, conn, [b"data: " + b"[" * 100_000 + b"]" * 100_000, b"data: " + answer_of(rid, str(args.get("text", "real")))])


def sse_ask_then_cut(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """An elicitation request on the call's (chunked) stream, then the stream is cut before the call's answer."""
    server._sse_head(conn)
    ask = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": FORM}
    conn.sendall(server._chunk(b"event: message\ndata: " + json.dumps(ask).encode() + b"\n\n"))
    server.gate.wait(10.0)  # the test opens the gate once its callback runs
    conn.sendall(server._chunk(b"event: message\ndata: {\"jsonrpc\": \"2.0\", \"id\": "))


def sse_ask_close_delimited(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """An elicitation on a stream that ends at close; the answer to the call follows the client's answer.

    ``server.asked_in_time`` tells whether the client answered within 3 s
    while the stream was open (a client that reads the stream as it comes does).
    """
    server._sse_head(conn, chunked=False)
    ask = {"jsonrpc": "2.0", "id": "ask-2", "method": "elicitation/create", "params": FORM}
    conn.sendall(b"event: message\ndata: " + json.dumps(ask).encode() + b"\n\n")
    server.asked_in_time = server.wait_for(lambda: any(a.get("id") == "ask-2" for a in server.answers), 3.0)
    conn.sendall(b"event: message\ndata: " + answer_of(rid, "answered") + b"\n\n")


def hang(server: FaultyHttp, conn: socket.socket, rid: Any, args: JsonDict) -> None:
    """SSE headers, then nothing until the server stops."""
    server._sse_head(conn)
    server.stop.wait(60)


FAULTS: dict[str, Callable[[FaultyHttp, socket.socket, Any, JsonDict], None]] = {
    "ok": ok,
    "sse_ok": sse_ok,
    "sse_cut": sse_cut,
    "sse_cut_close_delimited": sse_cut_close_delimited,
    "sse_deep": sse_deep,
    "sse_ask_close_delimited": sse_ask_close_delimited,
    "sse_reset": sse_reset,
    "sse_cut_after_id": sse_cut_after_id,
    "json_cut": json_cut,
    "json_deep": json_deep,
    "http500": http500,
    "http500_jsonrpc": http500_jsonrpc,
    "http502_empty": http502_empty,
    "slow_json": slow_json,
    "slow_sse": slow_sse,
    "slow_headers": slow_headers,
    "sse_garbage": sse_garbage,
    "sse_ask_then_cut": sse_ask_then_cut,
    "hang": hang,
}
