"""A scripted in-memory MCP server for testing your handler, in both protocol eras.

Stdlib only; nothing here starts until you build a :class:`FakeServer`::

    from mcp_input_sync.testing import FakeServer

    with FakeServer(era="legacy") as fake:
        @fake.tool
        def book(call):
            answer = call.elicit("Which seat?", {"type": "object",
                                                  "properties": {"seat": {"type": "string"}}})
            return f"booked {answer['content']['seat']}"

        with fake.client(handler=MyHandler()) as client:
            assert client.call_tool("book")["content"][0]["text"] == "booked 12A"
        fake.assert_answered("elicitation/create", count=1)

The same tool code runs in both eras:

- ``era="legacy"`` (2025-11-25 by default): ``call.elicit`` sends the client
  an ``elicitation/create`` request and blocks (bounded) for its answer.
- ``era="modern"`` (2026-07-28): ``call.elicit`` looks up the answer among
  the call's ``inputResponses``; when it is not there yet, the tool is
  stopped and the fake answers ``input_required`` with that one request and
  a ``requestState`` recording every answer so far. The client answers and
  retries; the fake runs the tool again from the start with the answers
  collected (deterministic replay), so each ``call.elicit`` returns its
  answer in order. Logs and progress already sent are not sent again.

Resources and prompts are static: :meth:`FakeServer.add_resource` serves a
text or a blob at a URI (``resources/list``, ``resources/read``) and
:meth:`FakeServer.add_prompt` a prompt made of messages, or of a function of
its arguments (``prompts/list``, ``prompts/get``), in both eras.

Tools declared ``task=True`` answer, in the modern era, with a task
(``resultType: "task"``) whose input requests are served by ``tasks/get``
and answered by ``tasks/update``; in the legacy era they run as plain tools.

Outside any tool, :meth:`FakeServer.request` asks the client and waits;
:meth:`FakeServer.send_request` sends a request with an id you choose
without waiting, and :meth:`FakeServer.wait_for_answer` waits for the
client's response to that id. :meth:`FakeServer.override` answers a
method with a function of your own (a paged list, a silent handshake), and
the ``on_message`` argument taps every message both ways (to validate or
log the traffic).

The server runs on a daemon thread named ``fake-server-<n>`` and each tool
call on ``fake-server-<n>-tool-<k>``; every wait is bounded (``timeout``,
default 5 real seconds, so freezegun does not stall it).
"""

from __future__ import annotations

# The kit is a package of parts (see server.py for how FakeServer is composed of them); the
# names below are its public face.
from .call import ToolCall
from .server import FakeServer
from .shared import ClientRefused, Exchange, ToolError, text_result

__all__ = [
    "ClientRefused",
    "Exchange",
    "FakeServer",
    "ToolCall",
    "ToolError",
    "text_result",
]
