#!/usr/bin/env python3
"""benchmarks/soak_server.py -- the FastMCP server benchmarks/soak.py keeps killing and starting again.

Run with FastMCP's interpreter (``peers/setup.sh`` installs one); stdio by
default, ``--http --port P`` for Streamable HTTP at ``http://127.0.0.1:P/mcp``.
``SOAK_LOG`` names a file every tool appends ``<tool> <nonce>`` to when it
begins, flushed at once, so that what each run of the server executed
survives its death; ``SOAK_PID`` a file the server writes its pid to.

Tools (each takes the caller's ``nonce``):

- ``work``: no hint, so never sent twice by a client that cannot know whether it ran;
- ``lookup``: ``readOnlyHint``, so a client may send it again after a failure;
- ``form``: asks the client a form (``ok``, a boolean), returns the answer's action;
- ``progress``: reports ``steps`` progress notifications 0.1 s apart.

Resource ``soak://status``: this process's pid.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass

from fastmcp import Context, FastMCP

LOG = os.environ.get("SOAK_LOG")


def note(tool: str, nonce: str) -> None:
    """Append what runs now to the shared log (one write, flushed: a SIGKILL loses nothing written)."""
    if LOG:
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{tool} {nonce}\n".encode())
        finally:
            os.close(fd)


@dataclass
class Confirm:
    ok: bool


def build() -> FastMCP:
    mcp = FastMCP("soak")

    @mcp.tool
    def work(nonce: str) -> str:
        """Do something that must happen once."""
        note("work", nonce)
        return nonce

    @mcp.tool(annotations={"readOnlyHint": True})
    def lookup(nonce: str) -> str:
        """Read something: safe to ask twice."""
        note("lookup", nonce)
        return nonce

    @mcp.tool
    async def form(nonce: str, ctx: Context) -> str:
        """Ask the user to confirm."""
        note("form", nonce)
        answer = await ctx.elicit("Confirm?", response_type=Confirm)
        return answer.action

    @mcp.tool
    async def progress(nonce: str, ctx: Context, steps: int = 5) -> str:
        """Report progress ``steps`` times."""
        note("progress", nonce)
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
            await asyncio.sleep(0.1)
        return nonce

    @mcp.resource("soak://status")
    def status() -> str:
        """This server's pid."""
        return str(os.getpid())

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    pid_file = os.environ.get("SOAK_PID")
    if pid_file:
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    server = build()
    if args.http:
        server.run(transport="http", host="127.0.0.1", port=args.port, path="/mcp", show_banner=False, log_level="warning")
    else:
        server.run(transport="stdio", show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
