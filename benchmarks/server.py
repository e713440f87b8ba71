#!/usr/bin/env python3
"""benchmarks/server.py -- a deliberately cheap stdio MCP server used to load MCP clients.

One thread, no SDK, no asyncio: it reads newline-delimited JSON-RPC from stdin and
writes pre-encoded replies to stdout, so that in a benchmark the *client* is what
costs time.

    python server.py [--modern] [--rusage-file PATH]

Era handling
    By default it speaks only the handshake era: ``initialize`` with protocol
    2025-11-25 or 2025-06-18 (any other version is answered with 2025-11-25) and
    ``server/discover`` is rejected with -32601, so probing clients fall back.
    With ``--modern`` it also answers ``server/discover`` for 2026-07-28, and results
    of requests made in that era carry ``resultType``.

Tools
    elicit_n {n, concurrency=1, size=0}
        While the call is open, send ``n`` form ``elicitation/create`` requests, never
        more than ``concurrency`` unanswered. With ``size`` > 0 the schema carries a
        ``description`` of ``size`` bytes (the request is about ``size`` bytes bigger);
        the answer size is up to the client and is summed in ``answer_bytes``.
    log_flood {n}
        Write ``n`` ``notifications/message`` (level info), then one ``ping`` request;
        the call completes when the ping is answered, so the timing covers the client
        reading every notification.
    mrtr_n {n}
        2026-07-28 only: answer ``input_required`` (one form elicitation under key "q",
        an opaque ``requestState``) until the client has retried with an answer ``n``
        times.
    echo {text?}
        Completes at once.

    Every tool that counts completes with a text content holding JSON
    ``{"count", "accepted", "elapsed", ...}``; ``elapsed`` is server-side seconds from
    the first message of the work to the last answer.

``--rusage-file PATH``: on exit (stdin EOF, SIGTERM, SIGINT) the server stores its own
``getrusage(RUSAGE_SELF)`` as JSON ``{"pid","utime","stime","maxrss_kb"}`` in PATH so a
benchmark runner can subtract the server's CPU from a client's ``wait4`` total.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from typing import Any, BinaryIO, Optional

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")
MODERN_VERSION = "2026-07-28"
META_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
INFO = {"name": "bench-server", "version": "1.0"}
CAPS = {"tools": {"listChanged": False}, "logging": {}}

_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _tool(name: str, doc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": doc,
            "inputSchema": {"type": "object", "properties": props, "required": required}}


TOOL_LIST = [
    _tool("elicit_n", "n form elicitations during the call",
          {"n": {"type": "integer"}, "concurrency": {"type": "integer"}, "size": {"type": "integer"}}, ["n"]),
    _tool("log_flood", "n log notifications, then a ping", {"n": {"type": "integer"}}, ["n"]),
    _tool("mrtr_n", "n input_required rounds (2026-07-28)", {"n": {"type": "integer"}}, ["n"]),
    _tool("echo", "completes at once", {"text": {"type": "string"}}, []),
]


def form_schema(size: int) -> dict[str, Any]:
    """The requested schema: one string field ``answer``; ``size`` pads its description."""
    answer: dict[str, Any] = {"type": "string", "title": "Answer"}
    if size > 0:
        answer["description"] = "d" * size
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}


def elicit_template(size: int) -> bytes:
    """A whole ``elicitation/create`` line with a ``%d`` hole for the id (encoded once)."""
    params = _dumps({"mode": "form", "message": "benchmark question", "requestedSchema": form_schema(size)})
    # The padding is plain ASCII letters, so no '%' can appear except our hole.
    return ('{"jsonrpc":"2.0","method":"elicitation/create","params":' + params + ',"id":%d}\n').encode()


LOG_LINE = (b'{"jsonrpc":"2.0","method":"notifications/message","params":'
            b'{"level":"info","logger":"bench","data":"log entry %d"}}\n')


class ElicitRun:
    """State of one running ``elicit_n`` call."""

    __slots__ = ("call_id", "n", "limit", "line", "issued", "answered", "accepted", "answer_bytes",
                 "waiting", "peak", "started", "modern")

    def __init__(self, call_id: Any, n: int, limit: int, size: int, modern: bool) -> None:
        self.call_id = call_id
        self.n = n
        self.limit = limit
        self.line = elicit_template(size)
        self.issued = 0
        self.answered = 0
        self.accepted = 0
        self.answer_bytes = 0
        self.waiting: set[int] = set()
        self.peak = 0
        self.started = time.perf_counter()
        self.modern = modern


class BenchServer:
    """The whole server: one read loop, dispatch by method."""

    def __init__(self, allow_modern: bool, rusage_path: Optional[str], out: BinaryIO) -> None:
        self.allow_modern = allow_modern
        self.rusage_path = rusage_path
        self.out = out
        self.last_id = 0
        self.discovered = False
        self.elicit: Optional[ElicitRun] = None
        self.flood: Optional[dict[str, Any]] = None
        self.rounds_t0: Optional[float] = None
        self.rounds_accepted = 0

    # ---------------------------------------------------------------- output
    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def reply(self, rid: Any, result: dict[str, Any]) -> None:
        self.write(_dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")

    def fail(self, rid: Any, code: int, message: str) -> None:
        self.write(_dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode()
                   + b"\n")

    def finish_tool(self, rid: Any, summary: dict[str, Any], modern: bool) -> None:
        result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(summary)}], "isError": False}
        if modern:
            result["resultType"] = "complete"
        self.reply(rid, result)

    def new_id(self) -> int:
        self.last_id += 1
        return self.last_id

    def dump_rusage(self) -> None:
        path, self.rusage_path = self.rusage_path, None
        if not path:
            return
        ru = resource.getrusage(resource.RUSAGE_SELF)
        tmp = f"{path}.part"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "utime": ru.ru_utime, "stime": ru.ru_stime,
                       "maxrss_kb": ru.ru_maxrss}, fh)
        os.replace(tmp, path)

    # ---------------------------------------------------------------- input
    def loop(self, source: BinaryIO) -> None:
        loads = json.loads
        for line in iter(source.readline, b""):
            if line.isspace():
                continue
            try:
                msg = loads(line)
            except ValueError:
                self.fail(None, -32700, "parse error")
                continue
            if not isinstance(msg, dict):
                self.fail(None, -32600, "invalid request")
                continue
            method = msg.get("method")
            if method is None:
                self.on_answer(msg)
            elif "id" in msg:
                params = msg.get("params")
                self.on_request(msg["id"], method, params if isinstance(params, dict) else {})
            # client notifications need no reply

    def is_modern(self, params: dict[str, Any]) -> bool:
        if self.discovered:
            return True
        meta = params.get("_meta")
        return isinstance(meta, dict) and meta.get(META_VERSION_KEY) == MODERN_VERSION

    def on_request(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method == "tools/call":
            self.on_tool(rid, params)
        elif method == "initialize":
            asked = params.get("protocolVersion")
            self.reply(rid, {"protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0],
                             "capabilities": CAPS, "serverInfo": INFO})
        elif method == "server/discover":
            if not self.allow_modern:
                self.fail(rid, -32601, "method not found: server/discover")
                return
            self.discovered = True
            self.reply(rid, {"supportedVersions": [MODERN_VERSION], "capabilities": CAPS,
                             "resultType": "complete", "cacheScope": "private", "ttlMs": 0,
                             "_meta": {"io.modelcontextprotocol/serverInfo": INFO}})
        elif method == "tools/list":
            result: dict[str, Any] = {"tools": TOOL_LIST}
            if self.is_modern(params):
                result.update(resultType="complete", cacheScope="private", ttlMs=0)
            self.reply(rid, result)
        elif method == "ping" or method == "logging/setLevel":
            self.reply(rid, {"resultType": "complete"} if self.is_modern(params) else {})
        else:
            self.fail(rid, -32601, f"method not found: {method}")

    def on_tool(self, rid: Any, params: dict[str, Any]) -> None:
        args = params.get("arguments")
        if not isinstance(args, dict):
            args = {}
        name = params.get("name")
        modern = self.is_modern(params)
        if name == "elicit_n":
            run = ElicitRun(rid, int(args.get("n", 1)), max(1, int(args.get("concurrency", 1))),
                            max(0, int(args.get("size", 0))), modern)
            self.elicit = run
            self.top_up(run)
        elif name == "log_flood":
            self.start_flood(rid, int(args.get("n", 1)), modern)
        elif name == "mrtr_n":
            self.on_round(rid, params, int(args.get("n", 1)), modern)
        elif name == "echo":
            self.finish_tool(rid, {"echo": args.get("text", "")}, modern)
        else:
            self.fail(rid, -32602, f"unknown tool: {name}")

    # ---------------------------------------------------------------- elicit_n
    def top_up(self, run: ElicitRun) -> None:
        if run.answered >= run.n:
            self.elicit = None
            self.finish_tool(run.call_id, {"count": run.answered, "accepted": run.accepted,
                                           "elapsed": time.perf_counter() - run.started,
                                           "concurrency": run.limit, "max_outstanding": run.peak,
                                           "answer_bytes": run.answer_bytes}, run.modern)
            return
        lines = []
        while run.issued < run.n and len(run.waiting) < run.limit:
            rid = self.new_id()
            run.waiting.add(rid)
            run.issued += 1
            lines.append(run.line % rid)
        if lines:
            self.write(b"".join(lines))
            run.peak = max(run.peak, len(run.waiting))

    def on_answer(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        flood = self.flood
        if flood is not None and rid == flood["ping"]:
            self.flood = None
            self.finish_tool(flood["call"], {"count": flood["n"], "elapsed": time.perf_counter() - flood["t0"],
                                             "written": flood["written"], "ping_ok": "result" in msg},
                             flood["modern"])
            return
        run = self.elicit
        if run is None or rid not in run.waiting:
            return
        run.waiting.remove(rid)
        run.answered += 1
        result = msg.get("result")
        if isinstance(result, dict) and result.get("action") == "accept":
            run.accepted += 1
            content = result.get("content")
            if isinstance(content, dict) and isinstance(content.get("answer"), str):
                run.answer_bytes += len(content["answer"])
        self.top_up(run)

    # ---------------------------------------------------------------- log_flood
    def start_flood(self, rid: Any, n: int, modern: bool) -> None:
        t0 = time.perf_counter()
        step = 512
        for first in range(0, n, step):
            self.out.write(b"".join([LOG_LINE % i for i in range(first, min(n, first + step))]))
        self.out.flush()
        written = time.perf_counter() - t0
        if modern:  # no server-to-client requests in that era: finish when written
            self.finish_tool(rid, {"count": n, "elapsed": written, "written": written}, True)
            return
        ping = self.new_id()
        self.flood = {"call": rid, "n": n, "t0": t0, "written": written, "ping": ping, "modern": modern}
        self.write(b'{"jsonrpc":"2.0","method":"ping","id":%d}\n' % ping)

    # ---------------------------------------------------------------- mrtr_n
    def on_round(self, rid: Any, params: dict[str, Any], n: int, modern: bool) -> None:
        if not modern:
            self.reply(rid, {"content": [{"type": "text", "text": "mrtr_n needs protocol 2026-07-28"}],
                             "isError": True})
            return
        state = params.get("requestState")
        if state is None:
            done = 0
            self.rounds_t0 = time.perf_counter()
            self.rounds_accepted = 0
        else:
            prefix, _, tail = str(state).partition(":")
            if prefix != "bench-round" or not tail.isdigit():
                self.fail(rid, -32602, "invalid requestState")
                return
            done = int(tail)
        responses = params.get("inputResponses")
        answer = responses.get("q") if isinstance(responses, dict) else None
        if answer is not None:
            done += 1
            if isinstance(answer, dict) and answer.get("action") == "accept":
                self.rounds_accepted += 1
        if done >= n:
            started = self.rounds_t0 if self.rounds_t0 is not None else time.perf_counter()
            self.finish_tool(rid, {"count": done, "accepted": self.rounds_accepted,
                                   "elapsed": time.perf_counter() - started}, True)
            return
        self.reply(rid, {"resultType": "input_required",
                         "inputRequests": {"q": {"method": "elicitation/create", "params": {
                             "mode": "form", "message": f"round {done + 1}/{n}",
                             "requestedSchema": form_schema(0)}}},
                         "requestState": f"bench-round:{done}"})


def main(argv: list[str]) -> int:
    allow_modern = "--modern" in argv
    rusage_path = argv[argv.index("--rusage-file") + 1] if "--rusage-file" in argv else None
    server = BenchServer(allow_modern, rusage_path, sys.stdout.buffer)

    def on_signal(signum: int, frame: object) -> None:
        server.dump_rusage()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.loop(sys.stdin.buffer)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        server.dump_rusage()
        try:
            sys.stdout.flush()
        except OSError:
            pass
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
