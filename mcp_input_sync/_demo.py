"""The non-interactive demo: a scripted handler against the embedded demo server.

``python -m mcp_input_sync demo`` starts ``mcp_input_sync._demo_server`` as a
subprocess over stdio and calls its ``plan_trip`` tool. In the middle of
that call the server writes a log entry and asks for roots, a form and an
LLM completion; the scripted handler below answers each and says so.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional, TextIO

from .client import connect_stdio
from .errors import ClientError
from .handler import InputContext, InputHandler


class ScriptedHandler(InputHandler):
    """Answers the demo server's requests without asking anyone."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def list_roots(self, ctx: InputContext) -> dict[str, Any]:
        roots = [{"uri": "file:///home/demo/trips", "name": "trips"}]
        self.say(f"  roots      server {ctx.server_id!r} asked which folders it may use -> {roots[0]['uri']}")
        return {"roots": roots}

    def handle_elicitation(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        schema = params.get("requestedSchema", {})
        fields = ", ".join(schema.get("properties", {}))
        content: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            if "default" in prop:
                content[name] = prop["default"]
        content.setdefault("budget", 1500)
        content.setdefault("start", "2027-05-01")
        self.say(f"  form       {params.get('message')!r} with fields [{fields}] -> accept {json.dumps(content)}")
        return {"action": "accept", "content": content}

    def handle_sampling(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        prompt = params["messages"][-1]["content"].get("text", "")
        reply = "Walk up to the Castelo de São Jorge at sunset."
        self.say(f"  sampling   prompt {prompt!r} (maxTokens {params.get('maxTokens')}) -> {reply!r}")
        return {"role": "assistant", "content": {"type": "text", "text": reply}, "model": "scripted-demo-model", "stopReason": "endTurn"}

    def handle_log(self, entry: dict[str, Any], ctx: InputContext) -> None:
        self.say(f"  log        [{entry['level']}] {entry.get('logger', '')}: {entry.get('data')}")


def run_demo(out: Optional[TextIO] = None) -> int:
    """Run the demo, printing to ``out`` (stdout by default). Returns an exit code."""
    out = out or sys.stdout
    handler = ScriptedHandler(out)
    command = [sys.executable, "-m", "mcp_input_sync._demo_server"]
    print("mcp_input_sync demo: calling the embedded demo server over stdio", file=out)
    try:
        with connect_stdio(command, handler=handler, server_id="demo", timeout=30) as client:
            print(f"connected: {client.era} era, protocol {client.protocol_version}", file=out)
            tools = [t["name"] for t in client.list_tools()]
            print(f"tools: {', '.join(tools)}", file=out)
            print("call plan_trip(city='Lisbon'):", file=out, flush=True)

            def progress(update: dict[str, Any]) -> None:
                print(f"  progress   {update.get('progress')}/{update.get('total')} {update.get('message', '')}", file=out, flush=True)

            result = client.call_tool("plan_trip", {"city": "Lisbon"}, progress=progress)
            text = " ".join(block.get("text", "") for block in result.get("content", []))
            status = "error" if result.get("isError") else "ok"
            print(f"result ({status}): {text}", file=out)
            print(f"answered {client.stats['served']} server requests", file=out)
            return 1 if result.get("isError") else 0
    except ClientError as exc:
        print(f"demo failed: {exc}", file=out)
        return 4
