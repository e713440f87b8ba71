#!/usr/bin/env python3
"""benchmarks/curve_server.py -- the cheap stdio MCP server behind benchmarks/curves.py.

    python curve_server.py [--tools N] [--page P]

One thread, standard library only, legacy era only (``initialize`` answers
2025-11-25, or the client's 2025-06-18; ``server/discover`` gets -32601, so a
probing client falls back). Replies are encoded once and reused, so in a
benchmark the client is what costs time.

Tools
    echo {text}   completes at once: ``content[0].text`` is ``text``.
    blob {size}   completes at once with one text content of ``size`` bytes
                  (ASCII ``x``); each size's reply is encoded once, then cached.

``tools/list`` lists ``echo``, ``blob`` and N synthetic tools ``tool_00000`` ...
(default N=0), P per page (default 100), with ``nextCursor`` = the offset of the
next page as a decimal string. Each synthetic tool has a description and an
input schema of three properties (about 330 bytes of JSON).

``ping`` gets ``{}``; notifications need no reply; anything else -32601.
Exit at stdin EOF.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

VERSIONS = ("2025-11-25", "2025-06-18")
INFO = {"name": "curve-server", "version": "1.0"}
CAPS = {"tools": {"listChanged": False}}

_dumps = json.JSONEncoder(separators=(",", ":")).encode

BASE_TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "description": "completes at once with its text",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "blob", "description": "completes at once with size bytes of text",
     "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}},
]


def synthetic_tool(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i:05d}",
        "description": f"Synthetic tool number {i} of the paged listing benchmark; it does nothing at all.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "a city name"},
                "days": {"type": "integer", "minimum": 1, "maximum": 30},
                "notes": {"type": "string"},
            },
            "required": ["city"],
        },
    }


class CurveServer:
    def __init__(self, n_tools: int, page: int, out: BinaryIO) -> None:
        self.out = out
        tools = BASE_TOOLS + [synthetic_tool(i) for i in range(n_tools)]
        page = max(1, page)
        #: offset -> the encoded ``result`` object of that page
        self.pages: dict[int, bytes] = {}
        for start in range(0, len(tools), page):
            result: dict[str, Any] = {"tools": tools[start:start + page]}
            if start + page < len(tools):
                result["nextCursor"] = str(start + page)
            self.pages[start] = _dumps(result).encode()
        self.blobs: dict[int, bytes] = {}

    def send_result(self, rid: Any, result: bytes) -> None:
        self.out.write(b'{"jsonrpc":"2.0","id":' + _dumps(rid).encode() + b',"result":' + result + b"}\n")
        self.out.flush()

    def send_error(self, rid: Any, code: int, message: str) -> None:
        self.out.write(_dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode()
                       + b"\n")
        self.out.flush()

    def blob(self, size: int) -> bytes:
        found = self.blobs.get(size)
        if found is None:
            found = b'{"content":[{"type":"text","text":"' + b"x" * size + b'"}],"isError":false}'
            self.blobs[size] = found
        return found

    def loop(self, source: BinaryIO) -> None:
        for line in iter(source.readline, b""):
            if line.isspace():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.send_error(None, -32700, "parse error")
                continue
            if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
                continue  # notifications and answers need no reply
            rid, method = msg["id"], msg["method"]
            found = msg.get("params")
            params: dict[str, Any] = found if isinstance(found, dict) else {}
            if method == "tools/call":
                given = params.get("arguments")
                args: dict[str, Any] = given if isinstance(given, dict) else {}
                name = params.get("name")
                if name == "echo":
                    self.send_result(rid, _dumps({"content": [{"type": "text", "text": str(args.get("text", ""))}],
                                                  "isError": False}).encode())
                elif name == "blob":
                    self.send_result(rid, self.blob(max(0, int(args.get("size", 0)))))
                else:
                    self.send_error(rid, -32602, f"unknown tool: {name}")
            elif method == "tools/list":
                cursor = params.get("cursor")
                try:
                    offset = int(cursor) if cursor is not None else 0
                except (TypeError, ValueError):
                    offset = -1
                if offset not in self.pages:
                    self.send_error(rid, -32602, "invalid cursor")
                else:
                    self.send_result(rid, self.pages[offset])
            elif method == "initialize":
                asked = params.get("protocolVersion")
                self.send_result(rid, _dumps({"protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                                              "capabilities": CAPS, "serverInfo": INFO}).encode())
            elif method == "ping":
                self.send_result(rid, b"{}")
            else:
                self.send_error(rid, -32601, f"method not found: {method}")


def main(argv: list[str]) -> int:
    n_tools = int(argv[argv.index("--tools") + 1]) if "--tools" in argv else 0
    page = int(argv[argv.index("--page") + 1]) if "--page" in argv else 100
    server = CurveServer(n_tools, page, sys.stdout.buffer)
    try:
        server.loop(sys.stdin.buffer)
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
