"""A transport that answers each request on the sending thread: the unit tests' stand-in for a server.

Subclasses say what to answer (:meth:`AnswersOnSend.reply_to`); every message
sent is kept with what the client said it is (``sent``).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from mcp_input_sync.transports.base import OnClose, OnMessage, Outgoing, Transport

JsonDict = dict[str, Any]


class AnswersOnSend(Transport):
    """Hands the answer to each request to the client before ``send`` returns."""

    def __init__(self) -> None:
        self.sent: list[tuple[JsonDict, Outgoing]] = []
        self._on_message: Optional[OnMessage] = None

    def reply_to(self, message: JsonDict) -> Optional[JsonDict]:
        """The answer to one request: a result, or ``{"error": {...}}``; None sends nothing."""
        raise NotImplementedError

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._on_message = on_message

    def send(self, data: bytes, info: Outgoing) -> None:
        message = json.loads(data)
        self.sent.append((message, info))
        if "id" not in message or "method" not in message:
            return
        answer = self.reply_to(message)
        if answer is None:
            return
        reply: JsonDict = {"jsonrpc": "2.0", "id": message["id"]}
        reply.update(answer if "error" in answer else {"result": answer})
        assert self._on_message is not None
        self._on_message(json.dumps(reply).encode())

    def close(self, timeout: float) -> None:
        pass
