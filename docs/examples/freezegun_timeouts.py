"""Test a handler timeout by time travel: a 300 s elicitation timeout fires at once."""

import json
import threading

from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync.transports import memory_pair


class SlowUser(mis.InputHandler):
    asked = threading.Event()

    def handle_elicitation(self, params, ctx):
        self.asked.set()
        ctx.wait_cancelled(10)  # the user walked away; give up when the library says so
        return {"action": "cancel"}


def tiny_server(peer):
    """Answer initialize, then ask for a form; print what the client answered."""
    hello = peer.recv()
    peer.send({"jsonrpc": "2.0", "id": hello["id"], "result": {
        "protocolVersion": hello["params"]["protocolVersion"], "capabilities": {},
        "serverInfo": {"name": "tiny", "version": "1"}}})
    peer.recv()  # notifications/initialized
    peer.send({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {
        "message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
    print("server got:", json.dumps(peer.recv()["error"]))


with freeze_time("2026-01-01") as frozen:
    transport, peer = memory_pair()
    server = threading.Thread(target=tiny_server, args=(peer,))
    server.start()
    handler = SlowUser()
    with mis.Client(transport, handler=handler, protocol="legacy") as client:  # tiny_server speaks only the handshake era
        handler.asked.wait(5)  # the form is on screen
        frozen.tick(301)  # past the 300 s elicitation handler_timeout
        server.join(5)
        print("timed out:", client.stats["timed_out"])
