#!/usr/bin/env python3
"""A hostile stdio MCP server for shutdown tests (stdlib only).

It answers ``initialize``, and on any ``tools/call`` sends one form
``elicitation/create`` and never answers the call. It ignores stdin EOF and
SIGTERM, so only SIGKILL ends it: the client's shutdown must escalate.
"""

from __future__ import annotations

import json
import signal
import sys
import threading


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stubborn", "version": "1"},
            }
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        elif method == "tools/call":
            ask = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "elicitation/create",
                "params": {
                    "message": "never mind the answer",
                    "requestedSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
                },
            }
            out.write(json.dumps(ask) + "\n")
        out.flush()
    print("stubborn: stdin closed, staying alive", file=sys.stderr, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
