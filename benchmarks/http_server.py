#!/usr/bin/env python3
"""benchmarks/http_server.py -- a fast local Streamable HTTP MCP endpoint for the HTTP cases.

    python http_server.py [--port 0] [--host 127.0.0.1]

Standard library only: ``http.server.ThreadingHTTPServer``, HTTP/1.1 keep-alive,
``TCP_NODELAY`` on every accepted socket, one thread per connection. Once it
listens it prints ``LISTENING <port>`` on stdout (port 0 picks a free one); it
serves until SIGTERM or SIGINT, then prints its own CPU time as
``SERVER_CPU <seconds>`` on stderr.

Both eras on one path (``/mcp``; any path works):

legacy (2025-11-25)
    ``initialize`` answers 2025-11-25 (or the client's 2025-06-18) with a fresh
    ``Mcp-Session-Id``; notifications get 202; ``ping`` and ``logging/setLevel``
    get ``{}``; GET gets 405 (no stream for untied messages); DELETE gets 200.
modern (2026-07-28)
    ``server/discover`` answers a DiscoverResult for 2026-07-28 (the shape of the
    shared flood server's ``--modern``). A request is modern when its
    ``_meta["io.modelcontextprotocol/protocolVersion"]`` or its
    ``MCP-Protocol-Version`` header is 2026-07-28; modern results carry
    ``resultType`` (and ``cacheScope``/``ttlMs`` on ``tools/list``).

Tools (``tools/list`` advertises them; no ``outputSchema``)
    echo {text}     plain JSON answer: ``content[0].text`` is ``text``.
    elicit_n {n}    legacy only. The answer to the ``tools/call`` POST is an SSE
                    stream (chunked): it sends ``elicitation/create`` (form mode)
                    requests one at a time, each awaited: the client answers with a
                    separate POST carrying the JSON-RPC response (202), which wakes
                    the stream's thread, which then sends the next request. Last, the
                    tool result on the stream, whose text is JSON
                    ``{"count", "accepted", "elapsed"}`` (accepted: answers with
                    ``action == "accept"``; elapsed: server seconds for the n rounds).
                    An answer that does not come within 30 s ends the call with
                    ``isError``.
    mrtr_n {n}      2026-07-28 only. JSON answers: ``resultType: "input_required"``
                    with one form elicitation under ``inputRequests["q"]`` and
                    ``requestState`` "<done>.<accepted>" until the client has retried
                    with ``inputResponses["q"]`` n times, then the complete result with
                    the same JSON text as elicit_n. Stateless: the state is in
                    ``requestState``. A retry without an answer is asked again.

Anything else: a JSON-RPC error -32601 (unknown method) or -32602 (unknown tool).

``GET /bench/stats`` (not MCP): ``{"connections", "stray_answers"}``, the TCP connections
accepted so far and the answers that matched no open request.
"""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import resource
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

LEGACY = "2025-11-25"
LEGACY_OK = ("2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
ANSWER_WAIT_S = 30.0
STATS_PATH = "/bench/stats"
TOOLS = [
    {"name": "echo", "description": "returns its text at once",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "elicit_n", "description": "legacy: n form elicitations on the call's SSE stream, one at a time",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "mrtr_n", "description": "2026-07-28: n input_required rounds, one form elicitation each",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
]
SERVER_INFO = {"name": "http-bench-server", "version": "1"}
CAPABILITIES = {"tools": {"listChanged": False}}

Json = dict[str, Any]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Waits:
    """Server requests sent on a stream and not answered yet: request id -> the stream's queue."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.pending: dict[Any, "queue.SimpleQueue[Json]"] = {}
        self.stray = 0

    def open(self, box: "queue.SimpleQueue[Json]") -> int:
        rid = next(self.ids)
        with self.lock:
            self.pending[rid] = box
        return rid

    def drop(self, rid: int) -> None:
        with self.lock:
            self.pending.pop(rid, None)

    def answer(self, msg: Json) -> None:
        with self.lock:
            box = self.pending.pop(msg.get("id"), None)
            if box is None:
                self.stray += 1
                return
        box.put(msg)


class BenchHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, Handler)
        self.waits = Waits()
        self.sessions = itertools.count(1)
        #: TCP connections accepted so far (``GET /bench/stats``): a client that reuses its
        #: keep-alive connections opens a handful per run, not one per request.
        self.connections = 0
        self.lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)


def tool_text(payload: Json, modern: bool, error: bool = False) -> Json:
    result: Json = {"content": [{"type": "text", "text": json.dumps(payload)}], "isError": error}
    if modern:
        result["resultType"] = "complete"
    return result


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: BenchHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    # ------------------------------------------------------------------ replies

    def reply(self, status: int, body: Optional[bytes] = None, headers: Optional[dict[str, str]] = None) -> None:
        data = body or b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def result(self, rid: Any, result: Json, headers: Optional[dict[str, str]] = None) -> None:
        self.reply(200, dumps({"jsonrpc": "2.0", "id": rid, "result": result}), headers)

    def error(self, rid: Any, code: int, message: str) -> None:
        self.reply(200, dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}))

    # ------------------------------------------------------------------ verbs

    def do_GET(self) -> None:
        if self.path == STATS_PATH:
            self.reply(200, dumps({"connections": self.server.connections, "stray_answers": self.server.waits.stray}))
            return
        self.reply(405, None, {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:
        self.reply(200)

    def do_POST(self) -> None:
        try:
            msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError:
            self.reply(400, dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}))
            return
        if not isinstance(msg, dict):
            self.reply(400, dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no batches"}}))
            return
        method = msg.get("method")
        if method is None:  # the client's answer to a server request
            self.server.waits.answer(msg)
            self.reply(202)
            return
        if "id" not in msg:  # a notification
            self.reply(202)
            return
        self.dispatch(msg["id"], method, msg.get("params") or {})

    # ------------------------------------------------------------------ methods

    def is_modern(self, params: Json) -> bool:
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get(META_VERSION) == MODERN:
            return True
        return self.headers.get("MCP-Protocol-Version") == MODERN

    def dispatch(self, rid: Any, method: str, params: Json) -> None:
        if method == "tools/call":
            self.call(rid, params)
        elif method == "initialize":
            offered = params.get("protocolVersion")
            session = f"bench-{next(self.server.sessions)}"
            self.result(rid, {"protocolVersion": offered if offered in LEGACY_OK else LEGACY,
                              "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO},
                        {"Mcp-Session-Id": session})
        elif method == "server/discover":
            self.result(rid, {"supportedVersions": [MODERN], "capabilities": CAPABILITIES,
                              "resultType": "complete", "cacheScope": "private", "ttlMs": 0,
                              "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}})
        elif method == "tools/list":
            listing: Json = {"tools": TOOLS}
            if self.is_modern(params):
                listing.update(resultType="complete", cacheScope="private", ttlMs=0)
            self.result(rid, listing)
        elif method in ("ping", "logging/setLevel"):
            self.result(rid, {"resultType": "complete"} if self.is_modern(params) else {})
        else:
            self.error(rid, -32601, f"Method not found: {method}")

    def call(self, rid: Any, params: Json) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        modern = self.is_modern(params)
        if name == "echo":
            result: Json = {"content": [{"type": "text", "text": str(args.get("text", ""))}], "isError": False}
            if modern:
                result["resultType"] = "complete"
            self.result(rid, result)
        elif name == "elicit_n":
            if modern:
                self.result(rid, tool_text({"error": "elicit_n is legacy only"}, True, True))
            else:
                self.elicit_stream(rid, int(args.get("n", 1)))
        elif name == "mrtr_n":
            if modern:
                self.mrtr(rid, params, int(args.get("n", 1)))
            else:
                self.result(rid, tool_text({"error": "mrtr_n needs 2026-07-28"}, False, True))
        else:
            self.error(rid, -32602, f"Unknown tool: {name}")

    # ------------------------------------------------------------------ elicit_n (legacy, SSE)

    def event(self, message: Json) -> None:
        """One SSE event as one HTTP chunk."""
        payload = b"event: message\ndata: " + dumps(message) + b"\n\n"
        self.wfile.write(b"%X\r\n%s\r\n" % (len(payload), payload))

    def elicit_stream(self, rid: Any, n: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        waits = self.server.waits
        box: "queue.SimpleQueue[Json]" = queue.SimpleQueue()
        done = accepted = 0
        failed = ""
        began = time.perf_counter()
        for k in range(n):
            eid = waits.open(box)
            self.event({"jsonrpc": "2.0", "id": eid, "method": "elicitation/create", "params": {
                "mode": "form", "message": f"Question {k + 1} of {n}", "requestedSchema": SCHEMA}})
            try:
                answer = box.get(timeout=ANSWER_WAIT_S)
            except queue.Empty:
                waits.drop(eid)
                failed = f"no answer to elicitation {eid} within {ANSWER_WAIT_S:.0f} s"
                break
            done += 1
            res = answer.get("result")
            if isinstance(res, dict) and res.get("action") == "accept":
                accepted += 1
        summary: Json = {"count": done, "accepted": accepted, "elapsed": time.perf_counter() - began}
        if failed:
            summary["error"] = failed
        self.event({"jsonrpc": "2.0", "id": rid, "result": tool_text(summary, False, bool(failed))})
        self.wfile.write(b"0\r\n\r\n")

    # ------------------------------------------------------------------ mrtr_n (2026-07-28, JSON)

    def mrtr(self, rid: Any, params: Json, n: int) -> None:
        state = params.get("requestState")
        try:
            done, accepted = (int(x) for x in state.split(".")) if isinstance(state, str) else (0, 0)
        except ValueError:
            self.error(rid, -32602, "Invalid requestState")
            return
        responses = params.get("inputResponses")
        answer = responses.get("q") if isinstance(responses, dict) else None
        if answer is not None:
            done += 1
            if isinstance(answer, dict) and answer.get("action") == "accept":
                accepted += 1
        if done >= n:
            self.result(rid, tool_text({"count": done, "accepted": accepted}, True))
            return
        self.result(rid, {
            "resultType": "input_required",
            "inputRequests": {"q": {"method": "elicitation/create", "params": {
                "mode": "form", "message": f"Question {done + 1} of {n}", "requestedSchema": SCHEMA}}},
            "requestState": f"{done}.{accepted}",
        })


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="fast local Streamable HTTP MCP endpoint (both eras)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args(argv)
    server = BenchHTTPServer((a.host, a.port))

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        print(f"SERVER_CPU {ru.ru_utime + ru.ru_stime:.3f} connections={server.connections} "
              f"stray_answers={server.waits.stray}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
