"""Drive ``python -m mcp_input_sync._demo_server`` as a real subprocess with raw JSON lines.

Every read is bounded (a reader thread feeds a queue read with a timeout) and
the process is killed in a ``finally``.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest

from .wire_schema import validator_for

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 5.0

JSON = dict[str, Any]


def check(version: str, definition: str, instance: object) -> None:
    """Assert that ``instance`` is valid per ``definition`` of ``version``'s schema (tests/schemas, errata applied)."""
    validator_for(version, definition).validate(instance)


class Server:
    """The demo server as a subprocess, with bounded reads."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_input_sync._demo_server"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[object] = queue.Queue()
        self.stderr: list[bytes] = []
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        self.next_id = 0

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.lines.put(json.loads(raw))
            except ValueError:
                self.lines.put(("NOT JSON", raw))
        self.lines.put(EOFError)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw)

    def send(self, message: JSON) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self) -> JSON:
        """The next message; fails after TIMEOUT seconds or on non-JSON output."""
        try:
            item = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no message within {TIMEOUT} s; stderr: {b''.join(self.stderr)!r}")
        assert item is not EOFError, f"stdout closed; stderr: {b''.join(self.stderr)!r}"
        assert isinstance(item, dict), f"stdout carried a non-object line: {item!r}"
        return item

    def request(self, method: str, params: JSON | None = None) -> int:
        self.next_id += 1
        message: JSON = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def response(self, request_id: object) -> JSON:
        message = self.recv()
        assert message.get("id") == request_id and "method" not in message, message
        return message

    def call(self, method: str, params: JSON | None = None) -> JSON:
        return self.response(self.request(method, params))

    def initialize(self, version: str = "2025-11-25", capabilities: JSON | None = None) -> JSON:
        if capabilities is None:
            capabilities = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}
        answer = self.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def answer(self, request_id: object, result: JSON) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def join_readers(self) -> None:
        for thread in self._threads:
            thread.join(timeout=TIMEOUT)
            assert not thread.is_alive()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for thread in self._threads:
            thread.join(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    try:
        yield srv
    finally:
        srv.stop()


ROOTS = {"roots": [{"uri": "file:///home/ada/trips", "name": "trips"}, {"uri": "file:///tmp/x"}]}
FORM = {"action": "accept", "content": {"travellers": 3, "budget": 1500, "start": "2026-05-01", "pace": "relaxed"}}
SAMPLE = {
    "role": "assistant",
    "content": {"type": "text", "text": "Visit the Belem Tower."},
    "model": "test-model",
    "stopReason": "endTurn",
}

EXPECTED_SCHEMA = {
    "type": "object",
    "properties": {
        "travellers": {"type": "integer", "title": "Travellers", "minimum": 1, "default": 2},
        "budget": {"type": "number", "title": "Budget", "default": 1500},
        "start": {"type": "string", "title": "Start date", "format": "date"},
        "pace": {"type": "string", "title": "Pace", "enum": ["relaxed", "normal", "packed"], "default": "normal"},
    },
    "required": ["budget"],
}


# ---------------------------------------------------------------------------


def test_initialize(server: Server) -> None:
    answer = server.initialize()
    check("2025-11-25", "JSONRPCResponse", answer)
    result = answer["result"]
    check("2025-11-25", "InitializeResult", result)
    assert result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"] == {"tools": {}, "logging": {}}
    assert result["serverInfo"] == {"name": "mcp-input-sync-demo", "version": "1"}
    assert isinstance(result["instructions"], str) and 0 < len(result["instructions"]) < 300
    assert server.call("ping")["result"] == {}


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("nonsense", "2025-11-25"),
    ],
)
def test_version_negotiation(server: Server, offered: str, answered: str) -> None:
    assert server.initialize(offered)["result"]["protocolVersion"] == answered


def test_probe_and_requests_before_initialize(server: Server) -> None:
    # the library's era probe reads -32601 as "legacy on the same process"
    assert server.call("server/discover")["error"]["code"] == -32601
    assert server.call("ping")["result"] == {}
    assert server.call("tools/list")["error"]["code"] == -32600
    server.initialize()
    assert server.call("initialize", {"protocolVersion": "2025-11-25"})["error"]["code"] == -32600


def test_tools_list(server: Server) -> None:
    server.initialize()
    result = server.call("tools/list")["result"]
    check("2025-11-25", "ListToolsResult", result)
    check("2025-06-18", "ListToolsResult", result)
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert set(tools) == {"plan_trip", "book_hotel", "pack_bags", "echo"}
    assert tools["plan_trip"]["inputSchema"] == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city to visit.", "default": "Lisbon"}},
        "additionalProperties": False,
    }
    assert tools["echo"]["inputSchema"] == {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to return."}},
        "required": ["text"],
        "additionalProperties": False,
    }
    for tool in tools.values():
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])


def test_full_plan_trip(server: Server) -> None:
    server.initialize()
    call_id = server.request(
        "tools/call", {"name": "plan_trip", "arguments": {"city": "Porto"}, "_meta": {"progressToken": "tok"}}
    )
    progress: list[JSON] = []
    request_ids: list[object] = []

    def next_message(method: str) -> JSON:
        while True:
            message = server.recv()
            if message.get("method") == "notifications/progress":
                check("2025-11-25", "ProgressNotification", message)
                progress.append(message["params"])
                continue
            assert message.get("method") == method, message
            return message

    def next_request(method: str) -> JSON:
        message = next_message(method)
        request_ids.append(message["id"])
        return message

    log = next_message("notifications/message")
    check("2025-11-25", "LoggingMessageNotification", log)
    assert log["params"] == {"level": "info", "logger": "demo", "data": "planning a trip to Porto"}

    roots = next_request("roots/list")
    check("2025-11-25", "ListRootsRequest", roots)
    server.answer(roots["id"], ROOTS)

    form = next_request("elicitation/create")
    check("2025-11-25", "ElicitRequest", form)
    assert form["params"] == {"mode": "form", "message": "Trip details", "requestedSchema": EXPECTED_SCHEMA}
    server.answer(form["id"], FORM)

    sampling = next_request("sampling/createMessage")
    check("2025-11-25", "CreateMessageRequest", sampling)
    assert sampling["params"] == {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Suggest one sight in Porto for relaxed travellers"}}
        ],
        "maxTokens": 100,
        "systemPrompt": "You are a travel guide.",
    }
    server.answer(sampling["id"], SAMPLE)

    while True:
        message = server.recv()
        if message.get("method") == "notifications/progress":
            progress.append(message["params"])
            continue
        break
    assert message["id"] == call_id
    check("2025-11-25", "JSONRPCResponse", message)
    result = message["result"]
    check("2025-11-25", "CallToolResult", result)
    assert result["isError"] is False
    text = result["content"][0]["text"]
    for part in ("Porto", "file:///home/ada/trips", "file:///tmp/x", "3 traveller", "1500", "2026-05-01",
                 "relaxed", "Visit the Belem Tower."):
        assert part in text

    assert [p["progress"] for p in progress] == [1, 2, 3, 4]
    assert all(p["progressToken"] == "tok" and p["total"] == 4 for p in progress)
    assert len(set(request_ids)) == 3
    assert all(isinstance(i, str) for i in request_ids)


def test_no_progress_without_token_and_ids_unique_across_calls(server: Server) -> None:
    server.initialize(capabilities={"roots": {}})
    seen: list[object] = []
    for _ in range(2):
        call_id = server.request("tools/call", {"name": "plan_trip"})
        assert server.recv()["method"] == "notifications/message"
        roots = server.recv()
        assert roots["method"] == "roots/list"
        seen.append(roots["id"])
        server.answer(roots["id"], {"roots": []})
        result = server.response(call_id)["result"]
        assert result["isError"] is False
        text = result["content"][0]["text"]
        assert "Lisbon" in text and "Roots: none" in text and "not offered" in text
    assert len(set(seen)) == 2


@pytest.mark.parametrize(("action", "word"), [("decline", "declined"), ("cancel", "cancelled")])
def test_declined_elicitation(server: Server, action: str, word: str) -> None:
    server.initialize()
    call_id = server.request("tools/call", {"name": "plan_trip", "arguments": {}})
    assert server.recv()["method"] == "notifications/message"
    roots = server.recv()
    server.answer(roots["id"], ROOTS)
    form = server.recv()
    assert form["method"] == "elicitation/create"
    server.answer(form["id"], {"action": action})
    result = server.response(call_id)["result"]  # no sampling request in between
    check("2025-11-25", "CallToolResult", result)
    assert result["isError"] is True
    assert word in result["content"][0]["text"]


def test_error_answer_ends_the_tool(server: Server) -> None:
    server.initialize()
    call_id = server.request("tools/call", {"name": "plan_trip", "arguments": {"city": "Faro"}})
    assert server.recv()["method"] == "notifications/message"
    roots = server.recv()
    server.send({"jsonrpc": "2.0", "id": roots["id"], "error": {"code": -32603, "message": "roots are secret"}})
    result = server.response(call_id)["result"]
    assert result["isError"] is True
    assert "roots are secret" in result["content"][0]["text"]


def test_legacy_2025_06_18_form_has_no_mode(server: Server) -> None:
    server.initialize("2025-06-18", {"elicitation": {}})
    call_id = server.request("tools/call", {"name": "plan_trip", "arguments": {}})
    assert server.recv()["method"] == "notifications/message"
    form = server.recv()
    check("2025-06-18", "ElicitRequest", form)
    assert "mode" not in form["params"]
    props = form["params"]["requestedSchema"]["properties"]
    assert all("default" not in prop for prop in props.values())
    server.answer(form["id"], {"action": "accept", "content": {"budget": 10}})
    result = server.response(call_id)["result"]
    assert result["isError"] is False
    assert "budget 10" in result["content"][0]["text"]
    assert "sampling not offered" in result["content"][0]["text"]


def test_2025_03_26_never_elicits(server: Server) -> None:
    server.initialize("2025-03-26", {"elicitation": {}})
    call_id = server.request("tools/call", {"name": "plan_trip"})
    assert server.recv()["method"] == "notifications/message"
    result = server.response(call_id)["result"]
    assert result["isError"] is False


def test_log_level(server: Server) -> None:
    server.initialize(capabilities={})
    assert server.call("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert server.call("logging/setLevel", {"level": "warning"})["result"] == {}
    call_id = server.request("tools/call", {"name": "plan_trip"})
    # info is below warning: the first message is the result itself
    assert server.response(call_id)["result"]["isError"] is False
    assert server.call("logging/setLevel", {"level": "debug"})["result"] == {}
    server.request("tools/call", {"name": "plan_trip"})
    assert server.recv()["method"] == "notifications/message"


def test_echo_and_errors(server: Server) -> None:
    server.initialize()
    result = server.call("tools/call", {"name": "echo", "arguments": {"text": "héllo\nworld"}})["result"]
    check("2025-11-25", "CallToolResult", result)
    assert result == {"content": [{"type": "text", "text": "héllo\nworld"}], "isError": False}
    bad = server.call("tools/call", {"name": "echo", "arguments": {}})["result"]
    assert bad["isError"] is True
    unknown = server.call("tools/call", {"name": "nope", "arguments": {}})["result"]
    assert unknown["isError"] is True and "nope" in unknown["content"][0]["text"]
    assert server.call("tools/call", {"arguments": {}})["error"]["code"] == -32602
    assert server.call("resources/list")["error"]["code"] == -32601
    server.send_raw(b"{not json\n")
    parse = server.recv()
    assert parse["id"] is None and parse["error"]["code"] == -32700
    server.send_raw(b"[1, 2]\n")
    assert server.recv()["error"]["code"] == -32600


def test_cancel_abandons_the_call(server: Server) -> None:
    server.initialize()
    call_id = server.request("tools/call", {"name": "plan_trip"})
    assert server.recv()["method"] == "notifications/message"
    roots = server.recv()
    assert roots["method"] == "roots/list"
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id, "reason": "bye"}}
    )
    ping_id = server.request("ping")
    got_ping = got_cancel = False
    while not (got_ping and got_cancel):
        message = server.recv()
        assert message.get("id") != call_id, "a cancelled call must get no response"
        if message.get("id") == ping_id:
            got_ping = True
        else:
            check("2025-11-25", "CancelledNotification", message)
            assert message["params"]["requestId"] == roots["id"]
            got_cancel = True
    server.answer(roots["id"], ROOTS)  # late answer: dropped
    assert server.call("ping")["result"] == {}
    # the server still works
    assert server.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})["result"]["isError"] is False


def test_concurrent_calls_get_their_own_answers(server: Server) -> None:
    server.initialize(capabilities={"roots": {}})
    first = server.request("tools/call", {"name": "plan_trip", "arguments": {"city": "A"}})
    assert server.recv()["method"] == "notifications/message"
    roots_a = server.recv()
    second = server.request("tools/call", {"name": "plan_trip", "arguments": {"city": "B"}})
    assert server.recv()["method"] == "notifications/message"
    roots_b = server.recv()
    assert roots_a["id"] != roots_b["id"]
    server.answer(roots_b["id"], {"roots": [{"uri": "file:///b"}]})
    answer_b = server.response(second)["result"]["content"][0]["text"]
    server.answer(roots_a["id"], {"roots": [{"uri": "file:///a"}]})
    answer_a = server.response(first)["result"]["content"][0]["text"]
    assert "Trip to B" in answer_b and "file:///b" in answer_b
    assert "Trip to A" in answer_a and "file:///a" in answer_a


def test_eof_exits_cleanly(server: Server) -> None:
    server.initialize()
    server.close_stdin()
    assert server.proc.wait(timeout=TIMEOUT) == 0
    assert server.lines.get(timeout=TIMEOUT) is EOFError


def test_eof_while_a_tool_waits(server: Server) -> None:
    server.initialize()
    server.request("tools/call", {"name": "plan_trip"})
    assert server.recv()["method"] == "notifications/message"
    assert server.recv()["method"] == "roots/list"
    server.close_stdin()
    assert server.proc.wait(timeout=TIMEOUT) == 0
    assert server.lines.get(timeout=TIMEOUT) is EOFError
    server.join_readers()
    assert b"Traceback" not in b"".join(server.stderr)


URL_CAPS = {"elicitation": {"form": {}, "url": {}}}


def test_book_hotel_url_elicitation_and_completion(server: Server) -> None:
    server.initialize(capabilities=URL_CAPS)
    call_id = server.request("tools/call", {"name": "book_hotel", "arguments": {"city": "São Paulo"}})
    request = server.recv()
    check("2025-11-25", "ElicitRequest", request)
    params = request["params"]
    assert params["mode"] == "url"
    assert params["url"] == "https://checkout.example.com/hotel?city=S%C3%A3o%20Paulo"
    assert "São Paulo" in params["message"]
    server.answer(request["id"], {"action": "accept"})
    complete = server.recv()
    assert complete["method"] == "notifications/elicitation/complete"
    assert complete["params"] == {"elicitationId": params["elicitationId"]}
    result = server.response(call_id)["result"]
    check("2025-11-25", "CallToolResult", result)
    assert result["isError"] is False and "São Paulo" in result["content"][0]["text"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_book_hotel_not_accepted(server: Server, action: str) -> None:
    server.initialize(capabilities=URL_CAPS)
    call_id = server.request("tools/call", {"name": "book_hotel"})
    request = server.recv()
    server.answer(request["id"], {"action": action})
    result = server.response(call_id)["result"]
    assert result["isError"] is True and "not accepted" in result["content"][0]["text"]


@pytest.mark.parametrize(("version", "caps"), [("2025-11-25", {"elicitation": {"form": {}}}), ("2025-06-18", URL_CAPS)])
def test_book_hotel_needs_url_mode(server: Server, version: str, caps: JSON) -> None:
    server.initialize(version, caps)
    result = server.call("tools/call", {"name": "book_hotel"})["result"]
    assert result["isError"] is True and "URL elicitation" in result["content"][0]["text"]


def test_plan_trip_never_sends_a_url_request(server: Server) -> None:
    server.initialize(capabilities={"elicitation": {"url": {}}})
    call_id = server.request("tools/call", {"name": "plan_trip"})
    assert server.recv()["method"] == "notifications/message"
    result = server.response(call_id)["result"]
    assert "not offered" in result["content"][0]["text"]


def test_pack_bags_reports_progress(server: Server) -> None:
    server.initialize()
    call_id = server.request(
        "tools/call", {"name": "pack_bags", "arguments": {"items": 3, "delay": 0}, "_meta": {"progressToken": 7}}
    )
    progress = []
    for _ in range(3):
        message = server.recv()
        check("2025-11-25", "ProgressNotification", message)
        progress.append(message["params"])
    assert [(p["progress"], p["total"], p["progressToken"]) for p in progress] == [(1, 3, 7), (2, 3, 7), (3, 3, 7)]
    assert progress[0]["message"] == "packed the passport"
    assert server.recv()["method"] == "notifications/message"
    result = server.response(call_id)["result"]
    assert result["isError"] is False and result["content"][0]["text"].startswith("Packed 3 items")


@pytest.mark.parametrize("arguments", [{"items": 0}, {"items": 21}, {"items": True}, {"delay": -1}, {"delay": "x"}])
def test_pack_bags_bad_arguments(server: Server, arguments: JSON) -> None:
    server.initialize()
    result = server.call("tools/call", {"name": "pack_bags", "arguments": arguments})["result"]
    assert result["isError"] is True


def test_pack_bags_cancelled_mid_way(server: Server) -> None:
    server.initialize()
    call_id = server.request(
        "tools/call", {"name": "pack_bags", "arguments": {"items": 20, "delay": 5}, "_meta": {"progressToken": "p"}}
    )
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id, "reason": "bye"}}
    )
    ping_id = server.request("ping")
    message = server.recv()
    assert message.get("id") == ping_id, "a cancelled call sends nothing more"
    assert server.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})["result"]["isError"] is False
