"""One test, two real peers: the public kit's in-memory fake server and the official SDK over stdio.

``Peer`` hides which one a test talks to. Both offer the same tools (see
:func:`add_standard_tools`, written with ``mcp_input_sync.testing``'s
``ToolCall`` API, and ``peers/sdk_legacy_server.py``), record every message
the client sends and receives, and validate what the client sends against
the official JSON schema of the negotiated version.

:func:`recorded_server` builds a kit ``FakeServer`` whose traffic a
:class:`~tests.recorder.Recorder` sees through the kit's ``on_message`` tap;
:func:`schema_errors` lists what the client sent that the schema refuses.
"""

from __future__ import annotations

import json
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Optional

import mcp_input_sync as mis
from mcp_input_sync.testing import ClientRefused, FakeServer, ToolCall, ToolError
from mcp_input_sync.testing.shared import ToolResult
from mcp_input_sync.transports import StdioTransport
from mcp_input_sync.transports.base import ANSWER, OnClose, OnMessage, Outgoing

from .recorder import Recorder, _key

PEERS_DIR = Path(__file__).parent / "peers"
SDK_SERVER = [sys.executable, str(PEERS_DIR / "sdk_legacy_server.py")]
#: The bound of the kit's waits for the client's answers (the SDK peer's tools never give up).
TOOL_WAIT = 30.0

JsonDict = dict[str, Any]

_RECORDERS: "weakref.WeakKeyDictionary[FakeServer, Recorder]" = weakref.WeakKeyDictionary()


def recorded_server(*, standard_tools: bool = False, **options: Any) -> FakeServer:
    """A kit ``FakeServer`` (``options`` as its own) whose traffic a Recorder sees and validates.

    ``standard_tools``: register :func:`add_standard_tools`.
    """
    recorder = Recorder()
    server = FakeServer(on_message=recorder.tap, **options)
    _RECORDERS[server] = recorder
    if standard_tools:
        add_standard_tools(server)
    return server


def recorder_of(server: FakeServer) -> Recorder:
    """The Recorder of a server built by :func:`recorded_server`."""
    return _RECORDERS[server]


def schema_errors(server: FakeServer) -> list[str]:
    """What the client sent to ``server`` (built by :func:`recorded_server`) that the schema refuses."""
    return recorder_of(server).schema_errors


def ask(call: ToolCall, method: str, params: Optional[JsonDict] = None) -> JsonDict:
    """Ask the client from a tool; the response as the server saw it: ``{"result": ...}`` or ``{"error": ...}``."""
    try:
        return {"result": call.request(method, params)}
    except ClientRefused as refused:
        error: JsonDict = {"code": refused.code, "message": refused.message}
        if refused.data is not None:
            error["data"] = refused.data
        return {"error": error}


# -- tools with the same names and results as tests/peers/sdk_legacy_server.py ----------

PROFILE_FORM: JsonDict = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Your name"},
        "age": {"type": "integer", "title": "Age", "default": 30, "minimum": 0, "maximum": 150},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "color": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"},
    },
    "required": ["name"],
}
CONFIRM_FORM: JsonDict = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
ANSWER_FORM: JsonDict = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
SYSTEM_PROMPT = "You are the fake test server."
LOGGER_NAME = "sdk-peer"


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _elicit_answer(result: JsonDict) -> JsonDict:
    answer: JsonDict = {"action": result.get("action")}
    if result.get("content") is not None:
        answer["content"] = result["content"]
    return answer


def _sampled_text(result: JsonDict) -> Any:
    content = result.get("content")
    return content.get("text") if isinstance(content, dict) else None


def _roots(call: ToolCall) -> list[JsonDict]:
    return [{"uri": root["uri"], "name": root.get("name")} for root in call.roots()]


def add_standard_tools(server: FakeServer) -> None:
    """Register the tools of ``peers/sdk_legacy_server.py`` on a kit fake (legacy era).

    A client's error answer to a request escapes a tool as the kit's
    ``ClientRefused``, which answers the call with an ``isError`` result.
    """

    @server.tool
    def echo(call: ToolCall) -> ToolResult:
        return str(call.arguments.get("text", ""))

    @server.tool
    def sample(call: ToolCall) -> ToolResult:
        r = call.sample(str(call.arguments.get("prompt", "hello")), max_tokens=int(call.arguments.get("max_tokens", 50)), systemPrompt=SYSTEM_PROMPT)
        return _dump({"role": r.get("role"), "model": r.get("model"), "stopReason": r.get("stopReason"), "text": _sampled_text(r)})

    @server.tool
    def elicit_form(call: ToolCall) -> ToolResult:
        return _dump(_elicit_answer(call.elicit(str(call.arguments.get("message", "Please fill in your profile")), PROFILE_FORM)))

    @server.tool
    def roots(call: ToolCall) -> ToolResult:
        return _dump(_roots(call))

    @server.tool
    def chain(call: ToolCall) -> ToolResult:
        sampled = call.sample(str(call.arguments.get("prompt", "summarise")), max_tokens=30, systemPrompt=SYSTEM_PROMPT)
        confirmed = call.elicit("Confirm the sampled text?", CONFIRM_FORM)
        listed = _roots(call)
        return _dump(
            {
                "sample_text": _sampled_text(sampled),
                "elicit_action": confirmed.get("action"),
                "elicit_content": confirmed.get("content"),
                "roots": listed,
            }
        )

    @server.tool
    def parallel_elicit(call: ToolCall) -> ToolResult:
        """``n`` form elicitations at once; an error answer is recorded as its code, not raised."""
        n = int(call.arguments.get("n", 2))
        answers: list[Optional[JsonDict]] = [None] * n

        def one(index: int) -> None:
            try:
                answers[index] = _elicit_answer(call.elicit(f"Question {index + 1} of {n}", ANSWER_FORM))
            except ClientRefused as refused:
                answers[index] = {"error": refused.code}

        threads = [threading.Thread(target=one, args=(i,), name="fake-parallel", daemon=True) for i in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TOOL_WAIT)
        return _dump(answers)

    @server.tool
    def log_and_progress(call: ToolCall) -> ToolResult:
        steps = int(call.arguments.get("steps", 3))
        for step in range(1, steps + 1):
            call.log("info", f"step {step}/{steps}", logger=LOGGER_NAME)
            call.progress(step, steps, f"step {step}/{steps}")  # sent only when the call carried a progressToken
        return f"done {steps} steps"

    @server.tool
    def slow(call: ToolCall) -> ToolResult:
        call.cancelled.wait(float(call.arguments.get("seconds", 30)))
        return "slept"

    @server.tool
    def die(call: ToolCall) -> ToolResult:
        server.peer.close()  # hang up mid-call: the client sees EOF, the call is never answered
        call.cancelled.set()
        return "unreachable"

    @server.tool
    def elicit_then_die(call: ToolCall) -> ToolResult:
        server.send_request("dying-1", "elicitation/create", {"mode": "form", "message": "This server exits before reading your answer", "requestedSchema": PROFILE_FORM})
        gate = getattr(server, "die_gate", None)  # a test's Event: hang up only once the client's callback runs
        if gate is not None:
            gate.wait(TOOL_WAIT)
        server.peer.close()
        call.cancelled.set()
        return "unreachable"

    @server.tool
    def url_required(call: ToolCall) -> ToolResult:
        url = call.arguments.get("url", "https://example.invalid/connect")
        elicitation = {"mode": "url", "message": "Open the link to authorise the test peer, then retry.", "url": url, "elicitationId": "req-1"}
        raise ToolError(-32042, "URL elicitation required", {"elicitations": [elicitation]})

    @server.tool
    def ask_server_ping(call: ToolCall) -> ToolResult:
        call.request("ping")
        return "pong"


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

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        # record first: once written, the server may answer and the test move on
        if data:
            self.recorder.on_sent(data)
        super().send(data, info)

    def send_later(self, data: bytes) -> bool:
        self.recorder.on_sent(data)
        return super().send_later(data)


class Peer:
    """A server for one test: ``kind`` is "memory" (the kit's FakeServer) or "sdk"."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.clients: list[mis.Client] = []
        self.fake: Optional[FakeServer] = None
        self.recorder = Recorder()

    def client(self, handler: Optional[mis.InputHandler] = None, *, open: bool = True, **options: Any) -> mis.Client:
        if self.kind == "memory":
            self.fake = recorded_server(standard_tools=True, timeout=TOOL_WAIT)
            self.recorder = recorder_of(self.fake)
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


def wait_until(predicate: Callable[[], bool], seconds: float = 30.0) -> bool:
    """Poll ``predicate`` (bounded, 10 ms steps); its last value."""
    pause = threading.Event()
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return True
        pause.wait(0.01)
    return predicate()
