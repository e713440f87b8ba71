"""What the safety checks tell a handler: sensitive form fields and URL facts."""

import threading

import mcp_input_sync as mis
from mcp_input_sync.transports import memory_pair


class Careful(mis.InputHandler):
    def elicitation_modes(self):
        return ("form", "url")

    def handle_elicitation(self, params, ctx):
        if ctx.mode == "url":
            # Show ctx.host (and warn when ctx.idn or ctx.origin_mismatch); never open it yourself.
            print(f"url: host={ctx.host} idn={ctx.idn} origin_mismatch={ctx.origin_mismatch}")
            return {"action": "decline"}
        masked = [name for name, facts in ctx.fields.items() if facts["sensitive_suspected"]]
        print("form: mask", masked)
        return {"action": "accept", "content": {"user": "ada", "pin": "0000"}}


def server(peer):  # a handshake-era (2025-11-25) server: the client uses protocol="legacy"
    hello = peer.recv()
    peer.send({"jsonrpc": "2.0", "id": hello["id"], "result": {
        "protocolVersion": hello["params"]["protocolVersion"], "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"}}})
    peer.recv()  # notifications/initialized
    asks = [
        {"message": "Log in", "requestedSchema": {"type": "object", "properties": {
            "user": {"type": "string"}, "pin": {"type": "string", "title": "PIN"}}}},
        {"mode": "url", "message": "Connect", "elicitationId": "e1", "url": "https://bücher.example/connect"},
        {"mode": "url", "message": "Click", "elicitationId": "e2", "url": "javascript:alert(1)"},
    ]
    for n, params in enumerate(asks, 1):
        peer.send({"jsonrpc": "2.0", "id": n, "method": "elicitation/create", "params": params})
        answer = peer.recv()
        print("server got:", answer.get("result") or answer.get("error"))


transport, peer = memory_pair()
thread = threading.Thread(target=server, args=(peer,))
thread.start()
with mis.Client(transport, handler=Careful(), protocol="legacy", elicitation={"origin": "https://mcp.example.com"}) as client:
    thread.join(10)
    print("refused:", {kind: dict(checks) for kind, checks in client.stats["refused"].items()})
