"""The legacy era (2025-11-25 and before): the initialize handshake, tools run once, and the
server-to-client requests a tool (or the test, in either era) sends the client and waits on.

Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any, Optional

from .call import Host, ToolCall, outcome
from .recorder import Recorder
from .registry import Registry, Tool
from .shared import LEGACY_VERSION, SERVER_INFO, Closed, Exchange, JsonDict, id_key
from .wire import Wire


class LegacyEngine:
    """Answers the client's requests in the legacy era, and asks the client on the fake's behalf."""

    def __init__(self, host: Host, lock: threading.Lock, wire: Wire, registry: Registry, recorder: Recorder) -> None:
        self._host = host
        self._lock = lock
        self._wire = wire
        self._registry = registry
        self._recorder = recorder
        self._waiters: dict[str, "queue.SimpleQueue[Optional[JsonDict]]"] = {}
        self._ids = itertools.count(1000)

    # ------------------------------------------------------------------ the client asks

    def handle(self, request_id: Any, method: str, params: JsonDict) -> None:
        host = self._host
        if method == "initialize":
            offered = params.get("protocolVersion")
            host.negotiated = host.version or (offered if isinstance(offered, str) else LEGACY_VERSION)
            caps = params.get("capabilities")
            info = params.get("clientInfo")
            host.client_capabilities = caps if isinstance(caps, dict) else None
            host.client_info = info if isinstance(info, dict) else None
            result: JsonDict = {"protocolVersion": host.negotiated, "capabilities": host.capabilities, "serverInfo": SERVER_INFO}
            if host.instructions is not None:
                result["instructions"] = host.instructions
            self._wire.reply(request_id, result)
        elif method in ("ping", "resources/subscribe", "resources/unsubscribe"):
            self._wire.reply(request_id, {})
        elif method == "logging/setLevel":
            level = params.get("level")
            host.log_level = level if isinstance(level, str) else None
            self._wire.reply(request_id, {})
        elif method == "tools/call":
            tool, unknown = self._registry.find_tool(params)
            if tool is None:
                self._wire.reply(request_id, error=unknown)
            else:
                self._wire.spawn(self._run_tool, tool, request_id, params)
        else:
            answered = self._registry.answer(method, params)
            if answered is None:
                self._wire.reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"})
            else:
                self._wire.reply(request_id, *answered)

    def _run_tool(self, tool: Tool, request_id: Any, params: JsonDict) -> None:
        call = ToolCall(self._host, tool.name, params, chain="")
        with self._wire.tracking(request_id, call):
            try:
                reply, error = outcome(tool.fn, call)
            except Closed:
                return
        if not call.cancelled.is_set() and not self._wire.closed:
            self._wire.reply(request_id, reply, error)

    # ------------------------------------------------------------------ the fake asks

    def ask(self, method: str, params: Optional[JsonDict], timeout: Optional[float]) -> JsonDict:
        """Send the client a request and wait (bounded, real time) for its response message."""
        request_id = next(self._ids)
        box: "queue.SimpleQueue[Optional[JsonDict]]" = queue.SimpleQueue()
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            if self._wire.closed:
                raise Closed()
            self._waiters[id_key(request_id)] = box
        self._recorder.add_exchange(Exchange(method, params, request_id))
        try:
            self._wire.send_raw(message)
            bound = self._host.timeout if timeout is None else timeout
            try:
                response = box.get(timeout=bound)  # real time: freezegun does not stall it
            except queue.Empty:
                raise TimeoutError(f"the client did not answer {method} within {bound:g} s") from None
            if response is None:
                raise Closed()
            return response
        finally:
            with self._lock:
                self._waiters.pop(id_key(request_id), None)

    def on_answer(self, message: JsonDict) -> None:
        """A response from the client: record it, and wake the ask waiting on it."""
        self._recorder.note_answer(message)
        with self._lock:
            box = self._waiters.get(id_key(message.get("id")))
        if box is not None:
            box.put(message)

    def release(self) -> None:
        """The fake closes: every ask waiting ends (with :class:`~.shared.Closed`)."""
        with self._lock:
            boxes = list(self._waiters.values())
        for box in boxes:
            box.put(None)
