"""A FastMCP 4.1.6 server for the client's surface: completion, logs, ``_meta``, output schemas, ``x-mcp-header``.

Run with the FastMCP venv's Python (peers/setup.sh installs fastmcp, pinned)::

    python fastmcp_surface_server.py                  # stdio
    python fastmcp_surface_server.py --http --port P  # Streamable HTTP, http://127.0.0.1:P/mcp

Tools:

- ``weather(city)``: a typed result; FastMCP lists its ``outputSchema``
  (``temperature`` number, ``conditions`` string) and answers
  ``structuredContent`` ``{"temperature": 21.5, "conditions": "sunny in <city>"}``.
- ``bad_weather()``: declares the same ``outputSchema`` but answers
  ``structuredContent`` ``{"temperature": "warm"}`` (FastMCP sends it unchecked).
- ``show_meta()``: the sorted keys of the request's ``_meta`` as JSON text.
- ``region(region, query)``: ``region`` carries ``x-mcp-header: Region``;
  returns ``"<region>: <query>"``.
- ``levels()``: one log entry at each of debug, info, warning and error.

Prompt ``team(department, name)``; ``completion/complete`` completes
``department`` (Engineering, Marketing, Sales; by prefix) and ``name`` (the
members of ``context.arguments.department``).
"""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel, Field
from peer_cli import serve_fastmcp  # tests/peers: the script's own folder

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

DEPARTMENTS = {"Engineering": ["Ada", "Alan", "Grace"], "Marketing": ["Mia"], "Sales": ["Sam", "Sue"]}
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature", "conditions"],
}


class Weather(BaseModel):
    temperature: float
    conditions: str


def build() -> FastMCP:
    mcp = FastMCP("fastmcp-surface")

    @mcp.tool
    def weather(city: str) -> Weather:
        """The weather, as structured content."""
        return Weather(temperature=21.5, conditions=f"sunny in {city}")

    @mcp.tool(output_schema=WEATHER_SCHEMA)
    def bad_weather() -> ToolResult:
        """Structured content that does not match the declared schema."""
        return ToolResult(content="warm", structured_content={"temperature": "warm"})

    @mcp.tool
    def show_meta(ctx: Context) -> str:
        """The keys of this request's _meta."""
        meta = ctx.request_context.meta if ctx.request_context is not None else None
        return json.dumps(sorted(dict(meta or {})))

    @mcp.tool
    def region(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], query: str) -> str:
        """Runs a query in a region."""
        return f"{region}: {query}"

    @mcp.tool
    async def levels(ctx: Context) -> str:
        """One log entry per level."""
        await ctx.debug("debug")
        await ctx.info("info")
        await ctx.warning("warning")
        await ctx.error("error")
        return "logged"

    @mcp.prompt
    def team(department: str, name: str) -> str:
        """Pick a lead for a department."""
        return f"{name} leads {department}"

    @mcp.completion
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        chosen = (getattr(context, "arguments", None) or {}) if context is not None else {}
        if argument.name == "department":
            return [d for d in DEPARTMENTS if d.startswith(argument.value)]
        if argument.name == "name":
            return [n for n in DEPARTMENTS.get(chosen.get("department", ""), []) if n.startswith(argument.value)]
        return []

    return mcp


def main() -> None:
    serve_fastmcp(build, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
