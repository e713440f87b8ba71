"""The demo: the terminal handler against the embedded demo server.

``python -m mcp_input_sync demo`` starts ``mcp_input_sync._demo_server`` as a
subprocess over stdio and makes three calls: ``plan_trip`` (a log, a roots
request, a form and a sampling request, with progress), ``book_hotel`` (a
URL elicitation, never opened) and ``pack_bags`` (a long call with a
progress bar). A :class:`~mcp_input_sync.terminal.TerminalHandler` answers:
it asks the user when stdin is a terminal, and takes the defaults without
asking otherwise or with ``--yes``. Sampling replies come from a canned
"demo model" after approval. The handler is given the current folder as its
one root, as ``--root .`` would: a terminal handler offers no root unless
given one, and the demo server only prints what it gets.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, TextIO

from .client import connect_stdio
from .errors import ClientError
from .terminal import TerminalHandler

DEMO_REPLY = "Walk up to the Castelo de São Jorge at sunset."

CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("plan_trip", {"city": "Lisbon"}),
    ("book_hotel", {"city": "Lisbon"}),
    ("pack_bags", {"items": 5, "delay": 0.2}),
)


def demo_model(params: dict[str, Any]) -> str:
    """The demo's stand-in for an LLM: always the same suggestion."""
    return DEMO_REPLY


def _plural(n: int) -> str:
    return f"{n} server request" + ("" if n == 1 else "s")


def run_demo(
    out: Optional[TextIO] = None,
    *,
    assume_yes: bool = False,
    stdin: Optional[TextIO] = None,
) -> int:
    """Run the demo, printing to ``out`` (stdout by default). Returns an exit code.

    The handler asks on ``stdin`` when it is a terminal and ``assume_yes`` is
    false; otherwise it accepts the defaults.
    """
    out = out or sys.stdout
    stdin = stdin or sys.stdin
    try:
        interactive = stdin.isatty() and not assume_yes
    except (AttributeError, ValueError):
        interactive = False
    handler = TerminalHandler(
        stdin=stdin, stdout=out, assume_yes=not interactive, model=demo_model, model_name="demo-model", roots=[os.getcwd()]
    )
    command = [sys.executable, "-m", "mcp_input_sync._demo_server"]
    mode = "interactive" if interactive else "accepting the defaults (--yes)"
    print(f"mcp_input_sync demo: calling the embedded demo server over stdio, {mode}", file=out)
    failed = False
    try:
        with connect_stdio(command, handler=handler, server_id="demo", name="mcp-input-sync-demo", timeout=30) as client:
            print(f"connected: {client.era} era, protocol {client.protocol_version}", file=out)
            tools = [t["name"] for t in client.list_tools()]
            print(f"tools: {', '.join(tools)}", file=out, flush=True)
            for name, arguments in CALLS:
                served = client.stats["served"]
                args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
                handler.say(f"call {name}({args}):")
                result = client.call_tool(name, arguments, progress=handler.progress)
                text = " ".join(block.get("text", "") for block in result.get("content", []))
                status = "error" if result.get("isError") else "ok"
                failed = failed or bool(result.get("isError"))
                handler.say(f"result ({status}): {text}")
                handler.say(f"answered {_plural(client.stats['served'] - served)}")
            handler.say(f"answered {_plural(client.stats['served'])} in all")
    except ClientError as exc:
        print(f"demo failed: {exc}", file=out)
        return 4
    except KeyboardInterrupt:
        print("demo interrupted", file=out)
        return 130
    if handler.refusals:
        return 3
    return 1 if failed else 0
