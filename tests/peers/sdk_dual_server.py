#!/usr/bin/env python3
"""A server on the official SDK (mcp 2.3.0, ``MCPServer``) with tools that need different eras.

Run with an interpreter that has ``mcp==2.3.0`` installed::

    python tests/peers/sdk_dual_server.py                  # stdio
    python tests/peers/sdk_dual_server.py --http --port P  # Streamable HTTP (stateful), http://127.0.0.1:P/mcp

The SDK serves both eras. Over stdio the client's first request picks the
era for the process; over HTTP each request is routed by its
``MCP-Protocol-Version`` header, so a handshake session and 2026-07-28
requests work side by side.

Tools:

- ``echo(text)``: ``text``; works in both eras.
- ``elicit()``: ``ctx.elicit`` with a form (``name`` string required);
  ``"elicit: <action> <name>"``. Needs the handshake era: in 2026-07-28 the
  SDK answers JSON-RPC -32600 "Cannot send 'elicitation/create': this
  transport context has no back-channel ...".
- ``mrtr()``: returns an ``InputRequiredResult`` (key "name", form ``name``
  string required); ``"mrtr: <name>"`` once answered. Needs 2026-07-28: in
  the handshake era the SDK answers -32603 "Handler returned an invalid result".
- ``runs()``: JSON ``{"elicit": n, "mrtr": n}``, how many times each body
  above started (every failure for the wrong era happens inside the body).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel
from peer_cli import serve_sdk  # tests/peers: the script's own folder

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

server = MCPServer(name="sdk-dual", version="1.0.0", log_level="WARNING")
RUNS = {"elicit": 0, "mrtr": 0}


class Name(BaseModel):
    name: str


@server.tool()
async def echo(text: str) -> str:
    return text


@server.tool()
async def elicit(ctx: Context[Any, Any]) -> str:
    RUNS["elicit"] += 1
    answer = await ctx.elicit("Your name?", schema=Name)
    data = getattr(answer, "data", None)
    return f"elicit: {answer.action} {getattr(data, 'name', '')}"


@server.tool()
async def mrtr(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    responses = ctx.input_responses or {}
    if not responses:
        RUNS["mrtr"] += 1
    answer: Any = responses.get("name")
    if answer is not None:
        content = getattr(answer, "content", None) or {}
        return f"mrtr: {content.get('name', '')}"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    form = types.ElicitRequestFormParams(message="Your name?", requested_schema=schema)
    return types.InputRequiredResult(input_requests={"name": types.ElicitRequest(params=form)}, request_state="asked")


@server.tool()
async def runs() -> str:
    return json.dumps(RUNS, sort_keys=True)


def main() -> None:
    serve_sdk(server, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
