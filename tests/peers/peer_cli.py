"""The command line the peer servers share: stdio by default, ``--http --port P`` for Streamable HTTP at
``http://127.0.0.1:P/mcp``, with ``--stateless`` and ``--json-response`` for the HTTP modes that leave a tool no
back-channel. Standard library only: the peers run in the SDK's and FastMCP's own environments."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def parse(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port on 127.0.0.1")
    parser.add_argument("--stateless", action="store_true", help="over HTTP: stateless_http=True (no session)")
    parser.add_argument("--json-response", action="store_true", help="over HTTP: json_response=True (no SSE)")
    return parser.parse_args()


def _modes(args: argparse.Namespace) -> dict[str, bool]:
    """The HTTP modes asked for: a stateless server, or one answering JSON only, has no back-channel."""
    return {key: True for key, wanted in (("stateless_http", args.stateless), ("json_response", args.json_response)) if wanted}


def serve_sdk(server: Any, description: str) -> None:
    """Run an official-SDK ``MCPServer`` as the command line says."""
    args = parse(description)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port, streamable_http_path="/mcp", **_modes(args))
    else:
        server.run("stdio")


def serve_fastmcp(build: Callable[[], Any], description: str) -> None:
    """Build a FastMCP server and run it as the command line says, quietly."""
    args = parse(description)
    server = build()
    if args.http:
        server.run(transport="http", host="127.0.0.1", port=args.port, path="/mcp", show_banner=False, log_level="warning", **_modes(args))
    else:
        server.run(transport="stdio", show_banner=False, log_level="warning")
