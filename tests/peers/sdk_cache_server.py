#!/usr/bin/env python3
"""2026-07-28 MCP test peer on the official SDK whose listings and reads say how long they stay good.

Run with an interpreter that has ``mcp==2.3.0`` installed (stdio, or ``--http --port P``)::

    python tests/peers/sdk_cache_server.py

The SDK's ``cache_hints`` put ``ttlMs`` 60000 on every listing and read:
``tools/list`` ``"public"``, the others ``"private"``. The handlers here set
nothing, so those are the hints the client sees.

- resource ``file:///counter.txt``: ``"read N"``, N counting this process's reads of it.
- prompt ``greet``: one user message ``"hello"``.
- tool ``add_tool(name)``: registers a tool ``name`` (it returns ``name``) and
  publishes ``tools/list_changed`` to open ``subscriptions/listen`` streams.
- tool ``touch(uri)``: publishes ``resources/updated`` for ``uri``.
- tool ``reads()``: how many times ``file:///counter.txt`` was read, as text.
- tool ``crash()``: the process exits at once, status 3 (a server that died).
"""

from __future__ import annotations

import os
from typing import Any

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from peer_cli import serve_sdk  # tests/peers: the script's own folder

HOUR = 60_000

server: MCPServer[Any] = MCPServer(
    name="sdk-cache-peer",
    version="1.0.0",
    log_level="WARNING",
    cache_hints={
        "tools/list": CacheHint(ttl_ms=HOUR, scope="public"),
        "prompts/list": CacheHint(ttl_ms=HOUR, scope="private"),
        "resources/list": CacheHint(ttl_ms=HOUR, scope="private"),
        "resources/templates/list": CacheHint(ttl_ms=HOUR, scope="private"),
        "resources/read": CacheHint(ttl_ms=HOUR, scope="private"),
    },
)

_reads = [0]


@server.resource("file:///counter.txt", name="counter", mime_type="text/plain")
def counter() -> str:
    """Counts its reads."""
    _reads[0] += 1
    return f"read {_reads[0]}"


@server.prompt()
def greet() -> str:
    """Says hello."""
    return "hello"


@server.tool()
async def add_tool(name: str, ctx: Context[Any, Any]) -> str:
    """Register a tool ``name`` and tell listeners the tool list changed."""

    def made() -> str:
        return name

    server.add_tool(made, name=name, description=f"added at run time: {name}")
    await ctx.notify_tools_changed()
    return name


@server.tool()
async def touch(uri: str, ctx: Context[Any, Any]) -> str:
    """Tell listeners the resource ``uri`` changed."""
    await ctx.notify_resource_updated(uri)
    return uri


@server.tool()
async def reads() -> str:
    """How many times file:///counter.txt was read."""
    return str(_reads[0])


@server.tool()
async def crash() -> str:
    """Exit at once."""
    os._exit(3)


if __name__ == "__main__":
    serve_sdk(server, "2026-07-28 MCP test peer on the official SDK with cache hints (stdio, or HTTP).")
