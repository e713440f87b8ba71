#!/usr/bin/env python3
"""A hostile, scripted stdio MCP server for the safety tests (stdlib only, raw JSON lines).

The test scripts it through tool arguments:

- ``ask {"requests": [{"method", "params"}, ...], "parallel": false}``: sends
  each request to the client (ids ``"h1"``, ``"h2"``, ...), one after the
  other or all at once, and returns the answers (``{"result": ...}`` or
  ``{"error": ...}``) as a JSON list, in request order.
- ``ask_idle {"requests": [...]}``: answers the call at once, *then* sends the
  requests (no call in flight: idle); ``report {}`` returns their answers.
- ``notify {"messages": [...]}``: writes each notification as given, then
  answers ``"sent"``.
- ``flood {"n": N, "method": M, "params": P}``: sends N identical requests at
  once and returns ``{"codes": {code-or-"ok": count}}`` once all are answered.

It never checks capabilities and sends whatever it is told: that is the point.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from typing import Any

out = sys.stdout.buffer
write_lock = threading.Lock()
ids = itertools.count(1)
waiting: dict[str, "list[Any]"] = {}
answered = threading.Condition()
idle_ids: list[str] = []


def send(message: dict[str, Any]) -> None:
    with write_lock:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()


def ask(method: str, params: Any) -> str:
    rid = f"h{next(ids)}"
    with answered:
        waiting[rid] = []
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    send(message)
    return rid


def collect(rids: list[str], timeout: float = 20.0) -> list[Any]:
    with answered:
        answered.wait_for(lambda: all(waiting[r] for r in rids), timeout)
        return [waiting[r][0] if waiting[r] else {"error": "no answer"} for r in rids]


def text(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(value)}]}


def run_tool(rid: Any, name: str, args: dict[str, Any]) -> None:
    if name == "ask":
        requests = args.get("requests", [])
        if args.get("parallel"):
            rids = [ask(r["method"], r.get("params")) for r in requests]
            result = collect(rids)
        else:
            result = [collect([ask(r["method"], r.get("params"))])[0] for r in requests]
        send({"jsonrpc": "2.0", "id": rid, "result": text(result)})
    elif name == "ask_idle":
        send({"jsonrpc": "2.0", "id": rid, "result": text("asking")})
        for r in args.get("requests", []):
            idle_ids.append(ask(r["method"], r.get("params")))
    elif name == "report":
        send({"jsonrpc": "2.0", "id": rid, "result": text(collect(list(idle_ids)))})
    elif name == "notify":
        for message in args.get("messages", []):
            send(message)
        send({"jsonrpc": "2.0", "id": rid, "result": text("sent")})
    elif name == "flood":
        rids = [ask(args["method"], args.get("params")) for _ in range(int(args["n"]))]
        codes: dict[str, int] = {}
        for answer in collect(rids):
            key = str(answer["error"]["code"]) if isinstance(answer.get("error"), dict) else "ok"
            codes[key] = codes.get(key, 0) + 1
        send({"jsonrpc": "2.0", "id": rid, "result": text({"codes": codes})})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}})


def main() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method = message.get("method")
        if method is None:
            answer = {k: message[k] for k in ("result", "error") if k in message}
            with answered:
                if message.get("id") in waiting:
                    waiting[message["id"]].append(answer)
                    answered.notify_all()
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}})
        elif method == "tools/call":
            params = message["params"]
            threading.Thread(target=run_tool, args=(message["id"], params["name"], params.get("arguments", {})), daemon=True).start()
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


if __name__ == "__main__":
    main()
