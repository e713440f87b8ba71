"""Limits on what a server may send, and what the client does with a message it cannot read.

Pure parts (salvaging an id, nesting depth), then the client over the
in-memory pair (both eras), then the real transports: a stdio server that
writes an over-long line, an HTTP server whose body or SSE event is too big.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync._protocol import limits
from mcp_input_sync.options import Options
from mcp_input_sync.testing import FakeServer, ToolCall
from mcp_input_sync.transports.memory import MemoryPeer, memory_pair

from .tiny_http import Reply, Seen, TinyServer, rpc

JsonDict = dict[str, Any]
PEERS = Path(__file__).parent / "peers"


class Accept(mis.InputHandler):
    def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
        return {"action": "accept", "content": {"answer": "ok"}}


# ---------------------------------------------------------------------------- pure


@pytest.mark.parametrize(
    "text, found, request_id, is_request",
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"x","params":{', True, 7, True),
        (b'{"jsonrpc":"2.0","method":"x","params":{"id":5},"id":"a\\"b"', True, 'a"b', True),
        (b'{"jsonrpc":"2.0","params":{"id":5}', False, None, False),
        (b'{"params":{"s":"}{\\"id\\":3"},"id":4,"result":', True, 4, False),
        (b'  {"id": -12 , "method" : 1', True, -12, True),
        (b'{"id":1.5,"method":"x"', False, None, True),
        (b'{"id":true,"method":"x"}', False, None, True),
        (b'{"id":null,"method":"x"}', False, None, True),
        (b'[{"id":1,"method":"x"}]', False, None, False),
        (b"not json at all", False, None, False),
        (b"", False, None, False),
        (b'{"id":12345678901234567890123,"method":"x"', False, None, True),
    ],
)
def test_salvage_reads_only_the_top_level_id(text: bytes, found: bool, request_id: Any, is_request: bool) -> None:
    got = limits.salvage(text)
    assert (got.found, got.id, got.is_request) == (found, request_id, is_request)


def test_salvage_reads_at_most_its_window() -> None:
    text = b'{"method":"x","params":{"pad":"' + b"a" * (2 * limits.SALVAGE_BYTES) + b'"},"id":3}'
    assert limits.salvage(text).found is False
    assert limits.salvage(text.decode()).is_request is True


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth - 1):
        value = {"k": value} if i % 2 else [value]
    return {"top": value}


def test_depth_counts_the_message_itself_as_level_one() -> None:
    assert limits.too_deep({}, 1) is False
    assert limits.too_deep({"a": {}}, 1) is True
    assert limits.too_deep(nested(64), 64) is False
    assert limits.too_deep(nested(65), 64) is True
    assert limits.too_deep("scalar", 1) is False


def test_the_bracket_count_is_a_safe_shortcut() -> None:
    line = json.dumps(nested(65)).encode()
    assert limits.may_be_too_deep(line, 64)
    assert not limits.may_be_too_deep(b'{"a":[1,2,{"b":3}]}', 3)


def test_limits_are_an_option_with_checked_keys() -> None:
    transport, _ = memory_pair()
    mis.Client(transport, limits={"json_depth": 10})
    parsed = Options.parse({"limits": {"json_depth": 10}})  # how the client reads its options
    assert parsed.limits["json_depth"] == 10
    assert parsed.limits["message_bytes"] == limits.DEFAULT_LIMITS["message_bytes"]
    with pytest.raises(TypeError):
        mis.Client(transport, limits={"depth": 10})
    with pytest.raises(ValueError):
        mis.Client(transport, limits={"round_requests": 0})
    with pytest.raises(TypeError):
        mis.Client(transport, limits={"round_bytes": 1.5})


def test_the_defaults_admit_one_megabyte_schemas_and_answers() -> None:
    d = limits.DEFAULT_LIMITS
    assert d["message_bytes"] >= 4 * limits.MIB and d["round_bytes"] >= 2 * limits.MIB and d["sse_line_bytes"] >= d["message_bytes"]


# ---------------------------------------------------------------------------- legacy, in memory


@pytest.fixture
def legacy() -> Iterator[FakeServer]:
    with FakeServer() as server:
        server.add_tool("ask", lambda call: call.elicit("Answer?", {"type": "object", "properties": {"answer": {"type": "string"}}})["content"]["answer"])
        yield server


def answers_to(server: FakeServer, request_id: Any) -> list[JsonDict]:
    return [m for m in server.received if "method" not in m and m.get("id") == request_id and type(m.get("id")) is type(request_id)]


@pytest.mark.parametrize(
    "line, code",
    [
        (b'{"jsonrpc":"2.0","id":41,"method":"elicitation/create","params":{"mode":', -32700),
        (b'{"jsonrpc":"2.0","id":"s-1","method":"ping"} trailing', -32700),
        (json.dumps({"jsonrpc": "2.0", "id": 42, "method": "elicitation/create", "params": nested(80)}).encode(), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 43, "method": 5}).encode(), -32600),
    ],
)
def test_a_legacy_request_that_cannot_be_read_is_refused_by_id(legacy: FakeServer, line: bytes, code: int) -> None:
    client = legacy.client(Accept()).open()
    request_id = limits.salvage(line).id
    legacy.send_raw(line)
    answer = legacy.wait_for_answer(request_id)
    assert answer["error"]["code"] == code
    assert "leaf" not in json.dumps(answer)  # nothing of the message goes back
    assert client.call_tool("ask")["content"][0]["text"] == "ok"  # the connection carries on
    assert client.stats["malformed"] == 1
    assert len(answers_to(legacy, request_id)) == 1
    client.close()


@pytest.mark.parametrize("line", [b"garbage", b"[1, 2]", b'"text"', b'{"jsonrpc":"2.0","params":{"id":9}', b"\xff\xfe{}"])
def test_junk_without_an_id_is_counted_and_never_answered(legacy: FakeServer, line: bytes) -> None:
    client = legacy.client(Accept()).open()
    before = len(legacy.received)
    legacy.send_raw(line)
    assert client.call_tool("ask")["content"][0]["text"] == "ok"
    assert client.stats["malformed"] == 1
    sent = legacy.received[before:]
    assert all("error" not in m for m in sent)
    client.close()


def test_a_depth_limit_of_the_option_refuses_a_shallower_request(legacy: FakeServer) -> None:
    client = legacy.client(Accept(), limits={"json_depth": 4}).open()
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    legacy.send_request(77, "elicitation/create", {"mode": "form", "message": "m", "requestedSchema": schema})
    assert legacy.wait_for_answer(77)["error"]["code"] == -32600
    client.close()


def test_a_malformed_response_fails_its_call_at_once_with_a_typed_error() -> None:
    transport, peer = memory_pair()
    done = threading.Event()

    def serve() -> None:
        while True:
            msg = peer.recv(5.0)
            if msg is None:
                break
            if msg.get("method") == "initialize":
                peer.send(rpc(msg["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}))
            elif msg.get("method") == "server/discover":
                peer.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
            elif msg.get("method") == "tools/call":
                peer.send(b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode() + b',"result":{"content":[')
                done.set()

    thread = threading.Thread(target=serve, name="test-server")
    thread.start()
    client = mis.Client(transport, protocol="legacy", timeout=30)
    client.open()
    with pytest.raises(mis.ClientError) as info:
        client.call_tool("x")
    assert info.value.kind == "protocol" and info.value.check == "malformed"
    assert done.is_set()
    client.close()
    thread.join(5)
    assert not thread.is_alive()


# ---------------------------------------------------------------------------- modern, in memory


def modern_server(peer: MemoryPeer, round_: JsonDict) -> threading.Thread:
    """A 2026-07-28 peer whose one tool asks for ``round_``'s input requests, then completes."""

    def serve() -> None:
        while True:
            msg = peer.recv(5.0)
            if msg is None:
                return
            if "method" not in msg:
                continue
            if msg["method"] == "server/discover":
                peer.send(rpc(msg["id"], {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}))
            elif msg["method"] == "tools/call":
                if "inputResponses" in msg["params"]:
                    peer.send(rpc(msg["id"], {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}))
                else:
                    peer.send(rpc(msg["id"], {"resultType": "input_required", "inputRequests": round_, "requestState": "s"}))
            elif "id" in msg:
                peer.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})

    thread = threading.Thread(target=serve, name="test-modern-server")
    thread.start()
    return thread


def form(i: int, pad: int = 0) -> JsonDict:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "description": "d" * pad}}}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": f"q{i}", "requestedSchema": schema}}


@pytest.mark.parametrize(
    "option, round_",
    [
        ({"round_requests": 3}, {f"k{i}": form(i) for i in range(4)}),
        ({"round_bytes": 10_000}, {"k": form(0, pad=20_000)}),
    ],
)
def test_a_round_over_a_limit_raises_before_any_callback(option: JsonDict, round_: JsonDict) -> None:
    transport, peer = memory_pair()
    thread = modern_server(peer, round_)
    asked: list[Any] = []

    class Count(Accept):
        def handle_elicitation(self, params: Any, ctx: mis.InputContext) -> Any:
            asked.append(params)
            return super().handle_elicitation(params, ctx)

    client = mis.Client(transport, handler=Count(), protocol="modern", limits=option, input_rate_limit=(float("inf"), 100))
    client.open()
    with pytest.raises(mis.ClientError) as info:
        client.call_tool("x")
    assert (info.value.kind, info.value.check) == ("protocol", "limit")
    assert asked == []
    assert client.stats["malformed"] == 1
    # just under the limit, the same round is answered
    client.close()
    thread.join(5)

    transport, peer = memory_pair()
    thread = modern_server(peer, round_)
    roomy = {key: value * 10 for key, value in option.items()}
    client = mis.Client(transport, handler=Count(), protocol="modern", limits=roomy, input_rate_limit=(float("inf"), 100))
    client.open()
    assert client.call_tool("x")["content"][0]["text"] == "done"
    assert len(asked) == len(round_)
    client.close()
    thread.join(5)


def test_the_modern_era_never_answers_what_it_cannot_read() -> None:
    with FakeServer(era="modern") as server:

        def ask(call: ToolCall) -> str:
            return str(call.elicit("Answer?", {"type": "object", "properties": {"answer": {"type": "string"}}})["content"]["answer"])

        server.add_tool("ask", ask)
        client = server.client(Accept()).open()
        before = len(server.received)
        for line in (b'{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":', json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping", "params": nested(90)}).encode(), b"junk"):
            server.send_raw(line)
        assert client.call_tool("ask")["content"][0]["text"] == "ok"
        assert all("method" in m for m in server.received[before:])  # no JSON-RPC response at all
        assert client.stats["malformed"] == 3
        client.close()


# ---------------------------------------------------------------------------- stdio


LONG_LINE_SERVER = r"""
import json, sys
out = sys.stdout
def send(m):
    out.write(json.dumps(m) + "\n"); out.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "long", "version": "1"}}})
    elif method == "server/discover":
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
    elif method == "tools/call" and msg["params"]["name"] == "long_request":
        pad = "x" * int(msg["params"]["arguments"]["size"])
        send({"jsonrpc": "2.0", "id": "big", "method": "elicitation/create", "params": {"mode": "form", "message": pad, "requestedSchema": {"type": "object", "properties": {}}}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "sent"}]}})
    elif method == "tools/call" and msg["params"]["name"] == "long_result":
        pad = "x" * int(msg["params"]["arguments"]["size"])
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": pad}]}})
    elif "id" in msg and method is None:
        sys.stderr.write("answer " + json.dumps(msg)[:200] + "\n"); sys.stderr.flush()
"""


@pytest.fixture
def long_line_server(tmp_path: Path) -> list[str]:
    script = tmp_path / "long_line_server.py"
    script.write_text(LONG_LINE_SERVER)
    return [sys.executable, str(script)]


def test_an_over_long_stdio_line_is_dropped_and_its_request_refused(long_line_server: list[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="mcp_input_sync")
    size = 3 * limits.MIB
    with mis.connect_stdio(long_line_server, handler=Accept(), protocol="legacy", limits={"message_bytes": limits.MIB}) as client:
        assert client.call_tool("long_request", {"size": size})["content"][0]["text"] == "sent"
        # the answer to "big" goes to the server before a later call's response comes back
        client.call_tool("long_request", {"size": 10})
        assert client.stats["malformed"] == 1
    answered = [r.getMessage() for r in caplog.records if r.getMessage().startswith("answer ")]
    refusals = [line for line in answered if '"big"' in line and "-32600" in line]
    assert len(refusals) == 1, answered


def test_an_over_long_stdio_response_fails_its_call_and_the_client_carries_on(long_line_server: list[str]) -> None:
    with mis.connect_stdio(long_line_server, protocol="legacy", limits={"message_bytes": 100_000}) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("long_result", {"size": 300_000})
        assert (info.value.kind, info.value.check) == ("protocol", "limit")
        assert client.call_tool("long_result", {"size": 1000})["content"][0]["text"] == "x" * 1000


# ---------------------------------------------------------------------------- HTTP


def http_server(tool_reply: Any) -> TinyServer:
    def answer(seen: Seen) -> Reply:
        body = seen.body if isinstance(seen.body, dict) else {}
        method = body.get("method")
        if seen.verb == "GET":
            return Reply(405)
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "1"}}
            return Reply(200, {"Mcp-Session-Id": "s1"}, rpc(body["id"], result))
        if method == "tools/call":
            return tool_reply(body["id"])
        if "id" in body and method is not None:
            return Reply(200, body={"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        return Reply(202)

    return TinyServer(answer)


def big_result(request_id: Any, size: int) -> JsonDict:
    return rpc(request_id, {"content": [{"type": "text", "text": "x" * size}]})


@pytest.mark.parametrize(
    "kind, limit",
    [
        ("json", {"message_bytes": 50_000}),
        ("sse-event", {"message_bytes": 50_000}),
        ("sse-line", {"sse_line_bytes": 50_000}),
    ],
)
def test_an_http_message_over_a_limit_fails_its_call_with_a_typed_error(kind: str, limit: JsonDict) -> None:
    sizes = iter([200_000, 1000])

    def reply(request_id: Any) -> Reply:
        message = big_result(request_id, next(sizes))
        if kind == "json":
            return Reply(200, body=message)
        data = json.dumps(message)
        if kind == "sse-event":  # many short data lines: no line is long, the event is
            pieces = json.dumps({**message, "result": {**message["result"], "pad": ["y" * 100] * (len(data) // 100)}}, indent=1)
            lines = "\n".join("data: " + line for line in pieces.splitlines())
            return Reply(200, body=iter([lines + "\n\n"]))
        return Reply(200, body=iter(["data: " + data + "\n\n"]))

    server = http_server(reply)
    try:
        with mis.connect_http(server.url, protocol="legacy", limits=limit) as client:
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("big")
            assert (info.value.kind, info.value.check) == ("protocol", "limit")
            assert client.stats["malformed"] == 1
            assert client.call_tool("big")["content"][0]["text"] == "x" * 1000
    finally:
        server.close()
