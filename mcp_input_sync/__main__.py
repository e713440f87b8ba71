"""Command line: ``python -m mcp_input_sync demo`` (console script ``mcp-input-sync``)."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp-input-sync", description="A synchronous MCP client that answers servers' input requests.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the scripted demo against the embedded demo server")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo()
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
