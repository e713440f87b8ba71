"""Answer a server's form, roots and sampling requests from plain Python."""

import sys

import mcp_input_sync as mis


class MyHandler(mis.InputHandler):
    def handle_elicitation(self, params, ctx):
        # Fill every field that has a default; a real host would ask the user.
        fields = params["requestedSchema"]["properties"]
        answer = {name: spec["default"] for name, spec in fields.items() if "default" in spec}
        answer["budget"] = 900
        return {"action": "accept", "content": answer}

    def list_roots(self, ctx):
        return {"roots": [{"uri": "file:///home/me/projects", "name": "projects"}]}

    def handle_sampling(self, params, ctx):
        # This method is the approval point: show the prompt, call your LLM, review the reply.
        return {"role": "assistant", "content": {"type": "text", "text": "See the tiles museum."}, "model": "my-llm"}


server = [sys.executable, "-m", "mcp_input_sync._demo_server"]  # any MCP server's argv
with mis.connect_stdio(server, handler=MyHandler(), name="my-app", server_id="trips") as client:
    result = client.call_tool("plan_trip", {"city": "Porto"})
    print(result["content"][0]["text"])
