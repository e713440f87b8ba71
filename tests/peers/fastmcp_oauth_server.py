"""A FastMCP server protected by FastMCP's own in-memory OAuth provider (authorization server included).

Run with the FastMCP venv's Python (peers/setup.sh installs fastmcp, pinned)::

    python fastmcp_oauth_server.py [--http] --port PORT   (always Streamable HTTP)

The MCP endpoint is ``http://127.0.0.1:PORT/mcp``; FastMCP serves the
protected resource metadata, the authorization server metadata,
registration, authorization (which grants at once, as a test provider
does), tokens with a one-hour lifetime and rotating refresh tokens. Tools:
``whoami`` (the scopes of the token it was called with) and ``add``. Two
routes stand for what only time or an administrator does to a real server:
``POST /test/expire`` makes every access token expired now (FastMCP's
provider then drops a token's refresh token too when it is shown the
expired one), ``POST /test/revoke`` forgets every token.
"""

from __future__ import annotations

import argparse
import time

from fastmcp import FastMCP
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider
from fastmcp.server.dependencies import get_access_token
from mcp.server.auth.settings import ClientRegistrationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse


def build(port: int) -> FastMCP:
    provider = InMemoryOAuthProvider(
        base_url=f"http://127.0.0.1:{port}",
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp", "admin"], default_scopes=["mcp"]),
        required_scopes=["mcp"],
    )
    mcp = FastMCP("fastmcp-oauth-peer", auth=provider)

    @mcp.tool
    def whoami() -> str:
        """The scopes of the access token this call carried."""
        token = get_access_token()
        return " ".join(token.scopes) if token is not None else "anonymous"

    @mcp.tool
    def add(a: int, b: int) -> int:
        """a + b."""
        return a + b

    @mcp.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> JSONResponse:
        for token in provider.access_tokens.values():
            token.expires_at = int(time.time()) - 1
        return JSONResponse({"expired": len(provider.access_tokens)})

    @mcp.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> JSONResponse:
        counts = {"access": len(provider.access_tokens), "refresh": len(provider.refresh_tokens)}
        provider.access_tokens.clear()
        provider.refresh_tokens.clear()
        return JSONResponse(counts)

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true", help="accepted for the tests' peer starter; this server is HTTP only")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    build(args.port).run(transport="http", host="127.0.0.1", port=args.port, path="/mcp", show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
