"""One test, two real peers: the in-memory fake server and the official SDK over stdio.

``Peer`` hides which one a test talks to. Both offer the same tools (see
``fakeserver.STANDARD_TOOLS`` and ``peers/sdk_legacy_server.py``), record
every message the client sends and receives, and validate what the client
sends against the official JSON schema of the negotiated version.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import mcp_input_sync as mis
from mcp_input_sync.transports import StdioTransport
from mcp_input_sync.transports.base import OnClose, OnMessage

from .fakeserver import STANDARD_TOOLS, FakeServer
from .recorder import Recorder, _key

PEERS_DIR = Path(__file__).parent / "peers"
SDK_SERVER = [sys.executable, str(PEERS_DIR / "sdk_legacy_server.py")]

JsonDict = dict[str, Any]


class RecordingStdio(StdioTransport):
    """A stdio transport that shows a Recorder both directions."""

    def __init__(self, command: list[str], recorder: Recorder, **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self.recorder = recorder

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        recorder = self.recorder

        def tap(data: bytes) -> None:
            recorder.on_inbound(data)
            on_message(data)

        super().start(tap, on_close)

    def send(self, data: bytes) -> None:
        # record first: once written, the server may answer and the test move on
        self.recorder.on_sent(data)
        super().send(data)


class Peer:
    """A server for one test: ``kind`` is "memory" or "sdk"."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.clients: list[mis.Client] = []
        self.fake: Optional[FakeServer] = None
        self.recorder = Recorder()

    def client(self, handler: Optional[mis.InputHandler] = None, *, open: bool = True, **options: Any) -> mis.Client:
        if self.kind == "memory":
            self.fake = FakeServer(tools=STANDARD_TOOLS)
            self.recorder = self.fake.recorder
            transport: Any = self.fake.transport
        else:
            transport = RecordingStdio(SDK_SERVER, self.recorder)
        client = mis.Client(transport, handler=handler, **options)
        self.clients.append(client)
        if open:
            client.open()
            self.recorder.version = client.protocol_version
        return client

    @property
    def sent(self) -> list[JsonDict]:
        return self.recorder.sent

    @property
    def inbound(self) -> list[JsonDict]:
        return self.recorder.inbound

    def inbound_requests(self, method: str) -> list[JsonDict]:
        return [m for m in self.inbound if m.get("method") == method and "id" in m]

    def answers_to(self, request_id: Any) -> list[JsonDict]:
        return [m for m in self.sent if "method" not in m and _key(m.get("id")) == _key(request_id)]

    def sent_method(self, method: str) -> list[JsonDict]:
        return [m for m in self.sent if m.get("method") == method]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        if self.fake is not None:
            self.fake.close()


def tool_text(result: JsonDict) -> str:
    """The text of a CallToolResult's first content block."""
    return str(result["content"][0]["text"])


def tool_json(result: JsonDict) -> Any:
    assert not result.get("isError"), result
    return json.loads(tool_text(result))
