"""What every part of the testing kit shares: the JSON shapes, the constants, the errors, the records.

Nothing here knows a server, a thread or an era; the rest of the kit
builds on it. Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Optional, Union

JsonDict = dict[str, Any]
#: What a tool function returns: a ``CallToolResult`` dict, or a text (made a text result).
ToolResult = Union[JsonDict, str]

LEGACY_VERSION = "2025-11-25"
FORCEABLE = ("2025-11-25", "2025-06-18")
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO: JsonDict = {"name": "fake-server", "version": "1"}
STEP = 0.02  # real seconds between checks of a bounded wait


def text_result(text: str, is_error: bool = False) -> JsonDict:
    """A ``CallToolResult`` holding one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class ToolError(Exception):
    """Raise from a tool to answer the call with a JSON-RPC error (``code``, ``message``, ``data``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def error(self) -> JsonDict:
        err: JsonDict = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class ClientRefused(Exception):
    """Legacy era: the client answered a server request with a JSON-RPC error.

    Raised by :meth:`ToolCall.request` (and the helpers built on it). A tool
    that lets it escape answers its call with an ``isError`` result naming it.
    """

    def __init__(self, method: str, error: JsonDict) -> None:
        code = error.get("code")
        self.method = method
        self.code: Optional[int] = code if type(code) is int else None
        self.message = str(error.get("message", ""))
        self.data: Any = error.get("data")
        super().__init__(f"the client refused {method}: {self.code} {self.message}")


class NeedInput(BaseException):
    """Modern era: the tool asked for input it has no answer for yet (never seen by tool code
    that catches ``Exception``)."""

    def __init__(self, key: str, request: JsonDict) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


class Closed(BaseException):
    """The fake closed while a tool waited on the client."""


@dataclass
class Exchange:
    """One request for input the fake made, and how the client answered it.

    Legacy: a server-to-client request and its response. Modern: an input
    request of an ``input_required`` round (or a task) and the matching
    ``inputResponses`` entry.
    """

    #: ``elicitation/create``, ``sampling/createMessage``, ``roots/list``, ...
    method: str
    #: The request's params (None when it had none).
    params: Optional[JsonDict]
    #: Legacy: the JSON-RPC id; modern: the input request's key.
    key: Any
    #: The client's result, once it answered with one.
    result: Optional[JsonDict] = None
    #: The client's JSON-RPC error (legacy only), once it answered with one.
    error: Optional[JsonDict] = None
    #: Modern: the chain (call or task) the key belongs to.
    chain: str = ""

    @property
    def answered(self) -> bool:
        return self.result is not None or self.error is not None


def id_key(request_id: Any) -> str:
    """A request id as a dict key: ``1`` and ``"1"`` stay apart."""
    return json.dumps(request_id, sort_keys=True)


def now() -> str:
    """The time now, UTC, as the tasks' ``createdAt`` and ``lastUpdatedAt`` show it."""
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")
