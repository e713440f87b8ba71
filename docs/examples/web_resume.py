"""A web host's flow in the 2026-07-28 era: defer the server's question, ask the user later, resume.

A request handler calls the tool with ``defer_input=True`` and gets a
``PendingCall`` instead of a blocked thread; it stores ``pending.to_json()``
in the server-side session (not in the page: it is not signed) and renders
the form. When the user submits,
any worker, or another process with a client for the same server, resumes.
"""

import json
import threading

import mcp_input_sync as mis
from mcp_input_sync.transports import memory_pair

V = "2026-07-28"


def modern_server(peer):
    """A tiny stateless server: 'greet' asks for a name once, then greets."""
    while True:
        msg = peer.recv()
        if msg is None:
            return
        if "id" not in msg:
            continue
        params = msg.get("params") or {}
        if msg["method"] == "initialize":  # a 2026-07-28-only server refuses the handshake, naming its versions
            error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": [V]}}
            peer.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
            continue
        if msg["method"] == "server/discover":
            result = {"resultType": "complete", "supportedVersions": [V], "capabilities": {"tools": {}},
                      "ttlMs": 0, "cacheScope": "private"}
        elif msg["method"] == "tools/call" and "inputResponses" not in params:
            result = {"resultType": "input_required", "requestState": "asked-once",
                      "inputRequests": {"who": {"method": "elicitation/create", "params": {
                          "mode": "form", "message": "Your name?",
                          "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}}
        else:
            name = params["inputResponses"]["who"]["content"]["name"]
            result = {"resultType": "complete", "content": [{"type": "text", "text": f"Hello, {name}!"}]}
        peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


class WebForms(mis.InputHandler):
    def handle_elicitation(self, params, ctx):
        raise AssertionError("with defer_input the handler is not called")


transport, peer = memory_pair()
threading.Thread(target=modern_server, args=(peer,), daemon=True).start()
with mis.Client(transport, handler=WebForms()) as client:
    # request 1: the user clicks "greet"
    pending = client.call_tool("greet", defer_input=True)
    stored = pending.to_json()  # into the session
    question = pending.input_requests["who"]["params"]["message"]
    print("render a form asking:", question)

    # request 2, maybe another worker: the user submitted the form
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    result = client.resume(mis.PendingCall.from_json(stored), answer)
    print(result["content"][0]["text"])
    print("state echoed:", json.loads(stored)["request_state"])
