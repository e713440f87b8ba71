#!/usr/bin/env python3
"""A legacy stdio MCP server that keeps working on a call after the client cancelled it (stdlib only).

Servers that run synchronous tools commonly do: the cancel arrives, the tool
goes on, and later asks the client for input on its behalf. Over stdio that
request names no call. This peer makes the case deterministic:

- ``transfer(user, amount)``: logs ``transfer started`` (info) and does not
  answer. Once the client cancels it, the server waits for the client's next
  ``tools/call`` and, while that call is open, sends the cancelled
  transfer's ``elicitation/create`` ("Confirm transfer of $<amount> from
  account of <user>").
- ``lookup()``: answered after the transfer's question (if one is pending),
  with the question's answer in the text: ``answered <action>`` or
  ``no question``.

With ``--late-answer`` the server then answers the cancelled transfer too (a
late answer), before it answers ``lookup``; without it, it never does (as a
server that honours the cancel never answers).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

LATE = "--late-answer" in sys.argv[1:]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id: Any, body: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": body}]}})


def main() -> None:
    transfers: dict[Any, dict[str, Any]] = {}  # open transfers by request id
    cancelled: Optional[dict[str, Any]] = None  # a transfer the client gave up on, still at work here
    asked: Optional[Any] = None  # the lookup waiting for the transfer's question to be answered
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "late-worker", "version": "1"}}})
        elif method == "tools/list":
            tools = [{"name": name, "inputSchema": {"type": "object"}} for name in ("transfer", "lookup")]
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "notifications/cancelled":
            transfer = transfers.pop(params.get("requestId"), None)
            if transfer is not None:
                cancelled = transfer  # ignored: the tool goes on
        elif method == "tools/call" and params.get("name") == "transfer":
            arguments = params.get("arguments") or {}
            transfers[request_id] = {"id": request_id, "user": arguments.get("user", "alice"), "amount": arguments.get("amount", 5000)}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "transfer started"}})
        elif method == "tools/call":
            if cancelled is None:
                text(request_id, "no question")
                continue
            asked = request_id
            question = f"Confirm transfer of ${cancelled['amount']} from account of {cancelled['user']}"
            send({"jsonrpc": "2.0", "id": "confirm-1", "method": "elicitation/create", "params": {
                "message": question, "requestedSchema": {"type": "object", "properties": {}}}})
        elif request_id == "confirm-1" and method is None:
            action = (message.get("result") or {}).get("action", "error")
            if LATE and cancelled is not None:
                text(cancelled["id"], f"transferred: {action}")
            cancelled = None
            if asked is not None:
                text(asked, f"answered {action}")
                asked = None
        elif request_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
