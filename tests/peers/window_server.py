#!/usr/bin/env python3
"""A fast stdio MCP server (stdlib only) that keeps a window of elicitations open.

``tools/call elicit_window {"n": N, "window": W}`` sends W form elicitations,
then one more each time an answer arrives (reading and writing in one tight
loop, as fast as the pipe goes), until N have been answered. The result's
text is JSON ``{"accepted": A, "errors": {code: count}}``.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    inp = sys.stdin.buffer

    def send(msg: dict) -> None:
        out.write(json.dumps(msg).encode() + b"\n")
        out.flush()

    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}
    for line in inp:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "window", "version": "1"}}})
        elif method == "tools/call":
            args = msg["params"].get("arguments", {})
            n, window = int(args.get("n", 100)), int(args.get("window", 8))
            sent = answered = accepted = 0
            errors: dict[str, int] = {}
            while sent < min(window, n):
                sent += 1
                send({"jsonrpc": "2.0", "id": f"e{sent}", "method": "elicitation/create", "params": form})
            while answered < n:
                reply = json.loads(inp.readline())
                if "method" in reply:
                    continue
                answered += 1
                if "error" in reply:
                    code = str(reply["error"]["code"])
                    errors[code] = errors.get(code, 0) + 1
                else:
                    accepted += 1
                if sent < n:
                    sent += 1
                    send({"jsonrpc": "2.0", "id": f"e{sent}", "method": "elicitation/create", "params": form})
            text = json.dumps({"accepted": accepted, "errors": errors})
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}]}})
        elif "id" in msg and method is not None:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
