"""A scripted legacy-era MCP server over the in-memory transport, for fast tests.

The server runs on its own thread (named ``fake-server-<n>``, not a library
thread). Tools are plain functions ``tool(ctx) -> result dict`` run on a
thread per call, so they may send requests to the client and wait for the
answers with :meth:`ToolContext.request`. Every message the client sends is
recorded and validated against the official JSON schema of the negotiated
version (when ../shared/spec is present); failures are collected in
``schema_errors``.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any, Callable, Optional

from mcp_input_sync.transports import MemoryPeer, MemoryTransport, memory_pair

from .recorder import Recorder, _key

JsonDict = dict[str, Any]
Tool = Callable[["ToolContext"], JsonDict]

_names = itertools.count(1)


def text_result(text: str) -> JsonDict:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class ToolContext:
    """What a fake tool sees: its params and a way to ask the client."""

    def __init__(self, server: "FakeServer", request_id: Any, params: JsonDict) -> None:
        self.server = server
        self.request_id = request_id
        self.params = params
        self.arguments: JsonDict = params.get("arguments") or {}
        self.cancelled = threading.Event()

    def request(self, method: str, params: Optional[JsonDict] = None, timeout: float = 5.0) -> JsonDict:
        return self.server.request(method, params, timeout=timeout)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        self.server.notify(method, params)

    @property
    def progress_token(self) -> Any:
        return (self.params.get("_meta") or {}).get("progressToken")


class FakeServer:
    """A legacy-era server on the far end of a memory pair."""

    def __init__(
        self,
        *,
        version: Optional[str] = None,
        capabilities: Optional[JsonDict] = None,
        tools: Optional[dict[str, Tool]] = None,
        answer_initialize: bool = True,
    ) -> None:
        self.transport: MemoryTransport
        self.peer: MemoryPeer
        self.transport, self.peer = memory_pair()
        self.version = version
        self.capabilities = capabilities if capabilities is not None else {"tools": {}, "logging": {}}
        self.tools: dict[str, Tool] = dict(tools or {})
        self.answer_initialize = answer_initialize
        self.negotiated: Optional[str] = None
        #: Both directions, with every client message validated against the schema.
        self.recorder = Recorder()
        self._ids = itertools.count(1000)
        self._waiters: dict[Any, "queue.SimpleQueue[JsonDict]"] = {}
        self._lock = threading.Lock()
        self._calls: dict[Any, ToolContext] = {}
        self._threads: list[threading.Thread] = []
        self.log_level: Optional[str] = None
        self._thread = threading.Thread(target=self._run, name=f"fake-server-{next(_names)}", daemon=True)
        self._thread.start()

    # -- server -> client ----------------------------------------------------

    def send(self, message: Any) -> None:
        """Send a message (a dict, or raw bytes sent as they are) to the client."""
        if isinstance(message, dict):
            self.recorder.note_inbound(message)
        self.peer.send(message)

    @property
    def received(self) -> list[JsonDict]:
        """Every message the client sent, in order."""
        return self.recorder.sent

    @property
    def schema_errors(self) -> list[str]:
        return self.recorder.schema_errors

    def request(self, method: str, params: Optional[JsonDict] = None, *, timeout: float = 5.0, id: Any = None) -> JsonDict:
        """Send a request and wait (bounded) for the client's response message."""
        request_id = next(self._ids) if id is None else id
        box: "queue.SimpleQueue[JsonDict]" = queue.SimpleQueue()
        with self._lock:
            self._waiters[_key(request_id)] = box
        msg: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        try:
            return box.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no answer to {method} {request_id!r} within {timeout} s") from None
        finally:
            with self._lock:
                self._waiters.pop(_key(request_id), None)

    def send_request(self, request_id: Any, method: str, params: Optional[JsonDict] = None) -> None:
        """Send a request without waiting; its answer lands in ``received``."""
        msg: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        msg: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def close(self) -> None:
        """Hang up (the client sees EOF)."""
        self.peer.close()

    # -- observing -----------------------------------------------------------

    def wait_for(self, predicate: Callable[[JsonDict], bool], timeout: float = 5.0, count: int = 1) -> list[JsonDict]:
        """Wait (bounded) until ``count`` messages the client sent match ``predicate``."""
        return self.recorder.wait_for(predicate, timeout=timeout, count=count)

    def answers_to(self, request_id: Any) -> list[JsonDict]:
        return [m for m in list(self.received) if "method" not in m and _same_id(m.get("id"), request_id)]

    def messages(self, method: str) -> list[JsonDict]:
        return [m for m in list(self.received) if m.get("method") == method]

    # -- loop ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                msg = self.peer.recv(timeout=3600)
            except TimeoutError:
                continue
            if msg is None:
                break
            self.recorder.note_sent(msg)
            if "method" in msg and "id" in msg:
                self._on_request(msg)
            elif "method" in msg:
                self._on_notification(msg)
            else:
                with self._lock:
                    box = self._waiters.get(_key(msg.get("id")))
                if box is not None:
                    box.put(msg)
        with self._lock:
            for ctx in self._calls.values():
                ctx.cancelled.set()

    def _on_request(self, msg: JsonDict) -> None:
        method = msg["method"]
        rid = msg["id"]
        params = msg.get("params") or {}
        if method == "initialize":
            if not self.answer_initialize:
                return
            offered = params.get("protocolVersion")
            self.negotiated = self.recorder.version = self.version or offered
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": self.negotiated,
                        "capabilities": self.capabilities,
                        "serverInfo": {"name": "fake", "version": "1"},
                    },
                }
            )
        elif method == "ping":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "logging/setLevel":
            self.log_level = params.get("level")
            self.send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in self.tools]
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            tool = self.tools.get(params.get("name"))
            if tool is None:
                self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}})
                return
            ctx = ToolContext(self, rid, params)
            with self._lock:
                self._calls[_key(rid)] = ctx
            thread = threading.Thread(target=self._run_tool, args=(tool, ctx), name="fake-tool", daemon=True)
            self._threads.append(thread)
            thread.start()
        else:
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})

    def _run_tool(self, tool: Tool, ctx: ToolContext) -> None:
        try:
            result = tool(ctx)
        except ToolError as exc:
            reply: JsonDict = {"jsonrpc": "2.0", "id": ctx.request_id, "error": exc.error}
        except Exception as exc:  # a fake tool's failure becomes a tool error
            reply = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"content": [{"type": "text", "text": repr(exc)}], "isError": True}}
        else:
            reply = {"jsonrpc": "2.0", "id": ctx.request_id, "result": result}
        with self._lock:
            self._calls.pop(_key(ctx.request_id), None)
        if result_allowed(ctx):
            self.send(reply)

    def _on_notification(self, msg: JsonDict) -> None:
        if msg["method"] == "notifications/cancelled":
            rid = (msg.get("params") or {}).get("requestId")
            with self._lock:
                ctx = self._calls.get(_key(rid))
            if ctx is not None:
                ctx.cancelled.set()


class ToolError(Exception):
    """Raise from a fake tool to answer the call with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error: JsonDict = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


def result_allowed(ctx: ToolContext) -> bool:
    return not ctx.cancelled.is_set()


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# -- tools with the same names and results as tests/peers/sdk_legacy_server.py ----------

FORM_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Your name"},
        "age": {"type": "integer", "title": "Age", "default": 30, "minimum": 0, "maximum": 150},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "color": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"},
    },
    "required": ["name"],
}


def _dump(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def _result_or_raise(response: JsonDict) -> JsonDict:
    if "error" in response:
        err = response["error"]
        raise RuntimeError(f"client answered error {err.get('code')}: {err.get('message')}")
    result: JsonDict = response["result"]
    return result


def _elicit_dump(result: JsonDict) -> JsonDict:
    out: JsonDict = {"action": result.get("action")}
    if result.get("content") is not None:
        out["content"] = result["content"]
    return out


def _sample(ctx: ToolContext, prompt: str, max_tokens: int) -> JsonDict:
    return _result_or_raise(
        ctx.request(
            "sampling/createMessage",
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": max_tokens,
                "systemPrompt": "You are the fake test server.",
            },
            timeout=30,
        )
    )


def tool_echo(ctx: ToolContext) -> JsonDict:
    return text_result(str(ctx.arguments.get("text", "")))


def tool_sample(ctx: ToolContext) -> JsonDict:
    r = _sample(ctx, ctx.arguments.get("prompt", "hello"), ctx.arguments.get("max_tokens", 50))
    content = r.get("content") or {}
    text = content.get("text") if isinstance(content, dict) else None
    return text_result(_dump({"role": r.get("role"), "model": r.get("model"), "stopReason": r.get("stopReason"), "text": text}))


def tool_elicit_form(ctx: ToolContext) -> JsonDict:
    r = _result_or_raise(
        ctx.request(
            "elicitation/create",
            {"mode": "form", "message": ctx.arguments.get("message", "Please fill the form"), "requestedSchema": FORM_SCHEMA},
            timeout=30,
        )
    )
    return text_result(_dump(_elicit_dump(r)))


def _roots(ctx: ToolContext) -> list[JsonDict]:
    r = _result_or_raise(ctx.request("roots/list", timeout=30))
    return [{"uri": x["uri"], "name": x.get("name")} for x in r["roots"]]


def tool_roots(ctx: ToolContext) -> JsonDict:
    return text_result(_dump(_roots(ctx)))


def tool_chain(ctx: ToolContext) -> JsonDict:
    s = _sample(ctx, ctx.arguments.get("prompt", "summarise"), 30)
    e = _result_or_raise(
        ctx.request(
            "elicitation/create",
            {
                "mode": "form",
                "message": "Confirm the sampled text?",
                "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
            },
            timeout=30,
        )
    )
    rts = _roots(ctx)
    content = s.get("content") or {}
    return text_result(
        _dump(
            {
                "sample_text": content.get("text") if isinstance(content, dict) else None,
                "elicit_action": e.get("action"),
                "elicit_content": e.get("content"),
                "roots": rts,
            }
        )
    )


def tool_parallel_elicit(ctx: ToolContext) -> JsonDict:
    n = int(ctx.arguments.get("n", 2))
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        r = ctx.request(
            "elicitation/create",
            {
                "mode": "form",
                "message": f"Question {i + 1} of {n}",
                "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
            },
            timeout=30,
        )
        results[i] = _elicit_dump(r["result"]) if "result" in r else {"error": r["error"]}

    threads = [threading.Thread(target=one, args=(i,), name="fake-par", daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if any(isinstance(r, dict) and "error" in r for r in results):
        return {"content": [{"type": "text", "text": _dump(results)}], "isError": True}
    return text_result(_dump(results))


def tool_log_and_progress(ctx: ToolContext) -> JsonDict:
    steps = int(ctx.arguments.get("steps", 3))
    token = ctx.progress_token
    for i in range(1, steps + 1):
        ctx.notify("notifications/message", {"level": "info", "logger": "sdk-peer", "data": f"step {i}/{steps}"})
        if token is not None:
            ctx.notify("notifications/progress", {"progressToken": token, "progress": i, "total": steps, "message": f"step {i}"})
    return text_result(f"done {steps} steps")


def tool_slow(ctx: ToolContext) -> JsonDict:
    ctx.cancelled.wait(float(ctx.arguments.get("seconds", 30)))
    return text_result("slept")


def tool_die(ctx: ToolContext) -> JsonDict:
    ctx.server.close()
    ctx.cancelled.set()
    return text_result("unreachable")


def tool_elicit_then_die(ctx: ToolContext) -> JsonDict:
    ctx.server.send_request("dying-1", "elicitation/create", {"mode": "form", "message": "last words", "requestedSchema": FORM_SCHEMA})
    ctx.server.close()
    ctx.cancelled.set()
    return text_result("unreachable")


def tool_url_required(ctx: ToolContext) -> JsonDict:
    url = ctx.arguments.get("url", "https://example.invalid/connect")
    raise ToolError(
        -32042,
        "URL elicitation required",
        {"elicitations": [{"mode": "url", "message": "Authorise the test peer, then retry.", "url": url, "elicitationId": "req-1"}]},
    )


def tool_ask_server_ping(ctx: ToolContext) -> JsonDict:
    _result_or_raise(ctx.request("ping"))
    return text_result("pong")


STANDARD_TOOLS: dict[str, Tool] = {
    "echo": tool_echo,
    "sample": tool_sample,
    "elicit_form": tool_elicit_form,
    "roots": tool_roots,
    "chain": tool_chain,
    "parallel_elicit": tool_parallel_elicit,
    "log_and_progress": tool_log_and_progress,
    "slow": tool_slow,
    "die": tool_die,
    "elicit_then_die": tool_elicit_then_die,
    "url_required": tool_url_required,
    "ask_server_ping": tool_ask_server_ping,
}
