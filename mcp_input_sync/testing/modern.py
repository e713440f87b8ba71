"""The modern era (2026-07-28): ``server/discover``, the ``_meta`` checks, and tool calls replayed
over ``input_required`` rounds.

A call that asks for input it has no answer for stops; the fake answers
``input_required`` with that one request and a ``requestState`` holding
the chain, every answer so far and the count of notifications sent. The
client's retry runs the tool again from the start with those answers.
Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from .call import Host, ToolCall, outcome
from .recorder import Recorder
from .registry import Registry, Tool
from .shared import META_CAPABILITIES, META_LOG_LEVEL, META_SERVER_INFO, META_VERSION, SERVER_INFO, Closed, Exchange, JsonDict, NeedInput
from .tasks import Tasks
from .wire import Wire


class ModernEngine:
    """Answers the client's requests in the modern era."""

    def __init__(self, host: Host, wire: Wire, registry: Registry, recorder: Recorder, tasks: Tasks) -> None:
        self._host = host
        self._wire = wire
        self._registry = registry
        self._recorder = recorder
        self._tasks = tasks
        self._chains = itertools.count(1)  # numbers calls and tasks alike

    def handle(self, request_id: Any, method: str, params: JsonDict) -> None:
        host = self._host
        meta = params.get("_meta")
        if method == "initialize":
            requested = params.get("protocolVersion")
            data = {"supported": [host.negotiated], "requested": requested if isinstance(requested, str) else None}
            self._wire.reply(request_id, error={"code": -32602, "message": "Unsupported protocol version", "data": data})
            return
        if not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str):
            self._wire.reply(request_id, error={"code": -32602, "message": "Missing required _meta protocolVersion"})
            return
        if meta[META_VERSION] != host.negotiated:
            data = {"supported": [host.negotiated], "requested": meta[META_VERSION]}
            self._wire.reply(request_id, error={"code": -32022, "message": "Unsupported protocol version", "data": data})
            return
        caps = meta.get(META_CAPABILITIES)
        if isinstance(caps, dict):
            host.client_capabilities = caps
        level = meta.get(META_LOG_LEVEL)
        host.log_level = level if isinstance(level, str) else None
        if method == "server/discover":
            result: JsonDict = {
                "resultType": "complete",
                "supportedVersions": [host.negotiated],
                "capabilities": host.capabilities,
                "_meta": {META_SERVER_INFO: SERVER_INFO},
            }
            if host.instructions is not None:
                result["instructions"] = host.instructions
            self._wire.reply(request_id, result)
        elif method == "tools/call":
            tool, unknown = self._registry.find_tool(params)
            if tool is None:
                self._wire.reply(request_id, error=unknown)
            else:
                self._wire.spawn(self._run_tool, tool, request_id, params)
        elif method in Tasks.METHODS:
            self._tasks.handle(request_id, method, params)
        elif method == "ping":
            self._wire.reply(request_id, {"resultType": "complete"})
        else:
            answered = self._registry.answer(method, params)
            if answered is None:
                self._wire.reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"})
            else:
                reply, error = answered
                self._wire.reply(request_id, {"resultType": "complete", **reply} if reply is not None else None, error)

    def _run_tool(self, tool: Tool, request_id: Any, params: JsonDict) -> None:
        if tool.task:
            self._tasks.start(f"task-{next(self._chains)}", tool, request_id, params)
            return
        state: JsonDict = {}
        raw_state = params.get("requestState")
        if isinstance(raw_state, str):
            try:
                decoded = json.loads(raw_state)
            except ValueError:
                decoded = None
            if not isinstance(decoded, dict):
                self._wire.reply(request_id, error={"code": -32602, "message": "requestState is not one this server issued"})
                return
            state = decoded
        chain = str(state.get("c") or f"call-{next(self._chains)}")
        responses: JsonDict = dict(state.get("r") or {})
        incoming = params.get("inputResponses")
        if isinstance(incoming, dict):
            self._recorder.note_responses(chain, incoming)
            responses.update(incoming)
        call = ToolCall(self._host, tool.name, params, chain=chain, responses=responses, emitted_before=int(state.get("n") or 0))
        with self._wire.tracking(request_id, call):
            try:
                reply, error = outcome(tool.fn, call)
            except NeedInput as need:
                self._recorder.add_exchange(Exchange(need.request["method"], need.request.get("params"), need.key, chain=chain))
                # _emitted counts this run's notifications: all were sent (or replayed) before the ask
                next_state = json.dumps({"c": chain, "r": responses, "n": call._emitted}, sort_keys=True)
                reply, error = {"resultType": "input_required", "inputRequests": {need.key: need.request}, "requestState": next_state}, None
            except Closed:
                return
        if reply is not None:
            reply.setdefault("resultType", "complete")
        if not call.cancelled.is_set() and not self._wire.closed:
            self._wire.reply(request_id, reply, error)
