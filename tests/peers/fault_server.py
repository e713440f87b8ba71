#!/usr/bin/env python3
"""A faulty legacy stdio MCP server for the fault tests (stdlib only, raw JSON lines).

It answers ``initialize`` (2025-11-25) and ``server/discover`` with -32601 (so
the client picks the legacy era at once), and counts every answer the client
writes to one of its requests, per id. When its stdin ends it writes that
count to the file named by ``$FAULT_REPORT`` (if set) and exits, so a test
can check "every id answered exactly once" even for answers written during
``close()``.

Tools (``tools/call`` runs each on its own thread):

- ``echo {"text"}``: answers the text.
- ``pid {}``: answers its process id.
- ``hang {}``: sends ``notifications/fault/started`` and never answers.
- ``close_stdout {}``: sends ``notifications/fault/started``, closes its
  stdout, and lives on (it ignores stdin EOF and SIGTERM: only SIGKILL ends it).
- ``raw {"chunks": [latin-1 text, ...], "deep": N, "then": "answer"|"exit"|"hang"}``:
  writes a line of N nested arrays (when N > 0), then each chunk as raw bytes (flushing between chunks), then answers the
  call, exits at once (``os._exit``), or never answers.
- ``junk {"size": N}``: writes N bytes of junk and a newline, then answers.
- ``big_log {"size": N}``: a ``notifications/message`` with an N-character string, then answers.
- ``split {"text", "piece": k}``: answers the call in pieces of k bytes, flushed one by one.
- ``forge {"text", "ahead": k}``: writes responses for unknown ids (the next k
  ids the client will use, a string id, id null), then the real answer twice
  (the second with another text).
- ``ask {"n", "method", "params", "cancel": bool, "tag": bool, "answer": "first"|"after"}``:
  sends n requests at once (ids ``"q<k>"``; ``tag``: ``params.message`` is the id), each followed at once by its
  ``notifications/cancelled`` when ``cancel``; answers the call at once
  (``"first"``: before the requests, the default is after all are sent).
- ``flood {"n", "method", "params"}``: a writer thread sends n requests as fast
  as the pipe takes them, without waiting for answers; the call is answered
  when every one of them has an answer, with the figures: answers per code,
  ids answered twice, unknown ids, and the most requests outstanding at once.
- ``answers {}``: the answer counts so far (``{"answered": {id: count}}``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
from typing import Any

out = sys.stdout.buffer
write_lock = threading.Lock()
lock = threading.Condition()
#: id -> answers the client wrote for it
answers: dict[str, int] = {}
codes: dict[str, int] = {}
sent_ids: set[str] = set()
stats = {"unknown": 0, "outstanding": 0, "max_outstanding": 0}
next_q = itertools.count(1)
stdout_closed = threading.Event()


def write(data: bytes) -> None:
    with write_lock:
        if stdout_closed.is_set():
            return
        out.write(data)
        out.flush()


def send(message: dict[str, Any]) -> None:
    write(json.dumps(message).encode() + b"\n")


def text(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value if isinstance(value, str) else json.dumps(value)}]}


def request(method: str, params: Any, count: bool = True) -> dict[str, Any]:
    rid = f"q{next(next_q)}"
    with lock:
        sent_ids.add(rid)
        if count:
            stats["outstanding"] += 1
            stats["max_outstanding"] = max(stats["max_outstanding"], stats["outstanding"])
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def on_answer(message: dict[str, Any]) -> None:
    rid = message.get("id")
    key = str(rid)
    with lock:
        if rid not in sent_ids:
            stats["unknown"] += 1
        else:
            answers[key] = answers.get(key, 0) + 1
            if answers[key] == 1:
                stats["outstanding"] -= 1
                error = message.get("error")
                code = str(error.get("code")) if isinstance(error, dict) else "ok"
                codes[code] = codes.get(code, 0) + 1
        lock.notify_all()


def figures(ids: list[str]) -> dict[str, Any]:
    with lock:
        return {
            "answered": sum(1 for r in ids if answers.get(r, 0) >= 1),
            "twice": sum(1 for r in ids if answers.get(r, 0) > 1),
            "codes": dict(codes),
            "unknown": stats["unknown"],
            "max_outstanding": stats["max_outstanding"],
        }


def run_tool(rid: Any, name: str, args: dict[str, Any]) -> None:
    if name == "echo":
        send({"jsonrpc": "2.0", "id": rid, "result": text(str(args.get("text", "")))})
    elif name == "pid":
        send({"jsonrpc": "2.0", "id": rid, "result": text(str(os.getpid()))})
    elif name == "hang":
        send({"jsonrpc": "2.0", "method": "notifications/fault/started", "params": {"tool": name}})
    elif name == "close_stdout":
        send({"jsonrpc": "2.0", "method": "notifications/fault/started", "params": {"tool": name}})
        with write_lock:
            stdout_closed.set()
            out.close()
            os.close(1)
    elif name == "raw":
        deep = int(args.get("deep", 0))
        if deep:
            write(b"[" * deep + b"]" * deep + b"\n")
        for chunk in args.get("chunks", []):
            write(chunk.encode("latin-1"))
        then = args.get("then", "answer")
        if then == "answer":
            send({"jsonrpc": "2.0", "id": rid, "result": text("after raw")})
        elif then == "exit":
            os._exit(0)
    elif name == "junk":
        size = int(args["size"])
        block = b"\x80junk" * 200_000  # 1 MB at a time: the server itself stays small
        for _ in range(size // len(block)):
            write(block)
        write(b"\x80junk" * ((size % len(block)) // 5) + b"\n")
        send({"jsonrpc": "2.0", "id": rid, "result": text("after junk")})
    elif name == "big_log":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "L" * int(args["size"])}})
        send({"jsonrpc": "2.0", "id": rid, "result": text("after log")})
    elif name == "split":
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": text(str(args["text"]))}).encode() + b"\n"
        piece = int(args.get("piece", 1))
        for i in range(0, len(data), piece):
            write(data[i : i + piece])
    elif name == "forge":
        forged = text("forged")
        ahead = int(args.get("ahead", 3))
        for other in [rid + k for k in range(1, ahead + 1)] + [str(rid), None, "nobody"]:
            send({"jsonrpc": "2.0", "id": other, "result": forged})
        send({"jsonrpc": "2.0", "id": rid, "result": text(str(args["text"]))})
        send({"jsonrpc": "2.0", "id": rid, "result": text("duplicate")})
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "duplicate error"}})
    elif name == "ask":
        messages = [request(args.get("method", "elicitation/create"), args.get("params")) for _ in range(int(args.get("n", 1)))]
        if args.get("tag"):  # each request's params name its id (in "message")
            for m in messages:
                m["params"] = dict(m["params"], message=m["id"])
        if args.get("answer") == "first":
            send({"jsonrpc": "2.0", "id": rid, "result": text([m["id"] for m in messages])})
        for m in messages:
            send(m)
            if args.get("cancel"):
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": m["id"], "reason": "race"}})
        if args.get("answer") != "first":
            send({"jsonrpc": "2.0", "id": rid, "result": text([m["id"] for m in messages])})
    elif name == "flood":
        n = int(args["n"])
        # outstanding is counted as each request is written
        messages = [request(args.get("method", "elicitation/create"), args.get("params"), count=False) for _ in range(n)]
        ids = [m["id"] for m in messages]
        for m in messages:
            data = json.dumps(m).encode() + b"\n"
            with lock:
                stats["outstanding"] += 1
                stats["max_outstanding"] = max(stats["max_outstanding"], stats["outstanding"])
            write(data)
        with lock:
            lock.wait_for(lambda: all(answers.get(r, 0) for r in ids), 60.0)
        send({"jsonrpc": "2.0", "id": rid, "result": text(figures(ids))})
    elif name == "answers":
        with lock:
            send({"jsonrpc": "2.0", "id": rid, "result": text({"answered": dict(answers)})})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}})


def report() -> None:
    path = os.environ.get("FAULT_REPORT")
    if path:
        with lock:
            data = {"answered": dict(answers), "sent": sorted(sent_ids), "unknown": stats["unknown"], "codes": dict(codes)}
        with open(path + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(path + ".tmp", path)


def main() -> None:
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        if method is None:
            on_answer(message)
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "fault", "version": "1"}}})
        elif method == "tools/call":
            params = message["params"]
            if params["name"] == "close_stdout":
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # with stdout gone, only SIGKILL ends it
            threading.Thread(target=run_tool, args=(message["id"], params["name"], params.get("arguments") or {}), daemon=True).start()
        elif "id" in message:
            if method == "server/discover":
                send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
            else:
                send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
    report()
    if stdout_closed.is_set():
        threading.Event().wait()  # lives on without stdout: only SIGKILL ends it


if __name__ == "__main__":
    main()
