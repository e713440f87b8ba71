#!/usr/bin/env python3
"""An MCP server on the official SDK (mcp 2.3.0, ``MCPServer``) for the client's surface: completion, logs,
``_meta``, output schemas and ``x-mcp-header``, in both eras.

Run with an interpreter that has ``mcp==2.3.0`` installed::

    python tests/peers/sdk_surface_server.py                  # stdio: the first request picks the era
    python tests/peers/sdk_surface_server.py --http --port P  # Streamable HTTP, http://127.0.0.1:P/mcp

Tools:

- ``weather(city)``: a typed result; the SDK lists an ``outputSchema``
  (``temperature`` number, ``conditions`` string, both required) and answers
  ``structuredContent`` ``{"temperature": 21.5, "conditions": "sunny in <city>"}``.
- ``show_meta()``: the keys of the request's ``_meta``, sorted, as JSON text.
- ``region(region, query)``: ``region`` carries ``x-mcp-header: Region``; over
  2026-07-28 HTTP the SDK answers -32020 when the ``Mcp-Param-Region`` header
  is missing or does not match; returns ``"<region>: <query>"``.
- ``levels()``: one log entry at each of debug, info, warning and error
  (logger ``surface``, data the level's name), as the request's level
  allows; returns ``"logged"``.

``logging/setLevel`` (handshake era) is answered ``{}``; the entries are not
filtered by it. In the 2026-07-28 era the SDK sends a request's entries at or
above the ``io.modelcontextprotocol/logLevel`` of its ``_meta``, none without it.

Prompt ``team(department, name)`` and resource template
``team://{department}/members``; ``completion/complete`` completes
``department`` (Engineering, Marketing, Sales; by prefix) and ``name`` (the
members of ``context.arguments.department``), for the prompt and the template alike.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field
from peer_cli import serve_sdk  # tests/peers: the script's own folder

DEPARTMENTS = {"Engineering": ["Ada", "Alan", "Grace"], "Marketing": ["Mia"], "Sales": ["Sam", "Sue"]}

server: MCPServer[Any] = MCPServer("sdk-surface")


class Weather(BaseModel):
    temperature: float
    conditions: str


@server.tool()
def weather(city: str) -> Weather:
    """The weather, as structured content."""
    return Weather(temperature=21.5, conditions=f"sunny in {city}")


@server.tool()
def show_meta(ctx: Context[Any, Any]) -> str:
    """The keys of this request's _meta."""
    meta = ctx.request_context.meta
    return json.dumps(sorted(dict(meta or {})))


@server.tool()
def region(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], query: str) -> str:
    """Runs a query in a region (the region travels in a header over HTTP)."""
    return f"{region}: {query}"


@server.tool()
async def levels(ctx: Context[Any, Any]) -> str:
    """One log entry per level."""
    await ctx.debug("debug", logger_name="surface")
    await ctx.info("info", logger_name="surface")
    await ctx.warning("warning", logger_name="surface")
    await ctx.error("error", logger_name="surface")
    return "logged"


@server.prompt()
def team(department: str, name: str) -> str:
    """Pick a lead for a department."""
    return f"{name} leads {department}"


@server.resource("team://{department}/members")
def members(department: str) -> str:
    """The members of a department."""
    return ", ".join(DEPARTMENTS.get(department, []))


@server.completion()
async def complete(ref: Any, argument: types.CompletionArgument, context: types.CompletionContext | None) -> types.Completion:
    chosen = (context.arguments or {}) if context is not None else {}
    if argument.name == "department":
        values = [d for d in DEPARTMENTS if d.startswith(argument.value)]
    elif argument.name == "name":
        values = [n for n in DEPARTMENTS.get(chosen.get("department", ""), []) if n.startswith(argument.value)]
    else:
        values = []
    return types.Completion(values=values, total=len(values), has_more=False)


LEVELS: list[str] = []


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """Handshake era: ``logging/setLevel`` is answered (and remembered; entries are not filtered by it)."""
    LEVELS.append(params.level)
    return types.EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


def main() -> None:
    serve_sdk(server, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
