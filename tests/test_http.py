"""Streamable HTTP on 127.0.0.1: the official SDK's servers (legacy and 2026-07-28) and scripted edge cases."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync._era import EraCache
from mcp_input_sync._protocol.headers import header_value
from mcp_input_sync.transports.http import HttpTransport

from .harness import tool_json, tool_text
from .http_peers import free_port, http_peer
from .test_modern import Answers
from .tiny_http import Reply, Seen, TinyServer, rpc, sse

JsonDict = dict[str, Any]
WAIT = 10.0
V = "2026-07-28"


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    with http_peer("sdk_legacy_server.py") as url:
        yield url


@pytest.fixture(scope="module")
def modern_url() -> Iterator[str]:
    with http_peer("sdk_modern_server.py") as url:
        yield url


class Everything(Answers):
    def __init__(self) -> None:
        super().__init__()
        self.logs: list[JsonDict] = []

    def handle_log(self, entry: JsonDict, ctx: mis.InputContext) -> None:
        self.logs.append(entry)


# ---------------------------------------------------------------------------- the official SDK, legacy, over HTTP


def test_legacy_http_requests_on_a_calls_stream_are_tied_to_it(legacy_url: str) -> None:
    handler = Everything()
    transport = HttpTransport(legacy_url)  # what connect_http builds, kept to read its session id
    with mis.Client(transport, handler=handler) as client:
        assert client.era == "legacy" and client.protocol_version == "2025-11-25"
        out = tool_json(client.call_tool("chain", {"prompt": "hi"}, assigns={"who": "call"}))
        assert out["elicit_action"] == "accept" and out["sample_text"] == "sampled"
        assert transport.session_id
    kinds = [k for k, *_ in handler.seen]
    assert kinds == ["sampling", "elicitation", "roots"]
    assert all(ctx.related_request_id is not None and ctx.assigns == {"who": "call"} for _, _, ctx, _ in handler.seen)


def test_legacy_http_logs_progress_and_the_url_required_path(legacy_url: str) -> None:
    handler = Everything()
    updates: list[JsonDict] = []
    with mis.connect_http(legacy_url, handler=handler) as client:
        assert tool_text(client.call_tool("log_and_progress", {"steps": 2}, progress=updates.append)) == "done 2 steps"
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("url_required", {"url": "https://example.invalid/connect"})
        assert info.value.code == -32042
        assert client.handle_url_elicitations(info.value) == [{"action": "accept"}]
    assert [u["progress"] for u in updates] == [1, 2]
    url_ctx = handler.seen[-1][2]
    assert url_ctx.origin_mismatch is True and url_ctx.host == "example.invalid"


def test_a_flood_over_http_gets_one_answer_each(legacy_url: str) -> None:
    # a slot for each: how many are outstanding at once depends on scheduling, and busy is not the point here
    with mis.connect_http(legacy_url, handler=Answers(), input_rate_limit=(float("inf"), 1), max_server_requests=20) as client:
        out = tool_json(client.call_tool("parallel_elicit", {"n": 20}, timeout=30))
        assert out == [{"action": "accept", "content": {"answer": "yes"}}] * 20
        assert client.stats["served"] == 20


# ---------------------------------------------------------------------------- the official SDK, 2026-07-28, over HTTP


def test_modern_http_rounds_run_unchanged(modern_url: str) -> None:
    handler = Answers()
    with mis.connect_http(modern_url, handler=handler, protocol="prefer-modern") as client:
        assert (client.era, client.protocol_version) == ("modern", V)
        out = tool_json(client.call_tool("ask_multi"))
        assert out["llm"] == "sampled"
        assert tool_json(client.call_tool("ask_rounds", {"n": 2})) == ["yes", "yes"]
        assert tool_text(client.call_tool("state_only", {"k": 1})) == "state-only-ok after 1 polls"


def test_modern_http_cancels_by_closing_the_stream(modern_url: str) -> None:
    with mis.connect_http(modern_url, handler=Answers()) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("slow", {"seconds": 30}, timeout=0.5)
        assert info.value.kind == "timeout"
        assert tool_text(client.call_tool("echo", {"text": "after"})) == "after"


def test_the_era_is_cached_per_endpoint(modern_url: str) -> None:
    cache = EraCache()
    with mis.connect_http(modern_url, protocol="prefer-modern", era_cache=cache) as first:
        assert first.era == "modern"
    assert cache.endpoint_era("modern", modern_url) == ("modern", V)


# ---------------------------------------------------------------------------- scripted edge cases



def legacy_answer(state: JsonDict) -> Any:
    """A minimal 2025-11-25 endpoint, with hooks for one test at a time."""

    def answer(seen: Seen) -> Reply:
        body = seen.body if isinstance(seen.body, dict) else {}
        method = body.get("method")
        if seen.verb == "GET":
            return state.get("get", Reply(405))
        if seen.verb == "DELETE":
            return Reply(200)
        if method == "server/discover":
            return Reply(400, body={"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if method == "initialize":
            state["inits"] = state.get("inits", 0) + 1
            session = f"s{state['inits']}"
            return Reply(200, {"Mcp-Session-Id": session}, rpc(body["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "tiny", "version": "1"}}))
        if "id" not in body or "method" not in body:
            return Reply(202)
        hook = state.get("call")
        if hook is not None:
            return hook(seen, body)  # type: ignore[no-any-return]
        return Reply(200, body=rpc(body["id"], {"content": [{"type": "text", "text": "ok"}]}))

    return answer


def test_401_and_403_raise_auth_with_the_headers(tiny: list[TinyServer]) -> None:
    server = TinyServer(lambda seen: Reply(401, {"WWW-Authenticate": 'Bearer realm="mcp"'}))
    tiny.append(server)
    with pytest.raises(mis.ClientError) as info:
        mis.connect_http(server.url)
    assert info.value.kind == "auth" and info.value.data["WWW-Authenticate"] == 'Bearer realm="mcp"'


def test_a_5xx_raises_transport(tiny: list[TinyServer]) -> None:
    server = TinyServer(lambda seen: Reply(503))
    tiny.append(server)
    with pytest.raises(mis.ClientError) as info:
        mis.connect_http(server.url)
    assert info.value.kind == "transport"


def test_headers_and_a_bearer_auth_hook_are_sent(tiny: list[TinyServer]) -> None:
    state: JsonDict = {}
    server = TinyServer(legacy_answer(state))
    tiny.append(server)

    def bearer(request: Any) -> Any:
        request.headers["Authorization"] = "Bearer t0k3n"
        return request

    with mis.connect_http(server.url, headers={"X-Tenant": "acme"}, auth=bearer) as client:
        assert tool_text(client.call_tool("anything")) == "ok"
    call = server.posts("tools/call")[0]
    assert call.headers["authorization"] == "Bearer t0k3n" and call.headers["x-tenant"] == "acme"
    assert call.headers["mcp-session-id"] == "s1" and call.headers["mcp-protocol-version"] == "2025-11-25"
    assert "application/json" in call.headers["accept"] and "text/event-stream" in call.headers["accept"]
    assert [r.verb for r in server.requests][-1] == "DELETE"


def test_a_lost_session_is_re_initialised_once_and_the_request_re_sent(tiny: list[TinyServer]) -> None:
    state: JsonDict = {}

    def call(seen: Seen, body: JsonDict) -> Reply:
        if seen.headers.get("mcp-session-id") == "s1":
            return Reply(404)
        return Reply(200, body=rpc(body["id"], {"content": [{"type": "text", "text": "new session"}]}))

    state["call"] = call
    server = TinyServer(legacy_answer(state))
    tiny.append(server)
    with mis.connect_http(server.url) as client:
        assert tool_text(client.call_tool("x")) == "new session"
    inits = server.posts("initialize")
    assert len(inits) == 2 and "mcp-session-id" not in inits[1].headers


def test_a_session_lost_twice_raises_transport(tiny: list[TinyServer]) -> None:
    state: JsonDict = {"call": lambda seen, body: Reply(404)}
    server = TinyServer(legacy_answer(state))
    tiny.append(server)
    with mis.connect_http(server.url) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("x")
    assert info.value.kind == "transport"


def test_a_gracefully_closed_stream_is_resumed_with_last_event_id(tiny: list[TinyServer]) -> None:
    state: JsonDict = {}

    def call(seen: Seen, body: JsonDict) -> Reply:
        state["call_id"] = body["id"]
        return Reply(200, body=sse("id: ev-1\ndata:", "retry: 50"))  # priming event, then the server closes

    def get(seen: Seen) -> Reply:
        if seen.headers.get("last-event-id") != "ev-1":
            return Reply(405)
        answer = json.dumps(rpc(state["call_id"], {"content": [{"type": "text", "text": "resumed"}]}))
        return Reply(200, body=sse(f"id: ev-2\ndata: {answer}"))

    state["call"] = call
    server = TinyServer(legacy_answer(state))
    tiny.append(server)

    class GetHook(dict):  # type: ignore[type-arg]
        pass

    state["get"] = None
    original = server.answer

    def answer(seen: Seen) -> Reply:
        if seen.verb == "GET":
            return get(seen)
        return original(seen)  # type: ignore[no-any-return]

    server.answer = answer
    with mis.connect_http(server.url) as client:
        assert tool_text(client.call_tool("x", timeout=WAIT)) == "resumed"


def test_x_mcp_header_arguments_become_headers_and_invalid_tools_are_dropped(tiny: list[TinyServer], caplog: pytest.LogCaptureFixture) -> None:
    tools = [
        {"name": "good", "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer", "x-mcp-header": "Count"}}}},
        {"name": "bad_number", "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}},
        {"name": "bad_dup", "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}},
        {"name": "bad_token", "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}},
        {"name": "bad_nested", "inputSchema": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Deep"}}}}},
        {"name": "bad_type_list", "inputSchema": {"type": "object", "properties": {"a": {"type": ["string", "null"], "x-mcp-header": "A"}}}},
    ]

    def answer(seen: Seen) -> Reply:
        body = seen.body or {}
        method = body.get("method")
        if method == "server/discover":
            return Reply(200, body=rpc(body["id"], {"resultType": "complete", "supportedVersions": [V], "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}))
        if method == "tools/list":
            return Reply(200, body=rpc(body["id"], {"resultType": "complete", "tools": tools}))
        return Reply(200, body=rpc(body["id"], {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}))

    server = TinyServer(answer)
    tiny.append(server)
    with mis.connect_http(server.url, protocol="prefer-modern") as client:
        assert [t["name"] for t in client.list_tools()] == ["good"]
        client.call_tool("good", {"region": "Zürich", "n": 3})
    call = server.posts("tools/call")[0]
    assert call.headers["mcp-method"] == "tools/call" and call.headers["mcp-name"] == "good"
    assert call.headers["mcp-protocol-version"] == V
    assert call.headers["mcp-param-count"] == "3"
    assert call.headers["mcp-param-region"] == "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    assert caplog.text.count("invalid x-mcp-header") == 5  # a list of types is refused like the rest, not a crash


@pytest.mark.parametrize(
    "value, sent",
    [("plain", "plain"), (" padded", None), ("tab\there", None), ("ünï", None), ("=?base64?looks?=", None)],
)
def test_header_values_that_are_not_plain_ascii_use_the_base64_sentinel(value: str, sent: Any) -> None:
    out = header_value(value)
    if sent is not None:
        assert out == sent
    else:
        assert out.startswith("=?base64?") and base64.b64decode(out[9:-2]).decode() == value


def test_sse_reader_threads_end_on_close(modern_url: str) -> None:
    with mis.connect_http(modern_url, handler=Answers()) as client:
        thread = threading.Thread(target=lambda: _swallow(lambda: client.call_tool("slow", {"seconds": 30})), daemon=True)
        thread.start()
        pause = threading.Event()
        for _ in range(200):
            if [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-sse-")]:
                break
            pause.wait(0.02)
    thread.join(WAIT)
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-input-sync-sse-") and t.is_alive()]


def _swallow(fn: Any) -> None:
    try:
        fn()
    except mis.ClientError:
        pass


def test_modern_http_logs_progress_and_a_listen_stream(modern_url: str) -> None:
    heard: list[str] = []
    got = threading.Semaphore(0)

    class Hearing(Everything):
        def handle_notification(self, method: str, params: JsonDict, ctx: mis.InputContext) -> None:
            heard.append(method)
            got.release()

    handler = Hearing()
    updates: list[JsonDict] = []
    with mis.connect_http(modern_url, handler=handler, protocol="prefer-modern") as client:
        assert tool_text(client.call_tool("log_and_progress", {"steps": 2}, progress=updates.append)) == "done 2 steps"
        client.subscribe_resource("file:///watched.txt")
        assert tool_text(client.call_tool("notify_changes", {"uri": "file:///watched.txt"})) == "published"
        for _ in range(2):
            assert got.acquire(timeout=WAIT)
    assert [u["progress"] for u in updates] == [1, 2]
    assert [e["data"] for e in handler.logs] == ["step 1/2", "step 2/2"]
    assert "notifications/tools/list_changed" in heard or "notifications/resources/updated" in heard


def test_legacy_http_cancels_with_a_notification(tiny: list[TinyServer]) -> None:
    import queue

    release: "queue.Queue[bool]" = queue.Queue()
    state: JsonDict = {}

    def call(seen: Seen, body: JsonDict) -> Reply:
        def stream() -> Iterator[str]:
            release.get(timeout=WAIT)  # the call never gets its answer
            yield ": bye\n\n"

        return Reply(200, body=stream())

    state["call"] = call
    answer = legacy_answer(state)
    noticed = threading.Event()

    def noticing(seen: Seen) -> Reply:
        reply = answer(seen)
        if isinstance(seen.body, dict) and seen.body.get("method") == "notifications/cancelled":
            noticed.set()
        return reply

    server = TinyServer(noticing)
    tiny.append(server)
    try:
        with mis.connect_http(server.url) as client:
            with pytest.raises(mis.ClientError) as info:
                client.call_tool("slow", timeout=0.3)
            assert info.value.kind == "timeout"
            assert noticed.wait(WAIT)  # posted on a thread of its own: the caller did not wait for it
            (call_post,) = server.posts("tools/call")
            cancelled = server.posts("notifications/cancelled")
            assert cancelled and cancelled[0].body["params"]["requestId"] == call_post.body["id"]
    finally:
        release.put(True)


def test_a_proxy_that_cannot_be_reached_is_named_without_its_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    # a stale HTTP_PROXY is a common cause of "cannot reach": the error says which proxy, not its password
    monkeypatch.setenv("HTTP_PROXY", f"http://user:s3cret@127.0.0.1:{free_port()}")
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(mis.ClientError) as info:
        mis.connect_http(f"http://127.0.0.1:{free_port()}/mcp", timeout=WAIT)
    text = str(info.value)
    assert info.value.kind == "transport" and "through the proxy http://127.0.0.1:" in text and "HTTP_PROXY" in text, text
    assert "s3cret" not in text and "user" not in text, text
